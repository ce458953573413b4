"""Policies: the table of what each call site does while the kernel CRNG is not initialised
(docs/reference/policies.md).

This module is data plus two small classes. Everything else asks :func:`action` instead of branching on policy names,
so a new policy or call site is a new row or column here and nowhere else. (The policies are not an ``enum.Enum``:
``enum`` pulls in ``functools`` and ``collections``, about 7 ms, on the unready start-up path, whose whole budget is
about 5 ms.)
"""

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final, Generic, TypeVar

    T = TypeVar("T")
else:  # typing costs milliseconds on the unready start-up path, and only the type checker needs Setting[T]

    class Generic:
        def __class_getitem__(cls, item: object) -> "type":
            return object

    T = None


class Policy:
    """A named preset. Compare policies by identity: there are exactly four instances."""

    __slots__ = ("name", "summary")

    def __init__(self, name: str, summary: str) -> None:
        self.name = name
        self.summary = summary

    def __repr__(self) -> str:
        return f"<Policy {self.name}>"

    def __str__(self) -> str:
        return self.name


NATIVE: "Final" = Policy("native", "the interpreter's own behaviour, untouched")
PEP524: "Final" = Policy("pep524", "wait for the kernel CRNG before returning strong bytes (PEP 524, accepted)")
PEP522: "Final" = Policy("pep522", "raise BlockingIOError instead of waiting; secrets waits (PEP 522, rejected)")
LEGACY: "Final" = Policy("legacy", "return best-effort bytes without waiting, as Python 3.5.2 did")

POLICIES: "Final" = (NATIVE, PEP524, PEP522, LEGACY)
BY_NAME: "Final" = {p.name: p for p in POLICIES}

# Call sites (columns of the table in docs/reference/policies.md).
URANDOM: "Final" = "os.urandom"  # os.urandom, its aliases, random.SystemRandom, urllib.request's cnonce
SECRETS: "Final" = "secrets"  # secrets.token_*, choice, randbelow, randbits
SEED_INSTANCE: "Final" = "random._inst"  # seeding of the module-level generator at `import random`, random.seed()
SEED_NEW: "Final" = "random.Random()"  # seeding of later Random() instances and their seed(None)
SITES: "Final" = (URANDOM, SECRETS, SEED_INSTANCE, SEED_NEW)
#: An explicit wait (``secrets.wait_for_system_rng()``): not a row of the table, since it waits under every policy.
#: Report mode records one under a simulated window that nothing will end, where it returns instead of waiting.
EXPLICIT_WAIT: "Final" = "wait"

# Actions (cells of that table).
UNTOUCHED: "Final" = "untouched"  # call the interpreter's own code
WAIT: "Final" = "wait"  # wait for the CRNG (bounded by `timeout`), then call the interpreter's own code
RAISE: "Final" = "raise"  # raise BlockingIOError at once
BEST_EFFORT: "Final" = "best-effort"  # return best-effort kernel bytes without waiting

_TABLE: "Final" = {
    NATIVE: {URANDOM: UNTOUCHED, SECRETS: UNTOUCHED, SEED_INSTANCE: UNTOUCHED, SEED_NEW: UNTOUCHED},
    PEP524: {URANDOM: WAIT, SECRETS: WAIT, SEED_INSTANCE: BEST_EFFORT, SEED_NEW: BEST_EFFORT},
    PEP522: {URANDOM: RAISE, SECRETS: WAIT, SEED_INSTANCE: BEST_EFFORT, SEED_NEW: BEST_EFFORT},
    LEGACY: {URANDOM: BEST_EFFORT, SECRETS: BEST_EFFORT, SEED_INSTANCE: BEST_EFFORT, SEED_NEW: BEST_EFFORT},
}

# What happened at a call site (an event's ``action``): UNTOUCHED or BEST_EFFORT above, or one of these.
WAITED: "Final" = "waited"  # waited, then the interpreter's own code returned strong bytes
RAISED: "Final" = "raised"  # BlockingIOError at once
TIMED_OUT_RAISED: "Final" = "timed-out-raised"  # waited `timeout` seconds, then BlockingIOError
TIMED_OUT_BEST_EFFORT: "Final" = "timed-out-best-effort"  # waited `timeout` seconds, then best-effort bytes

# Option values.
ON_TIMEOUT_CHOICES: "Final" = ("raise", "fallback")
SEED_CHOICES: "Final" = ("nonblocking", "policy")
#: ``enforce``: the policy applies. ``report``: every call site behaves as ``native`` (the interpreter's own code), and
#: each event records what the policy would have done (docs/howto/strict-rollout.md).
MODE_CHOICES: "Final" = ("enforce", "report")
ENFORCE: "Final" = "enforce"
REPORT: "Final" = "report"


def action(policy: "Policy", site: str, seed_random_instances: str = "nonblocking") -> str:
    """What ``site`` does under ``policy`` while the CRNG is unready: the table alone, before any setting but the
    fuse (:func:`decide` is what the engine acts on).

    With ``seed_random_instances="policy"``, ``Random()`` instances after ``random._inst`` follow the policy's
    ``os.urandom`` behaviour; under ``pep524`` that is the PEP 524 draft's "fuse".
    """
    if site == SEED_NEW and seed_random_instances == "policy":
        site = URANDOM
    return _TABLE[policy][site]


# -- the one decision -------------------------------------------------------------------------------------------------
#
# The engine acts on decide(); each event records outcomes() of every policy, worked out by decide() with the
# program's own settings; `urandom-shim report` only reads and aggregates those. So what the report says a policy
# would do to a call is what the engine does when it enforces that policy (docs/reference/events.md).

#: PyPy's own ``os.urandom()`` reads ``/dev/urandom`` (it has no ``getrandom()``), which never waits before Linux
#: 5.18 and returns bytes the CRNG has not seeded. CPython's waits (PEP 524).
PYPY: "Final" = sys.implementation.name == "pypy"
#: How a ``[[program]]`` rule names itself as a setting's source (``_config``): its policy is the program's whatever
#: policy the rest of the configuration would give.
RULE_SOURCE: "Final" = " [[program]] match = "


def lifted(policy: "Policy", floor: object, pypy: bool = PYPY) -> "Policy":
    """``policy`` as a floor (``allow_weak = false``) lets it run: ``legacy`` becomes ``pep524``, and so does
    ``native`` on PyPy, whose own ``os.urandom()`` does not wait."""
    if floor and (policy is LEGACY or (pypy and policy is NATIVE)):
        return PEP524
    return policy


#: The sources of a policy that another policy may stand in for, in what each event records of every policy: the
#: default, the machine file's own (where an administrator switches the machine's policy), and the dry runs'
#: (``simulate --policy``, the pytest plugin's option, marker and fixture), whose point is to try each. Any other
#: source outranks the machine file (a unit's ``URANDOM_POLICY``, a project's table, the environment's file, a
#: ``[[program]]`` rule, ``run --policy``, ``activate()``): its policy stays whatever the machine's becomes.
REPLACEABLE_SOURCES: "Final" = (
    "default", "urandom-shim simulate --policy", "--urandom-policy", "@pytest.mark.urandom", "urandom_policy()"
)  # fmt: skip
MACHINE_FILE_SOURCE: "Final" = " (machine file)"


#: How the pytest plugin names its ini key as a source (``urandom_policy in pytest.ini``): a dry run's too.
PLUGIN_INI_SOURCE: "Final" = "urandom_policy in "


def pinned(source: str) -> bool:
    """Whether a policy from ``source`` stays the program's whatever policy the machine's file says."""
    return (
        source not in REPLACEABLE_SOURCES
        and not source.endswith(MACHINE_FILE_SOURCE)
        and not source.startswith(PLUGIN_INI_SOURCE)
    )


def decide(settings: "Settings", site: str, policy: "Policy | None" = None, pypy: bool = PYPY) -> str:
    """The action the engine takes at ``site`` while the CRNG is unready (a cell of the table: untouched, wait,
    raise, best-effort), under the program's ``settings``; or, with ``policy``, what it would take were ``policy``
    the machine's, with the program's other settings and its floor: a policy from a source that outranks the machine
    file (:func:`pinned`) stays."""
    if policy is None or settings.pinned:
        policy = settings.policy.value
    policy = lifted(policy, settings.floor, pypy)
    return action(policy, site, str(settings.seed_random_instances.value))


# What a call comes to under a policy, as an event records it (``under``) and the report counts it: a wait whose
# timeout runs out is the raise or the weak bytes that follow it.
FINE: "Final" = "fine"  # strong bytes without a wait, or `random` seeded without waiting (not bytes for secrets)
WAITS: "Final" = "wait"  # waits until the CRNG is ready, then strong bytes
WEAK: "Final" = "weak"  # bytes the CRNG has not seeded, for secrets
RAISES: "Final" = "raise"  # BlockingIOError at once
WAIT_THEN_RAISE: "Final" = "wait-then-raise"  # waits `timeout` seconds, then BlockingIOError
WAIT_THEN_WEAK: "Final" = "wait-then-weak"  # waits `timeout` seconds, then weak bytes
OUTCOMES: "Final" = (FINE, WAITS, WEAK, RAISES, WAIT_THEN_RAISE, WAIT_THEN_WEAK)


def urandom_device_waits() -> bool:
    """Whether a read of ``/dev/urandom`` waits for the CRNG here: on Linux 5.18 and later it runs the jitter
    generator first (about a second); before, it returns whatever the CRNG holds."""
    try:
        release = os.uname().release.split(".")
        return (int(release[0]), int(release[1].split("-")[0])) >= (5, 18)
    except (ValueError, IndexError, AttributeError):
        return False


def outcome(
    settings: "Settings",
    site: str,
    policy: "Policy | None" = None,
    window: "float | None" = None,
    pypy: bool = PYPY,
    native: "str | None" = None,
) -> str:
    """What a call at ``site`` comes to under ``policy`` (default: the program's own), from :func:`decide`.
    ``window`` is how long the CRNG stayed unready after the call began, when that is known: a wait bounded by
    ``timeout`` ends in its ``on_timeout`` unless the window is known to close first. ``native`` is what the
    interpreter's own code was seen to do with this call (report mode: it returned weak bytes while the kernel was
    unready, or waited), which outranks what is known of the interpreter."""
    if site == EXPLICIT_WAIT:
        return WAITS  # secrets.wait_for_system_rng() waits under every policy
    todo = decide(settings, site, policy, pypy)
    strong = site in (URANDOM, SECRETS)  # the seeding sites seed `random`, which is not for secrets
    if todo == UNTOUCHED:
        if not strong:
            return FINE
        if native is not None:
            return native
        return WEAK if pypy and not urandom_device_waits() else WAITS
    if todo == RAISE:
        return RAISES
    if todo == BEST_EFFORT:
        return WEAK if strong else FINE
    timeout = settings.timeout.value
    if timeout is None or (window is not None and window <= timeout):
        return WAITS
    if settings.on_timeout.value == "fallback":
        return WAIT_THEN_WEAK if strong else FINE
    return WAIT_THEN_RAISE


def outcomes(
    settings: "Settings", site: str, window: "float | None" = None, native: "str | None" = None
) -> "dict[str, str]":
    """:func:`outcome` under every policy, by name: what an event records."""
    return {p.name: outcome(settings, site, p, window, native=native) for p in POLICIES}


def in_time(settings: "Settings", window: "float | None") -> bool:
    """Whether the window is known to close within the program's timeout: the one fact of a call, besides its
    site and what the interpreter's own code did, that changes what a policy comes to."""
    timeout = settings.timeout.value
    return window is not None and timeout is not None and window <= timeout


class Setting(Generic[T]):
    """One effective setting and where it came from (``source``: a variable name, a file and table, or "default")."""

    __slots__ = ("source", "value")

    def __init__(self, value: "T", source: str) -> None:
        self.value = value
        self.source = source

    def __repr__(self) -> str:
        return f"Setting({self.value!r}, source={self.source!r})"


class Settings:
    """The effective policy and options, each with its source."""

    __slots__ = (
        "events", "floor", "mode", "on_timeout", "pinned", "policy", "seed_random_instances", "timeout", "warn_after"
    )  # fmt: skip

    #: Every setting, in the order status and check list them.
    NAMES: "Final" = ("policy", "mode", "timeout", "on_timeout", "warn_after", "seed_random_instances", "events")

    #: Seconds of waiting before one diagnostic line, unless configured. A hang at boot must never be silent.
    DEFAULT_WARN_AFTER: "Final" = 5.0

    def __init__(
        self,
        policy: "Setting[Policy] | None" = None,
        timeout: "Setting[float | None] | None" = None,
        on_timeout: "Setting[str] | None" = None,
        warn_after: "Setting[float | None] | None" = None,
        seed_random_instances: "Setting[str] | None" = None,
        mode: "Setting[str] | None" = None,
        events: "Setting[str | None] | None" = None,
    ) -> None:
        self.policy: Setting[Policy] = policy or Setting(NATIVE, "default")
        self.timeout: Setting[float | None] = timeout or Setting(None, "default")
        self.on_timeout: Setting[str] = on_timeout or Setting("raise", "default")
        self.warn_after: Setting[float | None] = warn_after or Setting(self.DEFAULT_WARN_AFTER, "default")
        self.seed_random_instances: Setting[str] = seed_random_instances or Setting("nonblocking", "default")
        self.mode: Setting[str] = mode or Setting(ENFORCE, "default")
        #: The events file (an absolute path), or None: events go to stderr only.
        self.events: Setting[str | None] = events or Setting(None, "default")
        #: The floor (``allow_weak = false``) in force, described with the file that sets it; None without one.
        self.floor: str | None = None
        #: Whether the policy came from a source that outranks the machine file (:func:`pinned`).
        self.pinned = pinned(self.policy.source)

    @property
    def policy_value(self) -> "Policy":
        return self.policy.value

    @property
    def reporting(self) -> bool:
        """Report-only: every call site runs the interpreter's own code, and events say what the policy would do."""
        return self.mode.value == REPORT

    def as_dict(self) -> "dict[str, tuple[object, str]]":
        """``{name: (value, source)}`` with policy names as strings: what status and check print."""
        result: dict[str, tuple[object, str]] = {}
        for name in self.NAMES:
            setting: Setting[object] = getattr(self, name)
            value = setting.value
            result[name] = (value.name if isinstance(value, Policy) else value, setting.source)
        return result

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v[0]!r} ({v[1]})" for k, v in self.as_dict().items())
        return f"Settings({fields})"
