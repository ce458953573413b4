"""The run, in each process that runs tests: its directory (in pytest's own temporary directory, which pytest cleans
up), its events file and the watch over the tests' child processes. Made by the first test that applies a policy;
nothing of it exists in a run that applies none.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os
import threading

import pytest

from .. import _messages
from .options import options

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .children import Test, Watch
    from .records import Records


class Run:
    """What the plugin keeps for one run in this process (the controller, or one pytest-xdist worker)."""

    def __init__(self, config: pytest.Config, factory: pytest.TempPathFactory) -> None:
        self.config = config
        self.options = options(config)
        #: The tests whose state is not put back yet (:class:`.state.TestState`): one, but for a test that runs pytest.
        self.open_tests: list[Any] = []
        self._factory = factory
        self._directory: str | None = None
        self._records: Records | None = None
        self._watch: Watch | None = None
        self._flags: list[str] = []
        self._lock = threading.Lock()
        #: What the end-of-run section says first: a problem with what you gave the run (``urandom-shim:`` lines).
        self.problems: list[str] = []

    def directory(self) -> str:
        """The run's own directory, made on first use in pytest's temporary directory for this run."""
        if self._directory is None:
            try:
                found = self._factory.mktemp("urandom-shim", numbered=False)
            except FileExistsError:  # a run nested in another's directory (pytester): a numbered one
                found = self._factory.mktemp("urandom-shim")
            self._directory = str(found)
        return self._directory

    def records(self) -> Records:
        """The run's events: in the file ``URANDOM_SHIM_EVENTS`` names, if you set one (it is yours, and stays), else
        in the run's directory; in the run's directory too if yours can't be written, which the report says."""
        with self._lock:
            if self._records is None:
                from .records import Records, size, unwritable, users_events_file

                mine = users_events_file()
                why = None if mine is None else unwritable(mine)
                if why is not None:  # a file nothing reaches: said at the end, and the run keeps its own
                    self.problems.append(_messages.PLUGIN_EVENTS_UNWRITABLE.format(path=mine, error=why))
                if mine is not None and why is None:
                    self._records = Records(mine, start=size(mine), own=False)
                else:
                    self._records = Records(os.path.join(self.directory(), "events.jsonl"), start=0, own=True)
            return self._records

    def has_records(self) -> bool:
        return self._records is not None

    def watching(self) -> Watch | None:
        return self._watch

    def child_environment(self) -> dict[str, str]:
        """The variables every process of a test gets besides its settings: event lines off stderr, unless asked; and
        in a report-only run, the configuration's problem lines too (the run's report says them once)."""
        from .. import _config, _events

        found = {} if self.options.stderr else {_events.LINES_VARIABLE: "0"}
        found[_config.ENV_EXIT_NOTES] = self.exit_notes()
        if self.options.report_only:
            found[_config.ENV_PROBLEM_LINES] = "0"
        return found

    def exit_notes(self) -> str:
        """The directory where a test's process that a refusal ended, uncaught, leaves a note named by its pid (the
        shim writes it): the watch sees such a death even when a process other than the test reaped it."""
        path = os.path.join(self.directory(), "exits")
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        return path

    def new_flag(self) -> str:
        """A new file whose existence keeps a simulated kernel CRNG unready (``unready-until-file:``)."""
        with self._lock:
            path = os.path.join(self.directory(), f"unready-{len(self._flags)}")
            self._flags.append(path)
        open(path, "w").close()
        return path

    def watch(self) -> Watch:
        if self._watch is None:
            from .children import Watch

            self._watch = Watch(self.records, self.config, self.exit_notes())
        return self._watch

    def begin(self, state: Test) -> None:
        """A test under a policy starts: its child processes are watched from now on."""
        self.watch().begin(state)

    def close(self) -> None:
        """The end of the run's tests: the watch stops, the flags go. The events file stays for the end-of-run
        report, which removes it (:mod:`.summary`)."""
        if self._watch is not None:
            self._watch.stop()
        for path in self._flags:
            try:
                os.unlink(path)
            except OSError:
                pass
        if self._directory is not None:
            from .children import clear

            notes = os.path.join(self._directory, "exits")
            clear(notes)
            try:
                os.rmdir(notes)
            except OSError:
                pass


_RUN = pytest.StashKey["Run"]()


def current(config: pytest.Config) -> Run | None:
    """The run's state in this process, or None while no test has applied a policy."""
    return config.stash.get(_RUN, None)


def start(config: pytest.Config, factory: pytest.TempPathFactory) -> Run:
    run = config.stash.get(_RUN, None)
    if run is None:
        run = config.stash[_RUN] = Run(config, factory)
    return run
