"""What the journal and the kernel log say about a boot, for ``urandom-shim report`` (``urandom_shim.report``:
``journal``, ``kernel_log``, ``shim_lines``, ``stalls``).

The sample, ``tests/data/journal-debian12-cloud-init.jsonl``, is a first boot of Debian 12 with cloud-init 22.4 on the
6.12 kernel, with the times measured on such a boot (SPEC section 7): ``cloud-init-local.service`` started at 15.76 s,
the kernel logged ``random: crng init done`` at 17.40 s while that interpreter was still starting, and its first line
came at 19.41 s. ``early-setup.service`` (Python, started at 15.81 s with ``PYTHONHASHSEED`` set) ran inside the window
and wrote two event lines of the shim in report mode; ``systemd-random-seed.service`` started at 16.92 s and is not
Python. The two event lines are ``_events.describe()`` of :data:`EARLY_CALL` and :data:`EARLY_REPEAT`; after a change
of their wording, ``PYTHONPATH=. python tests/test_report_boot_log.py`` writes them into the sample again.
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import string
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from urandom_shim import _config, _events, _messages, _policies
from urandom_shim.report import journal, journal_boot, kernel_log, shim_lines, stalls
from urandom_shim.report.sources import Kind, said

SAMPLE = Path(__file__).resolve().parent / "data" / "journal-debian12-cloud-init.jsonl"
SAMPLE_BOOT = "5f0c6a1e9b3d4e7a8c2f1d0b6e4a9c37"
SAMPLE_ENTRIES = 37

#: The event lines early-setup.py wrote to stderr: the sample's two ``urandom-shim:`` lines are describe() of these.
EARLY_CALL: dict[str, Any] = {
    "v": 1,
    "event": "call",
    "boot_time": 16.36,  # when the call began; its line reached the journal at 17.41, after the wait
    "pid": 412,
    "argv": ["/usr/bin/python3", "/usr/local/sbin/early-setup.py"],
    "program": None,
    "unit": "early-setup.service",
    "call": "os.urandom(16)",
    "site": "os.urandom",
    "caller": "/usr/local/sbin/early-setup.py:14",
    "policy": "pep522",
    "policy_source": "environment variable URANDOM_POLICY",
    "mode": "report",
    "action": "untouched",
    "would": "raise",
    "waited": 1.05,
    "simulated": None,
    "under": {"native": "wait", "pep524": "wait", "pep522": "raise", "legacy": "weak"},
    "timeout": None,
}
EARLY_REPEAT: dict[str, Any] = {**EARLY_CALL, "event": "repeat", "boot_time": 17.53, "count": 3}


def sample_shim_lines() -> list[str]:
    return [_messages.line(_events.describe(event)) for event in (EARLY_CALL, EARLY_REPEAT)]


def sample() -> list[dict[str, Any]]:
    return [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]


def entry_with(entries: list[dict[str, Any]], text: str) -> dict[str, Any]:
    (found,) = [entry for entry in entries if text in journal.message(entry)]
    return found


@pytest.fixture(autouse=True)
def fresh_patterns() -> Iterator[None]:
    """Each test builds the parser's regular expressions from the templates as they are during it."""
    shim_lines._patterns_cache.clear()
    yield
    shim_lines._patterns_cache.clear()


# -- parse_line: the inverse of _events.describe() -----------------------------------------------------------------

CALLS = ("os.urandom(16)", "os.urandom(32) (from random.SystemRandom)", "secrets.token_hex(32)", "Random() seeding")


def an_event(**fields: Any) -> dict[str, Any]:
    event = {
        "event": "call",
        "call": "os.urandom(16)",
        "caller": "/opt/app/app.py:7",
        "simulated": None,
        "boot_time": 3.14159,
        "mode": "enforce",
        "action": _events.WAITED,
        "waited": 1.0049,
        "policy": "pep524",
        "policy_source": "/etc/urandom-shim.toml [[program]] match = 'cloud-*'",
        "would": "wait",
        "under": {"native": "wait", "pep524": "wait-then-raise", "pep522": "raise", "legacy": "wait-then-weak"},
        "timeout": 2.5,
    }
    event.update(fields)
    return event


def parsed_fields(event: dict[str, Any]) -> dict[str, Any]:
    """What parse_line gives back for ``event``: the fields its line shows, as the line shows them."""
    shown = {
        "event": event["event"],
        "call": event["call"],
        "caller": event["caller"],
        "simulated": bool(event["simulated"]),
        "boot_time": float(f"{event['boot_time']:.2f}"),
    }
    under = {
        "under": event["under"],
        # The line names a timeout only where a policy's wait ends in it.
        "timeout": event["timeout"] if any(o.startswith("wait-then") for o in event["under"].values()) else None,
    }
    if event["event"] == "repeat":
        return {**shown, "count": event["count"], **under}
    seconds = "{waited" in _events.DONE[event["action"]]
    return {
        **shown,
        "mode": event["mode"],
        "action": event["action"],
        "waited": float(f"{event['waited']:.2f}") if seconds else 0.0,
        "policy": event["policy"],
        "policy_source": event["policy_source"],
        "would": event["would"] if event["mode"] == "report" else shim_lines.WOULD_OF_ACTION[event["action"]],
        **under,
    }


#: What each action says the policy table chose, independently of shim_lines' table.
WOULD_IN_ENFORCE = {
    "untouched": "untouched",
    "waited": "wait",
    "timed-out-raised": "wait",
    "timed-out-best-effort": "wait",
    "raised": "raise",
    "best-effort": "best-effort",
}


def test_the_actions_and_what_they_say_about_the_policy_are_the_ones_events_has() -> None:
    assert set(WOULD_IN_ENFORCE) == set(_events.ACTIONS) == set(shim_lines.WOULD_OF_ACTION)
    assert shim_lines.WOULD_OF_ACTION == WOULD_IN_ENFORCE
    assert set(WOULD_IN_ENFORCE.values()) == set(_events.WOULD)


@pytest.mark.parametrize("simulated", [None, "unready-forever"])
@pytest.mark.parametrize("action", _events.ACTIONS)
@pytest.mark.parametrize("mode", _policies.MODE_CHOICES)
def test_parse_line_reads_back_every_call_event(mode: str, action: str, simulated: str | None) -> None:
    wills = list(_events.WOULD) if mode == "report" else [WOULD_IN_ENFORCE[action]]
    for call, would, prefixed in itertools.product(CALLS, wills, (True, False)):
        event = an_event(call=call, mode=mode, action=action, would=would, simulated=simulated)
        line = _events.describe(event)
        text = _messages.line(line) if prefixed else line
        assert text.startswith(_messages.PREFIX) is prefixed
        parsed = shim_lines.parse_line(text)
        assert parsed == parsed_fields(event), text
        assert parsed["mode"] == mode and parsed["action"] == action and parsed["simulated"] is bool(simulated)
        assert parsed["would"] == (would if mode == "report" else WOULD_IN_ENFORCE[action])


@pytest.mark.parametrize("simulated", [None, "unready-forever"])
@pytest.mark.parametrize("call", CALLS)
def test_parse_line_reads_back_every_repeat_event(call: str, simulated: str | None) -> None:
    event = {**an_event(call=call, simulated=simulated), "event": "repeat", "count": 41}
    parsed = shim_lines.parse_line(_messages.line(_events.describe(event)))
    assert parsed == {
        "event": "repeat",
        "call": call,
        "caller": "/opt/app/app.py:7",
        "simulated": simulated is not None,
        "boot_time": 3.14,
        "count": 41,
        "under": event["under"],  # a repeat says what every policy would do too: no record can take it in
        "timeout": 2.5,
    }


def test_the_call_keeps_its_from_and_the_caller_is_after_the_last_called_from() -> None:
    event = an_event(call="os.urandom(32) (from random.SystemRandom)", caller="/srv/x called from here/x.py:3")
    parsed = shim_lines.parse_line(_events.describe(event))
    assert parsed is not None
    # Split at the LAST " called from " before the CRNG phrase: a caller holding one is taken as part of the call.
    assert parsed["call"] == "os.urandom(32) (from random.SystemRandom) called from /srv/x"
    assert parsed["caller"] == "here/x.py:3"
    plain = shim_lines.parse_line(_events.describe(an_event(call="os.urandom(32) (from random.SystemRandom)")))
    assert plain is not None
    assert (plain["call"], plain["caller"]) == ("os.urandom(32) (from random.SystemRandom)", "/opt/app/app.py:7")


def test_a_phrase_without_seconds_reads_as_no_wait() -> None:
    for action in (_events.RAISED, _events.BEST_EFFORT):
        assert "{waited" not in _events.DONE[action]
        parsed = shim_lines.parse_line(_events.describe(an_event(action=action, waited=7.5)))
        assert parsed is not None and parsed["waited"] == 0.0 and parsed["action"] == action


TEXT = st.text(alphabet=string.ascii_letters + string.digits + " ()[]/:.,;'_-=*\"", max_size=40)
ANCHOR = " before the kernel CRNG was ready"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    call=TEXT.filter(lambda t: ANCHOR not in t),
    caller=TEXT.filter(lambda t: ANCHOR not in t and " called from " not in t),
    policy=TEXT.filter(lambda t: "' (from " not in t),
    source=TEXT,
    boot_time=st.floats(min_value=0, max_value=10**7, allow_nan=False),
    waited=st.floats(min_value=0, max_value=10**4, allow_nan=False),
    mode=st.sampled_from(_policies.MODE_CHOICES),
    action=st.sampled_from(_events.ACTIONS),
    would=st.sampled_from(sorted(_events.WOULD)),
    simulated=st.sampled_from([None, "unready"]),
    repeat=st.booleans(),
)
def test_parse_line_reads_back_any_text_in_the_fields(
    call: str,
    caller: str,
    policy: str,
    source: str,
    boot_time: float,
    waited: float,
    mode: str,
    action: str,
    would: str,
    simulated: str | None,
    repeat: bool,
) -> None:
    if mode == "enforce":
        would = WOULD_IN_ENFORCE[action]
    event = an_event(
        call=call,
        caller=caller,
        policy=policy,
        policy_source=source,
        boot_time=boot_time,
        waited=waited,
        mode=mode,
        action=action,
        would=would,
        simulated=simulated,
    )
    if repeat:
        event.update(event="repeat", count=5)
    assert shim_lines.parse_line(_messages.line(_events.describe(event))) == parsed_fields(event)


def other_messages() -> list[str]:
    """Every other template of the catalogue, filled in with placeholder values."""
    lines = []
    for name, template in vars(_messages).items():
        if not (name.isupper() and isinstance(template, str)) or name.startswith("EVENT_") or name == "PREFIX":
            continue
        values = {}
        for _text, field, spec, _conversion in string.Formatter().parse(template):
            if field is not None:
                values[field] = 1.5 if spec else "x"
        try:
            lines.append(_messages.line(template.format(**values)))
        except (KeyError, AttributeError, IndexError, ValueError):
            continue
    return lines


def test_parse_line_reads_no_event_in_other_lines() -> None:
    problems = [_messages.line(problem) for problem in _config.environment_problems({"URANDOM_POLICY": "x"})]
    assert problems and "URANDOM_POLICY" in problems[0]
    others = other_messages()
    assert len(others) >= 50
    good = _events.describe(an_event())
    report = _events.describe(an_event(mode="report", action=_events.UNTOUCHED, would="raise"))
    for text in [
        *problems,
        *others,
        "",
        _messages.PREFIX,
        "Cloud-init v. 22.4.2 running 'init-local' at Fri, 04 Dec 2026 10:00:19 +0000. Up 19.38 seconds.",
        "random: crng init done",
        good[: good.index(" s after boot")],  # cut short
        good + " and more",
        good.replace("waited 1.00 s for strong bytes", "waited a while"),  # an action it doesn't know
        report.replace("would have raised BlockingIOError", "would have done something"),
        report[:-1],  # without its full stop
    ]:
        assert shim_lines.parse_line(text) is None, text
    assert shim_lines.parse_line(good) is not None and shim_lines.parse_line(report) is not None


def test_the_parser_follows_the_templates_wording(monkeypatch: pytest.MonkeyPatch) -> None:
    before = _events.describe(an_event())
    monkeypatch.setattr(_messages, "EVENT_WHERE", "{call} by {caller}, the CRNG unready{simulated}, at {boot_time:.2f}")
    monkeypatch.setattr(_messages, "EVENT_SIMULATED", " [simulated]")
    monkeypatch.setattr(_messages, "EVENT_ENFORCED", "{where} -> {done} ({policy} from {source}) {under}")
    monkeypatch.setattr(
        _messages, "EVENT_REPORT_ONLY", "report: {where} -> {done}; {policy} ({source}) would {would} {under}"
    )
    monkeypatch.setattr(_messages, "EVENT_UNDER", "[{outcomes}]")
    monkeypatch.setitem(_messages.OUTCOME_PHRASES, "wait-then-raise", "raises at {timeout:g} s")
    monkeypatch.setattr(_messages, "EVENT_REPEAT", "{where} x{count} {under}")
    monkeypatch.setitem(_events.DONE, _events.WAITED, "waited for {waited:.2f} seconds")
    monkeypatch.setitem(_events.WOULD, "raise", "raised an error")
    shim_lines._patterns_cache.clear()
    for event in [
        an_event(simulated="unready"),
        an_event(mode="report", action=_events.UNTOUCHED, would="raise", call="os.urandom(8) (from x)"),
        {**an_event(), "event": "repeat", "count": 2},
    ]:
        line = _events.describe(event)
        assert " by /opt/app/app.py:7, the CRNG unready" in line
        assert shim_lines.parse_line(line) == parsed_fields(event), line
    assert shim_lines.parse_line(before) is None  # the old wording is no longer an event


def test_a_template_with_a_field_the_parser_does_not_know_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_messages, "EVENT_REPEAT", "{where}: {count} more such calls in {unit}.")
    with pytest.raises(KeyError, match="unit"):
        shim_lines.parse_line("anything")


# -- the journal's fields ----------------------------------------------------------------------------------------------


def test_message_decodes_what_journald_gives_as_bytes() -> None:
    assert journal.message({"MESSAGE": "plain"}) == "plain"
    assert journal.message({"MESSAGE": list("caf\u00e9".encode())}) == "caf\u00e9"
    assert journal.message({"MESSAGE": [104, 105, 0xFF]}) == "hi\ufffd"
    assert journal.message({"MESSAGE": [27, 91, 49, 109, 104, 105]}) == "\x1b[1mhi"
    assert journal.message({"MESSAGE": ["first", "second"]}) == "first"
    assert journal.message({"MESSAGE": [[111, 107], "second"]}) == "ok"
    assert journal.message({"MESSAGE": None}) == ""  # journalctl's null: too large to print without --all
    assert journal.message({}) == ""
    assert journal.message({"MESSAGE": [300]}) == ""  # not byte values


def test_at_prefers_the_kernels_own_timestamp() -> None:
    assert journal.at({"__MONOTONIC_TIMESTAMP": "7421907", "_SOURCE_MONOTONIC_TIMESTAMP": "2816560"}) == 2.81656
    assert journal.at({"__MONOTONIC_TIMESTAMP": "15760418"}) == 15.760418
    assert journal.at({"__MONOTONIC_TIMESTAMP": "15760418", "_SOURCE_MONOTONIC_TIMESTAMP": "bad"}) == 15.760418
    missing = journal.at({})
    assert missing != missing  # NaN


# -- one machine's journal: saved, and this boot's -------------------------------------------------------------------


def sample_facts(found: journal_boot.Found) -> dict[str, Any]:
    """What the report takes from the sample's boot, as read."""
    (boot,) = found.boots
    return {
        "boot_id": boot["boot_id"],
        "crng": boot["crng_init_done"],
        "kernel": boot["kernel"],
        "events": [(event["unit"], event["call"], event["event"]) for event in boot["events"]],
        "stalls": [stall["unit"] for stall in boot["stalls"]],
    }


SAMPLE_FACTS = {
    "boot_id": SAMPLE_BOOT,
    "crng": 17.400312,
    "kernel": "6.12.12+bpo-cloud-amd64",
    "events": [("early-setup.service", "os.urandom(16)", "call"), ("early-setup.service", "os.urandom(16)", "repeat")],
    "stalls": ["cloud-init-local.service"],
}


def test_a_saved_export_is_read_into_its_boots_facts() -> None:
    found = journal_boot.read_saved(str(SAMPLE))
    assert found.source["problems"] == [] and found.source["read"] is True
    assert sample_facts(found) == SAMPLE_FACTS
    assert found.source["records"] == 2 and 0 < found.source["entries"] < SAMPLE_ENTRIES  # the selected ones
    assert journal.read_export(str(SAMPLE)) == (sample(), 0)


def test_a_saved_exports_lines_that_are_not_entries_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    text = SAMPLE.read_bytes()
    lines = text.splitlines(keepends=True)
    path.write_bytes(
        lines[0] + b"garbage\n" + b"[1, 2]\n" + b"\n" + b"\xff\xfe{}\n" + b"".join(lines[1:]) + lines[-1][:40]
    )
    found = journal_boot.read_saved(str(path))
    assert found.source["problems"] == [] and sample_facts(found) == SAMPLE_FACTS
    assert journal.read_export(str(path)) == (sample(), 4)  # the blank line does not count


def test_a_saved_export_that_cant_be_read_says_why_as_a_kind_and_never_raises(tmp_path: Path) -> None:
    def problem(path: Path) -> tuple[Kind, str]:
        found = journal_boot.read_saved(str(path))
        assert found.boots == [] and found.source["read"] is False
        (only,) = found.source["problems"]
        return only["kind"], said(only)

    missing = tmp_path / "nothing.jsonl"
    # A path given that does not exist is a typo, never "nothing there": --allow-empty does not excuse it.
    assert problem(missing) == (Kind.NO_SUCH_PATH, f"{missing}: can't be read (No such file or directory).")
    assert problem(tmp_path) == (Kind.NOT_REGULAR, f"{tmp_path}: can't be read (not a regular file (a directory)).")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert problem(empty) == (Kind.EMPTY, f"{empty}: holds no journal entries.")
    text = tmp_path / "notes.txt"
    text.write_text(
        "Dec 04 10:00:17 debian kernel: random: crng init done\nDec 04 10:00:19 debian cloud-init[409]: x\n"
    )
    kind, words = problem(text)
    assert kind == Kind.NOTHING_READABLE and words == f"{text}: " + _messages.REPORT_JOURNAL_FILE_NOT_JSON.format(
        lines=2
    )
    assert "journalctl -o json" in words


def test_a_saved_export_of_several_boots_reads_every_boot(tmp_path: Path) -> None:
    """A saved journal of two boots (``journalctl -o json`` without ``-b``): each is read, with its own stalls."""
    earlier = [{**entry, "_BOOT_ID": "0" * 32} for entry in sample()]
    path = tmp_path / "all.jsonl"
    path.write_text("".join(json.dumps(entry) + "\n" for entry in [*earlier, *sample()]))
    found = journal_boot.read_saved(str(path))
    assert found.source["problems"] == []
    first, last = (journal_boot.Found(found.source, [boot]) for boot in found.boots)
    assert sample_facts(last) == SAMPLE_FACTS
    assert sample_facts(first) == {**SAMPLE_FACTS, "boot_id": "0" * 32}


def fake_journalctl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> Path:
    """``journalctl`` on an otherwise empty PATH: a shell script that records its arguments (each run's, then a line
    ``--``), then runs ``script``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "journalctl"
    tool.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" -- >> {tmp_path}/args\n{script}\n')
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    return tmp_path / "args"


def runs(args: Path) -> list[list[str]]:
    """The arguments of each journalctl the fake recorded."""
    return [run.strip("\n").split("\n") for run in args.read_text().split("\n--\n") if run.strip()]


def test_this_boots_journal_is_read_by_a_selecting_journalctl_and_the_stalls_by_a_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = fake_journalctl(tmp_path, monkeypatch, f"exec /bin/cat {SAMPLE}")
    found = journal_boot.read_this_boot()
    assert found.source["problems"] == [] and sample_facts(found) == SAMPLE_FACTS
    select, own = runs(args)
    assert select == ["-b", *journal.selecting()], "only the lines that matter, cut to the fields the report reads"
    assert "--grep" in select and "--output-fields=" + ",".join(journal.FIELDS) in select
    # The stalls: the units started before crng init done, by name.
    assert own[:2] == ["-b", "-o"] and "_SYSTEMD_UNIT=cloud-init-local.service" in own and "--grep" not in own


def test_this_boots_journal_without_journalctl_is_absent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    found = journal_boot.read_this_boot()
    (problem,) = found.source["problems"]
    assert found.boots == [] and found.source["read"] is False and found.source["absent"] is True
    assert problem["kind"] == Kind.NO_JOURNALCTL and problem["problem"] == _messages.REPORT_JOURNALCTL_MISSING
    assert problem["problem"].endswith(".") and "journalctl" in problem["problem"]


HINT = (
    "Hint: You are currently not seeing messages from other users and the system.\n"
    "      Users in groups 'adm', 'systemd-journal' can see all messages.\n"
    "      Pass -q to turn off this notice."
)


@pytest.mark.parametrize(
    ("script", "found", "kind"),
    [
        # Not root, not in the groups: only the user's own entries, and a hint.
        (f"/bin/cat >&2 <<'EOF'\n{HINT}\nEOF\necho '{{\"MESSAGE\":\"mine\"}}'", 1, Kind.PERMISSION),
        ("echo 'No journal files were opened due to insufficient permissions.' >&2", 0, Kind.PERMISSION),
        (
            "echo 'Data from the specified boot (+0) is not available: No such boot ID in journal' >&2\nexit 1",
            0,
            Kind.NO_BOOT,
        ),
        ("exit 0", 0, Kind.NO_BOOT),  # no journal at all (a container): nothing, and nothing said
        ("exit 1", 0, Kind.NO_BOOT),  # what journalctl --grep does when no line matched: exit 1, nothing said
        ("echo 'Failed to iterate through journal: Bad message' >&2\nexit 2", 0, Kind.JOURNALCTL_FAILED),
    ],
)
def test_this_boots_journal_says_why_journalctl_gave_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str, found: int, kind: Kind
) -> None:
    fake_journalctl(tmp_path, monkeypatch, script)
    read = journal_boot.read_this_boot()
    assert read.source["entries"] == found and read.source["read"] is bool(found)
    (problem,) = read.source["problems"]
    assert problem["kind"] == kind and problem["path"] is None
    text = problem["problem"]
    assert "\n" not in text and len(text) < 300
    assert read.source["absent"] is (kind in (Kind.NO_BOOT, Kind.NO_JOURNALCTL))
    if kind == Kind.PERMISSION:
        assert text == _messages.REPORT_JOURNAL_PERMISSION
        assert "root" in text and "systemd-journal" in text and "adm" in text
    elif "Bad message" in script:
        assert text == "journalctl failed (exit status 2): Failed to iterate through journal: Bad message"
    elif "exit 1" in script and "Data from" in script:
        assert text == _messages.REPORT_JOURNAL_NO_BOOT.format(
            detail="Data from the specified boot (+0) is not available: No such boot ID in journal"
        )
    else:
        assert text == _messages.REPORT_JOURNAL_NO_BOOT.format(detail=_messages.REPORT_JOURNAL_NOTHING_LOGGED)


def test_this_boots_journal_gives_up_after_its_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_journalctl(tmp_path, monkeypatch, "exec /bin/sleep 30")
    found = journal_boot.read_this_boot(timeout=0.3)
    (problem,) = found.source["problems"]
    assert found.boots == [] and problem["kind"] == Kind.TIMED_OUT
    assert problem["problem"] == "journalctl did not finish within 0.3 s, so the journal was not read."


def test_this_boots_journal_with_a_journalctl_it_cannot_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_journalctl(tmp_path, monkeypatch, "exit 0")
    (tmp_path / "bin" / "journalctl").chmod(0o644)
    found = journal_boot.read_this_boot()
    (problem,) = found.source["problems"]
    assert found.boots == [] and problem["kind"] == Kind.JOURNALCTL_FAILED
    assert problem["problem"] == _messages.REPORT_JOURNALCTL_NOT_STARTED.format(error="Permission denied")


# -- crng_init_done ----------------------------------------------------------------------------------------------------


def test_crng_init_done_from_the_journal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel_log, "KMSG", "/nonexistent/kmsg")
    when, source = kernel_log.crng_init_done(sample())
    assert source == "the journal" == kernel_log.FROM_JOURNAL
    assert when == 17.400312 and round(when, 2) == 17.40  # the kernel's time, not when journald wrote it (17.401012)


def test_the_journals_crng_line_must_be_the_kernels(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # A script that copied dmesg into the journal does not say when the CRNG was ready.
    echo = {"_TRANSPORT": "stdout", "__MONOTONIC_TIMESTAMP": "30000000", "MESSAGE": "[ 17.4] random: crng init done"}
    monkeypatch.setattr(kernel_log, "KMSG", str(tmp_path / "missing"))
    assert kernel_log.crng_init_done([echo])[0] is None
    kernel = {"_TRANSPORT": "kernel", "__MONOTONIC_TIMESTAMP": "9", "_SOURCE_MONOTONIC_TIMESTAMP": "4000000"}
    old = {**kernel, "MESSAGE": "random: nonblocking pool is initialized"}  # a kernel before 4.8
    assert kernel_log.crng_init_done([echo, old]) == (4.0, "the journal")


def kmsg_file(tmp_path: Path, records: list[str]) -> Path:
    path = tmp_path / "kmsg"
    path.write_text("".join(record + "\n" for record in records))
    return path


KMSG_RECORDS = [
    "5,0,0,-;Linux version 6.12.12+bpo-cloud-amd64 (debian-kernel@lists.debian.org)",
    "6,1,0,-;Command line: BOOT_IMAGE=/boot/vmlinuz root=/dev/vda1 ro console=ttyS0",
    "6,2,1904118,-;virtio_blk virtio1: [vda] 8388608 512-byte logical blocks (4.29 GB/4.00 GiB)",
    " SUBSYSTEM=virtio",
    " DEVICE=+virtio:virtio1",
    "14,3,2000000,-;echo: random: crng init done",  # user space wrote this (facility 1): not the kernel's
    "30,4,5661902,-;systemd[1]: systemd 252.33-1~deb12u1 running in system mode",
    "5,5,17400312,-;random: crng init done",
    "6,6,17500000,c;random: crng init done again, as a continuation",
]


def test_crng_init_done_from_the_kernel_log(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(kernel_log, "KMSG", str(kmsg_file(tmp_path, KMSG_RECORDS)))
    assert kernel_log.crng_init_done(None) == (17.400312, "/dev/kmsg")
    assert kernel_log.crng_init_done([]) == (17.400312, kernel_log.FROM_KMSG)
    without = [entry for entry in sample() if "crng" not in journal.message(entry)]
    boot_id = tmp_path / "boot_id"
    monkeypatch.setattr(kernel_log, "BOOT_ID", str(boot_id))
    boot_id.write_text("5f0c6a1e-9b3d-4e7a-8c2f-1d0b6e4a9c37\n")  # the sample's boot is this one
    assert kernel_log.crng_init_done(without) == (17.400312, "/dev/kmsg")


def test_the_kernel_log_is_not_read_for_another_boots_journal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(kernel_log, "KMSG", str(kmsg_file(tmp_path, KMSG_RECORDS)))
    boot_id = tmp_path / "boot_id"
    boot_id.write_text("acb9ef6f-1988-499b-9ee7-3b08cee0e2e0\n")
    monkeypatch.setattr(kernel_log, "BOOT_ID", str(boot_id))
    without = [entry for entry in sample() if "crng" not in journal.message(entry)]
    assert kernel_log.crng_init_done(without) == (None, kernel_log.CRNG_OTHER_BOOT)
    monkeypatch.setattr(kernel_log, "BOOT_ID", str(tmp_path / "unknown"))  # this boot unknown: the log may tell
    assert kernel_log.crng_init_done(without) == (17.400312, "/dev/kmsg")


def test_crng_init_done_says_why_it_does_not_know(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(kernel_log, "KMSG", str(kmsg_file(tmp_path, KMSG_RECORDS[:5])))
    assert kernel_log.crng_init_done(None) == (None, kernel_log.CRNG_KMSG_WITHOUT)
    # The oldest record left is not the boot's first: the buffer has wrapped, and the line may have been in it.
    wrapped = [record.replace(",", ",81", 1) if not record.startswith(" ") else record for record in KMSG_RECORDS[:5]]
    assert wrapped[0].startswith("5,810,")
    monkeypatch.setattr(kernel_log, "KMSG", str(kmsg_file(tmp_path, wrapped)))
    assert kernel_log.crng_init_done(None) == (None, "the kernel log no longer holds it (its ring buffer has wrapped)")
    monkeypatch.setattr(kernel_log, "KMSG", str(tmp_path / "absent"))
    assert kernel_log.crng_init_done(None) == (None, f"the kernel log ({tmp_path / 'absent'}) does not exist here")


def test_an_unreadable_kernel_log_says_run_as_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = str(kmsg_file(tmp_path, KMSG_RECORDS))
    monkeypatch.setattr(kernel_log, "KMSG", path)
    real_open = os.open

    def restricted(name: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if name == path:
            raise PermissionError(errno.EPERM, "Operation not permitted")  # what dmesg_restrict=1 says
        return real_open(name, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", restricted)
    when, reason = kernel_log.crng_init_done(None)
    assert when is None and reason == "the kernel log is not readable here (dmesg_restrict): run as root"


def test_crng_init_done_off_linux(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(kernel_log, "KMSG", str(kmsg_file(tmp_path, KMSG_RECORDS)))
    monkeypatch.setattr(sys, "platform", "darwin")
    assert kernel_log.crng_init_done(None) == (None, "this is not Linux")
    assert kernel_log.crng_init_done(sample())[1] == "the journal"  # a saved journal of a Linux machine still tells


def device(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, reads: list[Any]) -> list[Any]:
    """Make the kernel log behave as /dev/kmsg does: one record per read, EPIPE where ``reads`` has an exception,
    EAGAIN once it has none left."""
    path = str(kmsg_file(tmp_path, []))
    monkeypatch.setattr(kernel_log, "KMSG", path)
    real_open, real_read = os.open, os.read
    opened: list[int] = []
    pending = list(reads)

    def kmsg_open(name: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        fd = real_open(name, flags, *args, **kwargs)
        if name == path:
            assert flags & os.O_NONBLOCK
            opened.append(fd)
        return fd

    def kmsg_read(fd: int, size: int) -> bytes:
        if fd not in opened:
            return real_read(fd, size)
        if not pending:
            raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
        step = pending.pop(0)
        if isinstance(step, BaseException):
            raise step
        assert len(step) <= size
        return bytes(step + "\n", "utf-8")

    monkeypatch.setattr(os, "open", kmsg_open)
    monkeypatch.setattr(os, "read", kmsg_read)
    return pending


def test_a_record_overwritten_while_reading_is_skipped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    epipe = BrokenPipeError(errno.EPIPE, "Broken pipe")
    left = device(monkeypatch, tmp_path, [KMSG_RECORDS[0], epipe, "5,900,17400312,-;random: crng init done"])
    assert kernel_log.crng_init_done(None) == (17.400312, "/dev/kmsg")
    assert left == []
    device(monkeypatch, tmp_path, [KMSG_RECORDS[0], epipe, "6,900,18000000,-;virtio_net virtio0 enp0s2: renamed"])
    assert kernel_log.crng_init_done(None) == (None, kernel_log.CRNG_KMSG_WRAPPED)
    device(monkeypatch, tmp_path, [KMSG_RECORDS[0], KMSG_RECORDS[1]])  # EAGAIN: nothing newer
    assert kernel_log.crng_init_done(None) == (None, kernel_log.CRNG_KMSG_WITHOUT)


def test_this_machines_kernel_log_answers_without_raising() -> None:
    when, said = kernel_log.crng_init_done(None)
    assert (when is None and said) or (isinstance(when, float) and when >= 0 and said == "/dev/kmsg"), (when, said)


# -- stalls ------------------------------------------------------------------------------------------------------------


def test_the_stall_of_cloud_init_local_on_the_sample() -> None:
    entries = sample()
    crng, _source = kernel_log.crng_init_done(entries)
    found = stalls.stalls(entries, crng)
    assert [stall["unit"] for stall in found] == ["cloud-init-local.service"]
    (stall,) = found
    assert round(stall["started"], 2) == 15.76 and round(stall["crng_init_done"], 2) == 17.40
    assert stall["lost"] == 1.64
    assert round(stall["first_line"], 2) == 19.41
    assert stall["exe"] == "/usr/bin/python3.11"
    assert set(stall) == {"unit", "started", "first_line", "crng_init_done", "lost", "exe", "python", "note", "avoid"}
    assert stall["python"] is True and stall["note"] is None
    run, hashseed, entropy = stall["avoid"]
    assert "`urandom-shim run --policy legacy -- /usr/bin/python3 /usr/bin/cloud-init init --local`" in run
    assert "PYTHONHASHSEED" in run and "floor" in run
    assert "Environment=PYTHONHASHSEED=0 in cloud-init-local.service" in hashseed
    assert "virtio-rng" in entropy and "systemd-random-seed" in entropy


def through(comm: str, exe: str, cmdline: str) -> list[dict[str, Any]]:
    """The sample, with cloud-init-local's lines written by another program."""
    entries = sample()
    for entry in entries:
        if entry.get("_SYSTEMD_UNIT") == "cloud-init-local.service":
            entry.update(_COMM=comm, _EXE=exe, _CMDLINE=cmdline)
    return entries


def test_a_stall_behind_tee_as_a_real_debian_boot_logs_cloud_init() -> None:
    """Debian's cloud.cfg sends cloud-init's output through `tee -a /var/log/cloud-init-output.log`: the journal sees
    tee, not Python (measured on the real boots of tests/boot). The stall is still reported, saying so."""
    entries = through("tee", "/usr/bin/tee", "tee -a /var/log/cloud-init-output.log")
    (stall,) = stalls.stalls(entries, 17.400312)
    assert stall["unit"] == "cloud-init-local.service" and stall["lost"] == 1.64 and stall["python"] is None
    assert "through tee, so the journal does not name its interpreter" in stall["note"]
    assert "`urandom-shim run --policy legacy -- ...`" in stall["avoid"][0]  # not tee's command line


def test_a_stall_behind_tee_whose_programs_log_lines_of_their_own() -> None:
    """Debian 13's cloud-init-main.service (measured on the real boot of tests/boot): its first lines come through
    tee, then the programs it runs (useradd, for the default user) log their own. Still the stall of its Python."""
    entries = through("tee", "/usr/bin/tee", "tee -a /var/log/cloud-init-output.log")
    last = max(journal.at(entry) for entry in entries if entry.get("_SYSTEMD_UNIT") == "cloud-init-local.service")
    useradd = {"_SYSTEMD_UNIT": "cloud-init-local.service", "_COMM": "useradd", "_EXE": "/usr/sbin/useradd"}
    said = {"_PID": "367", "MESSAGE": "new user: name=debian, UID=1000", "__MONOTONIC_TIMESTAMP": str(int(last * 1e6))}
    entries.append({**useradd, **said})
    (stall,) = stalls.stalls(entries, 17.400312)
    assert stall["unit"] == "cloud-init-local.service" and stall["lost"] == 1.64 and stall["python"] is None
    assert round(stall["first_line"], 2) == 19.41, stall


def test_a_unit_that_runs_no_python_is_no_stall() -> None:
    entries = through("bash", "/usr/bin/bash", "/bin/bash /usr/local/sbin/setup.sh")
    assert stalls.stalls(entries, 17.400312) == []


def test_what_the_sample_holds_that_is_no_stall() -> None:
    entries = sample()
    started = {stalls.started_unit(entry): journal.at(entry) for entry in entries if stalls.started_unit(entry)}
    # early-setup (Python) and systemd-random-seed (not Python) started before the CRNG was ready too, and the two
    # that started before journald did so through the kernel's buffer, without a UNIT field.
    assert {unit for unit, when in started.items() if when < 17.400312} == {
        "systemd-journald.service",
        "systemd-remount-fs.service",
        "cloud-init-local.service",
        "early-setup.service",
        "systemd-random-seed.service",
    }
    early = [entry for entry in entries if entry.get("_SYSTEMD_UNIT") == "early-setup.service"]
    assert all(stalls.is_python(entry) for entry in early)
    assert min(journal.at(entry) for entry in early) < 17.400312  # its first line came in the window
    seed = entry_with(entries, "Kernel entropy pool is not initialized yet")
    assert not stalls.is_python(seed) and journal.at(seed) < 17.400312
    assert stalls.kernel_release(entries) == (6, 12)


def test_no_stalls_without_the_time_of_crng_init_done() -> None:
    assert stalls.stalls(sample(), None) == []


def test_the_stall_window_follows_the_crng_time() -> None:
    entries = sample()
    # Had the CRNG been ready before any unit started, nothing stalled; had it been later than every first line of
    # early-setup.py, that unit would have stalled too.
    assert stalls.stalls(entries, 10.0) == []
    later = [stall["unit"] for stall in stalls.stalls(entries, 16.0)]
    assert later == ["cloud-init-local.service", "early-setup.service"]  # by start


def test_a_start_logged_through_the_kernel_buffer_counts() -> None:
    entries = sample()
    start = entry_with(entries, "Starting cloud-init-local.service")
    for name in ("UNIT", "_PID", "_COMM", "_EXE", "_CMDLINE", "MESSAGE_ID", "JOB_ID", "JOB_TYPE", "INVOCATION_ID"):
        del start[name]
    start.update(_TRANSPORT="kernel", SYSLOG_PID="1", _SOURCE_MONOTONIC_TIMESTAMP=start["__MONOTONIC_TIMESTAMP"])
    start["__MONOTONIC_TIMESTAMP"] = "7422400"  # imported when journald started
    (stall,) = stalls.stalls(entries, 17.400312)
    assert stall["unit"] == "cloud-init-local.service" and stall["lost"] == 1.64


def test_which_starting_lines_name_a_unit() -> None:
    def kmsg(text: str, identifier: str = "systemd") -> dict[str, Any]:
        return {"_TRANSPORT": "kernel", "SYSLOG_IDENTIFIER": identifier, "MESSAGE": text}

    assert stalls.started_unit(kmsg("Starting systemd-journald.service - Journal Service...")) == (
        "systemd-journald.service"
    )
    assert stalls.started_unit(kmsg("Starting early.service...")) == "early.service"
    assert stalls.started_unit(kmsg("Starting Journal Service...")) is None  # systemd before 249: no unit name
    assert stalls.started_unit(kmsg("Starting backup.service - nightly", identifier="backup")) is None
    assert stalls.started_unit({"UNIT": "x.service", "MESSAGE": "Started x.service - X."}) is None
    systemd = {"_TRANSPORT": "journal", "_PID": "1", "UNIT": "x.service", "MESSAGE": "Starting X..."}
    assert stalls.started_unit(systemd) == "x.service"
    # Only systemd's own message names a unit: a writer that sets UNIT= itself (logger, sd_journal_send) shapes none.
    assert stalls.started_unit({**systemd, "_PID": "4242"}) is None
    assert stalls.started_unit({"UNIT": "x.service", "MESSAGE": "Starting X..."}) is None
    assert stalls.started_unit({**systemd, "_TRANSPORT": "syslog"}) is None


@pytest.mark.parametrize(
    ("exe", "comm", "wrote"),
    [
        ("/usr/bin/python3.11", "cloud-init", True),
        ("/usr/bin/python3", "python3", True),
        ("/usr/local/bin/python3.13t", "python3.13t", True),
        ("/usr/bin/python3.12-dbg", "x", True),
        ("/opt/py/bin/python", "python", True),
        (None, "python3", True),
        ("/usr/lib/systemd/systemd-random-seed", "systemd-random-", False),
        ("/usr/bin/pythonista-backup", "backup", False),
        ("/usr/bin/perl", "perl", False),
        (None, None, False),
    ],
)
def test_which_entries_a_python_wrote(exe: str | None, comm: str | None, wrote: bool) -> None:
    entry = {key: value for key, value in (("_EXE", exe), ("_COMM", comm)) if value is not None}
    assert stalls.is_python(entry) is wrote


def test_kernels_before_5_18_do_not_stall_a_starting_interpreter() -> None:
    entries = sample()
    version = entry_with(entries, "Linux version")
    version["MESSAGE"] = "Linux version 5.10.0-33-cloud-amd64 (debian-kernel@lists.debian.org) #1 SMP Debian 5.10.226-1"
    assert stalls.stalls(entries, 17.400312) == []
    version["MESSAGE"] = "Linux version 5.18.0-1-cloud-amd64 (debian-kernel@lists.debian.org)"
    assert len(stalls.stalls(entries, 17.400312)) == 1
    entries.remove(version)  # the journal no longer holds it: assume a kernel that stalls
    assert stalls.kernel_release(entries) is None
    assert len(stalls.stalls(entries, 17.400312)) == 1


def test_a_run_after_a_restart_is_not_the_run_that_started_before_the_crng() -> None:
    def entry(usec: int, **fields: str) -> dict[str, Any]:
        if "UNIT" in fields:  # systemd's own message
            fields = {"_TRANSPORT": "journal", "_PID": "1", **fields}
        return {"__MONOTONIC_TIMESTAMP": str(usec), **fields}

    python = {"_SYSTEMD_UNIT": "retry.service", "_EXE": "/usr/bin/python3.11", "_CMDLINE": "/usr/bin/python3 r.py"}
    entries = [
        entry(10_000_000, UNIT="retry.service", MESSAGE="Starting retry.service - Retry..."),
        entry(11_000_000, UNIT="retry.service", MESSAGE="retry.service: Failed with result 'exit-code'."),
        entry(12_000_000, **python, MESSAGE="no Python line: it failed before"),
        entry(20_000_000, UNIT="retry.service", MESSAGE="Starting retry.service - Retry..."),
        entry(21_000_000, **python, MESSAGE="retrying"),
    ]
    # Its first Python line of the run that started before the CRNG came at 12 s, in the window: no stall. (The
    # run that started at 20 s started after the CRNG was ready.)
    assert stalls.stalls(entries, 15.0) == []
    del entries[2]
    assert stalls.stalls(entries, 15.0) == []  # the first run wrote nothing: nothing to tell
    entries.insert(2, entry(16_000_000, **python, MESSAGE="late"))
    (stall,) = stalls.stalls(entries, 15.0)
    assert (stall["started"], stall["first_line"], stall["lost"]) == (10.0, 16.0, 5.0)
    assert "-- /usr/bin/python3 r.py`" in stall["avoid"][0]
    # Two runs before the CRNG was ready: the first ran its Python in the window, the second stalled.
    entries = [
        entry(5_000_000, UNIT="retry.service", MESSAGE="Starting retry.service - Retry..."),
        entry(6_000_000, **python, MESSAGE="first run, in the window"),
        entry(12_000_000, UNIT="retry.service", MESSAGE="Starting retry.service - Retry..."),
        entry(16_500_000, **python, MESSAGE="second run"),
    ]
    (stall,) = stalls.stalls(entries, 15.0)
    assert (stall["started"], stall["first_line"], stall["lost"]) == (12.0, 16.5, 3.0)


# -- events_from_journal -----------------------------------------------------------------------------------------------


def test_the_samples_event_lines_are_what_describe_writes() -> None:
    lines = [journal.message(entry) for entry in sample() if journal.message(entry).startswith("urandom-shim: ")]
    assert lines == sample_shim_lines(), (
        "the events' wording changed: run `PYTHONPATH=. python tests/test_report_boot_log.py`"
    )


def test_events_from_the_samples_journal() -> None:
    events = shim_lines.events_from_journal(sample())
    same = {
        "pid": 412,
        "uid": 0,
        "unit": "early-setup.service",
        "argv": ["/usr/bin/python3 /usr/local/sbin/early-setup.py"],
        # journald's own fields of the entry: the machine and boot a fleet's report attributes it to
        "machine_id": "3a9e7c51d2f84b06a1c7e93f5d2b8046",
        "boot_id": "5f0c6a1e9b3d4e7a8c2f1d0b6e4a9c37",
        "hostname": "debian",
    }
    # The times are the entries': the call's line reached journald at 17.411238, after its wait of 1.05 s.
    assert events == [
        {**EARLY_CALL, **same, "boot_time": 16.361, "simulated": False, "from": "journal"},
        {
            **{key: EARLY_REPEAT[key] for key in ("v", "event", "program", "call", "site", "caller")},
            **same,
            "boot_time": 17.533,
            "simulated": False,
            "under": EARLY_CALL["under"],
            "timeout": None,
            "count": 3,
            "from": "journal",
        },
    ]
    assert [event["site"] for event in events] == ["os.urandom", "os.urandom"]


def test_events_from_the_journal_take_what_the_entry_knows() -> None:
    line = _messages.line(_events.describe(an_event(call="secrets.token_hex(32)", simulated="x")))
    trusted = {"_TRANSPORT": "stdout", "_EXE": "/usr/bin/python3.11", "__MONOTONIC_TIMESTAMP": "5000000"}
    bare = {"MESSAGE": list(line.encode()), **trusted}
    named = {**bare, "_PID": "77", "_COMM": "python3", "_SYSTEMD_UNIT": "x.service"}
    others = [{"MESSAGE": "random: crng init done"}, {"MESSAGE": "urandom-shim: not an event"}, {}]
    events = shim_lines.events_from_journal([*others, bare, named, {**named, "_CMDLINE": "python3 -m x"}])
    assert [(event["pid"], event["unit"], event["argv"]) for event in events] == [
        (None, None, []),
        (77, "x.service", ["python3"]),
        (77, "x.service", ["python3 -m x"]),
    ]
    for event in events:
        assert event["site"] == "secrets" and event["simulated"] is True
        assert event["boot_time"] == round(5.0 - event["waited"], 3)  # received at 5 s, after the wait
        assert event["v"] == _events.VERSION and event["program"] is None and event["from"] == "journal"


def test_an_events_time_is_the_entrys_less_its_wait_never_the_texts() -> None:
    line = {
        "MESSAGE": sample_shim_lines()[0],  # says "16.36 s after boot", and that the call took 1.05 s
        "__MONOTONIC_TIMESTAMP": "20000000",
        "_TRANSPORT": "stdout",
        "_EXE": "/usr/bin/python3.11",
    }
    assert [event["boot_time"] for event in shim_lines.events_from_journal([line])] == [18.95]
    untimed = {key: value for key, value in line.items() if key != "__MONOTONIC_TIMESTAMP"}
    assert [event["boot_time"] for event in shim_lines.events_from_journal([untimed])] == [None]


def refresh_sample() -> None:
    """Write describe() of the early-setup events into the sample, in place of its two ``urandom-shim:`` lines."""
    lines = iter(sample_shim_lines())
    out = []
    for entry in sample():
        if journal.message(entry).startswith(_messages.PREFIX):
            entry["MESSAGE"] = next(lines)
        out.append(json.dumps(entry, separators=(",", ":")) + "\n")
    SAMPLE.write_text("".join(out), encoding="utf-8")


if __name__ == "__main__":
    refresh_sample()
