"""What each test's report gains: ``urandom`` properties in the JUnit XML for a test that reached the CRNG, and
for a failed test, the calls the policy refused in it and in its child processes, and the children that died of
them; and the phases of each test, inside which the watch over its children (:mod:`.children`) may fail it.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os

import pytest

from .. import _messages
from .records import REFUSALS, calls, place, property_values, shown, where
from .run import Run, current

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Generator

    from .children import Watch


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    run = current(item.config)
    if run is not None and call.when == "teardown" and run.has_records():
        # Before the teardown's report is made: it carries the test's properties to the JUnit XML.
        from .._events import test_key

        records = run.records()
        records.read_new()
        rootdir = str(item.config.rootpath)
        for value in property_values(records.by_test.get(test_key(item.nodeid), []), os.getpid(), rootdir):
            item.user_properties.append(("urandom", value))
    outcome = yield
    if run is not None:
        _after_phase(run, item, call, outcome.get_result())


def _after_phase(run: Run, item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport) -> None:
    """A test that failed, in any phase: the calls the policy refused in it and in its child processes, and the
    children that died of them, are added to its report (the plugin's own failures name their call already)."""
    if not report.failed or not run.has_records():
        return
    exc = call.excinfo.value if call.excinfo is not None else None
    if isinstance(exc, pytest.fail.Exception) and str(exc).startswith("urandom-shim:"):
        return
    from .._events import test_key

    watch = run.watching()
    findings = [] if watch is None else watch.findings(item.nodeid)
    rootdir = str(item.config.rootpath)
    records = run.records()
    records.read_new()
    own = os.getpid()
    lines = [finding.describe(rootdir) for finding in findings]
    for found in calls(r for r in records.by_test.get(test_key(item.nodeid), []) if r.get("action") in REFUSALS):
        lines.append(
            _messages.PLUGIN_REFUSED_IN_TEST.format(
                call=shown(found.call["call"]),
                caller=shown(place(found.call["caller"], rootdir)),
                where=where(found, own, rootdir),
            )
        )
    if len(lines) == 1 and not findings and getattr(exc, "_urandom_shim_refusal", False):
        return  # the test failed of the refusal itself, whose message names the call
    if lines:
        report.sections.append(("urandom-shim", "\n".join(lines)))


# -- the phases of a test ----------------------------------------------------------------------------------------------


def _watch_of(item: pytest.Item) -> Watch | None:
    run = current(item.config)
    return None if run is None else run.watching()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    yield  # the watch begins with the test's state, inside this phase
    watch = _watch_of(item)
    if watch is not None:
        watch.phase(item.nodeid, False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    watch = _watch_of(item)
    if watch is not None:
        watch.phase(item.nodeid, True)
    yield
    if watch is not None:
        watch.phase(item.nodeid, False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    # No failure is sent in teardown: it would land in the clean-up that puts the test's policy, environment and
    # simulated CRNG back (the plugin's, or a fixture's), and the next tests would run with what was left. Setup and
    # call send theirs only while their hooks run (inside pytest's CallInfo, which catches it), and take back one
    # not yet raised before they return.
    yield
    watch = _watch_of(item)
    if watch is not None:
        watch.phase(item.nodeid, False)
        watch.end(item.nodeid)
