"""The report over machines and boots: every event attributed to the machine and boot it came from, the programs of
each boot grouped as one machine's report groups them, then merged into one entry per program with how many machines
and boots it ran on, and the fleet's figures (``crng init done`` across boots, images, kernels, the units that
stalled).

A machine speaks only for itself, and only ever adds: each boot is grouped on its own, a record or a journal line
never replaces another, and a program's verdict is the worst of its calls. A machine that forges another's ids can
add findings under them; it cannot make a finding go away, on its own machine or on any other.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, TypedDict

from .shapes import Assembled, BootSeen, CallSite, Counted, Figures, Machine, Program, Spread, StalledUnit
from .sources import Line, Stall
from .verdict import RANK, call_site, group, program_name, said

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .._events import Record

#: The rows the text shows of each list before "and N more".
SHOWN = 10


class Boot(TypedDict):
    """One boot of the report, as its sources say (:func:`note`): its ids (``machine`` tells machines apart in the
    counts: the machine id, else what the boot was read from, as an events file whose records name no machine is one
    machine), what is known of it, its events from events files and from journals, its stalls, the files it was read
    from, and the journal lines rejected and unread (counted; the first 20 of each kept)."""

    machine: Optional[str]
    machine_id: Optional[str]
    boot_id: Optional[str]
    hostname: Optional[str]
    image: Optional[str]
    kernel: Optional[str]
    first_boot: Optional[bool]
    first_seen: Optional[float]
    crng_init_done: Optional[float]
    file_events: List[Record]
    journal_events: List[Record]
    stalls: List[Stall]
    sources: List[str]
    rejected: int
    rejected_lines: List[Line]
    unread: int
    unread_lines: List[Line]


def new_boot(machine_id: str | None, boot_id: str | None, machine: str | None = None) -> Boot:
    """An empty boot: what its sources say of it is added with :func:`note`."""
    return {
        "machine": machine or machine_id,
        "machine_id": machine_id,
        "boot_id": boot_id,
        "hostname": None,
        "image": None,
        "kernel": None,
        "first_boot": None,
        "first_seen": None,
        "crng_init_done": None,
        "file_events": [],
        "journal_events": [],
        "stalls": [],
        "sources": [],
        "rejected": 0,
        "rejected_lines": [],
        "unread": 0,
        "unread_lines": [],
    }


def note(boot: Boot, **said: Any) -> None:
    """Add what a source says of a boot. A text already known is kept (the first source to say it), a first boot
    is one if any source says so, and of two ``crng init done`` times the later counts (as :mod:`.journal_facts`
    merges file sets: a machine forging another's ids can't move it earlier)."""
    if boot["hostname"] is None:
        boot["hostname"] = _text(said.get("hostname"))
    if boot["image"] is None:
        boot["image"] = _text(said.get("image"))
    if boot["kernel"] is None:
        boot["kernel"] = _text(said.get("kernel"))
    if said.get("first_boot") is True:
        boot["first_boot"] = True
    elif said.get("first_boot") is False and boot["first_boot"] is None:
        boot["first_boot"] = False
    crng, seen = _number(said.get("crng_init_done")), _number(said.get("first_seen"))
    if crng is not None:
        boot["crng_init_done"] = crng if boot["crng_init_done"] is None else max(boot["crng_init_done"], crng)
    if seen is not None:
        boot["first_seen"] = seen if boot["first_seen"] is None else min(boot["first_seen"], seen)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
        return value
    return None


def boot_of(boots: Dict[Any, Boot], machine_id: str | None, boot_id: str | None, machine: str | None = None) -> Boot:
    """The boot of these ids, made if new."""
    key = (machine or machine_id, boot_id)
    boot = boots.get(key)
    if boot is None:
        boot = boots[key] = new_boot(machine_id, boot_id, machine)
    return boot


def text_field(value: object) -> str | None:
    """A record's field as text: None unless it is a string that is not empty."""
    return value if isinstance(value, str) and value else None


# -- per boot, then per program ------------------------------------------------------------------------------------


def programs_of(boot: Boot) -> list[Program]:
    """One boot's programs, as one machine's report groups them: the records of its events files, and the journal's
    lines that no record of the same boot already holds as the same call (same program, process, call site and what
    was done there; dropping the journal's copy of it then changes no verdict and no count)."""
    events = boot["file_events"] + unseen(boot["journal_events"], boot["file_events"])
    crng = boot["crng_init_done"]
    return group(events, crng if isinstance(crng, (int, float)) else None)


def _call_key(call: CallSite) -> Tuple[object, ...]:
    """What makes two calls of two boots the same row of a merged program: the call site, what was done there, and
    what every policy would do there (so that no machine's outcome is merged away into another's)."""
    return (
        call["call"], call["caller"], call["site"], call["policy"], call["policy_source"], call["mode"],
        call["action"], call["would"], tuple(sorted(call["outcomes"].items())), call["inferred"],
    )  # fmt: skip


def merge(per_boot: list[tuple[Boot, list[Program]]]) -> list[Program]:
    """The programs of every boot, one entry per program name: its calls merged by call site and what was done
    there, each with how many machines and boots made it; ``under`` the worst of every boot's, so no boot's finding
    is lost; ``machines``, ``boots``, ``first_boots`` and ``later_boots`` counted, and the images and kernels it ran
    on (machines per name). One boot's programs come out as that boot's report has them, with the counts added."""
    merged: dict[str, Program] = {}
    seen: dict[str, dict[str, set[object]]] = {}
    calls: dict[str, dict[Tuple[object, ...], CallSite]] = {}
    where: dict[int, tuple[set[object], set[object]]] = {}  # id(call) -> (machines, boots) it was made on
    for boot, programs in per_boot:
        machine = boot["machine"]
        key = (machine, boot["boot_id"])
        for program in programs:
            name = program["name"]
            into = merged.get(name)
            sets = seen.setdefault(name, {"machines": set(), "boots": set(), "first": set(), "later": set()})
            if into is None:
                into = merged[name] = {
                    **program,
                    "calls": [],
                    "images": {},
                    "kernels": {},
                    "under": dict(program["under"]),
                }
                calls[name] = {}
            else:
                _merge_program(into, program)
            if machine not in sets["machines"]:
                for ran_on, value in ((into["images"], boot.get("image")), (into["kernels"], boot.get("kernel"))):
                    if value:
                        ran_on[value] = ran_on.get(value, 0) + 1
            sets["machines"].add(machine)
            sets["boots"].add(key)
            if boot.get("first_boot") is True:
                sets["first"].add(key)
            elif boot.get("first_boot") is False:
                sets["later"].add(key)
            for call in program["calls"]:
                ident = _call_key(call)
                known = calls[name].get(ident)
                if known is None:
                    known = calls[name][ident] = {**call}
                    into["calls"].append(known)
                    where[id(known)] = (set(), set())
                else:
                    known["count"] += call["count"]
                    known["waited"] = max(known["waited"], call["waited"])
                    if call["first"] is not None and (known["first"] is None or call["first"] < known["first"]):
                        known["first"] = call["first"]
                where[id(known)][0].add(machine)
                where[id(known)][1].add(key)
    result = []
    for name, program in merged.items():
        sets = seen[name]
        program["machines"] = len(sets["machines"])
        program["boots"] = len(sets["boots"])
        program["first_boots"] = len(sets["first"])
        program["later_boots"] = len(sets["later"])
        for call in program["calls"]:
            machines_, boots_ = where[id(call)]
            call["machines"], call["boots"] = len(machines_), len(boots_)
        program["calls"].sort(key=lambda c: (c["first"] is None, c["first"] or 0.0))
        result.append(program)
    result.sort(key=lambda p: (-p["machines"], p["first_call"] is None, p["first_call"] or 0.0, p["name"]))
    return result


def _merge_program(into: Program, program: Program) -> None:
    for policy, found in program["under"].items():
        if RANK[found] > RANK[into["under"][policy]]:
            into["under"][policy] = found
    for first, taken in ((program["first_call"], "first_call"), (program["first_call_after_crng"], "after")):
        if first is None:
            continue
        if taken == "first_call" and (into["first_call"] is None or first < into["first_call"]):
            into["first_call"] = first
        if taken == "after" and (into["first_call_after_crng"] is None or first < into["first_call_after_crng"]):
            into["first_call_after_crng"] = first
    into["longest_wait"] = max(into["longest_wait"], program["longest_wait"])
    into["simulated"] = into["simulated"] and program["simulated"]
    for ours, theirs in ((into["pids"], program["pids"]), (into["uids"], program["uids"])):
        for value in theirs:
            if value not in ours and len(ours) < 64:
                ours.append(value)
    into["unit"] = into["unit"] if into["unit"] is not None else program["unit"]
    into["program"] = into["program"] if into["program"] is not None else program["program"]
    into["argv"] = into["argv"] if into["argv"] is not None else program["argv"]


# -- machines and the fleet's figures --------------------------------------------------------------------------------


def machines(boots: Iterable[Boot]) -> list[Machine]:
    """One entry per machine id (None: the boots whose sources named no machine): its hostname, how many boots,
    whether a first boot was among them (None when no boot of it says either way), its image and kernels."""
    found: dict[str | None, Machine] = {}
    for boot in boots:
        entry = found.setdefault(
            boot["machine"],
            {"machine_id": boot["machine_id"], "hostname": None, "boots": 0, "first_boot": None, "image": None,
             "kernels": []},
        )  # fmt: skip
        entry["boots"] += 1
        if boot["first_boot"] is True or (boot["first_boot"] is False and entry["first_boot"] is None):
            entry["first_boot"] = boot["first_boot"]
        entry["hostname"] = entry["hostname"] if entry["hostname"] is not None else boot["hostname"]
        entry["image"] = entry["image"] if entry["image"] is not None else boot["image"]
        if boot["kernel"] and boot["kernel"] not in entry["kernels"]:
            entry["kernels"].append(boot["kernel"])
    return sorted(found.values(), key=lambda m: (m["hostname"] is None, m["hostname"] or "", m["machine_id"] or ""))


def spread(values: list[float]) -> Spread:
    """How many, median, 95th percentile (nearest rank) and max of ``values``; None for each when there are none."""
    ordered = sorted(values)
    if not ordered:
        return {"boots": 0, "median": None, "p95": None, "max": None}
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    rank = max(1, -(-95 * len(ordered) // 100))  # ceil(0.95 n)
    return {
        "boots": len(ordered),
        "median": round(median, 3),
        "p95": round(ordered[rank - 1], 3),
        "max": round(ordered[-1], 3),
    }


def figures(boots: list[Boot]) -> Figures:
    """The fleet's figures: machines, boots and first boots; ``crng init done`` across boots (every boot, first
    boots, later boots; and how many boots did not say); machines per image and kernel; the units that stalled."""
    crng_all = [b["crng_init_done"] for b in boots if b["crng_init_done"] is not None]
    first = [b["crng_init_done"] for b in boots if b["crng_init_done"] is not None and b["first_boot"] is True]
    later = [b["crng_init_done"] for b in boots if b["crng_init_done"] is not None and b["first_boot"] is False]
    images: dict[str, set[object]] = {}
    kernels: dict[str, set[object]] = {}
    stalled: dict[str, tuple[set[object], set[object], list[float], list[str]]] = {}
    for boot in boots:
        key = (boot["machine"], boot["boot_id"])
        for value, into in ((boot["image"], images), (boot["kernel"], kernels)):
            if value:
                into.setdefault(value, set()).add(boot["machine"])
        for stall in boot["stalls"]:
            on, of, lost, avoid = stalled.setdefault(stall["unit"], (set(), set(), [], []))
            on.add(boot["machine"])
            of.add(key)
            lost.append(stall["lost"])
            if not avoid:
                avoid.extend(stall.get("avoid") or [])
    stalls: list[StalledUnit] = []
    for unit, (on, of, lost, avoid) in stalled.items():
        found = spread(lost)
        stalls.append(
            {"unit": unit, "machines": len(on), "boots": len(of), "lost_median": found["median"],
             "lost_max": found["max"], "avoid": avoid}
        )  # fmt: skip
    stalls.sort(key=lambda s: (-s["machines"], -s["boots"], s["unit"]))
    return {
        "machines": len({b["machine"] for b in boots}),
        "boots": len(boots),
        "first_boots": sum(1 for b in boots if b["first_boot"] is True),
        "crng_init_done": {
            **spread(crng_all),
            "without": len(boots) - len(crng_all),
            "first_boots": spread(first),
            "later_boots": spread(later),
        },
        "images": _counted(images),
        "kernels": _counted(kernels),
        "stalls": stalls,
    }


def _counted(found: dict[str, set[object]]) -> list[Counted]:
    rows: list[Counted] = [{"name": name, "machines": len(ids)} for name, ids in found.items()]
    return sorted(rows, key=lambda row: (-row["machines"], row["name"]))


def boots_json(boots: list[Boot], programs: dict[tuple[str | None, str | None], list[str]]) -> list[BootSeen]:
    """Each boot as ``--json`` lists it: its ids, hostname, image, kernel, first boot, crng init done, where it was
    read, and the programs that called in its window."""
    return [
        {
            "machine_id": b["machine_id"],
            "boot_id": b["boot_id"],
            "hostname": b["hostname"],
            "image": b["image"],
            "kernel": b["kernel"],
            "first_boot": b["first_boot"],
            "crng_init_done": b["crng_init_done"],
            "sources": b["sources"],
            "programs": programs.get((b["machine"], b["boot_id"]), []),
        }
        for b in boots
    ]


def assemble(boots: Dict[Any, Boot], progress: Callable[[], None] | None = None) -> Assembled:
    """Programs, machines, boots and the fleet's figures of ``boots`` (key -> boot, as :func:`new_boot` makes)."""
    ordered = sorted(
        boots.values(),
        key=lambda b: (b["machine"] is None, b["machine"] or "", b["first_seen"] is None, b["first_seen"] or 0),
    )
    per_boot = []
    names: dict[tuple[str | None, str | None], list[str]] = {}
    for boot in ordered:
        programs = programs_of(boot)
        names[(boot["machine"], boot["boot_id"])] = [program["name"] for program in programs]
        per_boot.append((boot, programs))
    return {
        "programs": merge(per_boot),
        "machines": machines(ordered),
        "boots": boots_json(ordered, names),
        "fleet": figures(ordered),
    }


# -- the same event from two sources ---------------------------------------------------------------------------------


def unseen(from_journal: list[Record], known: list[Record]) -> list[Record]:
    """The journal's events that the events file does not already hold (the same event reaches both sinks). Only an
    event the file holds under the same program, process and call site is the same: dropping the journal's copy then
    changes no verdict, whatever else a record in the file says."""
    seen = {_identity(event) for event in known}
    return [event for event in from_journal if _identity(event) not in seen]


def _identity(event: Record) -> tuple[object, ...]:
    kind = event.get("event", "call")
    # A call is the same only if the record says the same was done there, and the same of every policy: a record
    # that claims another policy, action or outcome is a row of its own, so no record can drop the journal's line
    # of a call (and with it its verdict). A repeat names no policy in the journal: the same only with the same
    # outcomes.
    return (
        program_name(event),
        event.get("pid"),
        kind,
        event.get("call"),
        event.get("caller"),
        call_site(event),
        *(said(event) if kind == "call" else said(event)[-1:]),
    )
