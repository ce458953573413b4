"""Post-import hooks: run a callback right after a watched module is executed; and the one thing the shim adds with
them under every policy, ``secrets.wait_for_system_rng``. On the ready path, importing ``secrets`` loads this module
(through :func:`ready_hook_find_spec`) and nothing else of the package.

Why not ``wrapt.importer``: importing wrapt 2.x costs 25 to 130 ms here (it pulls in ``importlib.metadata`` and
``ssl``), more than an interpreter's whole start-up; and wrapt's hooks can't be unregistered, while the engine must
take every hook out again when the CRNG becomes ready. This one can be unregistered, answers None for every other
name (one dict lookup per import), and uninstalls itself from ``sys.meta_path`` once nothing is watched. Like
wrapt's registry, it has a lock, so that threads that import and (un)register at once stay consistent.
"""

import _thread
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Any, Callable, Sequence


class _ChainedLoader:
    """Runs the real loader, then the callbacks registered for the module. Leaves the real loader in place."""

    def __init__(self, loader: "Any", hook: "_PostImportHook", name: str) -> None:
        self.loader = loader  # any loader with exec_module: duck-typed, as the import system treats it
        self.hook = hook
        self.name = name

    def create_module(self, spec: object) -> "ModuleType | None":
        create = getattr(self.loader, "create_module", None)
        return None if create is None else create(spec)

    def exec_module(self, module: "ModuleType") -> None:
        spec = getattr(module, "__spec__", None)
        if spec is not None:
            spec.loader = self.loader
        module.__loader__ = self.loader
        self.loader.exec_module(module)
        self.hook.fire(self.name, module)

    def __getattr__(self, name: str) -> object:
        # Everything else (get_code, get_source, is_package, get_resource_reader ...) is the real loader's, so that
        # runpy (`python -m secrets`), inspect and importlib.resources work as without the shim.
        return getattr(self.loader, name)


class _PostImportHook:
    """A meta path finder that runs callbacks right after a watched module is executed: on its first import, on a
    re-import after ``del sys.modules[name]``, and on ``importlib.reload()``, which asks the meta path too."""

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
            spec: ModuleSpec | None = find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if getattr(spec.loader, "exec_module", None) is not None:
            chained: Any = _ChainedLoader(spec.loader, self, name)  # a loader by its methods, not by its class
            spec.loader = chained
        return spec

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
                from ._messages import report_failure

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


#: The one hook of this process.
hook = _PostImportHook()


def watch(name: str, callback: "Callable[[ModuleType], None]") -> None:
    """Call ``callback(module)`` now if ``name`` is imported, and again after every later import or reload of it,
    until :func:`unwatch`."""
    module = sys.modules.get(name)
    hook.add(name, callback, again=True)
    if module is not None:
        callback(module)


def unwatch(callback: "Callable[[ModuleType], None]") -> None:
    """Forget ``callback`` wherever it was registered."""
    hook.cancel(callback)


# -- secrets.wait_for_system_rng, the one addition, present under every policy ---------------------------------------


def wait_for_system_rng(timeout: "float | None" = None) -> bool:
    """Block until the kernel's random number generator is initialised (PEP 522's ``secrets.wait_for_system_rng``).

    Returns True at once when it already is, which is nearly always. With ``timeout`` (seconds), returns False if the
    generator is still not ready when the time runs out. Ctrl-C interrupts the wait.
    """
    from . import _readiness

    if _readiness.is_ready():
        return True
    from ._runtime import checked_timeout, wait_as_configured

    return wait_as_configured("secrets.wait_for_system_rng()", checked_timeout(timeout))


def _add_to_secrets(module: "ModuleType") -> None:
    if not hasattr(module, "wait_for_system_rng"):
        vars(module)["wait_for_system_rng"] = wait_for_system_rng


def add_wait_for_system_rng() -> None:
    """``secrets.wait_for_system_rng`` in ``secrets`` now if it is loaded, and in every ``secrets`` loaded later."""
    watch("secrets", _add_to_secrets)


def ready_hook_find_spec(
    stub: object, name: str, path: "Sequence[str] | None", target: "ModuleType | None"
) -> "ModuleSpec | None":
    """Called by ``_urandom_shim_boot`` (a meta path finder on the ready path) when ``secrets`` is imported: swap it
    for the real post-import hook, which adds ``secrets.wait_for_system_rng`` to this and every later ``secrets``
    (a reload, or an import after ``del sys.modules['secrets']``)."""
    while stub in sys.meta_path:
        sys.meta_path.remove(stub)
    add_wait_for_system_rng()
    return hook.find_spec(name, path, target)
