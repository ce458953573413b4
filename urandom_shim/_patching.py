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
    """An undo log. ``set`` records the original the first time an attribute is patched; ``undo`` restores all.

    ``undo`` restores an attribute only if it still holds our wrapper: whoever patched it after us (``mock.patch``,
    another shim) keeps theirs. Once undone, a patcher is closed, so a post-import hook that races the transition to
    ready cannot patch again behind it.
    """

    def __init__(self) -> None:
        self._log: list[tuple[object, str, object, object]] = []  # (object, attribute, original, ours)
        self._patched: set[tuple[int, str]] = set()
        self._lock = _thread.RLock()
        self.closed = False

    def set(self, obj: object, attr: str, value: object) -> None:
        with self._lock:
            if self.closed:
                return
            key = (id(obj), attr)
            if key in self._patched:
                for index, (o, a, original, _ours) in enumerate(self._log):
                    if o is obj and a == attr:
                        self._log[index] = (o, a, original, value)
            else:
                original = vars(obj).get(attr, _MISSING)
                self._log.append((obj, attr, unwrap(original), value))
                self._patched.add(key)
                if self not in _live:
                    _live.append(self)
            setattr(obj, attr, value)

    def undo(self) -> None:
        with self._lock:
            self.closed = True
            while self._log:
                obj, attr, original, ours = self._log.pop()
                if vars(obj).get(attr, _MISSING) is not ours:
                    continue  # patched again by someone else since: theirs stays
                if original is _MISSING:
                    try:
                        delattr(obj, attr)
                    except AttributeError:
                        pass
                else:
                    setattr(obj, attr, original)
            self._patched.clear()
            if self in _live:
                _live.remove(self)


_live: list[Patcher] = []


def _after_fork_in_child() -> None:
    for patcher in _live:
        patcher._lock = _thread.RLock()  # another thread may have held it when the process forked


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


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


def namespace(module: object) -> dict[str, object] | None:
    """A loaded module's globals, read without triggering anything: lazy modules (importlib.util.LazyLoader) load on
    attribute access, and may fail doing so."""
    if not isinstance(module, type(sys)):
        return None
    try:
        found = object.__getattribute__(module, "__dict__")
    except Exception:  # noqa: BLE001
        return None
    return found if isinstance(found, dict) else None


def module_aliases(module: ModuleType) -> list[str]:
    """Names in ``module`` bound to the interpreter's os.urandom or to one of our os.urandom wrappers."""
    names = []
    for name, value in list((namespace(module) or {}).items()):
        if value is NATIVE_URANDOM or (is_wrapper(value) and unwrap(value) is NATIVE_URANDOM):
            names.append(name)
    return names


def patch_aliases(engine: Engine, patcher: Patcher, module: ModuleType) -> None:
    """Point every alias of os.urandom that ``module`` holds at a wrapper labelled with the module and name."""
    mod_name = (namespace(module) or {}).get("__name__", "?")
    if not isinstance(mod_name, str) or mod_name in ("posix", "nt") or mod_name.startswith("urandom_shim"):
        return
    for name in module_aliases(module):
        patcher.set(module, name, urandom_wrapper(engine, NATIVE_URANDOM, f"{mod_name}.{name}"))


def patch_all_loaded_aliases(engine: Engine, patcher: Patcher) -> None:
    """Cover aliases held by modules imported before the shim engaged (another ``.pth``, a sitecustomize)."""
    for module in list(sys.modules.values()):
        try:
            patch_aliases(engine, patcher, module)
        except Exception as exc:  # noqa: BLE001 - one odd module must not stop the others from being covered
            from ._messages import emit

            emit(f"could not check module {module!r} for aliases of os.urandom ({type(exc).__name__}: {exc}).")


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


def patch_secrets(engine: Engine, patcher: Patcher, module: ModuleType) -> None:
    from ._policies import SECRETS

    patch_aliases(engine, patcher, module)
    replaced: dict[int, tuple[object, object]] = {}
    for name in SECRETS_FUNCTIONS:
        original = vars(module).get(name)
        if original is not None and callable(original):
            wrapper = site_wrapper(engine, original, f"secrets.{name}", SECRETS)
            patcher.set(module, name, wrapper)
            replaced[id(original)] = (original, wrapper)
    # `from secrets import token_bytes` in a module loaded before the shim engaged holds the unpatched function.
    for other in list(sys.modules.values()):
        if other is module:
            continue
        for name, value in list((namespace(other) or {}).items()):
            found = replaced.get(id(value))
            if found is not None and found[0] is value:
                patcher.set(other, name, found[1])
