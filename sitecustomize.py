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
It parses on every Python ``run`` may be pointed at, Python 2.7 included, so that one there gets that line too.
Children inherit ``PYTHONPATH`` and ``URANDOM_SHIM_HOME``, so they are bootstrapped too. ``python -S``, ``-E`` and
``-I`` skip this file, as they skip every ``sitecustomize``.
"""

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any  # noqa: F401 - named in type comments, which Python 2 parses

#: Directory names this file has when it is shipped as a bootstrap (wheel, editable install). Anywhere else (a
#: source checkout on sys.path) it leaves sys.path alone.
_BOOTSTRAP_DIRS = ("_bootstrap", "urandom_shim_bootstrap")


def _say(text):  # type: (str) -> None
    if sys.stderr is not None:
        try:
            sys.stderr.write("urandom-shim: " + text + "\n")
        except Exception:  # noqa: BLE001 - a broken stderr must not break the interpreter
            pass


def _leave_sys_path(here):  # type: (str) -> None
    # String comparisons only: os.path.realpath costs a system call per path component on every entry, and this
    # runs at every start-up. __file__ was made from the very entry that run put on PYTHONPATH.
    if os.path.basename(here) in _BOOTSTRAP_DIRS:
        sys.path[:] = [p for p in sys.path if not (isinstance(p, str) and p and os.path.normpath(p) == here)]


def _same_file(a, b):  # type: (str, str) -> bool
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _activate():  # type: () -> None
    if "_urandom_shim_boot" in sys.modules or os.environ.get("URANDOM_SHIM_DISABLE", "") not in ("", "0"):
        return  # urandom_shim.pth already ran here (it is installed in this environment), or the kill switch is on
    if sys.version_info < (3, 8):  # noqa: UP036 - this file parses on 2.7 to 3.7, where `run` may be pointed
        policy = os.environ.get("URANDOM_POLICY", "")
        asked = "policy " + repr(policy) if policy else "its settings"
        version = "{}.{}".format(*sys.version_info[:2])
        if sys.version_info < (3, 6):  # noqa: UP036 - before PEP 524 os.urandom() reads /dev/urandom, unasked
            own = (
                "which reads /dev/urandom: before the kernel's random number generator is initialised it returns "
                "predictable bytes without waiting (and waits for the jitter generator on Linux 5.18+)"
            )
        else:
            own = "which waits for the kernel's random number generator and never returns weak bytes"
        _say(
            "Python {} is not supported (urandom-shim needs 3.8 or later), so `urandom-shim run` cannot apply {} in "
            "this interpreter. The program runs with Python {}'s own os.urandom(), {}. Run it with Python 3.8 or "
            "later to apply the policy.".format(version, asked, version, own)
        )
        return
    home = os.environ.get("URANDOM_SHIM_HOME", "")
    found = bool(home) and os.path.isfile(os.path.join(home, "_urandom_shim_boot.py"))
    if found:
        sys.path.insert(0, home)
    try:
        sys._urandom_shim_via = "bootstrap"  # type: ignore[attr-defined]  # what status reports
        import _urandom_shim_boot  # noqa: F401  # starts the shim, as the .pth would
        import urandom_shim  # noqa: F401  # loaded now, while it can be found: later imports of it need sys.modules
    except Exception as exc:  # noqa: BLE001 - never break an interpreter
        where = "URANDOM_SHIM_HOME=" + repr(home) if home else "URANDOM_SHIM_HOME is not set"
        _say(
            "not active in this interpreter: the bootstrap cannot load urandom-shim ({}; {}: {}); start the program "
            "with `urandom-shim run -- ...`, or install urandom-shim in this environment.".format(
                where, type(exc).__name__, exc
            )
        )
    finally:
        sys.__dict__.pop("_urandom_shim_via", None)
        if found and sys.path and sys.path[0] == home:
            del sys.path[0]


def _chain(here_file):  # type: (str) -> None
    """Run the sitecustomize this file shadows, as ``sys.modules['sitecustomize']``. Its errors are not ours: they
    propagate to ``site``, which reports them exactly as it would have without us."""
    # The import system's own frozen modules, always loaded: importing importlib would add types and warnings.
    bootstrap = sys.modules.get("_frozen_importlib")  # type: Any
    external = sys.modules.get("_frozen_importlib_external")  # type: Any
    if bootstrap is None or external is None:
        if sys.version_info < (3,):  # noqa: UP036 - Python 2 has neither
            _chain_python2(here_file)
            return
        import importlib._bootstrap as bootstrap  # pragma: no cover - an unusual interpreter
        import importlib._bootstrap_external as external
    path = list(sys.path)
    while path:
        spec = external.PathFinder.find_spec("sitecustomize", path)  # one search, as site's own import does
        if spec is None or spec.loader is None or spec.origin is None:
            return
        if not _same_file(spec.origin, here_file):
            module = bootstrap.module_from_spec(spec)
            sys.modules["sitecustomize"] = module
            spec.loader.exec_module(module)
            return
        # This file again, through another spelling of its directory: search the entries after that one.
        found_in = os.path.dirname(spec.origin)
        rest = [i for i, p in enumerate(path) if isinstance(p, str) and os.path.normpath(p or os.curdir) == found_in]
        path = path[rest[0] + 1 :] if rest else []


def _chain_python2(here_file):  # type: (str) -> None
    """:func:`_chain` for Python 2, whose import system is ``imp``'s."""
    import imp

    for entry in sys.path:
        try:
            found = imp.find_module("sitecustomize", [entry])
        except ImportError:
            continue
        handle, origin = found[0], found[1]
        if _same_file(origin, here_file) or _same_file(origin, here_file + "c"):
            if handle is not None:
                handle.close()
            continue
        try:
            sys.modules["sitecustomize"] = imp.load_module("sitecustomize", handle, origin, found[2])  # type: ignore[arg-type]
        finally:
            if handle is not None:
                handle.close()
        return


def _bootstrap():  # type: () -> None
    here_file = os.path.abspath(__file__)
    try:
        _leave_sys_path(os.path.dirname(here_file))
        _activate()
    except Exception as exc:  # noqa: BLE001
        _say("not active in this interpreter: bootstrap failed ({}: {}).".format(type(exc).__name__, exc))
    _chain(here_file)


_bootstrap()
