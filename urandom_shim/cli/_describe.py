"""Run by ``run`` as ``PYTHON -S _describe.py`` in an interpreter it is about to start (:mod:`.target`), with a
fixed hash seed: so it reads nothing from the kernel, runs no ``site`` and no ``.pth``. It writes, separated by NUL
bytes: the interpreter's version, its ``sys.prefix``, then its ``sys.path`` (``P``), the site directories ``site``
would add (``S``) and the user's, if ``site`` would add it (``U``). Python 2 parses it too, and stops after the
version. Never imported."""

import os
import sys

version = sys.version_info
out = [str(version[0]) + "." + str(version[1]), sys.prefix]
if version >= (3, 8):  # Python 2 and 3.7 run this file too
    import site

    here = os.path.dirname(os.path.abspath(__file__))
    path = sys.path[1:] if sys.path[:1] == [here] else sys.path
    out += ["P" + entry for entry in path]
    out += ["S" + entry for entry in site.getsitepackages([sys.base_prefix])]
    if site.check_enableusersite():
        out.append("U" + site.getusersitepackages())
sys.stdout.write("\0".join(out))
