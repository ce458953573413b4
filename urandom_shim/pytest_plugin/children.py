"""The watch over a test's child processes: a child that exits with an error after the policy raised in it (or in a
process it started) fails its test, naming the child's command and the call, even while the test waits for the
child forever (a server it polls, say).

PYTEST_DONT_REWRITE

One daemon thread per process that runs tests reads the run's records as they grow (a ``stat`` every
:data:`POLL` seconds while a test runs). A refusal in a child of the running test makes the child a suspect; a
suspect that has exited with an error is a finding. A test still running :data:`GRACE` seconds after a finding
(:data:`EXPLICIT_GRACE` for a test that chose its policy itself, and may expect its child to fail) is failed where
it is, by an exception raised in its thread; the findings of a test that failed by itself are added to its report
(:mod:`.reports`). A child the test has already waited for can't be asked how it ended: the test saw that itself.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from .. import _messages
from .._events import test_key
from .options import OPTION, options
from .records import command, place, shown

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Protocol

    from .._events import Record
    from .records import Records

    class Test(Protocol):
        """What the watch needs of a test's state (:class:`urandom_shim.pytest_plugin.state.TestState`)."""

        nodeid: str
        thread: int
        origin: str


#: Seconds between two looks at the records while a test runs.
POLL = 0.1
#: Seconds a test under ``--urandom-policy`` may run on after its child died of the policy, before it is failed.
GRACE = 0.5
#: The same for a test under the marker or ``urandom_policy()``, which may be testing that very failure.
EXPLICIT_GRACE = 10.0
#: What a record says was done when the policy raised.
REFUSALS = ("raised", "timed-out-raised")


class Finding:
    """A child process of the test that exited with an error after the policy raised in it."""

    __slots__ = ("command", "given_as", "pid", "record", "seen", "status")

    def __init__(self, record: Record, pid: int, status: int, command: str | None, given_as: str | None = None) -> None:
        self.record = record
        #: Where the test's policy came from: what the child's ``environment variable URANDOM_POLICY`` was set from.
        self.given_as = given_as
        self.pid = pid  # the test's own child: the refusal's process, or the one that started it
        self.status = status
        self.command = command  # None: the refusal's own, from its record
        self.seen = time.monotonic()

    def describe(self, rootdir: str) -> str:
        record = self.record
        refused_in = record.get("pid")
        within = ""
        if refused_in != self.pid:
            within = _messages.PLUGIN_CHILD_WITHIN.format(command=command(record.get("argv"), rootdir), pid=refused_in)
        return _messages.PLUGIN_CHILD_DIED.format(
            command=self.command if self.command is not None else command(record.get("argv"), rootdir),
            pid=self.pid,
            status=self.status,
            call=shown(record.get("call")),
            done=_messages.PLUGIN_DONE_TIMED_OUT if record.get("action") == "timed-out-raised" else "",
            within=within,
            policy=shown(record.get("policy")),
            source=self.source(),
            caller=shown(place(record.get("caller"), rootdir)),
        )

    def source(self) -> str:
        from .._config import ENV_POLICY

        found = self.record.get("policy_source")
        if found == f"environment variable {ENV_POLICY}" and self.given_as is not None:
            return _messages.PLUGIN_CHILD_SOURCE.format(given_as=self.given_as, variable=ENV_POLICY)
        return shown(found)


class _Suspect:
    __slots__ = ("child", "child_command", "pid", "record")

    def __init__(self, record: Record, pid: int, child: int | None, child_command: str | None) -> None:
        self.record, self.pid, self.child, self.child_command = record, pid, child, child_command


class _Active:
    """The test running in this process, as the watch sees it."""

    def __init__(self, state: Test, policy_source: str) -> None:
        self.nodeid = state.nodeid
        self.key = test_key(state.nodeid)  # as its records name it
        self.thread = state.thread
        self.state = state
        self.suspects: dict[int, _Suspect] = {}
        self.findings: list[Finding] = []
        self.later: list[tuple[float, str]] = []
        self.phase_open = True  # the test begins in its setup phase
        self.failed = False  # an exception has been sent to its thread
        self.policy_source = policy_source

    @property
    def grace(self) -> float:
        return GRACE if self.state.origin == OPTION else EXPLICIT_GRACE

    def given_as(self) -> str:
        """Where the test's policy came from, as its messages name it."""
        return self.policy_source if self.state.origin == OPTION else self.state.origin


class Watch:
    """The watch of one process (:mod:`.run`). Its thread starts with the first test under a policy."""

    def __init__(self, records: Callable[[], Records], config: pytest.Config, notes: str | None = None) -> None:
        self.records = records
        self.notes = notes  # where a process a refusal ended leaves its note (Run.exit_notes)
        self.rootdir = str(config.rootpath)
        self.policy_source = options(config).policy_source
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._active: _Active | None = None
        self._read = 0  # how many of the run's records the watch has looked at
        self._findings: dict[str, list[Finding]] = {}

    def begin(self, state: Test) -> None:
        with self._lock:
            self._active = _Active(state, self.policy_source)
            self._read = len(self.records().all)
            if self.notes is not None:
                clear(self.notes)  # an earlier test's notes: a pid used again must not find them
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="urandom-shim watch", daemon=True)
            self._thread.urandom_shim_watch = True  # type: ignore[attr-defined]  # no thread of the test's
            self._thread.start()

    def phase(self, nodeid: str, is_open: bool) -> None:
        """The test's setup or call begins or ends: only inside one is a failure sent (never in teardown). Called in
        the test's thread from the phase's own hook, so that a failure that falls due here is still the phase's."""
        with self._lock:
            active = self._active
            if active is None or active.nodeid != nodeid:
                return
            active.phase_open = is_open
            if not is_open and active.failed:
                _send(active.thread, None)  # a failure not yet raised must not land in pytest's own code

    def end(self, nodeid: str) -> None:
        with self._lock:
            if self._active is not None and self._active.nodeid == nodeid:
                if self._active.findings:
                    self._findings[nodeid] = self._active.findings
                self._active.phase_open = False
                self._active = None

    def findings(self, nodeid: str) -> list[Finding]:
        """The findings of ``nodeid`` so far, after a last look (a child may have died a moment ago)."""
        self.check()
        with self._lock:
            active = self._active
            if active is not None and active.nodeid == nodeid:
                return list(active.findings)
            return list(self._findings.get(nodeid, ()))

    def fail_later(self, message: str) -> None:
        """Fail the running test with ``message`` unless it ends within its grace (a thread of it failed so)."""
        with self._lock:
            if self._active is not None:
                self._active.later.append((time.monotonic(), message))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -- the thread ------------------------------------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stop.wait(POLL):
            try:
                self.check()
            except Exception:  # noqa: BLE001 - the watch must never break a run
                pass

    def check(self) -> None:
        with self._lock:
            active = self._active
            if active is None:
                return
            records = self.records()
            records.read_new()
            fresh = records.all[self._read :]
            self._read = len(records.all)
            own = os.getpid()
            for record in fresh:
                pid = record.get("pid")
                if (
                    record.get("action") in REFUSALS
                    and record.get("test") == active.key
                    and isinstance(pid, int)
                    and pid != own
                    and pid not in active.suspects
                ):
                    child = _our_child(pid, own)
                    words = None if child is None or child == pid else _cmdline(child)
                    named = None if words is None else command(words, self.rootdir)
                    active.suspects[pid] = _Suspect(record, pid, child, named)
            for suspect in list(active.suspects.values()):
                finding = _died(suspect, self.notes)
                if finding is not None:
                    finding.given_as = active.given_as()
                    active.findings.append(finding)
                    del active.suspects[suspect.pid]
            self._maybe_fail(active)

    def _maybe_fail(self, active: _Active) -> None:
        if active.failed or not active.phase_open:
            return
        now = time.monotonic()
        due = [f.describe(self.rootdir) for f in active.findings if now - f.seen >= active.grace]
        if due:
            message = " ".join(due) + " " + _messages.PLUGIN_CHILD_STILL_RUNNING.format(grace=active.grace)
            message += " " + remedies(active.state, active.findings[0], self.rootdir)
        else:
            late = [text for when, text in active.later if now - when >= active.grace]
            if not late:
                return
            message = late[0]
        if _send(active.thread, failure(message)):
            active.failed = True


def remedies(state: Test, finding: Finding, rootdir: str) -> str:
    if finding.record.get("action") == "timed-out-raised":
        # The child waited, and its wait was cut short (its timeout, or the guard on a test's children): waiting
        # once more before the line would be cut short too. The test can make the CRNG ready while the child waits.
        ways = [_messages.PLUGIN_REMEDY_READY_AFTER, _messages.PLUGIN_REMEDY_READY_KERNEL]
    else:
        caller = shown(place(finding.record.get("caller"), rootdir))
        ways = [_messages.PLUGIN_REMEDY_CHILD_WAIT.format(caller=caller), _messages.PLUGIN_REMEDY_READY_KERNEL]
    if state.origin == OPTION:
        ways.append(_messages.PLUGIN_REMEDY_EXEMPT.format(nodeid=shown(state.nodeid)))
    return sentence(ways)


def sentence(ways: list[str]) -> str:
    """Ways out, as one sentence: "A; or b; or c."."""
    text = "; or ".join(ways)
    return text[:1].upper() + text[1:] + "."


def failure(message: str) -> type[BaseException]:
    """An exception class for ``message``: an asynchronous exception is raised from its class, without arguments.
    It is pytest's ``Failed`` with the traceback of where the test was (``pytrace=True``)."""
    base: Any = pytest.fail.Exception

    def __init__(self: Any) -> None:
        base.__init__(self, message, pytrace=True)

    return type("Failed", (base,), {"__init__": __init__, "__module__": "builtins"})


def _send(thread: int, exception: type[BaseException] | None) -> bool:
    """Raise ``exception`` in ``thread`` at its next Python instruction (None: take back one not raised yet).
    CPython's ``PyThreadState_SetAsyncExc``; elsewhere (PyPy) nothing is sent, and the test's findings are still
    reported when it ends."""
    try:
        import ctypes

        set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
    except (ImportError, AttributeError):
        return False
    given = None if exception is None else ctypes.py_object(exception)  # None is NULL: take it back
    found = set_async_exc(ctypes.c_ulong(thread), given)
    if found > 1:  # more than one thread of that id: never meant, so take it back from all
        set_async_exc(ctypes.c_ulong(thread), None)
        return False
    return bool(found == 1)


# -- processes ---------------------------------------------------------------------------------------------------------


def clear(directory: str) -> None:
    """Remove every file in ``directory``, if it exists."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        try:
            os.unlink(os.path.join(directory, name))
        except OSError:
            pass


def _died(suspect: _Suspect, notes: str | None = None) -> Finding | None:
    """A finding if the refusal's process, or the test's child that started it, exited with an error; or if the
    refusal's process is gone and left a note that the refusal ended it, uncaught (its parent, a wrapper such as
    ``sh -c 'server; clean-up'``, reaped it, and the test's child lives on or exits 0)."""
    for pid, named in ((suspect.pid, None), (suspect.child, suspect.child_command)):
        if pid is None:
            continue
        status = exit_status(pid)
        if status:
            return Finding(suspect.record, pid, status, named)
    if notes is not None and os.path.exists(os.path.join(notes, str(suspect.pid))):
        fields = _stat(suspect.pid)
        if fields is None or fields[0] in ("Z", "X"):
            return Finding(suspect.record, suspect.pid, 1, None)
    return None


def exit_status(pid: int) -> int | None:
    """The exit status of ``pid`` if it has exited (and can still be asked: a child of this process not yet waited
    for, or a zombie), else None. Death by a signal is no finding: the test, or its clean-up, may have sent it."""
    waitid = getattr(os, "waitid", None)
    if waitid is not None:
        try:
            result = waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            result = False  # not this process's child
        except OSError:
            return None
        if result is None:
            return None  # a child of this process, still running
        if result:
            return result.si_status if result.si_code == os.CLD_EXITED else None
    fields = _stat(pid)
    if fields is None or fields[0] != "Z" or len(fields) < 50:
        return None
    status = int(fields[49])  # exit_code (Linux 3.5+), as waitpid() reports it
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else None


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command's name, state first; None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            text = file.read().decode("ascii", "replace")
    except OSError:
        return None
    return text.rpartition(")")[2].split()


def _our_child(pid: int, own: int) -> int | None:
    """The child of this process that ``pid`` is, or descends from; None when that can't be seen any more."""
    for _step in range(16):
        fields = _stat(pid)
        if fields is None or len(fields) < 2:
            return None
        parent = int(fields[1])
        if parent == own:
            return pid
        if parent <= 1:
            return None
        pid = parent
    return None


def _cmdline(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            words = file.read(4096).split(b"\0")
    except OSError:
        return None
    return [word.decode("utf-8", "replace") for word in words if word]
