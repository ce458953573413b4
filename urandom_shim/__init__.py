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


#: The modules an unready start runs, each after the ones it imports (issue 37).
_UNREADY = (
    "_messages",
    "_state",
    "_policies",
    "_simulation",
    "_readiness",
    "_patching",
    "_hooks",
    "_sources",
    "_config",
    "_runtime",
    "_activation",
)


def _load(names: "tuple[str, ...]" = _UNREADY) -> None:
    # The start-up module calls this before it hands over to _activation on an unready start: it loads the modules
    # that start runs from their bytecode caches directly, at a fraction of what the import system's general path
    # costs (about 0.3 M instructions a module, 2.2 M for these eleven on 3.11; see
    # docs/explanation/design-decisions.md). The modules a start needs only sometimes (the TOML reader, _programs)
    # are loaded by _sources when it needs them, through this function: loading them here would cost the starts
    # that don't.
    # Each module is made as the import system makes it (spec, loader, file and cache attributes, the "import"
    # audit event), from the same cache the import system would read, and only while that cache is exactly the
    # one it would accept (magic number, a timestamp cache whose recorded time and size match the source). At the
    # first doubt it stops, and the import system loads the rest the ordinary way (and writes the caches).
    import sys

    if sys.implementation.name != "cpython":  # PyPy: its own caches and loader; the import system loads them
        return
    try:
        import _frozen_importlib as bootstrap
        import _frozen_importlib_external as external
        import _imp
        import marshal
        import os
        from _io import open_code

        directory = os.path.dirname(__file__)
        magic = external.MAGIC_NUMBER
        package = sys.modules[__name__]
        modules = sys.modules
        tag = ""  # what the cache's name adds to the module's: ".cpython-311.pyc", say (worked out once)
        for name in names:
            full = f"{__name__}.{name}"
            if full in modules:
                continue
            source = f"{directory}/{name}.py"
            if not tag:
                cached = external.cache_from_source(source)  # sys.pycache_prefix and -O included
                cache_directory, _, cache_name = cached.rpartition("/")
                tag = cache_name[len(name) :]
            cached = f"{cache_directory}/{name}{tag}"
            found = os.stat(source)
            with open_code(cached) as handle:
                data = handle.read()
            if (
                data[:4] != magic
                or data[4:8] != b"\0\0\0\0"
                or int.from_bytes(data[8:12], "little") != int(found.st_mtime) & 0xFFFFFFFF
                or int.from_bytes(data[12:16], "little") != found.st_size & 0xFFFFFFFF
            ):
                return
            code = marshal.loads(memoryview(data)[16:])
            # The cache records the path its source had when it was compiled (a build directory, another
            # prefix); the import system puts the real one in every code object, and so must this: the events
            # tell the shim's own frames from the caller's by it.
            _imp._fix_co_filename(code, source)  # type: ignore[attr-defined]  # private, 3.8 to 3.15
            loader = external.SourceFileLoader(full, source)
            spec = bootstrap.ModuleSpec(full, loader, origin=source)
            spec.cached = cached
            spec.has_location = True
            module = type(sys)(full)
            module.__file__ = source
            module.__cached__ = cached  # type: ignore[attr-defined]
            module.__loader__ = loader
            module.__package__ = __name__
            module.__spec__ = spec
            sys.audit("import", full, None, sys.path, sys.meta_path, sys.path_hooks)
            modules[full] = module
            try:
                exec(code, module.__dict__)
            except BaseException:
                del modules[full]
                raise
            setattr(package, name, module)
    except Exception:  # noqa: BLE001 - the import system loads what is left, and reports any real error itself
        return
