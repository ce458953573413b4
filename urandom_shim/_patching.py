"""Patching: install, undo, and cover every alias.

Patches are recorded in an undo log of (object, attribute, original) and undone in reverse order, so every original
comes back exactly. The originals stay reachable from each wrapper as ``__wrapped__``.

Each wrapper has a fast path: once the CRNG is ready (or the shim is deactivated) it calls the original at once. On the
transition to ready the shim also *restores* every original, so call sites go back to the interpreter's own functions
and speed; only references that were copied while the shim was engaged keep a wrapper, and its fast path.

The wrappers decide nothing themselves: they ask the engine (:mod:`urandom_shim._activation`) what their call site does
under the current policy.
"""

from __future__ import annotations

import _thread
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any, Callable

    from ._activation import Engine

#: The interpreter's own os.urandom, whatever os.urandom is by the time this module is imported.
NATIVE_URANDOM: Callable[[int], bytes] = getattr(os.urandom, "__urandom_shim_original__", os.urandom)

_MISSING = object()

#: Who calls the well-known aliases of os.urandom, for diagnostics.
ALIAS_USERS = {
    "random._urandom": "random.SystemRandom",
    "urllib.request._randombytes": "urllib.request's HTTP digest authentication",
}

SECRETS_FUNCTIONS = ("token_bytes", "token_hex", "token_urlsafe", "choice", "randbelow", "randbits")


class Patcher:
    """An undo log. ``set`` records the original the first time an attribute is patched; ``undo`` restores all."""

    def __init__(self) -> None:
        self._log: list[tuple[object, str, object]] = []
        self._patched: set[tuple[int, str]] = set()
        self._lock = _thread.allocate_lock()

    def set(self, obj: object, attr: str, value: object) -> None:
        with self._lock:
            key = (id(obj), attr)
            if key not in self._patched:
                original = vars(obj).get(attr, _MISSING)
                self._log.append((obj, attr, unwrap(original)))
                self._patched.add(key)
            setattr(obj, attr, value)

    def undo(self) -> None:
        with self._lock:
            while self._log:
                obj, attr, original = self._log.pop()
                if original is _MISSING:
                    try:
                        delattr(obj, attr)
                    except AttributeError:
                        pass
                else:
                    setattr(obj, attr, original)
            self._patched.clear()

    def __len__(self) -> int:
        return len(self._log)


_wrappers: dict[int, Callable[..., Any]] = {}  # id -> wrapper, to recognise our own without touching foreign objects


def is_wrapper(value: object) -> bool:
    wrapper = _wrappers.get(id(value))
    return wrapper is not None and wrapper is value


def unwrap(value: object) -> object:
    """The interpreter's original behind one of our wrappers; any other object unchanged."""
    while is_wrapper(value):
        value = value.__urandom_shim_original__  # type: ignore[attr-defined]
    return value


def _dress(wrapper: Callable[..., Any], original: Callable[..., Any], label: str) -> Callable[..., Any]:
    """Give ``wrapper`` the original's name, docstring and module, as functools.update_wrapper does (without its
    import cost on the start-up path)."""
    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(wrapper, attr, getattr(original, attr))
        except (AttributeError, TypeError):
            pass
    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    wrapper.__urandom_shim_original__ = original  # type: ignore[attr-defined]
    wrapper.__urandom_shim_label__ = label  # type: ignore[attr-defined]
    _wrappers[id(wrapper)] = wrapper
    return wrapper


def urandom_wrapper(engine: Engine, original: Callable[..., bytes], label: str) -> Callable[..., bytes]:
    """A stand-in for os.urandom (or an alias of it) that applies the policy while the CRNG is unready."""
    original = unwrap(original)  # type: ignore[assignment]

    def urandom(*args: Any, **kwargs: Any) -> bytes:
        if not engine.engaged or engine.ready():
            return original(*args, **kwargs)
        return engine.urandom(original, label, args, kwargs)

    return _dress(urandom, original, label)


def site_wrapper(engine: Engine, original: Callable[..., Any], label: str, site: str) -> Callable[..., Any]:
    """A stand-in for a function (a ``secrets`` function) whose inner os.urandom calls follow ``site``'s row."""
    original = unwrap(original)  # type: ignore[assignment]

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not engine.engaged or engine.ready():
            return original(*args, **kwargs)
        return engine.within_site(site, label, original, args, kwargs)

    return _dress(wrapper, original, label)


def seed_wrapper(engine: Engine, original: Callable[..., Any]) -> Callable[..., Any]:
    """A stand-in for ``random.Random.seed``: ``seed(None)`` gets its entropy as the policy says."""
    original = unwrap(original)  # type: ignore[assignment]

    def seed(self: Any, *args: Any, **kwargs: Any) -> Any:
        if (
            ((args and args[0] is None) or (not args and kwargs.get("a") is None))
            and engine.engaged
            and not engine.ready()
        ):
            value = engine.seed_value(self)
            if value is not None:
                if args:
                    args = (value, *args[1:])
                else:
                    kwargs["a"] = value
        return original(self, *args, **kwargs)

    return _dress(seed, original, "random.Random.seed")


def module_aliases(module: ModuleType) -> list[str]:
    """Names in ``module`` bound to the interpreter's os.urandom or to one of our os.urandom wrappers."""
    try:
        namespace = vars(module)
    except TypeError:
        return []
    names = []
    for name, value in list(namespace.items()):
        if value is NATIVE_URANDOM or (is_wrapper(value) and unwrap(value) is NATIVE_URANDOM):
            names.append(name)
    return names


def patch_aliases(engine: Engine, patcher: Patcher, module: ModuleType) -> None:
    """Point every alias of os.urandom that ``module`` holds at a wrapper labelled with the module and name."""
    mod_name = getattr(module, "__name__", "?")
    if mod_name in ("posix", "nt") or (isinstance(mod_name, str) and mod_name.startswith("urandom_shim")):
        return
    for name in module_aliases(module):
        patcher.set(module, name, urandom_wrapper(engine, NATIVE_URANDOM, f"{mod_name}.{name}"))


def patch_all_loaded_aliases(engine: Engine, patcher: Patcher) -> None:
    """Cover aliases held by modules imported before the shim engaged (another ``.pth``, a sitecustomize)."""
    for module in list(sys.modules.values()):
        if module is not None:
            patch_aliases(engine, patcher, module)


def patch_random(engine: Engine, patcher: Patcher, module: ModuleType) -> None:
    patch_aliases(engine, patcher, module)
    cls = getattr(module, "Random", None)
    if cls is not None and "seed" in vars(cls):
        inst = getattr(module, "_inst", None)
        bound = vars(module).get("seed")
        # random.seed is _inst.seed, a method bound at import time to the unpatched function: rebind it too.
        rebind = inst is not None and getattr(bound, "__self__", None) is inst
        wrapped_seed = seed_wrapper(engine, vars(cls)["seed"])
        patcher.set(cls, "seed", wrapped_seed)
        if rebind:
            patcher.set(module, "seed", wrapped_seed.__get__(inst, type(inst)))
    engine.reseed_module_instance(module)


def patch_secrets(engine: Engine, patcher: Patcher, module: ModuleType) -> None:
    from ._policies import SECRETS

    patch_aliases(engine, patcher, module)
    for name in SECRETS_FUNCTIONS:
        original = vars(module).get(name)
        if original is not None and callable(original):
            patcher.set(module, name, site_wrapper(engine, original, f"secrets.{name}", SECRETS))
