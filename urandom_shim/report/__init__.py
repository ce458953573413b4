"""``urandom-shim report``: a boot's events, the kernel's ``crng init done`` and the units that stalled, turned into
one report per program and a verdict per policy (:mod:`.gather` the facts, :mod:`.text` the text).

Only the command line and the pytest plugin import this package, never an interpreter's start.
"""
