"""urandom-shim's bootstrap: activates the shim in an interpreter whose site-packages does not run urandom_shim.pth.

``urandom-shim run`` and ``urandom-shim simulate`` put the directory holding this file (``urandom_shim/_bootstrap``
in an installed wheel) first on ``PYTHONPATH``, and name the directory holding the ``urandom_shim`` package in
``URANDOM_SHIM_HOME``. Python's ``site`` module then imports this file as ``sitecustomize``. It:

1. takes its own directory off ``sys.path``, so that nothing else is found there;
2. activates the shim, unless ``urandom_shim.pth`` already did (the shim is installed here too) or the kill switch
   ``URANDOM_SHIM_DISABLE`` is set. The shim is loaded from ``URANDOM_SHIM_HOME`` without leaving that directory on
   ``sys.path``, so the program's own imports are not affected;
3. chains: it runs the ``sitecustomize`` it shadows (Debian's ``/usr/lib/python3.X/sitecustomize.py``, say), exactly
   once, as ``site`` would have, with the same errors reported the same way.

It never raises because of the shim: a problem is one ``urandom-shim:`` line on stderr, and the program runs anyway.
Children inherit ``PYTHONPATH`` and ``URANDOM_SHIM_HOME``, so they are bootstrapped too. ``python -S``, ``-E`` and
``-I`` skip this file, as they skip every ``sitecustomize``.
"""

import os
import sys

#: Directory names this file has when it is shipped as a bootstrap (wheel, editable install). Anywhere else (a
#: source checkout on sys.path) it leaves sys.path alone.
_BOOTSTRAP_DIRS = ("_bootstrap", "urandom_shim_bootstrap")


def _say(text: str) -> None:
    if sys.stderr is not None:
        try:
            sys.stderr.write(f"urandom-shim: {text}\n")
        except Exception:  # noqa: BLE001 - a broken stderr must not break the interpreter
            pass


def _leave_sys_path(here: str) -> None:
    if os.path.basename(here) in _BOOTSTRAP_DIRS:
        sys.path[:] = [entry for entry in sys.path if not (isinstance(entry, str) and _same(entry, here))]


def _same(entry: str, here: str) -> bool:
    return os.path.realpath(entry or os.curdir) == here


def _activate() -> None:
    if "_urandom_shim_boot" in sys.modules or os.environ.get("URANDOM_SHIM_DISABLE", "") not in ("", "0"):
        return  # urandom_shim.pth already ran here (it is installed in this environment), or the kill switch is on
    home = os.environ.get("URANDOM_SHIM_HOME", "")
    found = bool(home) and os.path.isfile(os.path.join(home, "_urandom_shim_boot.py"))
    if found:
        sys.path.insert(0, home)
    try:
        sys._urandom_shim_via = "bootstrap"  # type: ignore[attr-defined]  # what status reports
        import _urandom_shim_boot  # noqa: F401  # starts the shim, as the .pth would
        import urandom_shim  # noqa: F401  # loaded now, while it can be found: later imports of it need sys.modules
    except Exception as exc:  # noqa: BLE001 - never break an interpreter
        where = f"URANDOM_SHIM_HOME={home!r}" if home else "URANDOM_SHIM_HOME is not set"
        _say(
            f"not active in this interpreter: the bootstrap cannot load urandom-shim ({where}; "
            f"{type(exc).__name__}: {exc}); start the program with `urandom-shim run -- ...`, or install "
            "urandom-shim in this environment."
        )
    finally:
        sys.__dict__.pop("_urandom_shim_via", None)
        if found and sys.path and sys.path[0] == home:
            del sys.path[0]


def _chain(here_file: str) -> None:
    """Run the sitecustomize this file shadows, as ``sys.modules['sitecustomize']``. Its errors are not ours: they
    propagate to ``site``, which reports them exactly as it would have without us."""
    from importlib.machinery import PathFinder

    for entry in list(sys.path):
        if not isinstance(entry, str):
            continue
        try:
            spec = PathFinder.find_spec("sitecustomize", [entry])
        except Exception:  # noqa: BLE001 - an odd sys.path entry is skipped, as the import system would
            continue
        if spec is None or spec.loader is None or spec.origin is None:
            continue
        if os.path.realpath(spec.origin) == here_file:  # this file again, through another path entry
            continue
        import importlib.util

        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)
        return


def _bootstrap() -> None:
    here_file = os.path.realpath(__file__)
    try:
        _leave_sys_path(os.path.dirname(here_file))
        _activate()
    except Exception as exc:  # noqa: BLE001
        _say(f"not active in this interpreter: bootstrap failed ({type(exc).__name__}: {exc}).")
    _chain(here_file)


_bootstrap()
