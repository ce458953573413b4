"""What each record says every policy would do (``under``), in-process: the decision's rows that the differential grid
(tests/test_report_prediction.py) shows in real processes, the record and line that carry it whatever their fields
hold, and the records of an older shim, which carry none.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from urandom_shim import _events, _messages, _policies
from urandom_shim._policies import LEGACY, NATIVE, PEP522, PEP524, Setting, Settings
from urandom_shim.cli import main as cli
from urandom_shim.report import events_files, shim_lines

DATA = Path(__file__).resolve().parent / "data"
RULE = "/etc/urandom-shim.toml (machine file) [[program]] match = 'early-*'"


def configured(
    policy: _policies.Policy = PEP522, source: str = "default", floor: str | None = None, **more: Any
) -> Settings:
    settings = Settings(policy=Setting(policy, source), **{k: Setting(v, "test") for k, v in more.items()})
    settings.floor = floor
    return settings


# -- the decision ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "site", "window", "expected"),
    [
        # The fuse: Random() instances follow the policy's os.urandom row.
        (configured(seed_random_instances="policy"), "random.Random()", None,
         {"native": "fine", "pep524": "wait", "pep522": "raise", "legacy": "fine"}),
        (configured(), "random.Random()", None, dict.fromkeys(("native", "pep524", "pep522", "legacy"), "fine")),
        # A timeout shorter than the window: what follows it; a window seen to close first: a wait.
        (configured(timeout=0.3), "os.urandom", 1.5,
         {"native": "wait", "pep524": "wait-then-raise", "pep522": "raise", "legacy": "weak"}),
        (configured(timeout=0.3), "os.urandom", 0.1, {"native": "wait", "pep524": "wait", "pep522": "raise", "legacy": "weak"}),
        (configured(timeout=0.3), "os.urandom", None,
         {"native": "wait", "pep524": "wait-then-raise", "pep522": "raise", "legacy": "weak"}),
        (configured(timeout=0.3, on_timeout="fallback"), "secrets", 2.0,
         {"native": "wait", "pep524": "wait-then-weak", "pep522": "wait-then-weak", "legacy": "weak"}),
        # A floor: legacy is pep524 (and a fallback a raise, which resolution has already made of on_timeout).
        (configured(floor="/etc/urandom-shim.toml (machine file) (allow_weak = false)"), "os.urandom", None,
         {"native": "wait", "pep524": "wait", "pep522": "raise", "legacy": "wait"}),
        # A [[program]] rule's policy stays, whatever the machine's.
        (configured(PEP524, RULE), "os.urandom", None, dict.fromkeys(("native", "pep524", "pep522", "legacy"), "wait")),
        (configured(LEGACY, RULE), "os.urandom", None, dict.fromkeys(("native", "pep524", "pep522", "legacy"), "weak")),
        # An explicit wait waits under every policy.
        (configured(), "wait", None, dict.fromkeys(("native", "pep524", "pep522", "legacy"), "wait")),
    ],
)  # fmt: skip
def test_each_setting_shapes_what_each_policy_does(
    settings: Settings, site: str, window: float | None, expected: dict[str, str]
) -> None:
    assert _policies.outcomes(settings, site, window) == expected


def test_pypys_own_urandom_is_weak_before_5_18_and_a_floor_lifts_native_there(monkeypatch: pytest.MonkeyPatch) -> None:
    for release, native in (("5.10.0-28-amd64", "weak"), ("5.18.0", "wait"), ("6.12.9+deb13-cloud-amd64", "wait")):
        monkeypatch.setattr(_policies.os, "uname", lambda release=release: type("U", (), {"release": release})())
        assert _policies.outcome(configured(), "os.urandom", NATIVE, pypy=True) == native
        assert _policies.outcome(configured(), "random._inst", NATIVE, pypy=True) == "fine"
        floored = configured(floor="x (allow_weak = false)")
        assert _policies.decide(floored, "os.urandom", NATIVE, pypy=True) == _policies.WAIT
        assert _policies.outcome(floored, "os.urandom", NATIVE, pypy=True) == "wait"
        # CPython's own os.urandom() waits: the floor leaves native alone there.
        assert _policies.decide(floored, "os.urandom", NATIVE, pypy=False) == _policies.UNTOUCHED


def test_the_engine_acts_on_the_decision_the_record_carries() -> None:
    """The engine's action at a site is decide()'s: the table is read in one place only."""
    import inspect

    from urandom_shim import _activation

    source = inspect.getsource(_activation)
    assert "decide(self.settings" in source and "action(" not in source.replace("_action(", "")


# -- the record and the line ----------------------------------------------------------------------------------------

#: Texts of any length up to twice a line's, with the characters that grow when escaped (controls in a line, any
#: non-ASCII character in JSON) drawn often.
TEXT = st.text(
    st.one_of(st.sampled_from("a/\x01\x1b\né😀\u2028"), st.characters(blacklist_categories=("Cs",))), max_size=2000
)


def an_event(**fields: Any) -> dict[str, Any]:
    settings = configured(timeout=0.3)
    event = _events._event(settings, "os.urandom", "os.urandom(16)", "/srv/app.py:3", "raised", "raise", 0.0, 2.0)
    event.update(fields)
    return event


@settings(max_examples=200, deadline=None)
@given(caller=TEXT, source=TEXT, argv=st.lists(TEXT, max_size=40), unit=TEXT, hostname=TEXT)
@example(caller="\x01" * 400, source="\x02" * 400, argv=[], unit="", hostname="")  # escapes four times as long
@example(caller="é" * 1000, source="😀" * 1000, argv=["é" * 200] * 32, unit="é" * 200, hostname="é" * 200)
def test_every_record_and_line_fits_and_keeps_every_field(
    caller: str, source: str, argv: list[str], unit: str, hostname: str
) -> None:
    event = an_event(caller=caller, policy_source=source, argv=argv, unit=unit, hostname=hostname)
    record = _events.fitted(event)
    assert len(b"\n" + record.encode() + b"\n") <= _events.MAX_RECORD
    read = json.loads(record)
    assert set(event) <= set(read), set(event) - set(read)
    assert read["under"] == event["under"] and events_files.malformed(read) is None
    line = _messages.line(_events.describe(event))
    assert len(line) <= _messages.MAX_LINE and not line.endswith("…"), line
    parsed = shim_lines.parse_line(line)
    assert parsed is not None, line
    assert parsed["under"] == event["under"] and parsed["timeout"] == 0.3
    assert parsed["action"] == "raised" and parsed["call"] == "os.urandom(16)"


def test_a_long_caller_and_source_are_shortened_in_their_middle_not_cut_off() -> None:
    caller = "/srv/" + "deep/" * 150 + "app.py:42"
    source = "/etc/" + "x" * 600 + ".toml (machine file)"
    line = _messages.line(_events.describe(an_event(caller=caller, policy_source=source)))
    assert len(line) <= _messages.MAX_LINE
    assert "app.py:42 before the kernel CRNG was ready" in line and "(machine file)); under each policy:" in line
    assert line.endswith("legacy weak bytes.")


# -- records and lines of an older shim -----------------------------------------------------------------------------


def run_report(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(["report", *args])
    return code, capsys.readouterr().out


def test_an_older_shims_records_are_read_by_the_table_and_say_so(capsys: pytest.CaptureFixture[str]) -> None:
    older = DATA / "events-sample-older.jsonl"
    assert all("under" not in json.loads(line) for line in older.read_text().splitlines() if line)
    code, out = run_report("--events", str(older), "--no-journal", "--fail-for", "pep522", capsys=capsys)
    assert code == 1
    assert "would: native waits, pep524 waits, pep522 raises, legacy weak bytes (inferred from the call alone" in out
    _code, found = run_report("--events", str(older), "--no-journal", "--json", capsys=capsys)
    calls = [call for program in json.loads(found)["programs"] for call in program["calls"]]
    assert calls and all(call["inferred"] for call in calls)
    _code, found = run_report("--events", str(DATA / "events-sample.jsonl"), "--no-journal", "--json", capsys=capsys)
    assert not any(call["inferred"] for program in json.loads(found)["programs"] for call in program["calls"])


def test_an_older_shims_line_in_the_journal_still_reads_without_outcomes() -> None:
    older = (
        "urandom-shim: os.urandom(16) called from /srv/app.py:3 before the kernel CRNG was ready, 3.20 s after boot: "
        "waited 1.20 s for strong bytes under policy 'pep524' (from /etc/urandom-shim.toml (machine file))."
    )
    parsed = shim_lines.parse_line(older)
    assert parsed is not None and "under" not in parsed and parsed["action"] == "waited"
    current = _messages.line(_events.describe(an_event(action="waited", would="wait", waited=1.2)))
    assert shim_lines.parse_line(current)["under"]["pep524"] == "wait-then-raise"  # type: ignore[index]


def test_a_record_whose_outcomes_are_not_the_four_policies_is_skipped() -> None:
    good = json.loads(_events.fitted(an_event()))
    assert events_files.malformed(good) is None
    for under in ({"native": "wait"}, {**good["under"], "pep524": "whatever"}, {**good["under"], "extra": "fine"}, []):
        assert events_files.malformed({**good, "under": under}) is not None, under


def test_two_records_that_differ_only_in_their_outcomes_are_two_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A record can add a finding, never take one away: one that says the same call is fine under pep522 stands
    beside the one that says it raises."""
    honest = json.loads(_events.fitted(an_event()))
    forged = {**honest, "under": dict.fromkeys(honest["under"], "fine")}
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (forged, honest)) + "\n")
    code, _out = run_report("--events", str(path), "--no-journal", "--fail-for", "pep522", capsys=capsys)
    assert code == 1


def test_two_machines_whose_calls_differ_only_in_what_a_policy_would_do_keep_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One machine's program has a timeout that a long window outlasts (pep524 raises after it), another's none
    (pep524 waits): over the fleet, each call site keeps its own outcomes, and pep524's verdict is the raise."""
    waits = json.loads(_events.fitted(an_event(machine_id="1" * 32, boot_id="a" * 32)))
    waits["under"] = {"native": "wait", "pep524": "wait", "pep522": "raise", "legacy": "weak"}
    raises = json.loads(_events.fitted(an_event(machine_id="2" * 32, boot_id="b" * 32)))
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    (fleet / "one.jsonl").write_text(json.dumps(waits) + "\n")
    (fleet / "two.jsonl").write_text(json.dumps(raises) + "\n")
    code, out = run_report("--events", str(fleet), "--json", "--fail-for", "pep524", capsys=capsys)
    assert code == 1, out
    (program,) = json.loads(out)["programs"]
    assert sorted(call["outcomes"]["pep524"] for call in program["calls"]) == ["wait", "wait-then-raise"]
    assert all(call["machines"] == 1 for call in program["calls"])


# -- the hostile and newcomer passes' findings ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "pinned"),
    [
        ("default", False),
        ("/etc/urandom-shim.toml (machine file)", False),
        ("urandom-shim simulate --policy", False),
        ("--urandom-policy", False),
        ("environment variable URANDOM_POLICY", True),
        ("/srv/app/pyproject.toml [tool.urandom-shim]", True),
        ("/opt/venv/urandom-shim.toml (environment file)", True),
        ("urandom-shim run --policy", True),
        ("urandom_shim.activate()", True),
        (RULE, True),
    ],
)
def test_a_policy_from_a_source_above_the_machine_file_stays_under_every_policy(source: str, pinned: bool) -> None:
    """What the report says a policy would do is what switching the machine's policy to it does: a policy that a
    unit's environment, a project, a venv's file, a rule or `run --policy` sets outranks the machine file, and stays."""
    settings = configured(LEGACY, source)
    assert settings.pinned is pinned
    found = _policies.outcomes(settings, "os.urandom")
    legacy = {"native": "weak", "pep524": "weak", "pep522": "weak", "legacy": "weak"}
    assert (found == legacy) is pinned, found


def test_a_tiny_timeout_still_reads_back_from_the_line() -> None:
    event = an_event(timeout=1e-05)
    event["under"] = _policies.outcomes(configured(timeout=1e-05), "os.urandom", 2.0)
    line = _messages.line(_events.describe(event))
    assert "raises after its 1e-05 s timeout" in line, line
    parsed = shim_lines.parse_line(line)
    assert parsed is not None and parsed["under"]["pep524"] == "wait-then-raise" and parsed["timeout"] == 1e-05


def test_report_mode_says_a_wait_its_timeout_ends_and_reads_it_back() -> None:
    settings = configured(PEP524, timeout=0.3, mode="report")
    event = _events._event(settings, "os.urandom", "os.urandom(16)", "/srv/app.py:3", "untouched", "wait", 1.5, 1.5)
    line = _messages.line(_events.describe(event))
    assert "would have waited 0.30 s, then raised BlockingIOError (timeout); under each policy:" in line, line
    parsed = shim_lines.parse_line(line)
    assert parsed is not None and parsed["would"] == "wait" and parsed["under"]["pep524"] == "wait-then-raise"


def test_what_an_enforced_call_did_counts_whatever_its_record_predicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An older shim's record (no `under`) of a secrets call that timed out and raised under pep522: the table alone
    says secrets waits under pep522, but the record says what was done, and that is a fact."""
    older = {
        "v": 1, "event": "call", "boot_time": 3.2, "pid": 7, "argv": ["python3", "a.py"], "program": "a.py",
        "unit": None, "call": "secrets.token_bytes()", "site": "secrets", "caller": "/srv/a.py:3",
        "policy": "pep522", "policy_source": "default", "mode": "enforce", "action": "timed-out-raised",
        "would": "wait", "waited": 0.3, "simulated": None,
    }  # fmt: skip
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(older) + "\n")
    code, out = run_report("--events", str(path), "--no-journal", "--fail-for", "pep522", capsys=capsys)
    assert code == 1, out
    # A current record that says less than what was done (forged, or a shipper's edit) can't say it away either.
    current = json.loads(_events.fitted(an_event(action="raised", policy="pep522")))
    current["under"] = dict.fromkeys(current["under"], "fine")
    path.write_text(json.dumps(current) + "\n")
    assert run_report("--events", str(path), "--no-journal", "--fail-for", "pep522", capsys=capsys)[0] == 1


def journal_entry(message: str, pid: int = 7) -> dict[str, Any]:
    return {
        "MESSAGE": message, "_TRANSPORT": "stdout", "_EXE": "/usr/bin/python3.11", "_PID": str(pid), "_UID": "0",
        "_SYSTEMD_UNIT": "app.service", "__MONOTONIC_TIMESTAMP": "5000000", "_BOOT_ID": "b" * 32,
        "_MACHINE_ID": "a" * 32,
    }  # fmt: skip


@pytest.mark.parametrize("older", [False, True])
def test_a_lone_repeat_in_the_journal_is_a_finding_no_record_can_take_in(
    older: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The journal kept only the repeat of a call (its first line was rotated away): it is a finding. A record in
    the events file of the same call, caller and site that says every policy is fine (or, of an older shim, that
    a [[program]] rule keeps it on pep524) must not take it in."""
    event = {**an_event(policy="pep522", action="raised", would="raise"), "event": "repeat", "count": 9}
    line = _messages.line(_events.describe(event))
    if older:
        line = line.split("; under each policy:")[0] + "."
    journal = tmp_path / "journal.json"
    journal.write_text(json.dumps(journal_entry(line)) + "\n")
    forged = json.loads(_events.fitted(an_event(unit="app.service", pid=7, machine_id="a" * 32, boot_id="b" * 32)))
    forged.update(under=dict.fromkeys(forged["under"], "fine"), mode="enforce", action="waited", would="wait")
    if older:
        forged = {k: v for k, v in forged.items() if k not in ("under", "timeout")}
        forged["policy_source"] = RULE
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps(forged) + "\n")
    code, out = run_report(
        "--events", str(events), "--journal-file", str(journal), "--fail-for", "pep522", capsys=capsys
    )
    assert code == 1, out


# -- in real interpreters on the fake kernel -------------------------------------------------------------------------

#: Two threads call os.urandom from one line: one as the window opens, one 0.8 s later; the program closes the window
#: (deletes the fake kernel's flag) at 1.0 s. With a 0.5 s timeout, the first call outlasts it and the second doesn't.
THREADS = """\
import os, sys, threading, time
flag = os.environ["FAKE_KERNEL_UNREADY"]
def call():
    os.urandom(16)
early = threading.Thread(target=call)
early.start()
time.sleep(0.8)
threading.Timer(0.2, os.unlink, (flag,)).start()
call()
early.join()
"""

#: A module global whose __del__ calls os.urandom while the interpreter shuts down.
AT_SHUTDOWN = """\
import os
class Late:
    def __del__(self):
        os.urandom(16)
late = Late()
"""


def report_mode_run(
    shim: Any, fake_kernel: Any, tmp_path: Path, code: str, machine: str, **env: str
) -> tuple[Any, dict[str, Any]]:
    """``code`` in report mode (pep522) on the fake kernel, with ``machine`` in the machine file; its process and
    `report --json` of its events file."""
    import subprocess

    from conftest import clean_env

    flag = tmp_path / "unready"
    flag.touch()
    events = tmp_path / "events.jsonl"
    config = tmp_path / "machine.toml"
    config.write_text(f'policy = "pep522"\nmode = "report"\nevents = "{events}"\n{machine}\n')
    full = {**fake_kernel.env(flag), "URANDOM_SHIM_MACHINE_CONFIG": str(config), "PYTHONHASHSEED": "0", **env}
    done = shim.run("-c", code, env=full, timeout=60)
    flag.unlink(missing_ok=True)
    cli_path = str(shim.path / "bin" / "urandom-shim")
    found = subprocess.run(
        [cli_path, "report", "--events", str(events), "--no-journal", "--json"], capture_output=True, text=True,
        env=clean_env(),
    )  # fmt: skip
    assert found.returncode == 0, found.stderr + done.stderr
    return done, json.loads(found.stdout)


def test_two_threads_on_one_line_whose_windows_differ_are_two_findings(
    shim: Any, fake_kernel: Any, tmp_path: Path
) -> None:
    """The rate limit counts a call into the first of its call site only if every policy would do the same with it:
    the call that outlasts its timeout is a finding of its own, whichever thread returned first."""
    done, report = report_mode_run(shim, fake_kernel, tmp_path, THREADS, "timeout = 0.5")
    assert done.returncode == 0, done.stderr
    (program,) = report["programs"]
    assert sorted(call["outcomes"]["pep524"] for call in program["calls"] if call["site"] == "os.urandom") == [
        "wait",
        "wait-then-raise",
    ], done.stderr
    assert program["under"]["pep524"] == "raise"


def test_a_call_while_the_interpreter_shuts_down_is_recorded(shim: Any, fake_kernel: Any, tmp_path: Path) -> None:
    import threading

    flag_closes = threading.Timer(3.0, lambda: (tmp_path / "unready").unlink(missing_ok=True))
    flag_closes.start()
    try:
        done, report = report_mode_run(shim, fake_kernel, tmp_path, AT_SHUTDOWN, "")
    finally:
        flag_closes.cancel()
    assert done.returncode == 0, done.stderr
    assert "os.urandom(16) called from" in done.stderr, done.stderr
    calls = [call["call"] for program in report["programs"] for call in program["calls"]]
    assert "os.urandom(16)" in calls
