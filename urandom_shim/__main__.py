"""``python -m urandom_shim``: the same command line as ``urandom-shim``."""

from urandom_shim.cli.main import main

raise SystemExit(main())
