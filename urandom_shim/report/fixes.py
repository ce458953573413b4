"""The ways to fix a program that the report says would raise or get weak bytes, as its ``fix`` lines: a longer
timeout where a timeout runs out before the CRNG is ready; a wait for the CRNG before the line that called; its unit
ordered after ``systemd-random-seed.service``; a ``[[program]]`` rule, where one would fix it and the program has it
not already. Every string from a record is shown escaped.
"""

from __future__ import annotations

from .. import _policies
from .._terminal import escaped as shown
from .verdict import FINE, RAISE, WAIT, WEAK

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .shapes import CallSite, Program


def failing(calls: list[CallSite]) -> list[CallSite]:
    """The calls that would raise or get weak bytes under some policy: those a fix is for."""
    return [call for call in calls if any(found in (RAISE, WEAK) for found in call["under"].values())]


def timed_out(calls: list[CallSite]) -> tuple[float | None, bool]:
    """(the timeout, whether weak bytes follow it) of the first of ``calls`` whose outcome a timeout drives: a wait
    that runs out before the CRNG is ready, then raises or falls back; (None, False) when none does."""
    for call in calls:
        found = set(call["outcomes"].values())
        if found & {_policies.WAIT_THEN_RAISE, _policies.WAIT_THEN_WEAK} and call["timeout"] is not None:
            return call["timeout"], _policies.WAIT_THEN_WEAK in found
    return None, False


def exemption(program: Program, calls: list[CallSite]) -> tuple[str, bool] | None:
    """The ``[[program]]`` rule that would fix ``calls`` (policy ``pep524``, which waits): (its ``match`` as a TOML
    string, whether the program has a rule of another policy already, to change); None where it would not fix them
    (a call that still raises or gets weak bytes under ``pep524``: its timeout runs out), where the program has that
    rule already, or where no name matches the program."""
    import json

    name = match_name(program)
    if name is None or any(call["rule_policy"] == "pep524" for call in calls):
        return None
    if any(call["rule_policy"] is None and call["under"]["pep524"] in (RAISE, WEAK) for call in calls):
        return None
    # As a TOML basic string: JSON's escapes are TOML's, so the line can be pasted whatever the name holds.
    return shown(json.dumps(name, ensure_ascii=False)), any(call["rule_policy"] for call in calls)


def fixes(program: Program) -> list[str]:
    """For a program that would raise or get weak bytes under some policy: the ways to fix it that fit it, as lines.
    A timeout that runs out before the CRNG is ready is fixed by a longer one; a wait before the call, the unit's
    order and an exemption fix the rest."""
    calls = failing(program["calls"])
    if not calls:
        return []
    hints = []
    timeout, weak = timed_out(calls)
    if timeout is not None:
        hint = f"its timeout ({timeout:g} s) runs out before the CRNG is ready: give it a longer one, or none"
        if weak:
            hint += '; or drop on_timeout = "fallback", so that it raises instead of using weak bytes'
        hints.append(hint)
    callers = raising_lines(calls)
    if callers:
        hints.append(
            f"call secrets.wait_for_system_rng() once before {shown(callers[0])}: it waits for the CRNG under every "
            "policy, and returns at once when it is ready"
        )
    if program.get("unit"):
        hints.append(
            f"order {shown(program['unit'])} after systemd-random-seed.service (After= and Wants= in a drop-in's "
            "[Unit]), which waits for the CRNG on a first boot"
        )
    rule = exemption(program, calls)
    if rule is not None:
        quoted, has_rule = rule
        if has_rule:
            hints.append(f'or change its rule, [[program]] match = {quoted}, to policy = "pep524"')
        else:
            hints.append(f'or exempt it in the machine\'s file: [[program]] match = {quoted}, policy = "pep524"')
    out = []
    for number, hint in enumerate(hints):
        out.append(f"  {'fix' if number == 0 else '':<10} {hint}")
    return out


def raising_lines(calls: list[CallSite]) -> list[str]:
    """The callers of ``calls`` that would raise or get weak bytes under some policy and are a line of a file: a
    wait can go before them (not `<string>`, `<stdin>`: no file to edit)."""
    return [
        str(c["caller"])
        for c in failing(calls)
        if ":" in str(c["caller"] or "<") and not str(c["caller"]).startswith("<")
    ]


#: The names of test runners: a ``[[program]]`` rule for one exempts every test, not the code they test.
TEST_RUNNERS = ("pytest", "py.test")


def match_name(program: Program) -> str | None:
    """The name a ``[[program]]`` rule matches for this program: the one its events give, else its script's file
    name from its command line (the word after the interpreter), else None."""
    import os

    if program["program"]:
        return None if program["program"] in TEST_RUNNERS else str(program["program"])
    words = " ".join(str(arg) for arg in (program["argv"] or ())).split()
    if len(words) >= 2 and os.path.basename(words[0]).startswith("python") and not words[1].startswith("-"):
        return os.path.basename(words[1])
    return None


#: How bad a call site is, worst first: what the fleet's text shows first.
_SEVERITY = {RAISE: 0, WEAK: 1, WAIT: 2, FINE: 3}


def worst_first(calls: list[CallSite]) -> list[CallSite]:
    """A program's call sites as the fleet's text shows them: the worst first (one that would raise under some
    policy, then weak bytes, then a wait, then nothing to see), then on the most machines, then in order of first
    call. The first three shown are then the ones to fix, not merely the earliest."""

    def worst(call: CallSite) -> int:
        return min((_SEVERITY.get(found, len(_SEVERITY)) for found in call["under"].values()), default=9)

    return sorted(calls, key=lambda call: (worst(call), -call["machines"]))


def fleet_fix(program: Program) -> list[str]:
    """The fixes of a program that would raise or get weak bytes, on one line (each machine's own report says them
    in full)."""
    calls = failing(worst_first(program["calls"]))
    if not calls:
        return []
    ways = []
    timeout, weak = timed_out(calls)
    if timeout is not None:
        ways.append(f"a timeout longer than {timeout:g} s" + (' (or no on_timeout = "fallback")' if weak else ""))
    callers = raising_lines(calls)
    if callers:
        ways.append(f"secrets.wait_for_system_rng() before {shown(callers[0])}")
    if program.get("unit"):
        ways.append("After=systemd-random-seed.service")
    rule = exemption(program, calls)
    if rule is not None:
        ways.append(f"[[program]] match = {rule[0]}" + (' policy = "pep524"' if rule[1] else ""))
    return [f"  {'fix':<10} {'; or '.join(ways)}"] if ways else []
