"""The one owner of this process's shim state: how it started, the engine in force, the simulated and cached CRNG
state, and the project the pytest plugin names. Every other module reads and writes it here, and the pytest plugin
and the command line use :func:`snapshot` and :func:`restore` rather than any module's private names.

What stays in other modules is machinery, not state: locks and the helper thread of :mod:`urandom_shim._readiness`
(which a fork must renew in place), the undo logs and wrapper registry of :mod:`urandom_shim._patching`, the import
hook's registry (:mod:`urandom_shim._hooks`), and what the kernel has answered for good (``_readiness._settled``,
``_readiness._insecure_works``), which no test may take back.
"""

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: The value of :attr:`State.simulation` before the environment has been read.
UNREAD = object()

FIELDS = ("activated_by", "inactive_reason", "booted", "engine", "simulation", "ready", "project_root")


class State:
    """This process's state. One instance, :data:`state`."""

    __slots__ = FIELDS

    def __init__(self) -> None:
        #: How this interpreter activated the shim: "pth", "start", "bootstrap", "runtime", or None (not at all).
        #: The start-up module ``_urandom_shim_boot`` records it in ``sys._urandom_shim_boot`` without importing us.
        self.activated_by: str | None = getattr(sys, "_urandom_shim_boot", None)
        #: Why the shim is not active, when it isn't.
        self.inactive_reason: str | None = None
        #: Whether start-up has handed over to the package (it does so once).
        self.booted = False
        #: The engine (:class:`urandom_shim._activation.Engine`) in force, or None.
        self.engine: Any = None
        #: The simulation this process is under (:class:`urandom_shim._simulation.Simulation` or None), or
        #: :data:`UNREAD` until ``URANDOM_SHIM_SIMULATE`` has been read.
        self.simulation: object = UNREAD
        #: The CRNG (real, and simulated if a simulation is on) has been seen initialised: one-way, cached forever.
        self.ready = False
        #: (directory, rule): the project of this process when the pytest plugin names it; None otherwise.
        self.project_root: tuple[str, str] | None = None


state = State()


class Snapshot:
    """Every field of :data:`state` at one moment, and whether its engine was engaged."""

    __slots__ = ("engaged", "values")

    def __init__(self, values: "dict[str, object]", engaged: bool) -> None:
        self.values = values
        self.engaged = engaged


def snapshot() -> "Snapshot":
    engine = state.engine
    return Snapshot({name: getattr(state, name) for name in FIELDS}, bool(engine is not None and engine.engaged))


def restore(saved: "Snapshot") -> None:
    """Put every field back as :func:`snapshot` found it. An engine installed since is taken out, and the saved
    engine is engaged again if it was engaged (and the CRNG is still unready)."""
    current = state.engine
    if current is not None and current is not saved.values["engine"]:
        current.disengage()
    for name, value in saved.values.items():
        setattr(state, name, value)
    engine = state.engine
    if saved.engaged and engine is not None and not engine.engaged:
        engine.engage(reseed_loaded_random=False)
