"""Where start-up hands over to the package.

``urandom_shim.pth`` runs the top-level module ``_urandom_shim_boot`` (the kill switch, the probe, the ready path).
It imports this module only when the CRNG is unready or simulated (:func:`boot`), when ``secrets`` is imported
(:func:`ready_hook_find_spec`), or when a ``URANDOM_*`` variable looks wrong (:func:`report_environment`).
"""

from __future__ import annotations

from . import _hooks, _runtime
from ._messages import report_failure
from ._state import state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Sequence


def boot(how: str = "pth") -> None:
    """Take over from ``_urandom_shim_boot`` once it has found the CRNG unready (or simulated): read the
    configuration and install the policy. Idempotent. The kill switch and the probe are the start-up module's: an
    activation path of its own (such as a bootstrap ``sitecustomize``) calls ``_urandom_shim_boot.boot(how)``."""
    if state.booted:
        return
    state.booted = True
    state.activated_by = how
    try:
        from . import _activation

        _activation.start_unready()
    except Exception as exc:  # noqa: BLE001 - never break an interpreter
        state.inactive_reason = f"activation failed: {type(exc).__name__}: {exc}"
        report_failure(exc)


def ready_hook_find_spec(
    stub: object, name: str, path: Sequence[str] | None, target: ModuleType | None
) -> ModuleSpec | None:
    """Called by ``_urandom_shim_boot`` (a meta path finder on the ready path) when ``secrets`` is imported: swap it
    for the real post-import hook, which adds ``secrets.wait_for_system_rng`` to this and every later ``secrets``
    (a reload, or an import after ``del sys.modules['secrets']``)."""
    import sys

    while stub in sys.meta_path:
        sys.meta_path.remove(stub)
    _runtime.add_wait_for_system_rng()
    return _hooks.hook.find_spec(name, path, target)


def report_environment() -> None:
    """Called by ``_urandom_shim_boot`` on the ready path when a ``URANDOM_*`` variable looks wrong: one line per
    problem, the same lines (without what applies instead) as on the unready path and in ``urandom-shim check``."""
    from ._config import environment_problems
    from ._messages import bounded, emit

    for problem in bounded(environment_problems()):
        emit(problem)
