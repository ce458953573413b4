"""``python -m urandom_shim``: the same command line as ``urandom-shim``."""

from urandom_shim._cli import main

raise SystemExit(main())
