"""``status`` and ``check`` as text: plain aligned lines from the dicts :mod:`urandom_shim.cli.facts` gathers (the same
ones ``--json`` prints), and ``wait``'s live line.
"""

from __future__ import annotations

import sys
import textwrap

from .. import _readiness
from .._messages import bounded, line
from .._terminal import rows

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    from .._policies import Policy, Setting
    from .shapes import CheckFacts, StatusFacts


def value(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def write(lines: list[str]) -> None:
    sys.stdout.write("\n".join(lines) + "\n")


def write_json(data: object) -> None:
    import json

    sys.stdout.write(json.dumps(data, indent=2, allow_nan=False) + "\n")


ACTIVATED_BY = {
    "pth": "urandom_shim.pth, at start-up",
    "start": "urandom_shim_pep829.start (PEP 829), at start-up",
    "bootstrap": "the bootstrap sitecustomize of `urandom-shim run`",
    "runtime": "urandom_shim.activate(), at runtime",
}


def status_lines(report: StatusFacts, own_policy: Callable[[], Setting[Policy]]) -> list[str]:
    """``status`` as text. ``own_policy()`` is the setting this process itself runs under, asked for only by the
    line that says why nothing is patched in it."""
    python = report["python"]
    lines = [f"urandom-shim {report['version']}, in {python['executable']} (Python {python['version']})", ""]
    if report["active"]:
        how = str(report["activated_by"])
        active = f"yes, started by {ACTIVATED_BY.get(how, how)}"
    else:
        active = f"no: {report['inactive_reason']}"
    if report["patched"]:
        patched = "yes: the CRNG is not ready, so the policy's functions are in place"
    elif report["crng"] == _readiness.UNREADY and report["active"]:
        own = own_policy()
        patched = f"no: this urandom-shim process itself runs under policy '{own.value}' (from {own.source})"
    else:
        patched = "no: every function is the interpreter's own"
    lines.append("Shim")
    if report["pth"] is not None:
        installed = report["pth"]
    elif report["activated_by"] == "bootstrap":
        installed = f"not in this environment; the bootstrap loaded {report['package']}"
    else:
        installed = "no urandom_shim.pth (nor urandom_shim_pep829.start) in this interpreter's site-packages"
    lines += rows([("active", active), ("patched now", patched), ("installed", installed)])
    kernel = report["kernel"]
    sim = report["simulation"]
    lines += ["", "Kernel CRNG"]
    crng_rows = [("state", crng_phrase(kernel["crng"]))]
    if sim is not None:
        if sim["valid"]:
            crng_rows.append(
                ("simulated", f"{'unready' if sim['unready'] else 'ready'} (URANDOM_SHIM_SIMULATE={sim['spec']})")
            )
        else:
            crng_rows.append(("simulated", f"no: URANDOM_SHIM_SIMULATE={sim['spec']!r} is not valid"))
    entropy = kernel["entropy_avail"]
    if entropy is not None:
        pool = kernel["poolsize"]
        crng_rows.append(("entropy_avail", f"{entropy}" + (f" of {pool} bits" if pool is not None else " bits")))
    crng_rows.append(("kernel", kernel["release"] or "unknown"))
    lines += rows(crng_rows)
    lines += [
        "",
        f"Configuration for {resolved_for(report['resolved_for'])} (`urandom-shim check --for PROGRAM` shows a "
        "program's)",
    ]
    lines += rows([(name, value(s["value"]), f"from {s['source']}") for name, s in report["settings"].items()])
    lines += ["", f"While the CRNG is not ready, under {report['policy']}"]
    site_rows = [(row["label"], row["says"]) for row in report["sites"]]
    site_rows.append(("secrets.wait_for_system_rng()", "added under every policy; returns at once when ready"))
    site_rows.append(("a start under `run`", report["run_start"]))
    lines += rows(site_rows)
    lines += ["", f"This Python on its own ({python['version']})"]
    lines += textwrap.wrap(python["native"], width=100, initial_indent="  ", subsequent_indent="  ")
    lines += limit_lines(report)
    lines += ["", "Problems" + (f" ({len(report['problems'])})" if report["problems"] else "")]
    lines += [f"  {line(p)}" for p in bounded(report["problems"])] or ["  none"]
    return lines


def limit_lines(report: StatusFacts | CheckFacts) -> list[str]:
    """What this interpreter can't do (PyPy's), one wrapped paragraph each; nothing where there is none."""
    lines: list[str] = []
    for limit in report.get("limits") or ():
        lines += ["", "Not on this interpreter"] if not lines else [""]
        lines += textwrap.wrap(limit, width=100, initial_indent="  ", subsequent_indent="  ")
    return lines


def resolved_for(described: str) -> str:
    """The program the settings are for, its command in backticks and the directory it runs in outside them:
    ``python -c`` in /srv/app, not ``python -c in /srv/app``."""
    import re

    found = re.fullmatch(r"(python (?:-c|-m \S+)) in (.+)", described, re.DOTALL)
    if found is None:
        return f"`{described}`"
    return f"`{found.group(1)}` in {found.group(2)}"


def crng_phrase(state: str) -> str:
    if state == _readiness.READY:
        return "ready (initialised)"
    if state == _readiness.UNREADY:
        return "unready: not initialised yet; reads that need it block or fail"
    return "unknown: getrandom() is missing or denied, so it counts as ready, as the interpreter assumes"


def check_lines(report: CheckFacts) -> list[str]:
    """``check`` as text."""
    problems = report["problems"]
    lines = [
        f"Configuration for {resolved_for(report['resolved_for'])}",
        f"Where its project is: {report['project_rule']}",
        "",
    ]
    lines += ["Sources tried, highest precedence first"]
    source_rows: list[tuple[str, ...]] = []
    for source in report["sources"]:
        notes = source["notes"]
        source_rows.append((source["source"], notes[0] if notes else "nothing of ours"))
        source_rows.extend(("", note) for note in notes[1:])
    lines += rows(source_rows)
    lines += ["", "Effective settings"]
    lines += rows([(k, value(s["value"]), f"from {s['source']}") for k, s in report["settings"].items()])
    lines += ["", "Started by `urandom-shim run` while the CRNG is not ready"]
    lines += rows([("interpreter start", report["run_start"])])
    events_file = report["events_file"]
    if events_file is not None:
        lines += ["", "Events file"]
        lines += rows([(str(report["settings"]["events"]["value"]), events_file)])
    for advice in report.get("advice") or ():
        lines += ["", "Note"]
        lines += textwrap.wrap(
            advice,
            width=116,
            initial_indent="  ",
            subsequent_indent="  ",
            break_on_hyphens=False,
            break_long_words=False,
        )
    lines += limit_lines(report)
    if problems:
        lines += ["", f"Problems ({len(problems)}): {PRINTED_WHEN}"]
        lines += [f"  {line(p)}" for p in bounded(problems)]
        lines += ["", "Exit status 1: fix the problems above."]
    else:
        lines += ["", "No problems."]
    return lines


PRINTED_WHEN = (
    "an interpreter prints these when it starts while the CRNG is not ready, and every start the ones about the "
    "values of URANDOM_* variables; only check finds misspelt variable names and missing files"
)


class StatusLine:
    """A live line on a terminal, rewritten in place with a carriage return; nothing at all elsewhere."""

    def __init__(self, stream: Any, enabled: bool) -> None:
        self.stream = stream
        self.enabled = enabled
        self.width = 0

    def show(self, text: str, final: bool = False) -> None:
        if not self.enabled:
            return
        padded = text.ljust(self.width)
        self.width = 0 if final else len(text)
        self.stream.write("\r" + padded + ("\n" if final else ""))
        self.stream.flush()
