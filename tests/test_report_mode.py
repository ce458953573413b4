"""Report-only mode, events and ``urandom-shim report`` (docs/howto/strict-rollout.md, docs/reference/events.md).

- Report mode, under every policy and at every call site: the call behaves as ``native`` (the interpreter's own
  code: no exception of ours, never best-effort bytes) and its event records what the policy would have done.
  In-process with Hypothesis, and in fresh interpreters on the fake kernel, where weak bytes would show.
- The events file: 20 processes appending at once lose and tear no line; a FIFO, a symlink or a missing directory is
  never written and never fails the program; every record fits one ``PIPE_BUF`` write.
- Event text is safe for a terminal and the journal, whatever argv and paths hold.
- ``report``: the verdicts on a recorded sample (``tests/data/events-sample.jsonl``, recorded with the shim), ``--json``
  and ``--fail-for``; ``simulate --report-only``; and report mode in ``urandom-shim run``.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Venv, clean_env, events_in, without_events
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import urandom_shim
from urandom_shim import _events, _policies, _readiness, _simulation
from urandom_shim.cli import main as cli
from urandom_shim.report import events_files, gather

DATA = Path(__file__).resolve().parent / "data"
SAMPLE = DATA / "events-sample.jsonl"
POLICIES = [p.name for p in _policies.POLICIES]
UNREADY = {"URANDOM_SHIM_SIMULATE": "unready-forever"}


def named(entries: list[dict[str, Any]]) -> list[str]:
    """The program names of a verdict's entries (each also says on how many machines and boots)."""
    return [entry["name"] for entry in entries]


def read_events(path: Path) -> list[dict[str, Any]]:
    """The records of an events file: each write begins a line of its own, so blank lines come between them."""
    return [json.loads(line) for line in path.read_text().splitlines() if line]


# -- in-process: report mode never enforces anything ----------------------------------------------------------------


def calls(size: int) -> list[tuple[str, str, Any]]:
    """(site, what the event calls it, the call): one per call site of the policy table."""
    return [
        (_policies.URANDOM, f"os.urandom({size})", lambda: os.urandom(size)),
        (
            _policies.URANDOM,
            "random._urandom(1) (from random.SystemRandom)",
            lambda: random.SystemRandom().getrandbits(8),
        ),
        (_policies.SECRETS, "secrets.token_bytes()", lambda: secrets.token_bytes(size)),
        (_policies.SECRETS, "secrets.randbelow()", lambda: secrets.randbelow(size + 1)),
        (_policies.SEED_INSTANCE, "random.seed(None)", lambda: random.seed()),
        (_policies.SEED_NEW, "Random() seeding", lambda: random.Random()),
    ]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(policy=st.sampled_from(POLICIES), order=st.permutations(range(6)), size=st.integers(1, 64))
def test_report_mode_behaves_as_native_and_records_what_the_policy_would_do(
    restored: None, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, policy: str,
    order: list[int], size: int,
) -> None:  # fmt: skip
    work = tmp_path_factory.mktemp("report")
    trigger, events = work / "unready", work / "events.jsonl"
    trigger.touch()
    _simulation.override(_simulation.parse(f"unready-until-file:{trigger}"))
    _readiness.reset()

    def never(*_args: object) -> Any:
        raise AssertionError("report mode made best-effort bytes")

    monkeypatch.setattr(_readiness, "best_effort_bytes", never)
    monkeypatch.setattr(_readiness, "best_effort_seed", never)
    _events.reset()  # each example is a new program: its first call at each site is written
    urandom_shim.activate(policy, timeout=0, on_timeout="raise", mode="report", events=str(events))
    try:
        assert hasattr(os.urandom, "__wrapped__"), "report mode watches every call site, native included"
        for index in order:
            _site, _name, call = calls(size)[index]
            call()  # no BlockingIOError, no best-effort bytes: the interpreter's own code
    finally:
        urandom_shim.deactivate()
        _simulation.override(None)
        _readiness.reset()
    recorded = {event["call"]: event for event in read_events(events)}
    for site, name, _call in calls(size):
        event = recorded[name]
        assert (event["site"], event["mode"], event["action"]) == (site, "report", "untouched"), event
        assert event["would"] == _policies.action(_policies.BY_NAME[policy], site), event
        assert event["policy"] == policy and event["policy_source"] == "urandom_shim.activate()"


def test_enforce_mode_records_what_it_did(restored: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trigger, events = tmp_path / "unready", tmp_path / "events.jsonl"
    trigger.touch()
    _simulation.override(_simulation.parse(f"unready-until-file:{trigger}"))
    _readiness.reset()
    _events.reset()
    urandom_shim.activate("pep522", timeout=0.05, on_timeout="raise", events=str(events))
    with pytest.raises(BlockingIOError):
        os.urandom(4)
    with pytest.raises(BlockingIOError):
        secrets.token_bytes(4)  # waits under pep522, and times out
    urandom_shim.deactivate()
    (raised, timed_out) = read_events(events)
    assert (raised["call"], raised["action"], raised["would"]) == ("os.urandom(4)", "raised", "raise")
    assert (timed_out["call"], timed_out["action"]) == ("secrets.token_bytes()", "timed-out-raised")
    assert 0.04 <= timed_out["waited"] < 5, timed_out
    assert raised["caller"].startswith(f"{__file__}:"), "the caller is this test, not the shim or the stdlib"
    err = capsys.readouterr().err
    assert len(events_in(err)) == 2, err


# -- the events file ---------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
        max_leaves=12,
    )
)
def test_the_event_encoder_writes_json_that_is_plain_ascii(value: Any) -> None:
    text = _events.dumps(value)
    assert json.loads(text) == value
    assert text.isascii() and text.isprintable(), text


def test_the_events_file_is_only_ever_appended_to_a_regular_file(tmp_path: Path) -> None:
    regular = tmp_path / "events.jsonl"
    assert _events.append(str(regular), '{"v":1}') and _events.append(str(regular), '{"v":1}')
    assert regular.read_text() == '\n{"v":1}\n\n{"v":1}\n', "each record on a line of its own"
    assert oct(regular.stat().st_mode & 0o777) == oct(0o600 & ~_umask()), "created for its owner only"
    target = tmp_path / "elsewhere"
    target.write_text("precious\n")
    (tmp_path / "link.jsonl").symlink_to(target)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    began = time.monotonic()
    for path in (tmp_path / "link.jsonl", fifo, tmp_path / "missing" / "events.jsonl", tmp_path):
        assert _events.append(str(path), '{"v":1}') is False, path
    assert time.monotonic() - began < 3, "opening a FIFO with no reader must not block"
    assert target.read_text() == "precious\n", "a symlink is never followed"
    assert _events.append(str(regular), "x" * _events.MAX_RECORD) is False, "longer than one atomic write"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_long_command_line_is_cut_to_fit_one_write_and_the_event_is_kept() -> None:
    event = {"v": 1, "event": "call", "call": "os.urandom(16)", "argv": ["é" * 200] * 32, "caller": "x.py:1"}
    record = _events.fitted(event)
    assert len(record.encode()) + 2 <= _events.MAX_RECORD, "with the newlines before and after it: one write"
    parsed = json.loads(record)
    assert parsed["call"] == "os.urandom(16)" and parsed["argv_cut"] is True and 0 < len(parsed["argv"]) < 32


def test_event_lines_carry_no_control_characters_from_argv_or_paths() -> None:
    from urandom_shim._messages import line

    event = {
        "event": "call", "call": "os.urandom(16)", "caller": "/srv/\x1b[2Jevil\n.py:3", "boot_time": 1.5,
        "simulated": None, "mode": "enforce", "action": "raised", "waited": 0.0, "policy": "pep522",
        "policy_source": "environment variable URANDOM_POLICY", "would": "raise", "timeout": None,
        "under": {"native": "wait", "pep524": "wait", "pep522": "raise", "legacy": "weak"},
    }  # fmt: skip
    shown = line(_events.describe(event))
    assert shown.isprintable() and "\\x1b[2Jevil\\n.py:3" in shown, shown
    assert _events.dumps(event).isprintable()


# -- report: verdicts on a recorded sample ----------------------------------------------------------------------------


def test_the_verdicts_on_a_recorded_sample() -> None:
    report = gather.gather(str(SAMPLE), journal=False)
    names = [program["name"] for program in report["programs"]]
    assert names == ["early-setup.service", "cloud-setup.py", "init-jitter.py", "legacy-tool.py"]
    verdict = report["verdict"]
    assert named(verdict["pep522"]["raise"]) == ["early-setup.service", "legacy-tool.py"]
    assert named(verdict["pep522"]["wait"]) == ["cloud-setup.py"]  # secrets waits under pep522
    assert named(verdict["legacy"]["weak"]) == ["early-setup.service", "cloud-setup.py", "legacy-tool.py"]
    assert named(verdict["pep524"]["wait"]) == named(verdict["native"]["wait"]) == named(verdict["legacy"]["weak"])
    assert not named(verdict["pep524"]["raise"]) and not named(verdict["pep524"]["weak"])
    assert verdict["pep522"]["text"] == (
        "under pep522, 2 programs would raise BlockingIOError: early-setup.service, legacy-tool.py; 1 program would "
        "wait for the CRNG: cloud-setup.py"
    )
    early = report["programs"][0]
    (urandom,) = [c for c in early["calls"] if c["site"] == "os.urandom"]
    assert urandom["count"] == 3 and urandom["caller"].endswith("early-setup.py:3")  # one event, then a repeat of 2
    jitter = report["programs"][2]
    assert set(jitter["under"].values()) == {"fine"}, "seeding `random` is not for secrets: nothing to fix"


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = cli.main(list(args))
    return code, capsys.readouterr().out


def test_report_json_and_fail_for(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(capsys, "report", "--events", str(SAMPLE), "--no-journal", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["v"] == 3 and report["sources"]["events"]["records"] == 8
    assert named(report["verdict"]["legacy"]["weak"]) == ["early-setup.service", "cloud-setup.py", "legacy-tool.py"]
    assert run_cli(capsys, "report", "--events", str(SAMPLE), "--no-journal", "--fail-for", "pep522")[0] == 1
    assert run_cli(capsys, "report", "--events", str(SAMPLE), "--no-journal", "--fail-for", "pep524")[0] == 0
    code, out = run_cli(capsys, "report", "--events", str(SAMPLE), "--no-journal")
    assert code == 0 and "Verdict:" in out
    assert "  under legacy, 3 programs would have used weak bytes: early-setup.service, cloud-setup.py" in out


def test_report_skips_what_is_not_an_event_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mixed = tmp_path / "events.jsonl"
    lines = SAMPLE.read_text().splitlines()
    mixed.write_text("\n".join([lines[0], "not json", '{"v": 2, "call": "x"}', lines[1]]) + "\n")
    report = json.loads(run_cli(capsys, "report", "--events", str(mixed), "--no-journal", "--json")[1])
    assert report["sources"]["events"]["records"] == 2 and report["sources"]["events"]["skipped"] == 2
    missing = json.loads(run_cli(capsys, "report", "--events", str(tmp_path / "none"), "--no-journal", "--json")[1])
    assert missing["sources"]["events"]["problem"] == "no such file" and missing["programs"] == []
    # With nothing read, the report says so rather than give an empty verdict that looks like good news.
    text = run_cli(capsys, "report", "--events", str(tmp_path / "none"), "--no-journal")[1]
    assert "Nothing was read: no source named could be read" in text, text
    assert "No program asked" not in text


def test_run_gives_no_hash_seed_in_report_mode(
    shim: Venv, fake_kernel: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from urandom_shim.cli import launch

    monkeypatch.setattr(_readiness, "kernel_state", lambda: _readiness.UNREADY)
    flag = tmp_path / "kernel-unready"  # run asks the program's interpreter, whose shim must find it unready too
    flag.touch()
    env = {**clean_env(fake_kernel.env(flag)), "URANDOM_POLICY": "legacy"}
    assert launch.start_without_waiting([str(shim.python), "x.py"], dict(env)) is True  # the control: legacy gets one
    assert launch.start_without_waiting([str(shim.python), "x.py"], {**env, "URANDOM_SHIM_MODE": "report"}) is False


# -- real interpreters ------------------------------------------------------------------------------------------------

FAKE_KERNEL_CALLS = """
import json, os, random, secrets, sys, threading, time
flag = sys.argv[1]
threading.Timer(0.5, os.unlink, [flag]).start()
began = time.monotonic()
out = {"os.urandom": os.urandom(16).hex()}
out["took"] = time.monotonic() - began
out["secrets"] = secrets.token_hex(16)
out["SystemRandom"] = random.SystemRandom().getrandbits(64)
print(json.dumps(out))
"""


@pytest.mark.parametrize("policy", POLICIES)
def test_report_mode_on_the_fake_kernel_waits_as_the_interpreter_does_and_never_returns_weak_bytes(
    shim: Venv, fake_kernel: Any, tmp_path: Path, policy: str
) -> None:
    flag, events = tmp_path / "unready", tmp_path / "events.jsonl"
    flag.touch()
    env = {
        **fake_kernel.env(flag),
        "URANDOM_POLICY": policy,
        "URANDOM_SHIM_MODE": "report",
        "URANDOM_SHIM_EVENTS": str(events),
        "URANDOM_SHIM_TIMEOUT": "0",  # what would make pep524 raise at once, were it enforced
    }
    script = tmp_path / "probe.py"
    script.write_text(FAKE_KERNEL_CALLS)
    result = shim.run(str(script), str(flag), env=env)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert "WEAK" not in result.stdout and "5745414b" not in result.stdout, out
    assert out["took"] >= 0.4, "os.urandom() returned before the kernel was ready: not the interpreter's own"
    (first, *_rest) = [e for e in read_events(events) if e["call"] == "os.urandom(16)"]
    assert (first["action"], first["mode"]) == ("untouched", "report")
    assert first["would"] == _policies.action(_policies.BY_NAME[policy], _policies.URANDOM)
    assert first["waited"] >= 0.4 and not first["simulated"], first
    assert first["caller"] == f"{script}:6"
    assert without_events(result.stderr) == "", result.stderr


WRITER = """
import os, sys
{calls}
"""


def test_twenty_processes_append_to_one_file_without_a_lost_or_torn_line(shim: Venv, tmp_path: Path) -> None:
    events, sites = tmp_path / "events.jsonl", 40
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(calls="\n".join("os.urandom(1)" for _ in range(sites))))
    env = {**UNREADY, "URANDOM_POLICY": "legacy", "URANDOM_SHIM_EVENTS": str(events)}
    long_argv = ["x" * 199] * 15  # about 3 KB per record: close to the one-write bound, where tearing would show
    processes = [
        subprocess.Popen(
            [str(shim.python), str(script), *long_argv],
            env=clean_env(env),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(20)
    ]
    assert [process.wait(timeout=120) for process in processes] == [0] * 20
    raw = events.read_bytes()
    assert raw.endswith(b"\n")
    lines = [line for line in raw.splitlines() if line]  # each write begins a line of its own: blanks between
    records = [json.loads(line) for line in lines]  # a torn line would not parse
    assert all(len(line) + 2 <= _events.MAX_RECORD for line in lines)
    assert len(records) == 20 * sites
    by_process = {p.pid: {f"{script}:{n}" for n in range(3, 3 + sites)} for p in processes}
    for record in records:
        by_process[record["pid"]].discard(record["caller"])
    assert not any(by_process.values()), "lost events"


#: Another user's writes to the shared events file: a forged record that fails no gate, then a line left without
#: its newline, then one byte at a time until told to stop (issue 36).
HOSTILE = """
import os, sys, time
path, stop = sys.argv[1], sys.argv[2]
try:
    open(path, "rb")
    sys.exit("this user can read the events file: not the real mode")
except PermissionError:
    pass
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
decoy = b'{"v":1,"event":"call","program":"decoy","call":"import random","site":"random._inst","action":"best-effort","would":"best-effort"}'
os.write(fd, decoy + b"\\n" + b'{"v":1,"call":"os.urandom(1)","program":"decoy","unit":"x')
print("started", flush=True)
while not os.path.exists(stop):
    os.write(fd, b"x")
    time.sleep(0.001)
"""


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv") or not os.path.exists("/usr/bin/python3"),
    reason="needs root, setpriv and /usr/bin/python3",
)
def test_records_survive_another_users_partial_lines_in_the_shared_events_file(shim: Venv) -> None:
    """The events file as the events page sets it up (mode 0622 in root's directory): another user appends a forged
    record that fails no gate and a line without its newline, then one byte at a time while services write. Every
    service's record is still read, and the gate still fails."""
    top = Path(tempfile.mkdtemp(prefix="urandom-shim-events-"))
    try:
        top.chmod(0o755)  # pytest's own tmp_path is root's alone: another user could not reach the file
        events, stop = top / "events.jsonl", top / "stop"
        events.touch()
        events.chmod(0o622)
        hostile = subprocess.Popen(
            # The system's interpreter: another user may not reach this one's (pyenv's, under /root) libraries.
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", HOSTILE,
             str(events), str(stop)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert hostile.stdout is not None and hostile.stdout.readline() == "started\n", hostile.communicate()
        env = {**UNREADY, "URANDOM_POLICY": "legacy", "URANDOM_SHIM_EVENTS": str(events)}
        pids = set()
        for _ in range(3):
            done = shim.run("-c", "import os; os.urandom(1); print(os.getpid())", env=env)
            assert done.returncode == 0, done.stderr
            pids.add(int(done.stdout))
            time.sleep(0.05)
        stop.touch()
        assert hostile.wait(timeout=30) == 0, hostile.communicate()
        assert events.stat().st_mode & 0o777 == 0o622 and events.stat().st_uid == 0
        raw = events.read_bytes()
        assert raw.count(b"x") > 10 and not raw.endswith(b"\n"), "the other user's bytes are there"
        gate = ("report", "--events", str(events), "--no-journal")
        assert cli.main([*gate, "--fail-for", "pep522"]) == 1, "a record after a partial line still fails the gate"
        found = events_files.read_events_file(str(events))
        assert {e["pid"] for e in found["events"] if e.get("program") != "decoy"} == pids, found
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_simulate_report_only_prints_the_report_and_keeps_the_exit_status(shim: Venv, tmp_path: Path) -> None:
    script = tmp_path / "boot-step.py"
    script.write_text("import os, sys\nkey = os.urandom(16)\nsys.exit(3)\n")
    cli = str(shim.path / "bin" / "urandom-shim")
    argv = [cli, "simulate", "--unready-forever", "--policy", "pep522", "--report-only", "--", str(shim.python)]
    result = subprocess.run([*argv, str(script)], env=clean_env(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 3, result.stderr
    report = without_events(result.stderr)
    assert "boot-step.py: first call" in report and "s into the simulated run" in report, report
    assert "  under pep522, 1 program would raise BlockingIOError: boot-step.py." in report, report
    assert events_in(result.stderr) == [
        "report-only: os.urandom(16) @ boot-step.py:2: left it to the interpreter (0.00 s); policy 'pep522' (from "
        "urandom-shim simulate --policy) would have raised BlockingIOError."
    ]


def test_a_floor_applies_to_the_policy_report_mode_records(shim: Venv, tmp_path: Path) -> None:
    machine, events = tmp_path / "machine.toml", tmp_path / "events.jsonl"
    machine.write_text('allow_weak = false\npolicy = "legacy"\nmode = "report"\n')
    env = {**UNREADY, "URANDOM_SHIM_MACHINE_CONFIG": str(machine), "URANDOM_SHIM_EVENTS": str(events)}
    result = shim.run("-c", "import os; print(len(os.urandom(8)))", env=env)
    assert result.stdout == "8\n", result.stderr
    (event,) = read_events(events)
    assert (event["policy"], event["would"], event["action"], event["mode"]) == (
        "pep524",
        "wait",
        "untouched",
        "report",
    )
    assert "instead of 'legacy'" in event["policy_source"], event


def test_mode_and_events_come_from_a_program_rule_with_their_source(shim: Venv, tmp_path: Path) -> None:
    machine, events = tmp_path / "machine.toml", tmp_path / "events.jsonl"
    machine.write_text(
        textwrap.dedent(
            f"""\
            policy = "pep522"
            events = "{events}"
            [[program]]
            match = "early-*.py"
            mode = "report"
            """
        )
    )
    script = tmp_path / "early-setup.py"
    script.write_text("import os\nos.urandom(8)\nprint('done')\n")
    env = {**UNREADY, "URANDOM_SHIM_MACHINE_CONFIG": str(machine)}
    result = shim.run(str(script), env=env)
    assert result.stdout == "done\n", result.stderr  # report mode: no BlockingIOError
    (event,) = read_events(events)
    assert event["mode"] == "report" and event["program"] == "early-setup.py"
    checked = subprocess.run(
        [str(shim.path / "bin" / "urandom-shim"), "check", "--for", str(script), "--json"],
        env=clean_env(env), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    found = json.loads(checked.stdout)["settings"]
    assert found["mode"] == {"value": "report", "source": f"{machine} (machine file) [[program]] match = 'early-*.py'"}
    assert found["events"] == {"value": str(events), "source": f"{machine} (machine file)"}


def test_a_bad_mode_or_events_value_is_one_line_and_start_up_carries_on(shim: Venv) -> None:
    for variable, value in (("URANDOM_SHIM_MODE", "report-only"), ("URANDOM_SHIM_EVENTS", "events.jsonl")):
        ready = shim.run("-c", "print('ok')", env={variable: value})  # the ready path checks variables too
        assert ready.stdout == "ok\n" and len(ready.stderr.splitlines()) == 1, ready.stderr
        assert f"environment variable {variable}={value!r} is not a valid" in ready.stderr


def test_the_ready_path_loads_no_event_code(shim: Venv, tmp_path: Path) -> None:
    env = {"URANDOM_POLICY": "pep522", "URANDOM_SHIM_MODE": "report", "URANDOM_SHIM_EVENTS": str(tmp_path / "e")}
    code = "import os, secrets, sys; os.urandom(8); print(sorted(m for m in sys.modules if 'urandom' in m))"
    result = shim.run("-c", code, env=env)
    assert result.stdout == "['_urandom_shim_boot', 'urandom_shim', 'urandom_shim._hooks']\n", result.stderr
    assert result.stderr == "" and not (tmp_path / "e").exists()


@pytest.mark.skipif(sys.platform != "linux", reason="systemd units are Linux's")
def test_an_event_names_the_systemd_unit(shim: Venv, tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    env = {**UNREADY, "URANDOM_POLICY": "legacy", "URANDOM_SHIM_EVENTS": str(events), "SYSTEMD_UNIT": "x.service"}
    shim.run("-c", "import os; os.urandom(1)", env=env)
    (event,) = read_events(events)
    assert event["unit"] == "x.service" and event["pid"] > 0
    # Python 3.10+ has the whole command line (sys.orig_argv); before, sys.argv of -c holds no code.
    assert event["argv"][-2:] == ["-c", "import os; os.urandom(1)"] or event["argv"][-1] == "-c", event


JOURNAL = DATA / "journal-debian12-cloud-init.jsonl"


def test_the_report_of_a_boots_journal_shows_the_calls_and_the_stall_the_shim_cant_see(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = gather.gather(None, journal=False, journal_file=str(JOURNAL))
    assert round(report["crng_init_done"], 2) == 17.4 and report["sources"]["kernel"]["source"] == "the journal"
    (early,) = report["programs"]
    assert early["name"] == "early-setup.service" and early["first_call_after_crng"] == -1.039
    (call,) = early["calls"]
    assert (call["call"], call["count"], call["waited"], call["would"]) == ("os.urandom(16)", 4, 1.05, "raise")
    (stall,) = report["stalls"]
    assert (stall["unit"], round(stall["started"], 2), stall["lost"]) == ("cloud-init-local.service", 15.76, 1.64)
    assert named(report["verdict"]["pep522"]["raise"]) == ["early-setup.service"]
    code, out = run_cli(capsys, "report", "--journal-file", str(JOURNAL), "--events", "/nonexistent")
    assert code == 0
    assert "early-setup.service: first call 16.36 s after boot, 1.04 s before crng init done" in out
    assert "cloud-init-local.service: started 15.76 s after boot, 1.64 s before crng init done" in out
    assert "Environment=PYTHONHASHSEED=0 in cloud-init-local.service" in out


def test_an_event_in_both_the_file_and_the_journal_counts_once(tmp_path: Path) -> None:
    from urandom_shim.report import journal, shim_lines

    entries, _skipped = journal.read_export(str(JOURNAL))
    (first, _repeat) = shim_lines.events_from_journal(entries)
    events = tmp_path / "events.jsonl"
    events.write_text(_events.dumps({k: v for k, v in first.items() if k != "from"}) + "\n")
    report = gather.gather(str(events), journal=False, journal_file=str(JOURNAL))
    (early,) = report["programs"]
    assert early["calls"][0]["count"] == 4  # the first call (from the file) and 3 more (the journal's repeat)


def test_check_says_whether_events_can_be_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A failed write is silent in a program; `check` is where an administrator learns why no events arrive."""
    cases = {
        tmp_path / "missing" / "events.jsonl": "its directory",
        tmp_path / "events.jsonl": "created by the first event (mode 600)",
        tmp_path: "not a regular file",
    }
    for path, expected in cases.items():
        os.environ["URANDOM_SHIM_EVENTS"] = str(path)
        try:
            code, out = run_cli(capsys, "check", "--json")
        finally:
            del os.environ["URANDOM_SHIM_EVENTS"]
        assert expected in json.loads(out)["events_file"], (path, out)
    (tmp_path / "events.jsonl").write_text("")
    os.environ["URANDOM_SHIM_EVENTS"] = str(tmp_path / "events.jsonl")
    try:
        code, out = run_cli(capsys, "check")
    finally:
        del os.environ["URANDOM_SHIM_EVENTS"]
    section = out.split("\nEvents file\n", 1)[1].split("\n\n", 1)[0]
    assert code == 0 and str(tmp_path / "events.jsonl") in section and section.endswith("appended to"), out


def test_run_report_only_passes_the_mode_and_the_events_file_to_the_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from urandom_shim.cli import launch

    started: dict[str, Any] = {}

    def exec_(path: str, argv: list[str], env: dict[str, str]) -> None:
        started.update(path=path, argv=argv, env=env)

    monkeypatch.setattr(launch, "_exec", exec_)
    events = str(tmp_path / "events.jsonl")
    assert cli.main(["run", "--policy", "pep522", "--report-only", "--events", events, "--", "true"]) == 0
    env = started["env"]
    assert (env["URANDOM_POLICY"], env["URANDOM_SHIM_MODE"], env["URANDOM_SHIM_EVENTS"]) == ("pep522", "report", events)
    assert cli.main(["run", "--events", "events.jsonl", "--", "true"]) == 2  # relative: a usage error


def test_a_call_made_by_the_standard_library_names_the_standard_librarys_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When every frame is the standard library's (its own tests, `python -m` of a stdlib module), the caller is the
    innermost of them outside the shim that is not frozen (before, runpy's `<frozen runpy>:198`)."""
    import tempfile

    monkeypatch.setattr(_events, "_skip", lambda filename: True)  # every frame up the stack counts as the stdlib's
    namespace: dict[str, Any] = {"caller_frame": _events.caller_frame}
    exec(compile("frame = caller_frame()", tempfile.__file__, "exec"), namespace)  # a frame of the stdlib's
    assert namespace["frame"].f_code.co_filename == tempfile.__file__
    assert _events.location(namespace["frame"]) == f"{tempfile.__file__}:1"


# -- the machine and boot of a record (issue 38: a fleet's events files read as one report) --------------------------

MACHINE_FIELDS = ["machine_id", "boot_id", "hostname", "image", "kernel", "first_boot"]
#: Every field of a call record, in the order the shim writes them: ``v`` first, the machine's after the program's.
RECORD_KEYS = ["v", "event", "boot_time", "pid", "argv", "program", "unit", *MACHINE_FIELDS, "call", "site", "caller",
               "policy", "policy_source", "mode", "action", "would", "waited", "simulated", "under", "pinned",
               "window", "timeout", "on_timeout", "seed_random_instances", "floor", "interpreter", "test"]  # fmt: skip


def os_release_image(text: str) -> str | None:
    """What the os-release specification says names this machine's image: IMAGE_ID and IMAGE_VERSION, else ID and
    VERSION_ID (read here with shlex, as a shell reads the file: not the shim's own reader)."""
    import shlex

    values = {}
    for line in text.splitlines():
        key, equals, value = line.strip().partition("=")
        if equals and not key.startswith("#"):
            values[key] = "".join(shlex.split(value)) if value else ""
    for name, version in (("IMAGE_ID", "IMAGE_VERSION"), ("ID", "VERSION_ID")):
        if values.get(name):
            return f"{values[name]} {values[version]}".strip() if values.get(version) else values[name]
    return None


def what_this_machine_says() -> dict[str, Any]:
    """The six facts, read here from the machine itself."""
    machine_id = Path("/etc/machine-id").read_text().strip() if Path("/etc/machine-id").is_file() else None
    os_release = next((Path(p) for p in ("/etc/os-release", "/usr/lib/os-release") if Path(p).is_file()), None)
    first_boot = (
        True if Path("/run/systemd/first-boot").exists() else False if Path("/run/systemd/system").is_dir() else None
    )
    return {
        "machine_id": machine_id if machine_id and len(machine_id) == 32 else None,
        "boot_id": Path("/proc/sys/kernel/random/boot_id").read_text().strip().replace("-", ""),
        "hostname": os.uname().nodename if os.uname().nodename not in ("", "(none)") else None,
        "image": os_release_image(os_release.read_text()) if os_release else None,
        "kernel": os.uname().release,
        "first_boot": first_boot,
    }


FORKS = """
import os, sys
os.urandom(1)
pid = os.fork()
if pid == 0:
    os.urandom(1)
    os._exit(0)
os.waitpid(pid, 0)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the machine's ids are Linux's (systemd's and the kernel's)")
def test_a_record_names_the_machine_and_the_boot_it_was_written_on(shim: Venv, tmp_path: Path) -> None:
    events, script = tmp_path / "events.jsonl", tmp_path / "forks.py"
    script.write_text(FORKS)
    env = {**UNREADY, "URANDOM_POLICY": "pep522", "URANDOM_SHIM_MODE": "report", "URANDOM_SHIM_EVENTS": str(events)}
    result = shim.run(str(script), env=env)
    assert result.returncode == 0, result.stderr
    parent, child = read_events(events)  # a forked child counts afresh, and reads the machine's facts again
    assert child["pid"] != parent["pid"]
    machine = what_this_machine_says()
    for record in (parent, child):
        assert list(record) == RECORD_KEYS, list(record)
        assert {name: record[name] for name in MACHINE_FIELDS} == machine
    assert without_events(result.stderr) == "", result.stderr
    assert not events_files.malformed(parent)


def test_the_machine_facts_are_read_at_the_first_event_and_never_at_start(shim: Venv, tmp_path: Path) -> None:
    env = {**UNREADY, "URANDOM_POLICY": "pep522", "URANDOM_SHIM_MODE": "report", "URANDOM_SHIM_EVENTS": str(tmp_path)}
    # The program's own exit handler runs before the shim's, which loads the event code (and reads the program's
    # facts) at exit while the CRNG is unready, so that a call while the interpreter shuts down is recorded too.
    code = (
        "import atexit, sys\n"
        "print('urandom_shim._events' in sys.modules, 'platform' in sys.modules)\n"
        "atexit.register(lambda: print('urandom_shim._events' in sys.modules, flush=True))"
    )
    result = shim.run("-c", code, env=env)
    # An unready start that makes no call loads no event code, nor anything to read the machine's facts.
    assert result.stdout == "False False\nFalse\n", result.stderr


NAMESPACE = """
set -e
mount --bind "$OS_RELEASE" /usr/lib/os-release   # a FIFO, or a file of the test's: a FIFO must not hang the program
[ -L /etc/os-release ] || mount --bind "$OS_RELEASE" /etc/os-release
mount --bind "$MACHINE_ID" /etc/machine-id
mount -t tmpfs tmpfs /run
mkdir -p /run/systemd/system
touch /run/systemd/first-boot
exec "$@"
"""


@pytest.mark.skipif(sys.platform != "linux", reason="mount namespaces are Linux's")
@pytest.mark.parametrize(
    ("machine_id", "os_release", "expected"),
    [
        ("uninitialized\n", None, {"machine_id": None, "image": None}),
        ("", None, {"machine_id": None, "image": None}),
        ("0123456789ABCDEF0123456789abcdef\n", 'ID=debian\nIMAGE_ID="web-front"\nIMAGE_VERSION=\'2026.12\'\n',
         {"machine_id": "0123456789abcdef0123456789abcdef", "image": "web-front 2026.12"}),
        ("0123456789abcdef0123456789abcdef0\n", "NAME='Debian'\nID=debian\n# VERSION_ID=13\n",
         {"machine_id": None, "image": "debian"}),
    ],
)  # fmt: skip
def test_a_record_keeps_the_machines_other_facts_when_one_is_missing_or_odd(
    shim: Venv, tmp_path: Path, machine_id: str, os_release: str | None, expected: dict[str, Any]
) -> None:
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        pytest.skip("needs root and unshare (util-linux) to mount files over the machine's own, privately")
    missing = [path for path in ("/etc/machine-id", "/usr/lib/os-release") if not os.path.exists(path)]
    if missing:  # a chroot of the matrix (sid) has no machine id: there is nothing to mount a test's file over
        pytest.skip(f"{', '.join(missing)} does not exist here, so no file of the test's can be mounted over it")
    release, machine_file, events = tmp_path / "os-release", tmp_path / "machine-id", tmp_path / "events.jsonl"
    if os_release is None:
        os.mkfifo(release)
    else:
        release.write_text(os_release)
    machine_file.write_text(machine_id)
    env = {**UNREADY, "URANDOM_POLICY": "pep522", "URANDOM_SHIM_MODE": "report", "URANDOM_SHIM_EVENTS": str(events),
           "OS_RELEASE": str(release), "MACHINE_ID": str(machine_file)}  # fmt: skip
    command = [unshare, "--mount", "--propagation", "private", "sh", "-c", NAMESPACE, "sh", str(shim.python)]
    result = subprocess.run(
        [*command, "-c", "import os; os.urandom(1)"], capture_output=True, text=True, env=clean_env(env), timeout=60
    )
    assert result.returncode == 0, result.stderr
    (record,) = read_events(events)
    machine = what_this_machine_says()
    assert {name: record[name] for name in MACHINE_FIELDS} == {**machine, **expected, "first_boot": True}
    assert without_events(result.stderr) == "", result.stderr


def test_the_report_reads_records_with_and_without_the_machine_facts_and_skips_mistyped_ones(tmp_path: Path) -> None:
    old = json.loads(SAMPLE.read_text().splitlines()[1])  # recorded before the facts existed
    new = {**old, "machine_id": "0" * 32, "boot_id": "1" * 32, "hostname": "web-17", "image": "debian 12",
           "kernel": "6.1.0-28-cloud-amd64", "first_boot": True}  # fmt: skip
    unknown = {**new, **dict.fromkeys(MACHINE_FIELDS)}
    wrong = [{**new, "first_boot": "yes"}, {**new, "machine_id": 42}, {**new, "kernel": ["6.1"]}, {**new, "image": {}}]
    path = tmp_path / "events.jsonl"
    path.write_text("".join(f"\n{_events.dumps(record)}\n" for record in [old, new, unknown, *wrong]))
    records, problem, skipped = events_files.read_events(str(path))
    assert problem is None and (len(records), skipped) == (3, 4)
    assert [record.get("hostname") for record in records] == [None, "web-17", None]
    assert events_files.malformed(wrong[0]) == "with a first_boot of the wrong type"


@pytest.mark.parametrize(
    ("text", "image"),
    [
        ('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n', "debian 12"),
        ("ID=debian\nIMAGE_ID=web\nIMAGE_VERSION=7\nVERSION_ID=13\n", "web 7"),
        ("IMAGE_ID=web\n", "web"),
        ("ID=\"debian\"\nVERSION_ID='13'\r\nVERSION_ID=14\n", "debian 14"),
        ("NAME=Nothing\n", None),
        ("", None),
        ("ID=" + "x" * 500 + "\n", "x" * 199 + "…"),
    ],
)
def test_the_image_is_read_from_os_release_as_the_specification_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, image: str | None
) -> None:
    first, second = tmp_path / "etc-os-release", tmp_path / "usr-lib-os-release"
    second.write_text(text)
    monkeypatch.setattr(_events, "OS_RELEASE_FILES", (str(first), str(second)))  # the first is missing
    assert _events.image() == image
    first.write_text("ID=other\n")
    assert _events.image() == "other"
