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
