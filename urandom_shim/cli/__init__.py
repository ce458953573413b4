"""The command line: ``urandom-shim`` (``bin/urandom-shim``, which starts the console script ``urandom-shim-cli``)
and ``python -m urandom_shim``. :func:`urandom_shim.cli.main.main` is the entry point; each command is a module of
its own (``report``'s machinery is the package :mod:`urandom_shim.report`).

Never imported at interpreter start.
"""
