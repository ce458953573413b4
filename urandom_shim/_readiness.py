"""Readiness: ask the kernel whether its CRNG is initialised, wait for it, and make best-effort bytes.

Initialisation is one-way: once the kernel (or a simulation) has said "ready", this process never asks again. Until
then every question costs one non-blocking ``getrandom()`` of one byte.

Waiting blocks *inside the kernel* with ``getrandom(flags=0)``: since Linux 5.4 that runs the kernel's jitter-entropy
generator, which polling with ``GRND_NONBLOCK`` does not. Where ``os.getrandom`` is missing (PyPy), Linux 5.6+'s
``/dev/random`` stands in for it: readable exactly once the CRNG is initialised (one ``poll()`` asks), and a read
blocks until then. The blocking call runs in one helper thread shared by every
waiter, so that a waiter can give up after a timeout, print a diagnostic after ``warn_after`` seconds, and be
interrupted by Ctrl-C while the kernel works.
"""

import _thread
import os
import stat
import sys
import time

from . import _messages, _simulation
from ._state import state as _state

READY = "ready"
UNREADY = "unready"
UNKNOWN = "unknown"

#: getrandom() flag for bytes that never block, even before the CRNG is ready (Linux 5.6+). ``os`` has no constant.
GRND_INSECURE = 4

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

_settled: "str | None" = None  # READY or UNKNOWN once the kernel has answered for good
_listeners: "list[Callable[[], None]]" = []
_insecure_works: "bool | None" = None
#: The interpreter's own os.urandom, whatever os.urandom is by the time this module is imported. Waits call it
#: directly: while a policy is installed, ``posix.urandom`` and ``os.urandom`` are the shim's wrapper.
native_urandom: "Callable[[int], bytes]" = getattr(os.urandom, "__urandom_shim_original__", os.urandom)


def kernel_state() -> str:
    """The real kernel's CRNG state: ``"ready"``, ``"unready"`` or ``"unknown"`` (no getrandom, or it is denied)."""
    global _settled
    if _settled is not None:
        return _settled
    getrandom = getattr(os, "getrandom", None)
    if getrandom is None:
        if dev_random_answers():  # PyPy on Linux 5.6+
            if _poll_dev_random(0):
                _settled = READY
                return _settled
            return UNREADY
        _settled = UNKNOWN  # not Linux: these platforms never hand out bytes before they are seeded
        return _settled
    try:
        getrandom(1, os.GRND_NONBLOCK)
    except BlockingIOError:
        return UNREADY
    except OSError as exc:
        import errno  # only here: even a built-in module costs about 0.25 M instructions to import at start-up

        if exc.errno in (errno.ENOSYS, errno.EPERM):  # old kernel, or a seccomp filter: the interpreter can't tell
            _settled = UNKNOWN
            return _settled
        return UNKNOWN  # something odd: counts as ready, like the interpreter, which raises the same error itself
    _settled = READY
    return _settled


_dev_random_answers: "bool | None" = None
#: /dev/random's device number (1, 8): a file of that name that is anything else is not asked.
_DEV_RANDOM = (1, 8)


def dev_random_answers() -> bool:
    """True where ``os.getrandom`` is missing on Linux 5.6+ (PyPy): there ``/dev/random`` blocks only until the CRNG
    is initialised, so whether it is readable tells what ``getrandom(GRND_NONBLOCK)`` would. Before 5.6 it follows
    an entropy estimate instead, and the kernel's state can't be asked without the system call."""
    global _dev_random_answers
    if _dev_random_answers is None:
        _dev_random_answers = False
        if sys.platform == "linux" and getattr(os, "getrandom", None) is None:
            try:
                release = os.uname().release.split(".")
                _dev_random_answers = (int(release[0]), int(release[1].split("-")[0])) >= (5, 6)
                if _dev_random_answers:  # and /dev/random is the kernel's, not a file mounted over it: else unknown
                    fd = _open_dev_random()
                    _dev_random_answers = fd is not None
                    if fd is not None:
                        os.close(fd)
            except (ValueError, IndexError, OSError):
                _dev_random_answers = False
    return _dev_random_answers


def _poll_dev_random(seconds: "float | None") -> bool:
    """Whether ``/dev/random`` is readable (the CRNG is initialised), waiting up to ``seconds`` (forever if None) for
    it. An error counts as ready, as a denied getrandom() does."""
    import select

    fd = _open_dev_random()
    if fd is None:
        return True  # gone, or something else mounted there (hostile review): not asked, as before Linux 5.6
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(None if seconds is None else max(0, int(seconds * 1000))))
    except OSError:
        return True
    finally:
        os.close(fd)


def _open_dev_random() -> "int | None":
    """A non-blocking descriptor of the kernel's /dev/random (the character device (1, 8)), or None if it can't be
    opened or something else is at that path (a FIFO mounted there would otherwise answer for the kernel)."""
    try:
        fd = os.open("/dev/random", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        found = os.fstat(fd)
    except OSError:
        found = None
    if (
        found is not None
        and stat.S_ISCHR(found.st_mode)
        and (os.major(found.st_rdev), os.minor(found.st_rdev)) == _DEV_RANDOM
    ):
        return fd
    os.close(fd)
    return None


def _block_on_dev_random() -> None:
    """Block until the CRNG is initialised, in the kernel: a read of /dev/random, which on Linux 5.6+ waits for
    exactly that (and runs the jitter-entropy generator meanwhile, as getrandom(0) does). PyPy releases the GIL."""
    fd = _open_dev_random()
    if fd is None:
        return
    try:
        os.set_blocking(fd, True)
        os.read(fd, 1)
    except OSError:
        pass
    finally:
        os.close(fd)


def state() -> str:
    """The state this process must act on: the simulation (if any) on top of the kernel."""
    if _state.ready:
        return READY
    sim = _simulation.current()
    if sim is not None and sim.unready():
        return UNREADY
    kernel = kernel_state()
    if kernel != UNREADY:
        _mark_ready()
    return kernel


def is_ready() -> bool:
    """True once the CRNG (real, and simulated if a simulation is on) is initialised, or when that can't be known."""
    if _state.ready:
        return True
    return state() != UNREADY


_listeners_lock = _thread.RLock()


def on_ready(callback: "Callable[[], None]") -> None:
    """Call ``callback`` once, in whichever thread first sees the CRNG ready (at once if it already is)."""
    with _listeners_lock:
        if not _state.ready:
            _listeners.append(callback)
            return
    callback()


def _mark_ready() -> None:
    with _listeners_lock:
        if _state.ready:
            return
        _state.ready = True
        callbacks = _listeners[:]
        del _listeners[:]
    for callback in callbacks:
        try:
            callback()
        except Exception as exc:  # noqa: BLE001 - a listener must not turn a random call into a crash
            from ._messages import emit

            emit(_messages.READY_LISTENER_FAILED.format(name=type(exc).__name__, exc=exc))


def reset() -> None:
    """Forget a cached "ready" (only for tests and the pytest plugin, after :func:`_simulation.override`)."""
    _state.ready = False


# -- waiting -------------------------------------------------------------------------------------------------------

_guard = _thread.allocate_lock()
_kernel_done: "_thread.LockType | None" = None  # held until the helper thread's blocking getrandom() returns


def _block_in_kernel(done: "_thread.LockType") -> None:
    # The interpreter's own urandom (posix.urandom), not os.getrandom(1, 0): both block in getrandom(flags=0) until
    # the CRNG is initialised (and run jitter entropy on 5.4+), but os.getrandom holds the GIL while it blocks, which
    # would freeze every other thread, the waiter's timeout, warn_after and Ctrl-C included. Found on a real booting
    # kernel (tests/kernel).
    try:
        if dev_random_answers():
            _block_on_dev_random()
        else:
            native_urandom(1)
    except OSError:
        pass
    finally:
        done.release()


def _wait_kernel(seconds: "float | None") -> None:
    """Wait up to ``seconds`` (forever if None) for the kernel: on the helper thread's blocking getrandom(), or, where
    no helper thread can run, in this thread."""
    global _kernel_done
    if not sys.is_finalizing():
        with _guard:
            done = _kernel_done
            if done is None:
                done = _thread.allocate_lock()
                done.acquire()
                try:
                    # Publish the lock only once its releaser exists: a thread that can't start must not leave every
                    # later waiter blocked on a lock nobody will release.
                    _thread.start_new_thread(_block_in_kernel, (done,))
                except RuntimeError:  # a thread limit, or 3.13's PythonFinalizationError: wait in this thread
                    done = None
                else:
                    _kernel_done = done
        if done is not None:
            # Lock acquisition is interruptible by signals, so Ctrl-C raises KeyboardInterrupt here promptly.
            if done.acquire(True, -1 if seconds is None else min(seconds, _thread.TIMEOUT_MAX)):
                done.release()  # let every other waiter through too
            return
    _wait_in_this_thread(seconds)


def _wait_in_this_thread(seconds: "float | None") -> None:
    """At interpreter shutdown (``__del__`` and ``weakref`` callbacks while modules are torn down) no other thread
    runs again, not even a helper started earlier. Without a time limit, block in the kernel here, with the GIL
    released, as the interpreter's own os.urandom does; with one, sleep a little and let the caller ask the kernel
    again, so that the timeout holds."""
    if dev_random_answers():
        _poll_dev_random(seconds)
    elif seconds is None:
        try:
            native_urandom(1)
        except OSError:
            pass
    else:
        time.sleep(min(seconds, 0.05))


def _after_fork_in_child() -> None:
    global _guard, _kernel_done, _listeners_lock
    _guard = _thread.allocate_lock()
    _listeners_lock = _thread.RLock()
    _kernel_done = None  # the helper thread did not survive the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def wait(
    timeout: "float | None" = None,
    *,
    warn_after: "float | None" = None,
    warn: "Callable[[float], None] | None" = None,
) -> bool:
    """Block until the CRNG is ready. Return True when it is, False when ``timeout`` seconds ran out first.

    ``warn(elapsed)`` is called once, from the waiting thread, after ``warn_after`` seconds of waiting.
    """
    if is_ready():
        return True
    start = time.monotonic()
    deadline = None if timeout is None else start + timeout
    warn_at = None if warn_after is None or warn is None else start + warn_after
    while True:
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            return is_ready()
        if warn_at is not None and now >= warn_at:
            warn_at = None
            assert warn is not None
            warn(now - start)
        limits = [t - now for t in (deadline, warn_at) if t is not None]
        slice_ = min(limits) if limits else None
        sim = _simulation.current()
        if sim is not None and sim.unready():
            if sim.watcher is not None:
                sim.watcher(now - start, timeout)
            interval = sim.poll_interval()
            time.sleep(interval if slice_ is None else max(0.0, min(interval, slice_)))
        elif kernel_state() == UNREADY:
            _wait_kernel(slice_)
        if is_ready():
            return True


# -- best-effort bytes ---------------------------------------------------------------------------------------------


def best_effort_bytes(size: int) -> bytes:
    """``size`` bytes from the kernel without waiting, as Python 3.5.2 returned them before the CRNG was ready.

    Uses ``getrandom(GRND_INSECURE)`` (Linux 5.6+), which never blocks: ``os.getrandom``, or where ``os`` has none
    (PyPy) the C library's ``getrandom()``. Older kernels read ``/dev/urandom``; on 5.18+ that read would run the
    jitter generator and could block for about a second, which is why it is the fallback. Once the CRNG is
    initialised, both give full-strength bytes.
    """
    global _insecure_works
    if size <= 0:
        return b""
    getrandom = getattr(os, "getrandom", None)
    if getrandom is None and sys.platform == "linux" and _insecure_works is not False:
        data = _libc_insecure_bytes(size)
        if data is not None:
            return data
    if getrandom is not None and _insecure_works is not False:
        chunks = []
        remaining = size
        try:
            while remaining:
                chunk = getrandom(remaining, GRND_INSECURE)
                chunks.append(chunk)
                remaining -= len(chunk)
        except OSError as exc:
            import errno

            if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EPERM):
                raise
            _insecure_works = False  # kernel before 5.6, or getrandom denied
        else:
            _insecure_works = True
            return b"".join(chunks)
    try:
        with open("/dev/urandom", "rb", buffering=0) as dev:
            data = b""
            while len(data) < size:
                chunk = dev.read(size - len(data))
                if not chunk:
                    import errno

                    raise OSError(errno.EIO, "short read from /dev/urandom")
                data += chunk
            return data
    except OSError:
        if getrandom is None:  # no Linux interfaces at all: the platform's own urandom never blocks
            return native_urandom(size)
        raise


_libc_getrandom: "Any" = None


def _libc_insecure_bytes(size: int) -> "bytes | None":
    """``size`` bytes from the C library's ``getrandom(GRND_INSECURE)``, for an interpreter without
    ``os.getrandom`` (PyPy); None where it has no such function, or the kernel refuses the flag (before 5.6)."""
    global _insecure_works, _libc_getrandom
    try:
        import ctypes

        function = _libc_getrandom
        if function is None:
            function = ctypes.CDLL(None, use_errno=True).getrandom
            function.restype = ctypes.c_ssize_t
            function.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
            _libc_getrandom = function
    except (ImportError, OSError, AttributeError):
        _insecure_works = False
        return None
    buffer = ctypes.create_string_buffer(size)
    done = 0
    while done < size:
        got = function(ctypes.byref(buffer, done), size - done, GRND_INSECURE)
        if got < 0:
            import errno

            if ctypes.get_errno() == errno.EINTR:
                continue
            _insecure_works = False  # EINVAL before Linux 5.6, or denied (ENOSYS, EPERM)
            return None
        done += got
    _insecure_works = True
    return buffer.raw[:size]


def best_effort_seed() -> int:
    """A seed for ``random.Random`` from best-effort kernel bytes: as many as CPython's own seeding reads (2496)."""
    return int.from_bytes(best_effort_bytes(624 * 4), "little")
