"""Real Debian boots with systemd and cloud-init, under qemu, with urandom-shim installed as the docs say: three
kernel generations.

Each test is one first boot of a Debian system (``boot_image``: Debian 11, 12, 13 or sid) with one machine-wide
policy in ``/etc/urandom-shim.toml``, on one of its kernels: 5.10 (Debian 11), 6.1 and 6.12 (Debian 12, the second
from bookworm-backports), 6.12 (Debian 13), 7.x (sid). The units are the docs' own (``docs_units``) and one ordinary
service under the machine's policy; each program in them is ``probe.py``, which writes one line of facts to the
journal. Every assertion is made here, on the journal the guest collected, never on the guest's word alone: each
call did what its policy does, in the window or out of it; and from 5.18 on, the ordinary service starts with the
CRNG ready.

One more boot per kernel runs the machine in report-only mode, as ``docs/howto/strict-rollout.md`` sets it up (its
``/etc/urandom-shim.toml``: ``pep522``, ``mode = "report"``, events to ``/run/urandom-shim/events.jsonl``, and its
tmpfiles.d snippet, word for word): nothing may fail, and what ``urandom-shim report`` says in the guest is checked
against what the journal shows the boot did.

The report-mode boots of Debian 11, 12 and 13 are a fleet too: each is booted once per run (:class:`ReportBoots`,
shared by the pytest workers), and the fleet test sends their journals through ``systemd-journal-upload`` to
``systemd-journal-remote`` on 127.0.0.1, then reads the collector's directory with ``urandom-shim report
--journal-dir``.

Which boots run: :data:`IN_EVERY_RUN` (each policy on 5.10, one boot each of Debian 13 and sid) and
:data:`REPORT_IN_EVERY_RUN` (report mode on 5.10, 6.1 and 6.12: Debian 11, 12 and 13) in every ``bash tests/run``;
all twenty-five with ``URANDOM_SHIM_BOOT_ALL=1``; none with ``URANDOM_SHIM_BOOT=0``. Every boot alone::

    URANDOM_SHIM_BOOT_ALL=1 URANDOM_SHIM_TEST_PYTHONS=/usr/bin/python3 bash tests/run -m boot

They run in one session of the matrix only, the one for Debian's ``/usr/bin/python3`` (the guest's interpreter is
Debian's own, whatever the host's is), one boot at a time. The first run builds each suite's image it boots (one
to four minutes each, cached under ``~/.cache/urandom-shim/boot`` with qemu from bookworm-backports, which 6.12
needs under TCG).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import boot_image
import docs_units
import journal_remote
import pytest
from conftest import Venv, clean_env

import debian
from debian import Lock, Unavailable, unavailable

pytestmark = pytest.mark.boot

#: The boots, by suite and kernel series: three kernel generations. 5.10 is before 5.18, where /dev/urandom doesn't
#: block, so an interpreter's hash-seed read passes and ordinary services can start inside the window; 6.1 and 6.12
#: (Debian 12 and 13) and sid's 7.x are 5.18 and later.
BOOTS = (("bullseye", "5.10"), ("bookworm", "6.1"), ("bookworm", "6.12"), ("trixie", "6.12"), ("sid", "7"))
POLICIES = ("native", "pep524", "pep522", "legacy")
#: In every run: each policy that changes what a call in the window does, on 5.10, where the window is long (each
#: unit's call shows what its policy does), and one boot each of Debian 13 and sid. native on 5.10 waits as pep524
#: does, so it runs with URANDOM_SHIM_BOOT_ALL=1, as Debian 12's boots do (its 6.12 is Debian 13's kernel line, and
#: its 6.1 is, like them, 5.18 or later): CI stays within its hour with Python 3.14 and 3.15 in the matrix.
IN_EVERY_RUN = {("bullseye", "5.10", policy) for policy in POLICIES if policy != "native"}
IN_EVERY_RUN |= {("trixie", "6.12", "pep522"), ("sid", "7", "legacy")}
#: The units whose programs are probes, and the one unit that may fail by design (pep522 in the window).
PROBES = {
    "early-setup": "early-setup.service",
    "app": "app.service",
    "setup-disks": "setup-disks.service",
    "cloud-final-probe": "cloud-final.service",  # cloud-init's runcmd, under the docs' drop-in for cloud-final
    "ordinary": "ordinary.service",  # no page's: an ordinary service under the machine's policy
}
CLOUD_INIT = ("cloud-init-local.service", "cloud-init.service", "cloud-config.service", "cloud-final.service")
#: cloud-init 24.3 and later (Debian 13, sid): every stage runs in one Python process, cloud-init-main.service's; the
#: stage units (cloud-init.service is now cloud-init-network.service) only signal it through a socket.
MAIN = "cloud-init-main.service"
CLOUD_INIT_MAIN = (MAIN, "cloud-init-local.service", "cloud-init-network.service", "cloud-config.service")
CLOUD_INIT_MAIN += ("cloud-final.service",)
#: "Returns at once": legacy's bytes in the window (measured: under 1 ms).
AT_ONCE = 0.1

#: The report-mode boots in every run: one machine each of Debian 11, 12 and 13, whose journals the fleet test
#: (test_a_fleet_report_over_journals_systemd_journal_remote_collected) sends to a collector. 5.10 is where calls
#: meet the window, so its report has programs to list; 6.1 and 6.12 are the kernels whose window closes early.
REPORT_IN_EVERY_RUN = {("bullseye", "5.10"), ("bookworm", "6.1"), ("trixie", "6.12")}
#: The programs of the probes, as boot_image installs them: an event's caller is a line of one of these.
PROBE_FILES = {
    "early-setup": "/usr/local/sbin/early-setup.py",
    "setup-disks": "/usr/local/sbin/setup-disks.py",
    "cloud-final-probe": "/usr/local/sbin/cloud-final-probe.py",
    "ordinary": "/usr/local/sbin/ordinary.py",
}
#: The policy each probe runs under, from its unit: None is the machine's (/etc/urandom-shim.toml).
POLICY_OF = {
    "early-setup": None,
    "app": "pep522",
    "setup-disks": "legacy",
    "cloud-final-probe": "pep524",
    "ordinary": None,
}
#: What each policy does with a probe's call in the window (the policy table of SPEC.md, section 2): the probes' calls
#: are os.urandom(32), uuid.uuid4() (os.urandom(16)) and, in app, secrets.token_hex(32), which waits under pep522.
ACTION = {"native": "wait", "pep524": "wait", "pep522": "raise", "legacy": "best-effort"}


def named(entries: list[dict[str, Any]]) -> list[str]:
    """The program names of a verdict's entries (each also says on how many machines and boots)."""
    return [entry["name"] for entry in entries]


def action(name: str, machine: str) -> str:
    """What ``name``'s call would do in the window, under its unit's policy on a machine whose policy is ``machine``:
    what a report-mode event records as ``would``."""
    policy = POLICY_OF[name] or machine
    return "wait" if name == "app" and policy == "pep522" else ACTION[policy]


#: The probes whose call raises under pep522: os.urandom() raises, secrets waits. The verdict's pep522 list.
RAISE_UNDER_PEP522 = {name for name in PROBES if action(name, "pep522") == "raise"}


def units_of(suite: str) -> dict[str, str]:
    """Each probe's unit on ``suite``: with cloud-init 24.3 and later, the runcmd program runs in cloud-init-main."""
    if boot_image.SUITES[suite].cloud_init_main:
        return {**PROBES, "cloud-final-probe": MAIN}
    return dict(PROBES)


def cloud_init_python(suite: str, stage: str) -> str:
    """The unit whose Python runs a cloud-init stage (and writes its lines) on ``suite``."""
    return MAIN if boot_image.SUITES[suite].cloud_init_main else stage


#: Units whose first process is a Python interpreter and which log nothing before it runs, so that their first line in
#: the journal comes after their Python started (cloud-init's lines reach the journal through the `tee` it starts,
#: Debian's 05_logging.cfg): the stalls the test works out for itself, whether or not the report lists them.
PYTHON_UNITS = ("cloud-init-local.service", "early-setup.service")
#: The root password cloud-init set (PAM's line: chpasswd's on Debian 12 and later, Debian 11's own wording).
PASSWORD = r"password changed for root|password for 'root' changed"
#: Two times from the same journal agree to this (seconds).
CLOSE = 0.01
MACHINE_SOURCE = "/etc/urandom-shim.toml (machine file)"


def selected(suite: str, series: str, policy: str) -> bool:
    return (suite, series, policy) in IN_EVERY_RUN or every_boot()


def every_boot() -> bool:
    return os.environ.get("URANDOM_SHIM_BOOT_ALL", "") not in ("", "0")


def skip_unless_booting(selected: bool) -> None:
    if os.environ.get("URANDOM_SHIM_BOOT", "") == "0":
        pytest.skip("URANDOM_SHIM_BOOT=0: the real Debian boots are turned off")
    if not in_this_session():
        pytest.skip("the real boots run once, in the session of Debian's /usr/bin/python3")
    if not selected:
        pytest.skip("not in every run: URANDOM_SHIM_BOOT_ALL=1 bash tests/run -m boot runs every boot")


def in_this_session() -> bool:
    """Only the matrix session of Debian's python3 boots (or a run outside the matrix)."""
    if not os.environ.get("URANDOM_SHIM_TEST_INSTALLED"):
        return True
    return os.path.realpath(os.environ.get("URANDOM_SHIM_TEST_PYTHONS", "")) == os.path.realpath("/usr/bin/python3")


class Host:
    def __init__(self) -> None:
        self.qemu = boot_image.Qemu()
        self.accel = debian.accelerator()


@pytest.fixture(scope="session")
def host() -> Host:
    try:
        return Host()
    except Unavailable as exc:
        unavailable(f"the real-boot tests can't run here: {exc}")


class Systems:
    """Each suite's system under test as an ext4 image with this run's wheel in it, assembled on first use (its base
    tree is built then too, if the cache lacks it)."""

    def __init__(self, wheel: Path, factory: pytest.TempPathFactory) -> None:
        self.wheel = wheel
        self.factory = factory
        self.images: dict[str, Path] = {}

    def base(self, suite: str) -> Path:
        try:
            return boot_image.base_tree(boot_image.SUITES[suite])
        except Unavailable as exc:
            unavailable(f"the {suite} base system can't be built here: {exc}")

    def image(self, suite: str) -> Path:
        if suite not in self.images:
            base = self.base(suite)
            work = self.factory.mktemp(f"system-{suite}")
            try:
                self.images[suite] = boot_image.system_under_test(
                    boot_image.SUITES[suite], base, self.wheel, docs_units.units(), work
                )
            except Unavailable as exc:
                unavailable(f"the {suite} system under test can't be assembled here: {exc}")
        return self.images[suite]


@pytest.fixture(scope="session")
def systems(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Systems:
    return Systems(wheel, tmp_path_factory)


class ReportBoots:
    """The first boots in report-only mode, one per (suite, series), each booted once in a test run and kept for
    every test that reads it: the per-suite report test and the fleet test. pytest-xdist gives each worker its own
    session fixtures, so a boot is kept in the run's own temporary directory, which the workers share, under a
    lock: the first worker to need a boot runs it, the others read it back."""

    def __init__(self, host: Host, systems: Systems, factory: pytest.TempPathFactory) -> None:
        self.host = host
        self.systems = systems
        base = factory.getbasetemp()  # a worker's is popen-gwN, in the run's directory
        self.root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "report-boots"
        self.root.mkdir(exist_ok=True)

    def boot(self, suite: str, series: str) -> tuple[boot_image.Kernel, boot_image.Boot]:
        kernel = boot_image.Kernel(self.systems.base(suite), series)
        where = self.root / f"{suite}-{series}"
        failed = self.root / f"{suite}-{series}.failed"
        with Lock(self.root / f".{suite}-{series}.lock"):
            if (where / "boot.json").exists():
                return kernel, boot_image.Boot.load(kernel, where)
            if failed.exists():  # the guest never powered off: once is enough
                raise AssertionError(failed.read_text())
            system = self.systems.image(suite)
            try:
                with Lock(boot_image.cache_dir() / ".boot-lock"):  # one TCG guest at a time on a 2-core machine
                    boot = boot_image.boot_in_report_mode(
                        self.host.qemu, self.host.accel, kernel, system, docs_units.report_mode(), where
                    )
            except AssertionError as exc:
                failed.write_text(str(exc))
                raise
            boot.save(where)
        return kernel, boot


@pytest.fixture(scope="session")
def report_boots(host: Host, systems: Systems, tmp_path_factory: pytest.TempPathFactory) -> ReportBoots:
    return ReportBoots(host, systems, tmp_path_factory)


def version(release: str) -> tuple[int, int]:
    found = re.match(r"(\d+)\.(\d+)", release)
    assert found, release
    return int(found.group(1)), int(found.group(2))


def urandom_blocks(kernel: boot_image.Kernel) -> bool:
    """5.18 and later: /dev/urandom blocks until the CRNG is ready, so an interpreter's hash-seed read waits (and runs
    the jitter generator) and no interpreter without PYTHONHASHSEED starts inside the window."""
    return version(kernel.release) >= (5, 18)


def description(suite: str, unit: str) -> str | None:
    """The unit's ``Description=``: from the docs' units, this test's, or the suite's packages."""
    texts = [text for path, text in docs_units.units().items() if path.endswith(f"/{unit}")]
    texts += [boot_image.ORDINARY_UNIT] if unit == "ordinary.service" else []
    tree = boot_image.base_tree(boot_image.SUITES[suite])
    texts += [(tree / d / unit).read_text() for d in UNIT_DIRS if (tree / d / unit).is_file()]
    for text in texts:
        found = re.search(r"^Description=(.+)$", text, re.MULTILINE)
        if found:
            return found.group(1).strip()
    return None


UNIT_DIRS = ("etc/systemd/system", "lib/systemd/system", "usr/lib/systemd/system")


def message(entry: dict[str, Any]) -> str:
    text = entry.get("MESSAGE")
    if isinstance(text, list):  # journald gives non-UTF-8 messages as byte arrays
        return bytes(text).decode(errors="replace")
    return text or ""


def at(entry: dict[str, Any]) -> float:
    """When an entry happened, in seconds since boot (the kernel's own time for its messages)."""
    stamp = entry.get("_SOURCE_MONOTONIC_TIMESTAMP") or entry["__MONOTONIC_TIMESTAMP"]
    return int(stamp) / 1e6


class Journal:
    def __init__(self, boot: boot_image.Boot, suite: str) -> None:
        self.entries = boot.journal
        self.boot = boot
        self.suite = suite
        self.units = units_of(suite)

    def crng_ready_at(self) -> float | None:
        for entry in self.entries:
            if "crng init done" in message(entry):
                return at(entry)
        found = re.search(r"\[\s*(\d+\.\d+)\] random: crng init done", self.boot.console)
        return float(found.group(1)) if found else None

    def unit_started(self, unit: str) -> float | None:
        """When systemd started the unit's job ("Starting …"). Before journald runs, systemd logs to the kernel's
        buffer, and those lines reach the journal without a ``UNIT`` field: the text names the unit (systemd 252
        and later) or only its description (``Starting Initial cloud-init job (pre-networking)...``, systemd 247)."""
        described = f"Starting {description(self.suite, unit)}..."
        for entry in self.entries:
            text = message(entry)
            if text.startswith(f"Starting {unit} ") or (entry.get("UNIT") == unit and text.startswith("Starting ")):
                return at(entry)
            if "UNIT" not in entry and text == described:
                return at(entry)
        return None

    def lines(self, unit: str) -> list[tuple[float, str]]:
        return [(at(e), message(e)) for e in self.entries if e.get("_SYSTEMD_UNIT") == unit]

    def shim_lines(self) -> list[tuple[str | None, str]]:
        """(unit, text) of every line of the shim's in the journal (``urandom-shim: ...`` on some unit's stderr)."""
        return [(e.get("_SYSTEMD_UNIT"), message(e)) for e in self.entries if message(e).startswith("urandom-shim: ")]

    def probes(self) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for entry in self.entries:
            text = message(entry)
            if text.startswith("urandom-shim-boot-probe "):
                facts = json.loads(text.split(" ", 1)[1])
                facts["unit"] = entry.get("_SYSTEMD_UNIT")
                found[facts["probe"]] = facts
        return found


def first_line_of(journal: Journal, unit: str, pattern: str) -> float | None:
    for when, text in journal.lines(unit):
        if re.search(pattern, text):
            return when
    return None


def password_changed_at(journal: Journal, unit: str) -> float | None:
    """When ``chpasswd`` (run by cloud-init in ``unit``) changed root's password. chpasswd logs through syslog and
    exits at once, and journald finds a datagram's unit from ``/proc`` after it arrives: a sender that has already
    exited leaves the entry without ``_SYSTEMD_UNIT`` (systemd issue 2913, open since 2016; a Debian 13 boot on CI
    lost it). So the line is chpasswd's own (``SYSLOG_IDENTIFIER``), in ``unit`` or in no unit at all."""
    for entry in journal.entries:
        if entry.get("SYSLOG_IDENTIFIER") != "chpasswd" or entry.get("_SYSTEMD_UNIT") not in (unit, None):
            continue
        if re.search(PASSWORD, message(entry)):
            return at(entry)
    return None


def call_words(facts: dict[str, Any]) -> str:
    """A probe's call, in words: where it met the CRNG, and what came of it."""
    if facts["crng_before_call"] != "unready":
        at_start = "unready at its first line, ready by its call" if facts["crng_at_start"] == "unready" else "ready"
        return f"{at_start}: {facts['outcome']}"
    return f"in the window: {facts['outcome']} in {facts['seconds'] * 1000:.1f} ms, then {facts['crng_after']}"


def describe(journal: Journal, probes: dict[str, dict[str, Any]], ready: float | None) -> dict[str, Any]:
    early = probes.get("early-setup", {})
    ordinary = probes.get("ordinary", {})

    def python(stage: str) -> str:
        return cloud_init_python(journal.suite, stage)

    if early.get("crng_at_start") == "unready":
        window = f"in the window: {early.get('outcome')} in {early.get('seconds', 0) * 1000:.1f} ms"
    elif early:
        window = f"never reached the window: first line at {early['first_line']:.2f} s, after crng init done"
    else:
        window = "no probe line"
    return {
        "early unit": window,
        "early started": journal.unit_started("early-setup.service"),
        "early first line": early.get("first_line"),
        "first python line": min((facts["first_line"] for facts in probes.values()), default=None),
        "cloud-init-local started": journal.unit_started(python("cloud-init-local.service")),
        "cloud-init first line": first_line_of(journal, python("cloud-init-local.service"), r"running 'init-local'"),
        "random password": password_changed_at(journal, python("cloud-config.service")),
        "app first line": probes.get("app", {}).get("first_line"),
        "ordinary first line": ordinary.get("first_line"),
        "ordinary": call_words(ordinary) if ordinary else "no probe line",
        "probes": {name: call_words(facts) for name, facts in sorted(probes.items())},
        "crng": ready,
    }


def summarise(
    record: Any, suite: str, kernel: boot_image.Kernel, policy: str, boot: boot_image.Boot, row: dict[str, Any]
) -> None:
    analyze = (boot.files.get("analyze.txt") or "").splitlines()
    row.update(
        suite=boot_image.SUITES[suite].release,
        kernel=kernel.release,
        policy=policy,
        qemu=boot.qemu,
        wall=boot.wall,
        failed=sorted(line.split()[0] for line in (boot.files.get("failed.txt") or "").splitlines() if line.strip()),
        analyze=analyze[0] if analyze else "",
    )
    record("boot_result", row)


def assert_the_docs_units_ran(
    journal: Journal, probes: dict[str, dict[str, Any]], policy: str, password: bool = True
) -> None:
    """Every probe ran under the unit the docs put it in, with the policy and source the docs promise; app.service's
    documented wait was bounded; cloud-init ran every stage and (unless ``password`` is False) made its random root
    password."""
    assert set(probes) == set(PROBES), (sorted(probes), journal.boot.console[-4000:])
    for name, unit in journal.units.items():
        assert probes[name]["unit"] == unit, probes[name]
    for name in ("early-setup", "ordinary"):
        assert (probes[name]["policy"], probes[name]["policy_source"]) == (policy, MACHINE_SOURCE), probes[name]
    assert (probes["app"]["policy"], probes["app"]["policy_source"]) == (
        "pep522",
        "environment variable URANDOM_POLICY",
    )
    assert probes["setup-disks"]["policy"] == "legacy", probes["setup-disks"]
    cloud_final = probes["cloud-final-probe"]
    assert (cloud_final["policy"], cloud_final["policy_source"]) == ("pep524", "environment variable URANDOM_POLICY")

    # The documented wait is bounded: app.service's `ExecStartPre=urandom-shim wait --timeout 30` let it start,
    # and never gave up. (Not timed from the unit's start: under emulation on a loaded machine, the two interpreter
    # starts before the app's first line took up to 35 s, with the CRNG long ready.)
    assert journal.unit_started("app.service") is not None, "app.service never started"
    assert not [text for _, text in journal.lines("app.service") if "still not ready" in text]

    # cloud-init ran every stage, and made its random root password.
    for unit in CLOUD_INIT_MAIN if boot_image.SUITES[journal.suite].cloud_init_main else CLOUD_INIT:
        assert journal.unit_started(unit) is not None, f"{unit} never started"
    if password:
        config = cloud_init_python(journal.suite, "cloud-config.service")
        password_lines = [
            {key: entry.get(key) for key in ("_SYSTEMD_UNIT", "SYSLOG_IDENTIFIER", "_COMM", "MESSAGE")}
            for entry in journal.entries
            if entry.get("SYSLOG_IDENTIFIER") == "chpasswd" or "password" in message(entry).lower()
        ]
        assert password_changed_at(journal, config) is not None, (config, password_lines)


def assert_the_policy_did(journal: Journal, name: str, facts: dict[str, Any], machine: str) -> None:
    """What the probe's call did is what its policy does: in the window (the CRNG unready just before the call),
    pep522 raises, pep524 and native wait and then get strong bytes, legacy returns best-effort bytes at once and
    says so on the unit's stderr; once the CRNG is ready, every call returns."""
    if facts["crng_before_call"] != "unready":
        assert facts["outcome"] == "returned", facts
        return
    done = action(name, machine)
    if done == "raise":
        assert facts["outcome"] == "raised BlockingIOError", facts
    elif done == "wait":
        assert facts["outcome"] == "returned" and facts["crng_after"] == "ready", facts
    else:
        # It didn't wait: the CRNG was still unready when it returned (or, if it became ready meanwhile, the call
        # was over at once). Under emulation on a loaded machine the first such call took up to 0.23 s on 5.10,
        # writing its line; a wait took 2.1 to 3.6 s there.
        assert facts["outcome"] == "returned", facts
        assert facts["crng_after"] == "unready" or facts["seconds"] < AT_ONCE, facts
        lines = journal.lines(journal.units[name])
        said = [text for _, text in lines if "used best-effort bytes without waiting" in text]
        assert said and all("under policy 'legacy'" in text for text in said), (name, lines)


def failed_units(boot: boot_image.Boot) -> set[str]:
    return {unit for unit in (boot.files.get("failed.txt") or "").split() if unit.endswith(".service")}


def boot_ids() -> list[str]:
    return [f"{suite}-{series}" for suite, series in BOOTS]


@pytest.mark.stage("boot")
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(("suite", "series"), BOOTS, ids=boot_ids())
def test_a_first_boot_with_the_shim_system_wide(
    host: Host, systems: Systems, tmp_path: Path, record_property: Any, suite: str, series: str, policy: str
) -> None:
    skip_unless_booting(selected(suite, series, policy))
    system = systems.image(suite)
    kernel = boot_image.Kernel(systems.base(suite), series)
    with Lock(boot_image.cache_dir() / ".boot-lock"):  # one TCG guest at a time on a 2-core machine
        boot = boot_image.boot_with_policy(host.qemu, host.accel, kernel, system, policy, tmp_path)
    assert_the_boot_under_a_policy(record_property, suite, kernel, policy, boot)


def assert_the_boot_under_a_policy(
    record: Any, suite: str, kernel: boot_image.Kernel, policy: str, boot: boot_image.Boot
) -> None:
    """Everything a boot under ``policy`` must show (apart from the test, so a saved journal can be checked again)."""
    journal = Journal(boot, suite)
    assert boot.journal, f"the collector wrote no journal; console:\n{boot.console[-6000:]}"
    ready = journal.crng_ready_at()
    probes = journal.probes()
    summarise(record, suite, kernel, policy, boot, describe(journal, probes, ready))
    state = (boot.files.get("state.txt") or "").strip()
    assert state in ("running", "degraded"), state

    # Every probe ran under the unit the docs put it in, with the policy and source the docs promise; the docs'
    # other promises held (app's wait, cloud-init's password).
    assert_the_docs_units_ran(journal, probes, policy)
    early = probes["early-setup"]
    if policy != "legacy":  # never a weak hash seed unless legacy
        assert early["hashseed"] is None, early

    # Each probe's call did what its policy does, in the window or out of it.
    for name, facts in probes.items():
        assert_the_policy_did(journal, name, facts, policy)
        if facts["crng_at_start"] == "unready" and ready is not None:
            assert facts["first_line"] < ready, (facts, ready)

    if urandom_blocks(kernel):
        # 5.18 and later: the boot's CRNG initialised by itself, during the boot (systemd-random-seed's wait runs
        # the jitter generator); every interpreter's hash-seed read waits for it, so the ordinary service, like
        # every unit after sysinit.target, starts with the CRNG ready.
        assert ready is not None and ready > 1.0, "no 'crng init done' in this boot"
        ordinary = probes["ordinary"]
        assert ordinary["crng_at_start"] == "ready" and ordinary["first_line"] >= ready - 0.05, (ordinary, ready)
        if early["crng_at_start"] != "unready":
            assert early["first_line"] >= ready - 0.05, (early, ready)
    elif boot_image.SUITES[suite].no_random_seed:
        # Before 5.18, with nothing waiting early: an interpreter's start never waits, so the early unit's first line
        # ran inside the window, and what happened next is the policy's.
        assert early["crng_at_start"] == "unready", early
        if policy in ("pep522", "legacy"):
            # Nothing waits under these (the probes' calls raise or take best-effort bytes): the window stays open
            # past sysinit.target, and the ordinary service starts inside it, interpreter and call alike.
            ordinary = probes["ordinary"]
            assert (ordinary["crng_at_start"], ordinary["crng_before_call"]) == ("unready", "unready"), ordinary
        else:
            # The early unit's call waited; the wait ran the jitter generator and closed the window for every
            # later unit.
            assert early["crng_after"] == "ready" and ready is not None and ready > early["first_line"], early
            assert all(facts["crng_at_start"] == "ready" for name, facts in probes.items() if name != "early-setup")

    # No unit failed, except those that raised under pep522 in the window, which are designed to: the probes whose
    # call raised, and any unit whose journal has the shim's line saying a call of its raised (cloud-init's, on 5.10).
    failed = failed_units(boot)
    designed = {journal.units[name] for name, facts in probes.items() if facts["outcome"] != "returned"}
    designed |= {unit for unit, text in journal.shim_lines() if "raised BlockingIOError under policy 'pep522'" in text}
    assert failed <= designed, (failed, boot.files.get("blame.txt"))


# -- report-only mode ----------------------------------------------------------------------------------------------


def stall_in_journal(journal: Journal, unit: str, ready: float) -> dict[str, Any]:
    """What the journal says of ``unit``, worked out here: when systemd started it, its first line after that, and
    whether it stalled (started before ``crng init done``, first line after it)."""
    started = journal.unit_started(unit)
    first = None
    if started is not None:
        first = min((when for when, _text in journal.lines(unit) if when >= started), default=None)
    stalled = started is not None and first is not None and started < ready < first
    return {"unit": unit, "started": started, "first_line": first, "stalled": stalled}


def report_words(
    units: dict[str, str], in_window: set[str], probes: dict[str, dict[str, Any]], report: dict[str, Any]
) -> str:
    """The summary row's words: which case this boot was, and what the report said."""
    if in_window:
        calls = ", ".join(f"{units[name]} at {probes[name]['first_line']:.2f} s" for name in sorted(in_window))
        case = f"report mode: probes called in the window ({calls}); the report lists them"
    else:
        early = probes["early-setup"]
        case = (
            f"report mode: no probe called in the window (early-setup's first line {early['first_line']:.2f} s, "
            "after crng init done); the report lists no program, as it should"
        )
    late = sorted(
        name for name, facts in probes.items() if facts["crng_at_start"] == "unready" and name not in in_window
    )
    if late:
        case += f" ({', '.join(late)}: unready at the first line, ready by the call)"
    pep522 = report["verdict"]["pep522"]
    verdict = (
        f"pep522 would raise for {', '.join(named(pep522['raise']))}"
        if named(pep522["raise"])
        else "pep522: none would raise"
    )
    stalls = ", ".join(f"{s['unit']} lost {s['lost']:.2f} s" for s in report["stalls"]) or "none"
    return f"{case}; {verdict}; stalls: {stalls}"


@pytest.mark.stage("boot in report mode")
@pytest.mark.parametrize(("suite", "series"), BOOTS, ids=boot_ids())
def test_a_first_boot_in_report_mode_and_its_report(
    report_boots: ReportBoots, record_property: Any, suite: str, series: str
) -> None:
    """The rollout how-to's machine in report-only mode: every call behaves as native, so nothing fails; and the
    report the guest printed matches what the journal shows: which units called in the window, when the CRNG was
    ready, which units' interpreters stalled in their own start, and what --fail-for says."""
    skip_unless_booting((suite, series) in REPORT_IN_EVERY_RUN or every_boot())
    files = docs_units.report_mode()
    machine = files["/etc/urandom-shim.toml"]
    for line in ('policy = "pep522"', 'mode = "report"', f'events = "{boot_image.EVENTS}"'):
        assert re.search(rf"^{re.escape(line)}(\s|$)", machine, re.MULTILINE), (line, machine)
    kernel, boot = report_boots.boot(suite, series)
    assert_the_boot_in_report_mode(record_property, suite, kernel, boot)


def assert_the_boot_in_report_mode(record: Any, suite: str, kernel: boot_image.Kernel, boot: boot_image.Boot) -> None:
    """Everything a boot in report mode must show (apart from the test, so a saved journal can be checked again)."""
    journal = Journal(boot, suite)
    assert boot.journal, f"the collector wrote no journal; console:\n{boot.console[-6000:]}"
    ready = journal.crng_ready_at()
    probes = journal.probes()
    assert ready is not None and ready > 1.0, "no 'crng init done' in this boot"
    assert boot.files.get("report-json.rc") == "0\n", (
        boot.files.get("report-json.rc"),
        boot.files.get("report-json.err"),
    )
    report = json.loads(boot.files.get("report.json") or "null")
    # Which probes called for randomness while the CRNG was unready: the probe looks (GRND_NONBLOCK) at its first
    # line and again just before its call; the shim looks an instant later, at the call.
    in_window = {name for name, facts in probes.items() if facts.get("crng_before_call") == "unready"}
    row = describe(journal, probes, ready)
    row["early unit"] = report_words(journal.units, in_window, probes, report)
    summarise(record, suite, kernel, "pep522, report mode", boot, row)

    # Report mode broke nothing: every unit started, none failed (under enforced pep522 one may; here none may),
    # and every probe's call returned, as native's does; no line of the shim says it enforced anything.
    state = (boot.files.get("state.txt") or "").strip()
    assert state == "running" and not failed_units(boot), (state, boot.files.get("failed.txt"))
    assert_the_docs_units_ran(journal, probes, "pep522")
    for name, facts in probes.items():
        assert facts["outcome"] == "returned", facts
        mode = (facts.get("mode"), facts.get("mode_source"), facts.get("events"))
        assert mode == ("report", MACHINE_SOURCE, boot_image.EVENTS), facts
        if name in in_window:
            assert facts["crng_at_start"] == "unready" and facts["first_line"] < ready, (facts, ready)
        else:  # its first line came after crng init done, or the CRNG was ready by the time it called
            assert facts["crng_at_start"] == "unready" or facts["first_line"] >= ready - 0.05, (facts, ready)
    shim_lines = journal.shim_lines()
    enforced = [text for _unit, text in shim_lines if "under policy '" in text]
    assert not enforced, enforced

    # What the report read: the events file the docs configure (the tmpfiles.d snippet made it, as the docs say),
    # this boot's journal, and the kernel's `crng init done` from it. A boot without a call in the window (6.1 and
    # 6.12, where the window closes early) leaves the events file empty, and the report says so.
    sources = report["sources"]
    empty = not (boot.files.get("events.jsonl") or "").strip()
    assert sources["events"]["path"] == boot_image.EVENTS, sources
    problem = sources["events"]["problem"]
    assert problem.startswith("empty") if empty else problem is None, sources
    from urandom_shim.report.journal import selected  # the report reads the lines that matter, not the whole boot

    selected_entries = sum(1 for entry in boot.journal if selected(entry))
    assert sources["journal"]["problem"] is None and sources["journal"]["entries"] >= selected_entries, sources
    assert sources["kernel"]["source"] == "the journal", sources
    stat = (boot.files.get("events-stat.txt") or "").splitlines()
    assert len(stat) == 2 and stat[0] == f"{boot_image.EVENTS_DIR} directory 755 root:root", stat
    assert re.fullmatch(rf"{re.escape(boot_image.EVENTS)} regular (empty )?file 622 root:root", stat[1]), stat
    assert abs(report["crng_init_done"] - ready) <= CLOSE, (report["crng_init_done"], ready)

    # The report's programs include every unit whose probe called in the window, and are exactly the units with the
    # shim's report-only line in the journal; each probe's call records what its policy would have done.
    programs = {program["name"]: program for program in report["programs"]}
    units = journal.units
    # Other units can be in it too, each with its report-only line in the journal: on 5.10 with nothing waiting
    # early, cloud-init-local's `import random` seeded `random` in the window.
    expected = {units[name] for name in in_window}
    in_journal = {unit for unit, text in shim_lines if text.startswith("urandom-shim: report-only: ")}
    assert expected <= in_journal, (sorted(expected), shim_lines)
    assert set(programs) == in_journal, (sorted(programs), sorted(in_journal), shim_lines)
    for name in set(PROBES) - in_window:
        assert units[name] not in programs, f"{name} called after crng init done, yet the report lists it"
    for name in in_window:
        program = programs[units[name]]
        file = boot_image.app_program(boot_image.SUITES[suite]) if name == "app" else PROBE_FILES[name]
        mine = [call for call in program["calls"] if str(call["caller"]).startswith(file + ":")]
        assert mine and all(call["mode"] == "report" and call["action"] == "untouched" for call in mine), program
        assert {call["would"] for call in mine} == {action(name, "pep522")}, (name, mine)
        assert (units[name] in named(report["verdict"]["pep522"]["raise"])) == (name in RAISE_UNDER_PEP522), report
    events = [json.loads(line) for line in (boot.files.get("events.jsonl") or "").splitlines() if line.strip()]
    assert {event["unit"] for event in events} <= in_journal, events  # the file can miss an event, never add one
    if not in_window:
        # The empty case, said in words: nothing was asked for in the window, and the verdict says so.
        for policy in POLICIES:
            text = report["verdict"][policy]["text"]
            assert text == f"under {policy}, no program would raise, wait or use weak bytes", text
        assert "No program asked for randomness before the kernel CRNG was ready" in (
            boot.files.get("report.txt") or ""
        )
        assert not events and not shim_lines, (events, shim_lines)

    # The stalls: the units whose interpreter started before `crng init done` and wrote its first line after it,
    # worked out here from the journal: the Python units of this machine, and whatever else the report lists.
    # Before 5.18 an interpreter's start never waits for the CRNG, so there is no stall to list (a unit whose first
    # line came after `crng init done` there was waiting in a call, as early-setup's under report mode's native).
    listed = {stall["unit"]: stall for stall in report["stalls"]}
    python_units = {cloud_init_python(suite, unit) for unit in PYTHON_UNITS} if urandom_blocks(kernel) else set()
    assert urandom_blocks(kernel) or not listed, listed
    for unit in sorted(python_units | set(listed)):
        seen = stall_in_journal(journal, unit, ready)
        assert (unit in listed) == seen["stalled"], (seen, listed.get(unit), ready)
        if seen["stalled"]:
            stall = listed[unit]
            assert abs(stall["started"] - seen["started"]) <= CLOSE, (stall, seen)
            assert abs(stall["first_line"] - seen["first_line"]) <= CLOSE, (stall, seen)
            assert abs(stall["lost"] - (ready - seen["started"])) <= CLOSE, (stall, seen, ready)
            assert abs(stall["crng_init_done"] - ready) <= CLOSE, (stall, ready)
            said = f"{unit}: started {stall['started']:.2f} s after boot, {stall['lost']:.2f} s before crng init done"
            assert said in (boot.files.get("report.txt") or ""), said

    # --fail-for pep522 exits 1 exactly when some program would raise (or get weak bytes) under pep522; with an empty
    # events file and no --allow-empty, 3: nothing read is never a clean verdict (strict-rollout.md, step 4).
    fails = bool(named(report["verdict"]["pep522"]["raise"]) or named(report["verdict"]["pep522"]["weak"]))
    assert fails == bool(in_window & RAISE_UNDER_PEP522), report["verdict"]["pep522"]
    status = "1\n" if fails else "3\n" if empty else "0\n"
    assert boot.files.get("fail-for.rc") == status, (boot.files.get("fail-for.rc"), fails, empty)


# -- a fleet: the report-mode boots' journals, through systemd-journal-upload to systemd-journal-remote -----------

#: The fleet's machines: one report-mode first boot each of Debian 11, 12 and 13 (:data:`REPORT_IN_EVERY_RUN`).
FLEET = (("bullseye", "5.10"), ("bookworm", "6.1"), ("trixie", "6.12"))


def listening(port: int, remote: subprocess.Popen[bytes], seconds: float = 20) -> bool:
    """Whether ``remote`` listens on 127.0.0.1:``port`` (False once it has exited: the port was taken)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and remote.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return remote.poll() is None
        except OSError:
            time.sleep(0.05)
    return False


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def collect(machines: list[Path], collector: Path, tools: dict[str, Path]) -> str:
    """Send each machine's journal file with ``systemd-journal-upload`` to a ``systemd-journal-remote`` that listens
    on 127.0.0.1 only and writes what it receives into ``collector``, split by host, as a fleet's collector does;
    each upload runs to its end (``--follow=no``), then the collector stops. What the collector said."""
    collector.mkdir()
    log = collector.parent / "journal-remote.log"
    for _attempt in range(3):  # another process can take the free port before the collector listens on it
        port = free_port()
        command = [str(tools["systemd-journal-remote"]), f"--listen-http=127.0.0.1:{port}", f"--output={collector}/"]
        with open(log, "wb") as said:
            remote = subprocess.Popen(
                [*command, "--split-mode=host"], stdin=subprocess.DEVNULL, stdout=said, stderr=said
            )
        try:
            if not listening(port, remote):
                continue
            for path in machines:
                upload = [str(tools["systemd-journal-upload"]), f"--url=http://127.0.0.1:{port}", f"--file={path}"]
                done = subprocess.run(
                    [*upload, "--follow=no"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120
                )
                assert done.returncode == 0, (path, done.stdout, done.stderr, log.read_text())
            remote.terminate()
            assert remote.wait(timeout=60) == 0, log.read_text()
            return log.read_text()
        finally:
            if remote.poll() is None:
                remote.kill()
                remote.wait()
    raise AssertionError(f"systemd-journal-remote never listened on 127.0.0.1: {log.read_text()}")


def journalctl_json(*args: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        ["journalctl", *args, "-o", "json", "--no-pager"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.stage("the fleet test")
def test_a_fleet_report_over_journals_systemd_journal_remote_collected(
    report_boots: ReportBoots, shim: Venv, tmp_path: Path, record_property: Any
) -> None:
    """Issue 38's fleet, with the real parts: the journals of three real first boots in report-only mode (Debian 11,
    12 and 13, one machine each), each a journal file on its machine, sent by systemd-journal-upload to
    systemd-journal-remote on 127.0.0.1, which writes them as a fleet's collector does; then ``urandom-shim report
    --journal-dir`` over what it wrote names each machine, and its pep522 gate fails for the units that raised."""
    skip_unless_booting(all(boot in REPORT_IN_EVERY_RUN for boot in FLEET) or every_boot())
    try:
        tools = debian.journal_remote()
    except Unavailable as exc:
        unavailable(f"the fleet test needs Debian's systemd-journal-remote: {exc}")
    boots = {suite: report_boots.boot(suite, series) for suite, series in FLEET}

    # Each machine's journal as its own journald wrote it: its `journalctl -b -o json`, as a journal file.
    machines = tmp_path / "machines"
    machines.mkdir()
    ids = {}
    for suite, (_kernel, boot) in boots.items():
        assert boot.journal, f"the {suite} boot's collector wrote no journal"
        ids[suite] = {entry.get("_MACHINE_ID") for entry in boot.journal}
        assert len(ids[suite]) == 1 and None not in ids[suite], ids[suite]
        journal_remote.remote_write(journal_remote.export_of(boot.journal), machines / f"{suite}.journal")
    machine_of = {suite: next(iter(found)) for suite, found in ids.items()}
    assert len(set(machine_of.values())) == len(FLEET), machine_of  # three first boots, three machine ids

    # The collector received every entry of every machine, under each machine's own ids.
    collector = tmp_path / "collector"
    said = collect([machines / f"{suite}.journal" for suite in boots], collector, tools)
    files = sorted(path.name for path in collector.iterdir())
    held = journalctl_json("--directory", str(collector))
    per_machine = {machine: 0 for machine in machine_of.values()}
    for entry in held:
        per_machine[entry["_MACHINE_ID"]] += 1
    expected = {machine_of[suite]: len(boot.journal) for suite, (_kernel, boot) in boots.items()}
    record_property("fleet_collector", {"files": files, "entries": per_machine, "said": said.strip()})
    assert files and all(name.endswith(".journal") for name in files), files
    assert per_machine == expected, (per_machine, expected, said)

    # The fleet report over the collector's directory, from the wheel's venv, as an image team runs it.
    env = clean_env()
    report = subprocess.run(
        [str(shim.path / "bin" / "urandom-shim"), "report", "--journal-dir", str(collector), "--json"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert report.returncode == 0, (report.returncode, report.stderr)
    fleet = json.loads(report.stdout)
    listed = {machine["machine_id"]: machine for machine in fleet["machines"]}
    assert set(listed) == set(machine_of.values()), (sorted(listed), machine_of)
    for suite, (kernel, boot) in boots.items():
        machine = listed[machine_of[suite]]
        assert machine["boots"] == 1, machine
        assert kernel.release in machine["kernels"], (machine, kernel.release)
        assert machine["hostname"] in {entry.get("_HOSTNAME") for entry in boot.journal}, machine

    # Every unit that would raise under pep522 on a machine (what the machine's own report in the guest said) is in
    # the fleet's verdict, counted on that many machines: on Debian 11, early-setup.service at least.
    own = {suite: json.loads(boot.files.get("report.json") or "null") for suite, (_kernel, boot) in boots.items()}
    raised: dict[str, int] = {}
    for report_of_machine in own.values():
        for name in named(report_of_machine["verdict"]["pep522"]["raise"]):
            raised[name] = raised.get(name, 0) + 1
    assert "early-setup.service" in named(own["bullseye"]["verdict"]["pep522"]["raise"]), own["bullseye"]["verdict"]
    verdict = {entry["name"]: entry for entry in fleet["verdict"]["pep522"]["raise"]}
    for name, count in raised.items():
        assert name in verdict and verdict[name]["machines"] == count, (name, count, verdict)
    assert verdict["early-setup.service"]["machines"] >= 1, verdict

    # The gate over the fleet: some machine would break under pep522.
    gate = subprocess.run(
        [str(shim.path / "bin" / "urandom-shim"), "report", "--journal-dir", str(collector), "--fail-for", "pep522"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert gate.returncode == 1, (gate.returncode, gate.stdout, gate.stderr)
    assert "early-setup.service" in gate.stdout, gate.stdout
