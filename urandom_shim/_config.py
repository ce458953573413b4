"""Configuration: sources, precedence, provenance and validation.

The sources of SPEC section 4, highest first: the environment variables below, the file named by
``URANDOM_SHIM_CONFIG``, the project's ``pyproject.toml``, the user's file, the environment's and the machine's files,
then the default (policy ``native``). :func:`resolve` reads them in that order; :mod:`urandom_shim._sources` finds and
reads the files.

=========================================  ==========================================================
``URANDOM_POLICY``                         ``native``, ``pep524``, ``pep522`` or ``legacy``
``URANDOM_SHIM_TIMEOUT``                   seconds any wait may last (a number >= 0), or ``none``
``URANDOM_SHIM_ON_TIMEOUT``                ``raise`` or ``fallback``
``URANDOM_SHIM_WARN_AFTER``                seconds of waiting before one diagnostic, or ``none``
``URANDOM_SHIM_SEED_RANDOM_INSTANCES``     ``nonblocking`` or ``policy``
=========================================  ==========================================================

With ``-E`` or ``-I`` these variables are ignored, the way Python ignores its own ``PYTHON*`` variables.

A bad value never stops an interpreter: it is reported on one ``urandom-shim:`` line that names the source, the bad
value and the valid choices, and resolution carries on as if the variable were not set.
"""

from __future__ import annotations

import os
import sys

from . import _sources
from ._policies import (
    BY_NAME,
    ON_TIMEOUT_CHOICES,
    POLICIES,
    SEED_CHOICES,
    Setting,
    Settings,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Mapping

ENV_POLICY = "URANDOM_POLICY"
ENV_TIMEOUT = "URANDOM_SHIM_TIMEOUT"
ENV_ON_TIMEOUT = "URANDOM_SHIM_ON_TIMEOUT"
ENV_WARN_AFTER = "URANDOM_SHIM_WARN_AFTER"
ENV_SEED_RANDOM_INSTANCES = "URANDOM_SHIM_SEED_RANDOM_INSTANCES"
ENV_CONFIG = "URANDOM_SHIM_CONFIG"


class InvalidValue(ValueError):
    """A value that does not fit its key. ``expected`` lists the valid choices."""

    def __init__(self, value: object, expected: str, hint: str = "") -> None:
        super().__init__(f"{value!r} is not valid; expected {expected}{hint}")
        self.value = value
        self.expected = expected
        self.hint = hint


def _choices(values: tuple[str, ...]) -> str:
    return "one of " + ", ".join(repr(v) for v in values)


def _near_miss(text: str, valid: tuple[str, ...]) -> str:
    """A "did you mean" for a wrong case, stray whitespace or separators, a prefix, or a typo or two."""
    folded = "".join(text.split()).lower().replace("-", "").replace("_", "")
    plain = {name: name.replace("-", "").replace("_", "") for name in valid}
    exact = [name for name in valid if plain[name] == folded or (len(folded) > 2 and name.startswith(folded))]
    if exact:
        return f" (did you mean {exact[0]!r}?)"
    distance, best = min((_distance(folded, plain[name]), name) for name in valid)
    return f" (did you mean {best!r}?)" if distance <= 2 else ""


def _distance(a: str, b: str) -> int:
    """Levenshtein distance, for short words only (difflib costs an import on the start-up path)."""
    if abs(len(a) - len(b)) > 2 or len(a) > 40:
        return 99
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b)))
        previous = current
    return previous[-1]


def parse_policy(value: object, from_text: bool = True) -> object:
    if isinstance(value, str) and value in BY_NAME:
        return BY_NAME[value]
    names = tuple(p.name for p in POLICIES)
    hint = _near_miss(value, names) if isinstance(value, str) else ""
    raise InvalidValue(value, _choices(names), hint)


def _parse_seconds(value: object, from_text: bool = True) -> object:
    """Seconds: a finite number >= 0, or "none" (no limit). From a variable, text is converted; from TOML, a string
    other than "none" is a wrong type."""
    if value is None or value == "none":
        return None
    number: float | None = None
    if isinstance(value, str) and from_text:
        try:
            number = float(value)
        except ValueError:
            number = None
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    if number is None or number != number or number in (float("inf"), float("-inf")) or number < 0:
        raise InvalidValue(value, "a finite number of seconds >= 0, or 'none'")
    return number


def parse_timeout(value: object, from_text: bool = True) -> object:
    return _parse_seconds(value, from_text)


def parse_warn_after(value: object, from_text: bool = True) -> object:
    return _parse_seconds(value, from_text)


def _parse_choice(values: tuple[str, ...]) -> Callable[..., object]:
    def parse(value: object, from_text: bool = True) -> object:
        if isinstance(value, str) and value in values:
            return value
        hint = _near_miss(value, values) if isinstance(value, str) else ""
        raise InvalidValue(value, _choices(values), hint)

    return parse


parse_on_timeout = _parse_choice(ON_TIMEOUT_CHOICES)
parse_seed_random_instances = _parse_choice(SEED_CHOICES)

#: key -> (environment variable, parser)
KEYS: dict[str, tuple[str, Callable[..., object]]] = {
    "policy": (ENV_POLICY, parse_policy),
    "timeout": (ENV_TIMEOUT, parse_timeout),
    "on_timeout": (ENV_ON_TIMEOUT, parse_on_timeout),
    "warn_after": (ENV_WARN_AFTER, parse_warn_after),
    "seed_random_instances": (ENV_SEED_RANDOM_INSTANCES, parse_seed_random_instances),
}


def variables(values: Mapping[str, object]) -> dict[str, str]:
    """The environment variables that carry ``values`` (key -> value or its text) to a child process."""
    return {KEYS[key][0]: "none" if value is None else str(value) for key, value in values.items()}


def environment_ignored(flags: object = None) -> bool:
    """True under ``-E`` or ``-I``: the interpreter ignores its environment, and so do we."""
    flags = sys.flags if flags is None else flags
    return bool(getattr(flags, "ignore_environment", 0) or getattr(flags, "isolated", 0))


#: Keys that only the environment's and the machine's files take.
ADMIN_KEYS = ("allow_weak", "program")


def _valid_keys(admin: bool) -> str:
    return ", ".join(repr(k) for k in (*KEYS, *(ADMIN_KEYS if admin else ())))


class _Resolution:
    """Collects settings top to bottom: the first source that sets a key wins; every problem is one message."""

    def __init__(self) -> None:
        self.found: dict[str, Setting] = {}
        self.bad: list[tuple[str, str, InvalidValue, bool]] = []  # (source, key, error, from a variable)
        self.messages: list[str] = []
        #: Every source tried, in order, with what it contributed: what ``urandom-shim check`` prints.
        self.trace: list[tuple[str, list[str]]] = []

    def tried(self, label: str, *notes: str) -> list[str]:
        """Record that ``label`` was tried; returns the list that collects what it contributed."""
        entry: list[str] = list(notes)
        self.trace.append((label, entry))
        return entry

    def offer(self, key: str, raw: object, source: str, from_text: bool) -> None:
        _variable, parse = KEYS[key]
        notes = self.trace[-1][1] if self.trace else []
        try:
            value = parse(raw, from_text)
        except InvalidValue as exc:
            self.bad.append((source, key, exc, from_text))
            notes.append(f"{key} = {_sources.shorten(raw)} is not valid (see problems)")
            return
        shown = _sources.shorten(str(value) if key == "policy" else value)
        winner = self.found.setdefault(key, Setting(value, source))
        notes.append(f"{key} = {shown}" + ("" if winner.source == source else f" (outranked by {winner.source})"))

    def layer(self, layer: _sources.Layer, admin: bool, program: str | None) -> None:
        notes = self.tried(layer.label)
        if layer.problems:
            notes.append("unusable (see problems)")
        self.messages.extend(layer.problems)
        values = dict(layer.values)
        rules = values.pop("program", None) if admin else None
        values.pop("allow_weak", None) if admin else None
        if rules is not None:
            self._programs(layer, rules, program)
        for key, raw in values.items():
            if key in KEYS:
                self.offer(key, raw, layer.label, from_text=False)
            else:
                where = (
                    "it is only honoured in the environment's and the machine's files"
                    if key in ADMIN_KEYS
                    else f"valid keys are {_valid_keys(admin)}"
                )
                self.messages.append(f"{layer.label}: unknown key {key!r} ({where}); ignoring it.")

    def _programs(self, layer: _sources.Layer, rules: object, program: str | None) -> None:
        if not isinstance(rules, list):
            self.messages.append(
                f"{layer.label}: program = {_sources.shorten(rules)} is not valid; expected an array of tables, "
                "written [[program]] with match = 'glob' and settings below it; ignoring the rules."
            )
            return
        for index, rule in enumerate(rules):
            label = f"{layer.label} [[program]] #{index + 1}"
            if not isinstance(rule, dict):
                self.messages.append(
                    f"{label}: is a {type(rule).__name__} ({_sources.shorten(rule)}), not a table with "
                    "match = 'glob' and settings; ignoring this rule."
                )
                continue
            pattern = rule.get("match")
            if not isinstance(pattern, str) or not pattern:
                self.messages.append(
                    f"{label}: match = {_sources.shorten(pattern)} is not valid; expected a glob on a script's file "
                    "name or an -m module's name, such as 'cron-helper*'; ignoring this rule."
                )
                continue
            # Every rule is checked, matching or not: a typo must not wait for the one boot that runs that program.
            matches = program is not None and _glob(pattern, program)
            source = f"{layer.label} [[program]] match = {pattern!r}"
            if matches:
                self.trace[-1][1].append(f"[[program]] #{index + 1} match = {pattern!r} matches {program!r}")
            for key, raw in rule.items():
                if key == "match":
                    continue
                if key not in KEYS:
                    valid = _valid_keys(False)
                    self.messages.append(f"{source}: unknown key {key!r} (valid keys are {valid}); ignoring it.")
                elif matches:
                    self.offer(key, raw, source, from_text=False)
                else:
                    try:
                        KEYS[key][1](raw, False)
                    except InvalidValue as exc:
                        self.messages.append(
                            f"{source}: {key} = {_sources.shorten(exc.value)} is not a valid {key}; expected "
                            f"{exc.expected}{exc.hint}; the rule will ignore it when it matches."
                        )

    def settings(self) -> Settings:
        return Settings(**self.found)


def _glob(pattern: str, name: str) -> bool:
    import fnmatch  # only on the unready path, and only when there are [[program]] rules

    return fnmatch.fnmatchcase(name, pattern)


def _floor(layer: _sources.Layer, messages: list[str]) -> str | None:
    """The label of a floor (``allow_weak = false``) that ``layer`` sets, if it does."""
    if "allow_weak" not in layer.values:
        return None
    value = layer.values["allow_weak"]
    if not isinstance(value, bool):
        # A floor is a security setting: a malformed one is read the safe way, not dropped.
        messages.append(
            f"{layer.label}: allow_weak = {_sources.shorten(value)} is not valid; expected true or false; reading it "
            "as allow_weak = false, the safe choice."
        )
        return f"{layer.label} (allow_weak = {_sources.shorten(value)}, read as false)"
    return None if value else f"{layer.label} (allow_weak = false)"


def resolve(
    environ: Mapping[str, str] | None = None,
    flags: object = None,
    argv: object = None,
    *,
    environment_file: str | None = None,
    machine_file: str | None = None,
    overrides: Mapping[str, object] | None = None,
    overrides_source: str = "urandom_shim.activate()",
    who: _sources.Invocation | None = None,
    trace: list[tuple[str, list[str]]] | None = None,
) -> tuple[Settings, list[str]]:
    """The effective settings, each with its source, and the problems found on the way (one message each).

    Reads top to bottom, highest precedence first; the first source that sets a key wins. The environment's and the
    machine's files may also set a floor (``allow_weak = false``) that no source can go below.

    ``who`` says which program to resolve for (default: this interpreter's, from ``argv``). ``trace``, if given,
    receives every source tried, in order, with what it contributed.
    """
    environ = os.environ if environ is None else environ
    ignore_environment = environment_ignored(flags)
    resolution = _Resolution()
    messages = resolution.messages
    tried = resolution.tried
    who = _sources.invocation(argv) if who is None else who
    if who.problem is not None and not ignore_environment:
        messages.append(who.problem)
    ignored = "ignored: Python runs with -E or -I"

    # 0. Values given at runtime (urandom_shim.activate()): above every source, but not below the floor.
    if overrides:
        tried(overrides_source)
        for key, value in overrides.items():
            resolution.offer(key, value, overrides_source, from_text=False)
    # 1. The environment.
    for key, (variable, _parse) in KEYS.items():
        source = f"environment variable {variable}"
        raw = None if ignore_environment else environ.get(variable)
        tried(source, *(() if raw is not None else (ignored if ignore_environment else "not set",)))
        if raw is not None:
            resolution.offer(key, raw, source, from_text=True)
    # 2. The file named by URANDOM_SHIM_CONFIG.
    named = None if ignore_environment else environ.get(ENV_CONFIG)
    if named:
        layer = _sources.read_file(named, f"{named} (from {ENV_CONFIG})", required=True)
        if layer is not None:
            resolution.layer(layer, admin=False, program=who.program)
    else:
        tried(f"environment variable {ENV_CONFIG}", ignored if ignore_environment else "not set")
    # 3. The project's pyproject.toml.
    if ignore_environment or who.anchor is None:
        tried("the project's pyproject.toml", ignored if ignore_environment else "no directory to look from")
    else:
        path, problem = _sources.find_pyproject(who.anchor)
        if problem is not None:
            messages.append(problem)
        project = None if path is None else _sources.read_pyproject(path)
        if project is not None:
            resolution.layer(project, admin=False, program=who.program)
        elif problem is not None:
            tried("the project's pyproject.toml", "unusable (see problems)")
        elif path is None:
            tried("the project's pyproject.toml", f"none found in {who.anchor} or above")
        else:
            tried(f"{path} [{_sources.TABLE}]", "no such table in the nearest pyproject.toml")
    # 4. The user's file.
    path = _sources.user_file(environ, ignore_environment)
    user = _sources.read_file(path, f"{path} (user file)", required=False)
    if user is not None:
        resolution.layer(user, admin=False, program=who.program)
    else:
        tried(f"{path} (user file)", "absent")
    # 5. The environment's file, then the machine's: these may hold [[program]] rules and a floor.
    floors = []
    for path, kind in (
        (environment_file or _sources.environment_file(), "environment file"),
        (machine_file or _sources.machine_file(environ, ignore_environment), "machine file"),
    ):
        layer = _sources.read_file(path, f"{path} ({kind})", required=False)
        if layer is None:
            tried(f"{path} ({kind})", "absent")
            continue
        floor = _floor(layer, messages)
        if floor is not None:
            floors.append(floor)
        resolution.layer(layer, admin=True, program=who.program)
        if floor is not None:
            resolution.trace[-1][1].append(
                f"{floor[len(layer.label) + 2 : -1]}: a floor, no source may choose weak bytes"
            )
    # 6. The default (Settings fills it in).
    settings = resolution.settings()
    tried(
        "default", *(f"{k} = {_sources.shorten(v)}" for k, (v, src) in settings.as_dict().items() if src == "default")
    )
    if trace is not None:
        trace.extend(resolution.trace)
    floor_messages: list[str] = []
    if floors:  # before describing bad values, so that "what the shim did instead" is what it really did
        _apply_floor(settings, floors[0], floor_messages)
    for source, key, exc, from_text in resolution.bad:
        messages.append(_describe(source, key, exc, settings, from_text))
    return settings, messages + floor_messages


def _apply_floor(settings: Settings, floor: str, messages: list[str]) -> None:
    from ._policies import LEGACY, PEP524

    if settings.policy.value is LEGACY:
        messages.append(
            f"policy 'legacy' from {settings.policy.source} is below the floor set by {floor}, which forbids weak "
            "bytes; using 'pep524' instead."
        )
        settings.policy = Setting(PEP524, f"{floor}, instead of 'legacy' from {settings.policy.source}")
    if settings.on_timeout.value == "fallback":
        messages.append(
            f"on_timeout 'fallback' from {settings.on_timeout.source} is below the floor set by {floor}, which "
            "forbids weak bytes; using 'raise' instead."
        )
        settings.on_timeout = Setting("raise", f"{floor}, instead of 'fallback' from {settings.on_timeout.source}")


def _describe(source: str, key: str, exc: InvalidValue, settings: Settings, from_variable: bool) -> str:
    """One line: the source, the key and bad value, the valid choices, and what the shim does instead."""
    effective: Setting = getattr(settings, key)
    shown = str(effective.value) if key == "policy" else effective.value
    instead = "none" if shown is None else repr(shown)
    shown_value = _sources.shorten(exc.value)
    what = f"{source}={shown_value}" if from_variable else f"{source}: {key} = {shown_value}"
    return (
        f"{what} is not a valid {key}; expected {exc.expected}{exc.hint}; "
        f"ignoring it, so {key} is {instead} from {effective.source}."
    )
