"""The guest's ``/init``: runs as PID 1 in a freshly booted VM whose CRNG is not yet initialised, with the interpreter
under test and urandom-shim installed from the wheel. PYTEST_DONT_REWRITE

The kernel passes the scenario and the shim's settings as ``KEY=VALUE`` words on its command line, which reach this
process as environment variables. Each step prints one line, ``@@urandom-shim-kernel {json}``, on the serial console;
the host harness parses those lines and makes every assertion. The driver never decides pass or fail itself: it
reports what it observed, then powers the machine off.

Standard library only, and nothing here may read random bytes before the first probe: the window must still be open.
Runs on every supported interpreter, 3.8 included.
"""

import errno
import json
import os
import sys
import time

BUSYBOX = "/busybox"
MARK = "@@urandom-shim-kernel "
START = time.monotonic()  # CLOCK_MONOTONIC counts from the guest kernel's boot: this is the boot time


def report(step, **fields):
    fields["step"] = step
    fields["t"] = round(time.monotonic(), 4)
    sys.stdout.write(MARK + json.dumps(fields, sort_keys=True) + "\n")
    sys.stdout.flush()


def busybox(*args):
    return os.spawnv(os.P_WAIT, BUSYBOX, [BUSYBOX, *args])


def probe():
    """One non-blocking getrandom(): "eagain" while the CRNG is unready, "ready" after."""
    try:
        os.getrandom(1, os.GRND_NONBLOCK)
    except BlockingIOError:
        return "eagain"
    except OSError as exc:
        return "error: " + errno.errorcode.get(exc.errno, str(exc.errno))
    return "ready"


class Captured:
    """sys.stderr that also keeps what was written, so the shim's diagnostics are reported with their step."""

    def __init__(self, stream):
        self.stream = stream
        self.text = []

    def write(self, text):
        self.text.append(text)
        return self.stream.write(text)

    def flush(self):
        self.stream.flush()

    def lines(self):
        return [line for line in "".join(self.text).splitlines() if line.startswith("urandom-shim:")]


def timed(step, call):
    """Run ``call`` and report what happened: its duration, its result or exception, the shim's stderr lines, and
    the probe right after it (did the kernel become ready meanwhile?)."""
    captured = Captured(sys.stderr)
    sys.stderr = captured
    began = time.monotonic()
    fields = {}
    try:
        value = call()
        fields["outcome"] = "returned"
        fields["value"] = value if isinstance(value, (bool, int, float, str, type(None))) else repr(value)[:60]
    except BaseException as exc:  # reported, and the host decides
        fields["outcome"] = "raised"
        fields["error"] = type(exc).__name__
        fields["message"] = str(exc)
        fields["errno"] = getattr(exc, "errno", None)
    finally:
        fields["duration"] = round(time.monotonic() - began, 4)
        sys.stderr = captured.stream
    fields["probe_after"] = probe()
    fields["diagnostics"] = captured.lines()
    report(step, **fields)


def setup():
    os.makedirs("/proc", exist_ok=True)
    busybox("mount", "-t", "proc", "proc", "/proc")
    busybox("mount", "-t", "sysfs", "sysfs", "/sys")
    events = os.environ.get("URANDOM_SHIM_EVENTS")
    if events:  # the events file's directory, as systemd-tmpfiles makes /run/urandom-shim on a real boot
        os.makedirs(os.path.dirname(events), exist_ok=True)
    import urandom_shim

    settings = urandom_shim.current_settings()
    report(
        "boot",
        kernel=os.uname().release,
        python=sys.version.split()[0],
        executable=sys.executable,
        started_by=getattr(sys, "_urandom_shim_boot", None),
        patched=type(os.urandom) is not type(len),  # the shim wraps posix.urandom too, with the same wrapper
        policy=str(settings.policy.value),
        policy_source=settings.policy.source,
        hashseed=os.environ.get("PYTHONHASHSEED"),
        entropy_avail=read("/proc/sys/kernel/random/entropy_avail"),
        cmdline=read("/proc/cmdline"),
    )


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError as exc:
        return "unreadable: " + str(exc)


def crng_ready_at():
    """When the kernel logged "crng init done" (seconds since boot), from /dev/kmsg; None if it has not."""
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        while True:
            try:
                record = os.read(fd, 8192).decode("utf-8", "replace")
            except BlockingIOError:  # the end of the log
                return None
            except OSError:  # EPIPE: a record was overwritten; read on
                continue
            header, _, text = record.partition(";")
            if "crng init done" in text:
                return int(header.split(",")[2]) / 1e6
    finally:
        os.close(fd)


def pycs_written_since_boot():
    """Cached bytecode the interpreter had to write during this boot: none, if the image kept the real mtimes. A
    ``.pyc`` the image did not hold, or holds with another mtime (the host's list, ``/pycs.json``), was written here.
    Not by this machine's clock: under emulation on a loaded host, the kernel can fail to read the RTC ("Unable to
    read current time from RTC") and start in 1970, and every file of the image would look written since."""
    with open("/pycs.json") as file:
        packed = json.load(file)
    written = []
    for folder, _dirs, files in os.walk(os.path.dirname(os.__file__)):
        for name in files:
            if name.endswith(".pyc"):
                path = os.path.join(folder, name)
                if packed.get(path) != int(os.stat(path).st_mtime):
                    written.append(path)
    return written[:5]


def never_blocks():
    """What every policy must do without waiting: import random, random.random(), tempfile.mkstemp()."""
    timed("import random", lambda: __import__("random").__name__)
    timed("random.random()", lambda: __import__("random").random())
    import tempfile

    def mkstemp():
        fd, name = tempfile.mkstemp()
        os.close(fd)
        return name

    timed("tempfile.mkstemp()", mkstemp)


def urandom16():
    return len(os.urandom(16))


def urandom16_hex():
    return os.urandom(16).hex()


def load_virtio_rng():
    """insmod the virtio-rng driver and its dependencies, listed in load order in /modules/order."""
    loaded = []
    for name in read("/modules/order").split():
        status = busybox("insmod", "/modules/" + name)
        loaded.append((name, status))
    return loaded


def scenario(name):
    if name == "no-hashseed":  # start-up itself made the kernel initialise; there is nothing left to test
        return
    if name.startswith("start-"):  # start-legacy, start-pep524, start-pep522, start-floor
        policy = name[len("start-") :]
        start_scenario("legacy" if policy == "floor" else policy, floor=policy == "floor")
        return
    never_blocks()
    if name == "native":
        timed("os.urandom(16)", urandom16)
    elif name == "pep522":
        timed("os.urandom(16)", urandom16)
        import secrets

        timed("secrets.wait_for_system_rng()", secrets.wait_for_system_rng)
        timed("os.urandom(16) again", urandom16)
    elif name == "pep524":
        timed("os.urandom(16)", urandom16)
    elif name == "legacy":
        timed("os.urandom(16)", urandom16)
        import random
        import secrets

        timed("random.SystemRandom().random()", random.SystemRandom().random)
        timed("secrets.token_hex(16)", lambda: len(secrets.token_hex(16)))
        from urandom_shim import _readiness

        report("best-effort source", grnd_insecure=_readiness._insecure_works)
    elif name in ("timeout-raise", "timeout-fallback"):
        timed("os.urandom(16)", urandom16)
    elif name == "virtio-rng":
        report("insmod", modules=load_virtio_rng(), probe_after=probe(), rng_current=read(HWRNG))
        timed("os.urandom(16)", urandom16)
    elif name == "config-file":
        timed("os.urandom(16)", urandom16)
        import secrets

        timed("secrets.wait_for_system_rng()", secrets.wait_for_system_rng)
    elif name == "report-mode":
        timed("os.urandom(16)", urandom16_hex)
        report_of_this_boot(os.environ["URANDOM_SHIM_EVENTS"])
    else:
        report("error", message="unknown scenario " + repr(name))


def report_of_this_boot(events):
    """`python -m urandom_shim report` on this boot's events file, as JSON and as text, and the file's records."""
    import subprocess

    command = [sys.executable, "-m", "urandom_shim", "report", "--events", events, "--no-journal"]
    fields = {}
    for form, extra in (("json", ["--json"]), ("text", [])):
        done = subprocess.run(command + extra, capture_output=True, text=True)
        fields[form] = {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr[-2000:]}
    try:
        fields["report"] = json.loads(fields["json"]["stdout"])
        del fields["json"]["stdout"]  # what it printed is the report; kept only if it was not JSON
    except ValueError as exc:
        fields["report"] = {"error": str(exc)}
    try:
        with open(events) as f:
            fields["events"] = [json.loads(line) for line in f if line.strip()]  # blank lines between records
    except (OSError, ValueError) as exc:
        fields["events"] = "unreadable: " + str(exc)
    report("report", **fields)


HWRNG = "/sys/class/misc/hw_random/rng_current"

#: The program that `urandom-shim run` starts in the start-* scenarios: it reports its own start, then starts a child
#: of its own (a grandchild of /init) and reports that one's. Each prints the time of its first line. The seed is the
#: one the interpreter was exec'd with (/proc/self/environ): the shim takes its own out of os.environ at start-up.
CHILD = """\
import json, os, subprocess, sys, time
first = time.monotonic()
def facts():
    try:
        os.getrandom(1, os.GRND_NONBLOCK)
        probe = "ready"
    except BlockingIOError:
        probe = "eagain"
    with open("/proc/self/environ", "rb") as handle:
        initial = dict(item.split(b"=", 1) for item in handle.read().split(b"\\0") if b"=" in item)
    seed = initial.get(b"PYTHONHASHSEED")
    return {"first_line": first, "seed": None if seed is None else seed.decode(),
            "randomized": sys.flags.hash_randomization, "probe": probe}
me = facts()
spawned = time.monotonic()
grandchild = subprocess.run([sys.executable, "-c", "import json, os, sys, time; first = time.monotonic(); "
    "initial = open('/proc/self/environ', 'rb').read().split(b'\\\\0'); "
    "seed = [i.split(b'=', 1)[1].decode() for i in initial if i.startswith(b'PYTHONHASHSEED=')]; "
    "print(json.dumps({'first_line': first, 'seed': (seed or [None])[0], "
    "'randomized': sys.flags.hash_randomization}))"], capture_output=True, text=True)
me["grandchild"] = json.loads(grandchild.stdout) if grandchild.stdout else {"error": grandchild.stderr[-500:]}
me["grandchild"]["spawned"] = spawned
print(json.dumps(me))
"""


def launcher():
    """The `urandom-shim` command, as pip installed it beside the package: a shell script."""
    import sysconfig

    return os.path.join(sysconfig.get_path("purelib"), "bin", "urandom-shim")


def child_environment():
    """This /init's environment without the PYTHONHASHSEED the boot gave it: what a unit or a script starts with."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONHASHSEED", "URANDOM_POLICY")}


def start_child(step, command):
    """Start ``command``, and report how long it took to print its first line and what it reported."""
    import subprocess

    spawned = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, env=child_environment())
    ended = time.monotonic()
    fields = {"spawned": spawned, "duration": round(ended - spawned, 4), "returncode": done.returncode}
    try:
        fields["child"] = json.loads(done.stdout.strip().splitlines()[-1])
        fields["start"] = round(fields["child"]["first_line"] - spawned, 4)
    except (ValueError, IndexError, KeyError):
        fields["output"] = (done.stdout + done.stderr)[-2000:]
    fields["diagnostics"] = [line for line in done.stderr.splitlines() if line.startswith("urandom-shim:")]
    fields["probe_after"] = probe()
    report(step, **fields)


def start_scenario(policy, floor=False):
    """The start of a program under `urandom-shim run`, with no PYTHONHASHSEED of its own."""
    if floor:
        with open("/etc/urandom-shim.toml", "w") as f:
            f.write("allow_weak = false\n")
    run = [launcher(), "run", "--policy", policy, "--", sys.executable, "-c", CHILD]
    start_child("run", run)
    if policy == "legacy" and not floor:  # the window is still open: now the baseline, which closes it
        start_child(
            "python -c pass",
            [sys.executable, "-c", "import json, time; print(json.dumps({'first_line': time.monotonic()}))"],
        )


def main():
    try:
        report("start", probe=probe(), monotonic_at_start=round(START, 4))
        setup()
        scenario(os.environ.get("URANDOM_SHIM_KERNEL_SCENARIO", ""))
    except BaseException as exc:  # PID 1 must report, then power off
        import traceback

        report("error", message="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    finally:
        report(
            "end",
            entropy_avail=read("/proc/sys/kernel/random/entropy_avail"),
            crng_ready_at=crng_ready_at(),
            pycs_written=pycs_written_since_boot(),
            clock=round(time.time()),
        )
        power_off()


def power_off():
    try:
        with open("/proc/sysrq-trigger", "w") as f:
            f.write("o")
        time.sleep(30)  # the power-off is asynchronous; if it never comes, PID 1 exits and the kernel panics
    except OSError:
        pass
    busybox("poweroff", "-f")


if __name__ == "__main__":
    main()
