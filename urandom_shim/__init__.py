"""urandom-shim: choose what ``os.urandom()`` does before the kernel's random number generator is initialised.

Start-up is not here: ``urandom_shim.pth`` runs the top-level module ``_urandom_shim_boot`` (the kill switch, the
probe, the ready path), which imports this package only when the CRNG is unready or simulated, or when ``secrets`` is
imported. So this module stays small, and the public API below is loaded on first use.

PYTEST_DONT_REWRITE: pytest marks a plugin's whole distribution for assertion rewriting, and start-up may have
imported this package and ``_urandom_shim_boot`` already; this marker keeps it from warning about them.
"""

import _thread
import os
import sys

__version__ = "0.1.0"

__all__ = [
    "POLICIES",
    "Policy",
    "Setting",
    "Settings",
    "__version__",
    "activate",
    "current_settings",
    "deactivate",
    "is_system_rng_ready",
    "system_rng_state",
    "urandom",
    "wait_for_system_rng",
]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Callable, Sequence

    from ._activation import activate, current_settings, deactivate
    from ._policies import POLICIES, Policy, Setting, Settings


#: How this interpreter activated the shim: "pth", "start", "bootstrap", "runtime", or None (not at all). The start-up
#: module ``_urandom_shim_boot`` records it in ``sys._urandom_shim_boot`` without importing this package.
activated_by: "str | None" = getattr(sys, "_urandom_shim_boot", None)
#: Why the shim is not active, when it isn't.
inactive_reason: "str | None" = None
_booted = False


def boot(how: str = "pth") -> None:
    """Take over from ``_urandom_shim_boot`` once it has found the CRNG unready (or simulated): read the
    configuration and install the policy. Idempotent. The kill switch and the probe are the start-up module's: an
    activation path of its own (such as a bootstrap ``sitecustomize``) calls ``_urandom_shim_boot.boot(how)``."""
    global activated_by, inactive_reason, _booted
    if _booted:
        return
    _booted = True
    activated_by = how
    try:
        from . import _activation

        _activation.start_unready()
    except Exception as exc:  # noqa: BLE001 - never break an interpreter
        inactive_reason = f"activation failed: {type(exc).__name__}: {exc}"
        report_failure(exc)


def ready_hook_find_spec(stub: object, name: str, path: "Sequence[str] | None", target: object) -> "ModuleSpec | None":
    """Called by ``_urandom_shim_boot`` (a meta path finder on the ready path) when ``secrets`` is imported: swap it
    for the real post-import hook, which adds ``secrets.wait_for_system_rng`` to this and every later ``secrets``
    (a reload, or an import after ``del sys.modules['secrets']``)."""
    while stub in sys.meta_path:
        sys.meta_path.remove(stub)
    add_wait_for_system_rng()
    return _hook.find_spec(name, path, target)  # type: ignore[arg-type]


def report_environment() -> None:
    """Called by ``_urandom_shim_boot`` on the ready path when a ``URANDOM_*`` variable looks wrong: one line per
    problem, the same lines (without what applies instead) as on the unready path and in ``urandom-shim check``."""
    from ._config import environment_problems
    from ._messages import bounded, emit

    for problem in bounded(environment_problems()):
        emit(problem)


def report_failure(exc: BaseException) -> None:
    from ._messages import emit

    if os.environ.get("URANDOM_SHIM_DEBUG", "") not in ("", "0"):
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__)
    emit(
        f"not active in this interpreter: activation failed ({type(exc).__name__}: {exc}); "
        "the interpreter carries on with its own os.urandom(). Rerun with URANDOM_SHIM_DEBUG=1 for the traceback, "
        "or set URANDOM_SHIM_DISABLE=1 to silence this."
    )


# -- secrets.wait_for_system_rng: the one addition, present under every policy --------------------------------------


def wait_for_system_rng(timeout: "float | None" = None) -> bool:
    """Block until the kernel's random number generator is initialised (PEP 522's ``secrets.wait_for_system_rng``).

    Returns True at once when it already is, which is nearly always. With ``timeout`` (seconds), returns False if the
    generator is still not ready when the time runs out. Ctrl-C interrupts the wait.
    """
    from . import _activation

    return _activation.wait_for_system_rng(timeout)


def urandom(size: int, *, block: bool = True, timeout: "float | None" = None) -> bytes:
    """``size`` random bytes from the kernel, with the waiting chosen per call, whatever the configured policy.

    ``urandom(16)`` waits until the kernel's random number generator is initialised (PEP 524's semantics);
    ``urandom(16, block=False)`` raises ``BlockingIOError`` (PEP 522's) if it is not; ``urandom(16, timeout=2.0)``
    waits at most 2 s, then raises ``BlockingIOError``. It never returns bytes from an uninitialised generator, under
    any policy. Ctrl-C interrupts the wait. Where the kernel can't say (not Linux), it is ``os.urandom``.
    """
    from . import _activation

    result = _activation.urandom_or_error(size, block, timeout)
    if isinstance(result, BaseException):
        raise result
    return result


def _add_to_secrets(module: "ModuleType") -> None:
    if not hasattr(module, "wait_for_system_rng"):
        module.wait_for_system_rng = wait_for_system_rng  # type: ignore[attr-defined]


def add_wait_for_system_rng() -> None:
    """``secrets.wait_for_system_rng`` in ``secrets`` now if it is loaded, and in every ``secrets`` loaded later."""
    watch("secrets", _add_to_secrets)


# -- post-import hooks ----------------------------------------------------------------------------------------------


class _ChainedLoader:
    """Runs the real loader, then the callbacks registered for the module. Leaves the real loader in place."""

    def __init__(self, loader: object, hook: "_PostImportHook", name: str) -> None:
        self.loader = loader
        self.hook = hook
        self.name = name

    def create_module(self, spec: object) -> "ModuleType | None":
        create = getattr(self.loader, "create_module", None)
        return None if create is None else create(spec)

    def exec_module(self, module: "ModuleType") -> None:
        spec = getattr(module, "__spec__", None)
        if spec is not None:
            spec.loader = self.loader
        module.__loader__ = self.loader  # type: ignore[assignment]
        self.loader.exec_module(module)  # type: ignore[attr-defined]
        self.hook.fire(self.name, module)

    def __getattr__(self, name: str) -> object:
        # Everything else (get_code, get_source, is_package, get_resource_reader ...) is the real loader's, so that
        # runpy (`python -m secrets`), inspect and importlib.resources work as without the shim.
        return getattr(self.loader, name)


class _PostImportHook:
    """A meta path finder that runs callbacks right after a watched module is executed: on its first import, on a
    re-import after ``del sys.modules[name]``, and on ``importlib.reload()``, which asks the meta path too.

    Why not ``wrapt.importer``: importing wrapt costs 25 to 130 ms, more than an interpreter's whole start-up; and
    wrapt's hooks can't be unregistered, while the engine must take every hook out again when the CRNG becomes
    ready. This one answers None for every other name (one dict lookup per import), and removes itself from
    ``sys.meta_path`` once nothing is watched. A lock keeps threads that import and (un)register at once consistent.
    """

    def __init__(self) -> None:
        self.callbacks: dict[str, list[tuple[Callable[[ModuleType], None], bool]]] = {}  # name -> (callback, again)
        self.lock = _thread.RLock()

    def find_spec(
        self, name: str, path: "Sequence[str] | None", target: "ModuleType | None" = None, /
    ) -> "ModuleSpec | None":
        if name not in self.callbacks:
            return None
        for finder in list(sys.meta_path):
            if finder is self:
                continue
            find_spec = getattr(finder, "find_spec", None)
            if find_spec is None:
                continue
            spec = find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if getattr(spec.loader, "exec_module", None) is not None:
            spec.loader = _ChainedLoader(spec.loader, self, name)
        return spec  # type: ignore[no-any-return]

    def fire(self, name: str, module: "ModuleType") -> None:
        with self.lock:
            entries = self.callbacks.get(name, [])
            again = [entry for entry in entries if entry[1]]
            if again:
                self.callbacks[name] = again
            else:
                self.callbacks.pop(name, None)
            if not self.callbacks:
                self.uninstall()
        for callback, _again in entries:
            try:
                callback(module)
            except Exception as exc:  # noqa: BLE001
                report_failure(exc)

    def add(self, name: str, callback: "Callable[[ModuleType], None]", again: bool) -> None:
        with self.lock:
            entries = self.callbacks.setdefault(name, [])
            if all(entry[0] is not callback for entry in entries):
                entries.append((callback, again))
            if self not in sys.meta_path:
                sys.meta_path.insert(0, self)

    def cancel(self, callback: "Callable[[ModuleType], None]") -> None:
        with self.lock:
            for name in list(self.callbacks):
                remaining = [entry for entry in self.callbacks[name] if entry[0] is not callback]
                if remaining:
                    self.callbacks[name] = remaining
                else:
                    del self.callbacks[name]
            if not self.callbacks:
                self.uninstall()

    def uninstall(self) -> None:
        while self in sys.meta_path:
            sys.meta_path.remove(self)


_hook = _PostImportHook()


def watch(name: str, callback: "Callable[[ModuleType], None]") -> None:
    """Call ``callback(module)`` now if ``name`` is imported, and again after every later import or reload of it,
    until :func:`unwatch`."""
    module = sys.modules.get(name)
    _hook.add(name, callback, again=True)
    if module is not None:
        callback(module)


def unwatch(callback: "Callable[[ModuleType], None]") -> None:
    """Forget ``callback`` wherever it was registered."""
    _hook.cancel(callback)


# -- the public API, loaded on first use -------------------------------------------------------------------------

_LAZY = {
    "activate": "_activation",
    "deactivate": "_activation",
    "current_settings": "_activation",
    "POLICIES": "_policies",
    "Policy": "_policies",
    "Setting": "_policies",
    "Settings": "_policies",
}


def is_system_rng_ready() -> bool:
    """True when the kernel's random number generator is initialised (or a simulation says so, or it can't be known).

    One non-blocking ``getrandom()`` call until the answer is yes; free afterwards.
    """
    from ._readiness import is_ready

    return is_ready()


def system_rng_state() -> str:
    """``"ready"``, ``"unready"`` or ``"unknown"`` (no ``getrandom``, or denied: counts as ready)."""
    from ._readiness import state

    return state()


def __getattr__(name: str) -> object:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'urandom_shim' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"urandom_shim.{module_name}"), name)
