"""The stand-ins for the interpreter's functions, and where they go.

Each wrapper has a fast path: once the CRNG is ready (or the shim is deactivated) it calls the original at once. The
wrappers decide nothing themselves: they ask the engine (:mod:`urandom_shim._activation`) what their call site does
under the current policy. The undo log they are installed through is :mod:`urandom_shim._patching`.
"""

from __future__ import annotations

import sys

from . import _messages
from ._patching import NATIVE_URANDOM, Patcher, dress, is_wrapper, namespace, unwrap
from ._policies import SECRETS
from ._runtime import REFUSAL

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any, Callable, Protocol

    class Engine(Protocol):
        """What the wrappers ask of :class:`urandom_shim._activation.Engine` (a protocol, so that this module does
        not import the engine's, which imports this one)."""

        engaged: bool
        os_urandom: Callable[..., bytes]

        def ready(self) -> bool: ...

        def urandom(
            self, original: Callable[..., bytes], name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
        ) -> bytes: ...

        def within_site(
            self, site: str, label: str, original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
        ) -> Any: ...

        def seed_value(self, instance: object) -> int | None: ...


#: Who calls the well-known aliases of os.urandom, for diagnostics.
ALIAS_USERS = {
    "random._urandom": "random.SystemRandom",
    "urllib.request._randombytes": _messages.URLLIB_DIGEST_AUTH,
}

SECRETS_FUNCTIONS = ("token_bytes", "token_hex", "token_urlsafe", "choice", "randbelow", "randbits")


def urandom_wrapper(engine: Engine, original: Callable[..., bytes], label: str) -> Callable[..., bytes]:
    """A stand-in for os.urandom (or an alias of it) that applies the policy while the CRNG is unready."""
    original = unwrap(original)

    def urandom(*args: Any, **kwargs: Any) -> bytes:
        if not engine.engaged or engine.ready():
            return original(*args, **kwargs)
        try:
            return engine.urandom(original, label, args, kwargs)
        except BlockingIOError as exc:
            if not getattr(exc, REFUSAL, False):
                raise
            raise exc.with_traceback(None) from None

    return dress(urandom, original, label)


def site_wrapper(engine: Engine, original: Callable[..., Any], label: str, site: str) -> Callable[..., Any]:
    """A stand-in for a function (a ``secrets`` function) whose inner os.urandom calls follow ``site``'s row."""
    original = unwrap(original)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not engine.engaged or engine.ready():
            return original(*args, **kwargs)
        try:
            return engine.within_site(site, label, original, args, kwargs)
        except BlockingIOError as exc:
            if not getattr(exc, REFUSAL, False):
                raise
            raise exc.with_traceback(None) from None

    return dress(wrapper, original, label)


def seed_wrapper(engine: Engine, original: Callable[..., Any]) -> Callable[..., Any]:
    """A stand-in for ``random.Random.seed``: ``seed(None)`` gets its entropy as the policy says."""
    original = unwrap(original)

    def seed(self: Any, *args: Any, **kwargs: Any) -> Any:
        if (
            ((args and args[0] is None) or (not args and kwargs.get("a") is None))
            and engine.engaged
            and not engine.ready()
        ):
            try:
                value = engine.seed_value(self)
            except BlockingIOError as exc:
                if not getattr(exc, REFUSAL, False):
                    raise
                raise exc.with_traceback(None) from None
            if value is not None:
                if args:
                    args = (value, *args[1:])
                else:
                    kwargs["a"] = value
        return original(self, *args, **kwargs)

    return dress(seed, original, "random.Random.seed")


def module_aliases(module: ModuleType) -> list[str]:
    """Names in ``module`` bound to the interpreter's os.urandom or to one of our os.urandom wrappers."""
    names = []
    for name, value in list((namespace(module) or {}).items()):
        if value is NATIVE_URANDOM or (is_wrapper(value) and unwrap(value) is NATIVE_URANDOM):
            names.append(name)
    return names


def patch_os(engine: Engine, patcher: Patcher, module: ModuleType) -> None:
    """``os.urandom`` and ``posix.urandom``: one wrapper for both, so that ``os.urandom is posix.urandom`` stays
    true. Patching ``posix`` too covers ``import posix``, and an ``os`` that is reloaded or imported again after
    ``del sys.modules['os']``: it copies ``urandom`` from ``posix`` again."""
    if vars(module).get("urandom") is not None:
        patcher.set(module, "urandom", engine.os_urandom)


def patch_aliases(engine: Engine, patcher: Patcher, module: ModuleType) -> None:
    """Point every alias of os.urandom that ``module`` holds at a wrapper labelled with the module and name."""
    mod_name = (namespace(module) or {}).get("__name__", "?")
    if not isinstance(mod_name, str) or mod_name in ("posix", "nt") or mod_name.startswith("urandom_shim"):
        return
    for name in module_aliases(module):
        if not patcher.has(module, name):  # os.urandom, say, which already has its wrapper
            patcher.set(module, name, urandom_wrapper(engine, NATIVE_URANDOM, f"{mod_name}.{name}"))


def patch_all_loaded_aliases(engine: Engine, patcher: Patcher) -> None:
    """Cover aliases held by modules imported before the shim engaged (another ``.pth``, a sitecustomize)."""
    for module in list(sys.modules.values()):
        try:
            patch_aliases(engine, patcher, module)
        except Exception as exc:  # noqa: BLE001 - one odd module must not stop the others from being covered
            from ._messages import emit

            emit(_messages.COULD_NOT_CHECK_MODULE_MODULE.format(module=module, name=type(exc).__name__, exc=exc))


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
