"""Configuration: sources, precedence, provenance and validation.

The sources (docs/reference/configuration.md), highest first: the environment variables below, the file named by
``URANDOM_SHIM_CONFIG``, the project's ``pyproject.toml``, the user's file, the environment's and the machine's files,
then the default (policy ``native``). :func:`resolve` reads them in that order; :mod:`urandom_shim._sources` finds and
reads the files.

=========================================  ==========================================================
``URANDOM_POLICY``                         ``native``, ``pep524``, ``pep522`` or ``legacy``
``URANDOM_SHIM_TIMEOUT``                   seconds any wait may last (a number >= 0), or ``none``
``URANDOM_SHIM_ON_TIMEOUT``                ``raise`` or ``fallback``
``URANDOM_SHIM_WARN_AFTER``                seconds of waiting before one diagnostic, or ``none``
``URANDOM_SHIM_SEED_RANDOM_INSTANCES``     ``nonblocking`` or ``policy``
``URANDOM_SHIM_MODE``                      ``enforce`` or ``report`` (report-only: behave as ``native``, record events)
``URANDOM_SHIM_EVENTS``                    an absolute path: the JSON-lines file events are appended to, or ``none``
=========================================  ==========================================================

With ``-E`` or ``-I`` these variables are ignored, the way Python ignores its own ``PYTHON*`` variables.

A bad value never stops an interpreter: it is reported on one ``urandom-shim:`` line that names the source, the bad
value and the valid choices, and resolution carries on as if the variable were not set.

One piece, though over 500 lines: every unready start resolves configuration with all of it, and a second module
would cost each of them about 0.4 M instructions more to import (docs/explanation/design-decisions.md).
"""

import os
import sys

from . import _messages, _sources
from ._policies import (
    BY_NAME,
    MODE_CHOICES,
    ON_TIMEOUT_CHOICES,
    POLICIES,
    SEED_CHOICES,
    Policy,
    Setting,
    Settings,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping

ENV_POLICY = "URANDOM_POLICY"
ENV_TIMEOUT = "URANDOM_SHIM_TIMEOUT"
ENV_ON_TIMEOUT = "URANDOM_SHIM_ON_TIMEOUT"
ENV_WARN_AFTER = "URANDOM_SHIM_WARN_AFTER"
ENV_SEED_RANDOM_INSTANCES = "URANDOM_SHIM_SEED_RANDOM_INSTANCES"
ENV_MODE = "URANDOM_SHIM_MODE"
ENV_EVENTS = "URANDOM_SHIM_EVENTS"
ENV_CONFIG = "URANDOM_SHIM_CONFIG"
ENV_MACHINE = "URANDOM_SHIM_MACHINE_CONFIG"
ENV_DISABLE = "URANDOM_SHIM_DISABLE"
#: Set by ``run`` and ``simulate``: which of the variables they set came from which flag the user typed, one
#: ``FLAG<TAB>VARIABLE<TAB>VALUE`` line each, after a first line naming the command. A variable whose value is still
#: the one the flag gave is then named by its flag.
ENV_GIVEN_AS = "URANDOM_SHIM_GIVEN_AS"
ENV_SIMULATE = "URANDOM_SHIM_SIMULATE"  # read by urandom_shim._simulation
ENV_WAIT_BOUND = "URANDOM_SHIM_WAIT_BOUND"  # read by urandom_shim._simulation, set by the pytest plugin
#: ``0``: the problem lines of this process's configuration are left to the pytest plugin's report (set by the
#: plugin in report-only runs for the tests' processes, which must see nothing the shim would not show them).
ENV_PROBLEM_LINES = "URANDOM_SHIM_PROBLEM_LINES"
#: A directory the pytest plugin names for its tests' processes: one whose refusal goes uncaught leaves a file there,
#: named by its pid, so that the plugin knows it died of the policy even when another process reaped it.
ENV_EXIT_NOTES = "URANDOM_SHIM_EXIT_NOTES"
ENV_DEBUG = "URANDOM_SHIM_DEBUG"
ENV_HASHSEED = "URANDOM_SHIM_HASHSEED"  # urandom_shim._hashseed's mark
ENV_LAUNCHER = "URANDOM_SHIM_LAUNCHER"  # set by bin/urandom-shim for the command line's own interpreter
ENV_SHARED = "URANDOM_SHIM_INTERPRETERS"  # the main interpreter's settings, for its subinterpreters (below)


class InvalidValue(ValueError):
    """A value that does not fit its key. ``expected`` lists the valid choices."""

    def __init__(self, value: object, expected: str, hint: str = "") -> None:
        super().__init__(f"{_sources.shorten(value)} is not valid; expected {expected}{hint}")
        self.value = value
        self.expected = expected
        self.hint = hint


def _choices(values: "tuple[str, ...]") -> str:
    return "one of " + ", ".join(repr(v) for v in values)


def _near_miss(text: str, valid: "tuple[str, ...]") -> str:
    """A "did you mean" for a wrong case, stray whitespace or separators, a prefix, or a typo or two."""
    stripped = text.strip()
    if stripped != text and stripped in valid:
        return _messages.WHITESPACE_HINT.format(stripped=stripped)
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


def parse_policy(value: object) -> "Policy":
    if isinstance(value, str) and value in BY_NAME:
        return BY_NAME[value]
    names = tuple(p.name for p in POLICIES)
    hint = _near_miss(value, names) if isinstance(value, str) else ""
    raise InvalidValue(value, _choices(names), hint)


def parse_seconds(value: object) -> "float | None":
    """Seconds, as a file or the API gives them: a finite number >= 0, or "none" (no limit). A string other than
    "none" is a wrong type here (see :func:`parse_seconds_text`)."""
    if value is None or value == "none":
        return None
    number: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:  # an integer beyond any float (1e400 seconds)
            number = None
    if number is None or number != number or number in (float("inf"), float("-inf")) or number < 0:
        raise InvalidValue(value, _messages.EXPECTED_SECONDS)
    return number + 0.0  # -0 is 0: never "waited -0 s"


def parse_seconds_text(value: object) -> "float | None":
    """Seconds, as a variable or a command line gives them: text that is a number, or "none"."""
    if isinstance(value, str) and value != "none":
        try:
            number = float(value)
        except ValueError:
            raise InvalidValue(value, _messages.EXPECTED_SECONDS) from None
        try:
            return parse_seconds(number)
        except InvalidValue:
            raise InvalidValue(value, _messages.EXPECTED_SECONDS) from None
    return parse_seconds(value)


#: The longest events path: longer is a mistake, and every event would carry it.
MAX_EVENTS_PATH = 1024


def parse_events_path(value: object) -> "str | None":
    """The events file: an absolute path (every process of a boot appends to the same file, whatever its current
    directory), or "none"."""
    if value is None or value == "none":
        return None
    if not isinstance(value, str) or not value.startswith("/") or "\0" in value or len(value) > MAX_EVENTS_PATH:
        hint = _messages.EVENTS_RELATIVE_HINT if isinstance(value, str) and value and value[0] != "/" else ""
        raise InvalidValue(value, _messages.EXPECTED_EVENTS_PATH, hint)
    return value


def _parse_choice(values: "tuple[str, ...]") -> "Callable[[object], str]":
    def parse(value: object) -> str:
        if isinstance(value, str) and value in values:
            return value
        hint = _near_miss(value, values) if isinstance(value, str) else ""
        raise InvalidValue(value, _choices(values), hint)

    return parse


class Key:
    """One configuration key: its name, the environment variable that sets it, how its values are read, and its
    default. ``parse`` reads a value as a file or the API gives it; ``parse_text`` as a variable or a command line
    gives it (the same, except for seconds, which are numbers in a file and text in a variable)."""

    __slots__ = ("default", "name", "parse", "parse_text", "variable")

    def __init__(
        self,
        name: str,
        *,
        variable: str,
        parse: "Callable[[object], object]",
        parse_text: "Callable[[object], object] | None" = None,
    ) -> None:
        self.name = name
        self.variable = variable
        self.parse = parse
        self.parse_text = parse_text or parse
        self.default: object = getattr(Settings(), name).value

    def read(self, raw: object, *, from_text: bool) -> object:
        """``raw`` as this key's value; :class:`InvalidValue` (or whatever a strange value raises) if it isn't one."""
        return self.parse_text(raw) if from_text else self.parse(raw)

    def __repr__(self) -> str:
        return f"<Key {self.name} ({self.variable})>"


#: Every key, by name.
KEYS: "dict[str, Key]" = {
    key.name: key
    for key in (
        Key("policy", variable=ENV_POLICY, parse=parse_policy),
        Key("timeout", variable=ENV_TIMEOUT, parse=parse_seconds, parse_text=parse_seconds_text),
        Key("on_timeout", variable=ENV_ON_TIMEOUT, parse=_parse_choice(ON_TIMEOUT_CHOICES)),
        Key("warn_after", variable=ENV_WARN_AFTER, parse=parse_seconds, parse_text=parse_seconds_text),
        Key("seed_random_instances", variable=ENV_SEED_RANDOM_INSTANCES, parse=_parse_choice(SEED_CHOICES)),
        Key("mode", variable=ENV_MODE, parse=_parse_choice(MODE_CHOICES)),
        Key("events", variable=ENV_EVENTS, parse=parse_events_path),
    )
}


#: The variables that set a key, in the order of :data:`KEYS`.
KEY_VARIABLES = tuple(key.variable for key in KEYS.values())
#: Every variable a user may set for the shim: what ``_urandom_shim_boot`` looks for (its own copy, which
#: ``tests/test_structure.py`` keeps equal), what the pytest plugin restores, what the tests keep out of their
#: interpreters. (``URANDOM_SHIM_HOME`` and the launcher's variables are set by ``urandom-shim run`` itself.)
VARIABLES = (
    ENV_DISABLE,
    ENV_SIMULATE,
    *KEY_VARIABLES,
    ENV_CONFIG,
    ENV_HASHSEED,
    ENV_MACHINE,
    ENV_DEBUG,
    ENV_WAIT_BOUND,
)


def variables(values: "Mapping[str, object]") -> "dict[str, str]":
    """The environment variables that carry ``values`` (key -> value or its text) to a child process."""
    return {KEYS[key].variable: "none" if value is None else str(value) for key, value in values.items()}


def given_as(environ: "Mapping[str, str]") -> "dict[str, tuple[str, str]]":
    """Variable -> (the flag that set it, as a source: ``urandom-shim simulate --policy``; the value it gave), from
    :data:`ENV_GIVEN_AS`. Anything malformed there is no flag."""
    text = environ.get(ENV_GIVEN_AS) or ""
    command, _newline, rest = text.partition("\n")
    if command not in ("run", "simulate", "pytest"):
        return {}
    found = {}
    for line in rest.split("\n"):
        flag, variable, value = ([*line.split("\t", 2), "", ""])[:3]
        if not variable.startswith("URANDOM_") or len(flag) >= 80:
            continue
        if command == "pytest" and flag.startswith(PLUGIN_SOURCES):  # the plugin's option, ini key, marker, fixture
            found[variable] = (flag, value)
        elif command != "pytest" and flag.startswith("--"):
            found[variable] = (f"urandom-shim {command} {flag}", value)
    return found


#: How the pytest plugin names where a test's settings came from (its options, ini keys, marker and fixture): the
#: sources its tests' child processes name for the variables it gives them (:data:`ENV_GIVEN_AS`, ``pytest``).
PLUGIN_SOURCES = ("--urandom-", "urandom_", "@pytest.mark.urandom", "the pytest plugin's ")


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
        self.found: dict[str, Setting[Any]] = {}
        self.bad: list[tuple[str, str, InvalidValue, bool]] = []  # (source, key, error, from a variable)
        self.messages: list[str] = []
        #: Every source tried, in order, with what it contributed: what ``urandom-shim check`` prints.
        self.trace: list[tuple[str, list[str]]] = []

    def tried(self, label: str, *notes: str) -> "list[str]":
        """Record that ``label`` was tried; returns the list that collects what it contributed."""
        entry: list[str] = list(notes)
        self.trace.append((label, entry))
        return entry

    def offer(self, key: str, raw: object, source: str, from_text: bool) -> None:
        notes = self.trace[-1][1] if self.trace else []
        try:
            value = KEYS[key].read(raw, from_text=from_text)
        except Exception as exc:  # noqa: BLE001 - InvalidValue, or anything a strange value raises
            self.bad.append((source, key, as_invalid(raw, key, exc), from_text))
            notes.append(_messages.NOTE_NOT_VALID.format(key=key, raw=_shown(raw, from_text)))
            return
        shown = _shown(str(value) if key == "policy" else value, from_text)
        winner = self.found.setdefault(key, Setting(value, source))
        notes.append(f"{key} = {shown}" + ("" if winner.source == source else f" (outranked by {winner.source})"))

    def layer(self, layer: "_sources.Layer", admin: bool, program: "str | None") -> None:
        notes = self.tried(layer.label)
        if layer.problems:
            notes.append("unusable (see problems)")
        self.messages.extend(layer.problems)
        values = dict(layer.values)
        rules = values.pop("program", None) if admin else None
        values.pop("allow_weak", None) if admin else None
        first_rule_message = len(self.messages)
        if rules is not None:  # before the table's own keys: a matching rule outranks them
            self._programs(layer, rules, program)
        unknown = []
        for key, raw in values.items():
            if key in KEYS:
                self.offer(key, raw, layer.label, from_text=False)
            elif key in ADMIN_KEYS:
                self.messages.append(_messages.ADMIN_KEY_OUT_OF_PLACE.format(label=layer.label, key=key))
            else:
                unknown.append(key)
        if unknown:  # reported before the rules' problems, as the table comes before its rules in the file
            self.messages.insert(first_rule_message, f"{layer.label}: {_unknown(unknown, admin)}")

    def _programs(self, layer: "_sources.Layer", rules: object, program: "str | None") -> None:
        if not isinstance(rules, list):
            self.messages.append(
                _messages.RULES_NOT_AN_ARRAY.format(label=layer.label, rules=_sources.toml_value(rules))
            )
            return
        for index, rule in enumerate(rules):
            label = f"{layer.label} [[program]] #{index + 1}"
            if not isinstance(rule, dict):
                self.messages.append(
                    _messages.RULE_NOT_A_TABLE.format(
                        label=label, name=type(rule).__name__, rule=_sources.toml_value(rule)
                    )
                )
                continue
            pattern = rule.get("match")
            if not isinstance(pattern, str) or not pattern or len(pattern) > MAX_MATCH:
                given = (
                    "match is missing" if pattern is None else f"match = {_sources.toml_value(pattern)} is not valid"
                )
                self.messages.append(_messages.RULE_BAD_MATCH.format(label=label, given=given, max_match=MAX_MATCH))
                continue
            # Every rule is checked, matching or not: a typo must not wait for the one boot that runs that program.
            matches = program is not None and glob_matches(pattern, program)
            source = f"{layer.label} [[program]] match = {pattern!r}"
            if matches:
                self.trace[-1][1].append(
                    _messages.NOTE_RULE_MATCHES.format(value=index + 1, pattern=pattern, program=program)
                )
            unknown = []
            for key, raw in rule.items():
                if key == "match":
                    continue
                if key not in KEYS:
                    unknown.append(key)
                elif matches:
                    self.offer(key, raw, source, from_text=False)
                else:
                    try:
                        KEYS[key].read(raw, from_text=False)
                    except Exception as exc:  # noqa: BLE001 - InvalidValue, or anything a strange value raises
                        error = as_invalid(raw, key, exc)
                        self.messages.append(
                            _messages.RULE_BAD_VALUE.format(
                                source=source,
                                key=key,
                                value=_sources.toml_value(error.value),
                                expected=error.expected,
                                hint=error.hint,
                            )
                        )
            if unknown:
                self.messages.append(f"{source}: {_unknown(unknown, False)}")

    def guarded(self, label: str, read: "Callable[[], None]", ending: str = _sources.IGNORED) -> bool:
        """Run ``read`` (one source); if it fails in a way nobody foresaw, that source is one message and resolution
        carries on with the others. True if it went through."""
        try:
            read()
        except Exception as exc:  # noqa: BLE001 - no value, however strange, may switch the shim off
            self.messages.append(
                f"{label}: could not be read ({type(exc).__name__}: {_sources.clip(str(exc), 120)}); {ending}"
            )
            return False
        return True

    def settings(self) -> "Settings":
        return Settings(**self.found)


#: The longest ``match`` a ``[[program]]`` rule may have: program names are file names (at most 255 bytes on Linux)
#: or module names, and a bound keeps matching cheap whatever a file holds.
MAX_MATCH = 256


def _unknown(keys: "list[str]", admin: bool) -> str:
    """One message for every unknown key of one table, naming the first few."""
    shown = ", ".join(_sources.shorten(key, 40) for key in keys[:3])
    valid = _valid_keys(admin)
    if len(keys) == 1:
        names = (*KEYS, *(ADMIN_KEYS if admin else ()))
        hint = _near_miss(keys[0], names) if len(keys[0]) <= 40 else ""
        return _messages.UNKNOWN_KEY.format(shown=shown, hint=hint, valid=valid)
    more = f" and {len(keys) - 3} more" if len(keys) > 3 else ""
    return _messages.UNKNOWN_KEYS.format(shown=shown, more=more, valid=valid)


def as_invalid(raw: object, key: str, exc: "Exception") -> "InvalidValue":
    """``exc`` as an :class:`InvalidValue`: a parser that fails in an unforeseen way still makes a bad value."""
    if isinstance(exc, InvalidValue):
        return exc
    return InvalidValue(raw, f"a valid {key} ({type(exc).__name__} while reading it)")


#: How the message about an unusable file ends when that file may hold a floor: it fails closed.
FLOOR_ENDING = _messages.FLOOR_ENDING


def _floor(layer: "_sources.Layer", messages: "list[str]") -> "str | None":
    """Why ``layer`` sets a floor, if it does: ``allow_weak = false``, a value that is not a boolean, or a file that
    exists but cannot be read or parsed. A floor is a security setting, so every doubt is read as a floor."""
    if layer.problems:
        return _messages.FLOOR_UNUSABLE
    if "allow_weak" not in layer.values:
        return None
    value = layer.values["allow_weak"]
    if not isinstance(value, bool):
        messages.append(_messages.FLOOR_NOT_A_BOOLEAN.format(label=layer.label, value=_sources.toml_value(value)))
        return f"allow_weak = {_sources.toml_value(value)}, read as false"
    return None if value else "allow_weak = false"


def _floor_files(
    environ: "Mapping[str, str]", ignore_environment: bool, environment_file: "str | None", machine_file: "str | None"
) -> "list[tuple[str, str, bool]]":
    """(path, label, floor only) of every file that may set a floor, in precedence order.

    ``URANDOM_SHIM_MACHINE_CONFIG`` moves the machine file (for image builds and tests), but a variable must not take
    a floor away: ``/etc/urandom-shim.toml`` is then always read again for its floor, whatever the variable names.
    Only the machine file's own path, unmoved, is not read twice. No other spelling or identity is trusted: a check
    of the file's identity followed by a read of the variable's path could be raced with a symlink swapped between
    the two, and reading ``/etc`` twice costs one small read, and only where the variable is set. ``machine_file``
    (tests only) replaces both."""
    env_path = environment_file or _sources.environment_file()
    files = [(env_path, f"{env_path} (environment file)", False)]
    machine = machine_file or _sources.machine_file(environ, ignore_environment)
    files.append((machine, f"{_sources.clip(machine, 200)} (machine file)", False))
    if machine_file is None and machine != _sources.MACHINE_FILE:
        files.append(
            (
                _sources.MACHINE_FILE,
                _messages.LABEL_MACHINE_FILE_FOR_FLOOR.format(machine_file=_sources.MACHINE_FILE),
                True,
            )
        )
    return files


def environment_problems(environ: "Mapping[str, str] | None" = None, flags: object = None) -> "list[str]":
    """The problems with the ``URANDOM_*`` variables alone, found without reading any file: what every start
    checks, the ready path included, so that a typo shows the day it is made and not at the next early boot."""
    environ = os.environ if environ is None else environ
    if environment_ignored(flags):
        return []
    problems = []
    for key, record in KEYS.items():
        variable = record.variable
        raw = environ.get(variable)
        if not raw:  # unset, or empty: the same, for every variable
            continue
        try:
            record.read(raw, from_text=True)
        except Exception as exc:  # noqa: BLE001 - InvalidValue, or anything a strange value raises
            error = as_invalid(raw, key, exc)
            problems.append(
                _messages.BAD_VARIABLE.format(
                    variable=variable, raw=_sources.shorten(raw), key=key, expected=error.expected, hint=error.hint
                )
            )
    named = environ.get(ENV_CONFIG)
    if named:
        problem = _sources.check_file(named, _named_label(named))
        if problem is not None:
            problems.append(problem)
    return problems


def report_environment() -> None:
    """Called by ``_urandom_shim_boot`` on the ready path when a ``URANDOM_*`` variable looks wrong: one line per
    problem, the same lines (without what applies instead) as on the unready path and in ``urandom-shim check``."""
    for problem in _messages.bounded(environment_problems()):
        _messages.emit(problem)


def _named_label(path: str) -> str:
    return f"{_sources.clip(path, 200)} (from {ENV_CONFIG})"


def resolve(
    environ: "Mapping[str, str] | None" = None,
    flags: object = None,
    argv: object = None,
    *,
    environment_file: "str | None" = None,
    machine_file: "str | None" = None,
    overrides: "Mapping[str, object] | None" = None,
    overrides_source: str = "urandom_shim.activate()",
    who: "_sources.Invocation | None" = None,
    trace: "list[tuple[str, list[str]]] | None" = None,
) -> "tuple[Settings, list[str]]":
    """The effective settings, each with its source, and the problems found on the way (one message each).

    Reads top to bottom, highest precedence first; the first source that sets a key wins. The environment's and the
    machine's files may also set a floor (``allow_weak = false``) that no source can go below; such a file that
    exists but can't be read counts as a floor.

    ``who`` says which program to resolve for (default: this interpreter's, from ``argv``). ``trace``, if given,
    receives every source tried, in order, with what it contributed.
    """
    environ = os.environ if environ is None else environ
    ignore_environment = environment_ignored(flags)
    resolution = _Resolution()
    messages = resolution.messages
    tried = resolution.tried
    guarded = resolution.guarded
    who = _sources.invocation(argv) if who is None else who
    if who.problem is not None and not ignore_environment:
        messages.append(who.problem)
    program = who.program
    ignored = _messages.NOTE_IGNORED_UNDER_E

    # 0. Values given at runtime (urandom_shim.activate()): above every source, but not below the floor.
    if overrides:
        tried(overrides_source)
        for key, value in overrides.items():
            resolution.offer(key, value, overrides_source, from_text=False)
    # 1. The environment.
    given = {} if ignore_environment else given_as(environ)
    for key, record in KEYS.items():
        raw = None if ignore_environment else environ.get(record.variable)
        flag = given.get(record.variable)
        source = flag[0] if flag is not None and flag[1] == raw else f"environment variable {record.variable}"
        if raw == "":  # empty counts as not set, the same for every variable
            tried(source, "set but empty, so not set")
            continue
        tried(source, *(() if raw is not None else (ignored if ignore_environment else "not set",)))
        if raw is not None:
            resolution.offer(key, raw, source, from_text=True)
    # 2. The file named by URANDOM_SHIM_CONFIG.
    named = None if ignore_environment else environ.get(ENV_CONFIG)
    if named:
        label = _named_label(named)

        def read_named() -> None:
            layer = _sources.read_file(named, label, required=True)
            if layer is not None:
                resolution.layer(layer, admin=False, program=program)

        guarded(label, read_named)
    else:
        tried(f"environment variable {ENV_CONFIG}", ignored if ignore_environment else "not set")
    # 3. The project's pyproject.toml, found walking up from where the program's code is (_sources.invocation).
    if ignore_environment or who.anchor is None:
        tried("the project's pyproject.toml", ignored if ignore_environment else "no directory to look from")
    else:
        anchor = who.anchor

        def read_project() -> None:
            path, problem = _sources.find_pyproject(anchor)
            if problem is not None:
                messages.append(problem)
            project = None if path is None else _sources.read_pyproject(path)
            if project is not None:
                resolution.layer(project, admin=False, program=program)
            elif problem is not None:
                tried("the project's pyproject.toml", "unusable (see problems)")
            elif path is None:
                tried("the project's pyproject.toml", f"none found in {anchor} or above")
            else:
                tried(f"{path} [{_sources.TABLE}]", _messages.NOTE_NO_TABLE)

        guarded("the project's pyproject.toml", read_project)

    def optional_file(path: str, label: str) -> None:
        """A file that may be absent, with the five keys at the top level."""

        def read() -> None:
            layer = _sources.read_file(path, label, required=False)
            if layer is not None:
                resolution.layer(layer, admin=False, program=program)
            else:
                tried(label, "absent")

        guarded(label, read)

    # 3b. The file the program's top-level package ships: what an installed app carries, where no pyproject is.
    if who.package is not None and not ignore_environment:
        from . import _programs  # loaded already: only it finds a package

        package_file = os.path.join(who.package, _programs.PACKAGE_FILE)
        optional_file(package_file, f"{package_file} (the app's package file)")
    # 4. The user's file.
    user_path = _sources.user_file(environ, ignore_environment)
    optional_file(user_path, f"{user_path} (user file)")
    # 5. The environment's file, then the machine's: these may hold [[program]] rules and a floor.
    floors = _read_admin_files(resolution, environ, ignore_environment, environment_file, machine_file, program)
    # 6. The default (Settings fills it in).
    settings = resolution.settings()
    tried(
        "default",
        *(f"{k} = {_sources.toml_value(v)}" for k, (v, src) in settings.as_dict().items() if src == "default"),
    )
    if trace is not None:
        trace.extend(resolution.trace)
    floor_messages: list[str] = []
    if floors:  # before describing bad values, so that "what the shim did instead" is what it really did
        _apply_floor(settings, floors[0], floor_messages)
    for source, key, exc, from_text in resolution.bad:
        messages.append(_describe(source, key, exc, settings, from_text))
    return settings, messages + floor_messages


def _read_admin_files(
    resolution: "_Resolution",
    environ: "Mapping[str, str]",
    ignore_environment: bool,
    environment_file: "str | None",
    machine_file: "str | None",
    program: "str | None",
) -> "list[str]":
    """Read the environment's and the machine's files into ``resolution``; returns the floors they set."""
    floors: list[str] = []
    for path, label, floor_only in _floor_files(environ, ignore_environment, environment_file, machine_file):

        def read(path: str = path, label: str = label, floor_only: bool = floor_only) -> None:
            layer = _sources.read_file(path, label, required=False, ending=FLOOR_ENDING)
            if layer is None:
                resolution.tried(label, "absent")
                return
            floor = _floor(layer, resolution.messages)
            if floor_only:
                notes = resolution.tried(label, _messages.NOTE_ONLY_FLOOR.format(env_machine=ENV_MACHINE))
                resolution.messages.extend(layer.problems)
            else:
                resolution.layer(layer, admin=True, program=program)
                notes = resolution.trace[-1][1]
            if floor is not None:
                floors.append(f"{label} ({floor})")
                notes.append(_messages.NOTE_FLOOR.format(floor=floor))

        if not resolution.guarded(label, read, FLOOR_ENDING):
            floors.append(_messages.FLOOR_FROM_UNUSABLE_FILE.format(label=label))
    return floors


def floor(environ: "Mapping[str, str] | None" = None, flags: object = None) -> "tuple[str | None, list[str]]":
    """(the floor, problems): the first file that forbids weak bytes, described, or None; and what reading the
    files that may set one found wrong. What ``urandom-shim run`` checks before it passes on a weak policy."""
    environ = os.environ if environ is None else environ
    resolution = _Resolution()
    floors = _read_admin_files(resolution, environ, environment_ignored(flags), None, None, None)
    return (floors[0] if floors else None), resolution.messages


def _apply_floor(settings: "Settings", floor: str, messages: "list[str]") -> None:
    from ._policies import LEGACY, NATIVE, PEP524, lifted

    settings.floor = floor
    policy = settings.policy.value
    if lifted(policy, floor) is not policy:
        if policy is LEGACY:
            messages.append(_messages.LEGACY_BELOW_FLOOR.format(policy_source=settings.policy.source, floor=floor))
            settings.policy = Setting(PEP524, f"{floor}, instead of 'legacy' from {settings.policy.source}")
        else:  # native on PyPy: its own os.urandom() returns bytes without waiting, which the floor forbids
            assert policy is NATIVE
            settings.policy = Setting(
                PEP524, _messages.NATIVE_LIFTED_ON_PYPY.format(floor=floor, policy_source=settings.policy.source)
            )
    if settings.on_timeout.value == "fallback":
        messages.append(
            _messages.FALLBACK_BELOW_FLOOR.format(on_timeout_source=settings.on_timeout.source, floor=floor)
        )
        settings.on_timeout = Setting("raise", f"{floor}, instead of 'fallback' from {settings.on_timeout.source}")


def _shown(value: object, from_text: bool) -> str:
    """A value as its source spells it: a variable's text as given, a file's value in TOML."""
    return _sources.shorten(value) if from_text else _sources.toml_value(value)


def _describe(source: str, key: str, exc: "InvalidValue", settings: "Settings", from_variable: bool) -> str:
    """One line: the source, the key and bad value, the valid choices, and what the shim does instead."""
    effective: Setting[object] = getattr(settings, key)
    shown = str(effective.value) if key == "policy" else effective.value
    instead = _sources.toml_value(shown)
    shown_value = _sources.shorten(exc.value) if from_variable else _sources.toml_value(exc.value)
    what = f"{source}={shown_value}" if from_variable else f"{source}: {key} = {shown_value}"
    return _messages.INVALID_VALUE_IGNORED.format(
        what=what, key=key, expected=exc.expected, hint=exc.hint, instead=instead, source=effective.source
    )


def glob_matches(pattern: str, name: str) -> bool:
    """``fnmatch.fnmatchcase(name, pattern)`` for a ``[[program]]`` rule. A pattern of plain characters and ``*``
    (``cron*``, ``*.py``) is matched here, with the leftmost search of :mod:`urandom_shim._glob`; only ``?`` or
    ``[`` loads that module, whose import costs an unready start about 0.4 M instructions."""
    if "?" in pattern or "[" in pattern:
        from . import _glob

        return _glob.matches(pattern, name)
    pieces = pattern.split("*")
    if len(pieces) == 1:
        return pattern == name
    first, last = pieces[0], pieces[-1]
    if len(first) + len(last) > len(name) or not name.startswith(first) or not name.endswith(last):
        return False
    position, limit = len(first), len(name) - len(last)
    for piece in pieces[1:-1]:
        found = name.find(piece, position, limit)
        if found < 0:
            return False
        position = found + len(piece)
    return True


# -- one process, one policy: what a subinterpreter follows (issue 36) -------------------------------------------------
#
# Every interpreter of a process runs `site`, so our .pth, so start-up: a subinterpreter made by
# concurrent.interpreters, InterpreterPoolExecutor, _interpreters or _xxsubinterpreters would resolve the configuration
# again, from the directory the process is in when it makes it (a daemon chdir()s to /) and from its own sys.argv.
# So the main interpreter, at an unready start, leaves what it saw and resolved where every interpreter of the process
# can read it and nothing else is shared: the C library's environment, with os.putenv() alone (the main
# interpreter's os.environ never shows it). Each interpreter builds its os.environ from that environment when it
# starts, and a subinterpreter whose process id is the one written there follows it: the same settings with the same
# sources, no second resolution and no second set of problem lines; and anything it resolves later (activate(),
# current_settings()) starts from the main interpreter's sys.argv and directory. A child process inherits the variable
# (exec keeps the environment) but has another process id, or is a main interpreter: it never follows it, and takes
# it out of its environment. A forked child writes it again under its own id (os.register_at_fork).
#
# The value: "PID:" then strings, each as "LENGTH:TEXT": the main interpreter's directory at start-up ("" if it had
# none), the number of its sys.argv's strings ("-" if sys.argv was not a list of strings) and those strings, then,
# if it engaged settings, for each in Settings.NAMES its value (a type letter, then text) and its source.

#: What this interpreter published, if it did, without the process id; or None.
_published: "str | None" = None


def publish(settings: "Settings | None") -> None:
    """In the main interpreter at an unready start: leave what it saw and resolved (``settings``, or None if it
    engaged nothing) for its subinterpreters. Never raises."""
    global _published
    try:
        argv, cwd = getattr(sys, "_urandom_shim_invocation", (None, None))
        strings = [cwd if isinstance(cwd, str) else ""]
        if isinstance(argv, list) and all(isinstance(a, str) for a in argv):
            strings += [str(len(argv)), *argv]
        else:
            strings.append("-")
        if settings is not None:
            for name in Settings.NAMES:
                setting = getattr(settings, name)
                value = setting.value
                if isinstance(value, Policy):  # "P": a policy no machine-wide one stands in for (_policies.pinned)
                    strings.append(f"{'P' if settings.pinned else 'p'}{value.name}")
                elif value is None:
                    strings.append("n")
                elif isinstance(value, float):
                    strings.append(f"f{value!r}")
                else:
                    strings.append(f"s{value}")
                strings.append(setting.source)
        first = _published is None
        _published = "".join([f"{len(text)}:{text}" for text in strings])
        _republish()
        if first:
            os.register_at_fork(after_in_child=_republish)
    except Exception:  # noqa: BLE001 - (a NUL in a path, say) subinterpreters then resolve for themselves
        pass


def _republish() -> None:
    try:
        os.putenv(ENV_SHARED, f"{os.getpid()}:{_published}")
    except Exception:  # noqa: BLE001 - never break a fork
        pass


def followed(environ: "Mapping[str, str] | None" = None) -> "Settings | bool | None":
    """What this interpreter follows: the main interpreter's settings (a subinterpreter of a process whose main
    interpreter engaged them), True (a subinterpreter whose main interpreter engaged nothing), or None (a main
    interpreter, another process's value, or none: resolve as usual). A subinterpreter also takes the main
    interpreter's invocation as its own. A value no interpreter of this process wrote is taken out of the
    environment."""
    environ = os.environ if environ is None else environ
    text = environ.get(ENV_SHARED)
    if text is None or _published is not None:  # none, or this interpreter's own
        return None
    pid, colon, payload = text.partition(":")
    sub = _subinterpreter() if colon and pid == str(os.getpid()) else False
    if sub is False:
        environ.pop(ENV_SHARED, None)  # type: ignore[attr-defined]
        return None
    if sub is None:
        return None
    try:
        strings = []
        position = 0
        while position < len(payload):
            colon_at = payload.index(":", position)
            length = payload[position:colon_at]
            end = colon_at + 1 + int(length)
            if not length.isdigit() or end > len(payload):  # a sign, or past the end: not ours (hostile review)
                return None
            strings.append(payload[colon_at + 1 : end])
            position = end
        cwd = strings[0] or None
        if strings[1] == "-":
            argv: list[str] | None = None
            rest = strings[2:]
        else:
            count = int(strings[1])
            argv, rest = strings[2 : 2 + count], strings[2 + count :]
        sys._urandom_shim_invocation = (argv, cwd)  # type: ignore[attr-defined]
        if not rest:
            return True
        values = {}
        pinned = False
        for index, name in enumerate(Settings.NAMES):
            kind, text = rest[2 * index][:1], rest[2 * index][1:]
            value: object = (
                BY_NAME[text] if kind in ("p", "P") else None if kind == "n" else float(text) if kind == "f" else text
            )
            pinned = pinned or kind == "P"
            values[name] = Setting(value, rest[2 * index + 1])
        settings = Settings(**values)  # type: ignore[arg-type]
        settings.pinned = pinned
    except Exception:  # noqa: BLE001 - unreadable: resolve as usual
        return None
    # The program itself may have written the value (os.environ in the main interpreter): the floor of the
    # environment's and machine's files holds whatever it says, as it holds for activate(). Quietly: the main
    # interpreter has reported any problem with those files.
    found, _problems = floor(environ)
    if found is not None:
        _apply_floor(settings, found, [])
    return settings


def _subinterpreter() -> "bool | None":
    """Whether this is a subinterpreter of its process: True, False, or None if it can't be known."""
    for name in ("_interpreters", "_xxsubinterpreters"):  # 3.13+; 3.8 to 3.12
        try:
            module = __import__(name)
        except ImportError:
            continue
        try:
            current, main = module.get_current(), module.get_main()
            if type(current) is tuple:  # 3.13+: (id, whence)
                current, main = current[0], main[0]
            return int(current) != int(main)
        except Exception:  # noqa: BLE001
            return None
    return None  # no module to tell: an embedding's subinterpreter (C API) may be one
