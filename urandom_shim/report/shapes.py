"""The shapes of the report's data, as ``--json`` prints them and every module of the report passes them on: the
programs and their call sites (:mod:`.verdict` groups them), the verdict per policy, and the machines, boots and
figures of a fleet (:mod:`.fleet`). Types only: the modules that fill them in import this one, never each other for
a type.
"""

from __future__ import annotations

from typing import Dict, List, Optional, TypedDict


class CallSite(TypedDict):
    """One call site of a program, as the report lists it: the call, its caller and site, and what was done there
    (two records that differ in any of these, or in what every policy would do, are two call sites); how many calls,
    the first (seconds after boot) and the longest wait; and what each policy would do (``outcomes``, the record's;
    ``inferred`` for an older shim's, read by the policy table) and what that counts as in a verdict (``under``).
    Over a fleet, ``machines`` and ``boots`` count where it was made (1 and 1 for one machine's)."""

    call: Optional[str]
    site: str
    caller: Optional[str]
    first: Optional[float]
    count: int
    policy: Optional[str]
    policy_source: Optional[str]
    mode: Optional[str]
    action: Optional[str]
    would: Optional[str]
    waited: float
    simulated: bool
    outcomes: Dict[str, str]
    timeout: Optional[float]
    inferred: bool
    pinned: bool
    rule_policy: Optional[str]
    under: Dict[str, str]
    machines: int
    boots: int


class Program(TypedDict):
    """One program of the report: what it is called (its unit, else its ``[[program]]`` name, else its command
    line), its processes and users, its first call (after boot, and against ``crng init done``), its call sites, and
    what each policy would make of it, its worst call site's (``under``). Over a fleet, the machines and boots it ran
    on, and the images and kernels of those machines (name -> machines); one machine's report counts one of each."""

    name: str
    unit: Optional[str]
    program: Optional[str]
    argv: Optional[List[str]]
    pids: List[int]
    uids: List[int]
    first_call: Optional[float]
    first_call_after_crng: Optional[float]
    calls: List[CallSite]
    simulated: bool
    under: Dict[str, str]
    longest_wait: float
    machines: int
    boots: int
    first_boots: int
    later_boots: int
    images: Dict[str, int]
    kernels: Dict[str, int]


class Named(TypedDict):
    """A program as a verdict names it, with the machines and boots it would fail on (1 each for one machine)."""

    name: str
    machines: int
    boots: int
    first_boots: int
    later_boots: int


#: What one policy would do to the programs: which would raise, use weak bytes or wait, the longest wait measured
#: among those that would wait, and the sentence that says it.
PolicyVerdict = TypedDict(
    "PolicyVerdict",
    {"raise": List[Named], "weak": List[Named], "wait": List[Named], "longest_measured_wait": float, "text": str},
)


class Machine(TypedDict):
    """One machine of the report (``--json``'s ``machines``): its id, hostname, boots read, whether a first boot was
    among them (None: no source says), its image and its kernels."""

    machine_id: Optional[str]
    hostname: Optional[str]
    boots: int
    first_boot: Optional[bool]
    image: Optional[str]
    kernels: List[str]


class Spread(TypedDict):
    """How many values (boots), their median, 95th percentile and largest; None for each when there are none."""

    boots: int
    median: Optional[float]
    p95: Optional[float]
    max: Optional[float]


class CrngSpread(Spread):
    """``crng init done`` across every boot that says it, with how many did not, and first and later boots apart."""

    without: int
    first_boots: Spread
    later_boots: Spread


class Counted(TypedDict):
    """A name (an image, a kernel) and on how many machines."""

    name: str
    machines: int


class StalledUnit(TypedDict):
    """A unit whose interpreter waited in its own start: on how many machines and boots, and how long it lost."""

    unit: str
    machines: int
    boots: int
    lost_median: Optional[float]
    lost_max: Optional[float]
    avoid: List[str]


class Figures(TypedDict):
    """The fleet's figures (``--json``'s ``fleet``)."""

    machines: int
    boots: int
    first_boots: int
    crng_init_done: CrngSpread
    images: List[Counted]
    kernels: List[Counted]
    stalls: List[StalledUnit]


class BootSeen(TypedDict):
    """One boot as ``--json``'s ``boots`` lists it."""

    machine_id: Optional[str]
    boot_id: Optional[str]
    hostname: Optional[str]
    image: Optional[str]
    kernel: Optional[str]
    first_boot: Optional[bool]
    crng_init_done: Optional[float]
    sources: List[str]
    programs: List[str]


class Assembled(TypedDict):
    """What :func:`assemble` gives the report."""

    programs: List[Program]
    machines: List[Machine]
    boots: List[BootSeen]
    fleet: Figures
