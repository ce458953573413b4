"""urandom-shim: choose what ``os.urandom()`` does before the kernel's random number generator is initialised.

Installed with pip, the shim activates in every interpreter of the environment from a ``.pth`` file. This package's
top level is imported by that start-up code, so it stays tiny: everything but :func:`wait_for_system_rng` is loaded on
first use.
"""

from ._startup import wait_for_system_rng

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
    "wait_for_system_rng",
]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._activation import activate, current_settings, deactivate
    from ._policies import POLICIES, Policy, Setting, Settings

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
