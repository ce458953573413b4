"""urandom-shim: choose what ``os.urandom()`` does before the kernel's random number generator is initialised.

This module is the public API and nothing else: each name is loaded from its module on first use, so that importing
the package costs next to nothing. Start-up is not here: ``urandom_shim.pth`` runs the top-level module
``_urandom_shim_boot``, which hands over to :mod:`urandom_shim._activation` only when the CRNG is unready or
simulated, and to :mod:`urandom_shim._hooks` when ``secrets`` is imported.

PYTEST_DONT_REWRITE: pytest marks a plugin's whole distribution for assertion rewriting, and start-up may have
imported this package and ``_urandom_shim_boot`` already; this marker keeps it from warning about them.
"""

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
    from ._activation import activate, deactivate
    from ._hooks import wait_for_system_rng
    from ._policies import POLICIES, Policy, Setting, Settings
    from ._runtime import current_settings, is_system_rng_ready, system_rng_state, urandom

#: Each public name, and the module that defines it.
_LAZY = {
    "activate": "_activation",
    "deactivate": "_activation",
    "current_settings": "_runtime",
    "is_system_rng_ready": "_runtime",
    "system_rng_state": "_runtime",
    "urandom": "_runtime",
    "wait_for_system_rng": "_hooks",
    "POLICIES": "_policies",
    "Policy": "_policies",
    "Setting": "_policies",
    "Settings": "_policies",
}


def __getattr__(name: str) -> object:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"urandom_shim.{module_name}"), name)


def __dir__() -> "list[str]":
    return sorted([*globals(), *_LAZY])
