"""Configuration: sources, precedence, provenance and validation.

Today the sources are, highest first: the environment variables below, then the default (policy ``native``). The file
sources of SPEC section 4 slot into :func:`resolve` between the two.

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
ENV_DISABLE = "URANDOM_SHIM_DISABLE"
ENV_SIMULATE = "URANDOM_SHIM_SIMULATE"


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
    folded = "".join(text.split()).lower().replace("-", "").replace("_", "")
    for name in valid:
        if folded == name.replace("-", "").replace("_", "") or (len(folded) > 2 and name.startswith(folded)):
            return f" (did you mean {name!r}?)"
    return ""


def parse_policy(value: object) -> object:
    if isinstance(value, str) and value in BY_NAME:
        return BY_NAME[value]
    names = tuple(p.name for p in POLICIES)
    hint = _near_miss(value, names) if isinstance(value, str) else ""
    raise InvalidValue(value, _choices(names), hint)


def _parse_seconds(value: object, allow_none: bool = True) -> object:
    if value is None and allow_none:
        return None
    number: float | None = None
    if isinstance(value, str):
        if value == "none" and allow_none:
            return None
        try:
            number = float(value)
        except ValueError:
            number = None
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    if number is None or number != number or number in (float("inf"), float("-inf")) or number < 0:
        raise InvalidValue(value, "a finite number of seconds >= 0" + (", or 'none'" if allow_none else ""))
    return number


def parse_timeout(value: object) -> object:
    return _parse_seconds(value)


def parse_warn_after(value: object) -> object:
    return _parse_seconds(value)


def _parse_choice(values: tuple[str, ...]) -> Callable[[object], object]:
    def parse(value: object) -> object:
        if isinstance(value, str) and value in values:
            return value
        hint = _near_miss(value, values) if isinstance(value, str) else ""
        raise InvalidValue(value, _choices(values), hint)

    return parse


parse_on_timeout = _parse_choice(ON_TIMEOUT_CHOICES)
parse_seed_random_instances = _parse_choice(SEED_CHOICES)

#: key -> (environment variable, parser)
KEYS: dict[str, tuple[str, Callable[[object], object]]] = {
    "policy": (ENV_POLICY, parse_policy),
    "timeout": (ENV_TIMEOUT, parse_timeout),
    "on_timeout": (ENV_ON_TIMEOUT, parse_on_timeout),
    "warn_after": (ENV_WARN_AFTER, parse_warn_after),
    "seed_random_instances": (ENV_SEED_RANDOM_INSTANCES, parse_seed_random_instances),
}


def environment_ignored(flags: object = None) -> bool:
    """True under ``-E`` or ``-I``: the interpreter ignores its environment, and so do we."""
    flags = sys.flags if flags is None else flags
    return bool(getattr(flags, "ignore_environment", 0) or getattr(flags, "isolated", 0))


def resolve(environ: Mapping[str, str] | None = None, flags: object = None) -> tuple[Settings, list[str]]:
    """The effective settings, each with its source, and the problems found on the way (one message each).

    Reads top to bottom, highest precedence first; the first source that sets a key wins.
    """
    environ = os.environ if environ is None else environ
    problems: list[tuple[str, str, InvalidValue]] = []
    found: dict[str, Setting] = {}
    if not environment_ignored(flags):
        for key, (variable, parse) in KEYS.items():
            raw = environ.get(variable)
            if raw is None:
                continue
            source = f"environment variable {variable}"
            try:
                found[key] = Setting(parse(raw), source)
            except InvalidValue as exc:
                problems.append((source, key, exc))
    settings = Settings(**found)
    return settings, [_describe(source, key, exc, settings) for source, key, exc in problems]


def _describe(source: str, key: str, exc: InvalidValue, settings: Settings) -> str:
    """One line: the source, the key and bad value, the valid choices, and what the shim does instead."""
    effective: Setting = getattr(settings, key)
    shown = str(effective.value) if key == "policy" else effective.value
    instead = "none" if shown is None else repr(shown)
    return (
        f"{source}={exc.value!r} is not a valid {key}; expected {exc.expected}{exc.hint}; "
        f"ignoring it, so {key} is {instead} from {effective.source}."
    )
