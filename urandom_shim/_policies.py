"""Policies: the table of what each call site does while the kernel CRNG is not initialised
(docs/reference/policies.md).

This module is data plus two small classes. Everything else asks :func:`action` instead of branching on policy names,
so a new policy or call site is a new row or column here and nowhere else. (The policies are not an ``enum.Enum``:
``enum`` pulls in ``functools`` and ``collections``, about 7 ms, on the unready start-up path, whose whole budget is
about 5 ms.)
"""

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
    """What ``site`` does under ``policy`` while the CRNG is unready.

    With ``seed_random_instances="policy"``, ``Random()`` instances after ``random._inst`` follow the policy's
    ``os.urandom`` behaviour; under ``pep524`` that is the PEP 524 draft's "fuse".
    """
    if site == SEED_NEW and seed_random_instances == "policy":
        site = URANDOM
    return _TABLE[policy][site]


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

    __slots__ = ("events", "mode", "on_timeout", "policy", "seed_random_instances", "timeout", "warn_after")

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
