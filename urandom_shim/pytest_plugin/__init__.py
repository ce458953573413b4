"""urandom-shim's pytest plugin: test an application as if the kernel CRNG were not initialised yet.

PYTEST_DONT_REWRITE

pytest loads this package through the ``pytest11`` entry point ``urandom_shim``, and the package registers its
modules as plugins of their own (``pytest_plugins``), each with one job:

- :mod:`.options`: the options, ini keys and marker, read once per run and checked;
- :mod:`.state`: what one test changes (its policy, its simulated kernel CRNG) and putting it all back, with the
  fixtures ``system_rng`` and ``urandom_policy``; :mod:`.waits`, the failure that ends a wait nothing can end;
- :mod:`.run`: what one run keeps in each process that runs tests (its directory, events file, policy, watch);
- :mod:`.children`: the watch over a test's child processes: a child that died of the policy fails its test;
- :mod:`.records`: the run's events, each naming its test, read back as the run goes, and shown;
- :mod:`.reports`: what they add to each test's report (JUnit properties, the calls behind a failure);
- :mod:`.summary`: the end-of-run section and ``--urandom-report``'s JSON.

Unused, it costs a few hook calls per test and imports nothing of the package but its messages. docs/reference/
pytest-plugin.md is what it gives a user.
"""

from .state import SystemRNG, variables

__all__ = ["SystemRNG", "variables"]

pytest_plugins = [
    "urandom_shim.pytest_plugin.options",
    "urandom_shim.pytest_plugin.state",
    "urandom_shim.pytest_plugin.reports",
    "urandom_shim.pytest_plugin.summary",
]
