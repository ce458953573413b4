"""A real Debian 12 boot with systemd and cloud-init, under qemu, with urandom-shim installed as the docs say.

Each test is one first boot of the same system (``boot_image``) with one machine-wide policy in
``/etc/urandom-shim.toml``, on one of Debian's kernels (6.1 from bookworm, 6.12 from bookworm-backports). The units
are the docs' own (``docs_units``); each program in them is ``probe.py``, which writes one line of facts to the
journal. Every assertion is made here, on the journal the guest collected, never on the guest's word alone.

Which boots run: :data:`IN_EVERY_RUN` (two per kernel, about a minute each under TCG) in every ``bash tests/run``;
all eight with ``URANDOM_SHIM_BOOT_ALL=1``; none with ``URANDOM_SHIM_BOOT=0``. Every boot alone::

    URANDOM_SHIM_BOOT_ALL=1 URANDOM_SHIM_TEST_PYTHONS=/usr/bin/python3 bash tests/run -m boot

They run in one session of the matrix only, the one for Debian's ``/usr/bin/python3`` (the guest's interpreter is
Debian's own, whatever the host's is), one boot at a time. The first run builds the image (about a minute, cached
under ``~/.cache/urandom-shim/boot`` with qemu from bookworm-backports, which 6.12 needs under TCG).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import boot_image
import docs_units
import pytest

import debian
from debian import Lock, Unavailable, unavailable

pytestmark = pytest.mark.boot

KERNELS = ("6.1", "6.12")
POLICIES = ("native", "pep524", "pep522", "legacy")
IN_EVERY_RUN = {("6.1", "legacy"), ("6.1", "pep522"), ("6.12", "legacy"), ("6.12", "pep524")}
#: The units whose programs are probes, and the one unit that may fail by design (pep522 in the window).
PROBES = {
    "early-setup": "early-setup.service",
    "app": "app.service",
    "setup-disks": "setup-disks.service",
    "cloud-final-probe": "cloud-final.service",  # cloud-init's runcmd, under the docs' drop-in for cloud-final
}
CLOUD_INIT = ("cloud-init-local.service", "cloud-init.service", "cloud-config.service", "cloud-final.service")
#: "Returns at once": legacy's bytes in the window (measured: under 1 ms).
AT_ONCE = 0.1


def selected(kernel: str, policy: str) -> bool:
    return (kernel, policy) in IN_EVERY_RUN or os.environ.get("URANDOM_SHIM_BOOT_ALL", "") not in ("", "0")


def in_this_session() -> bool:
    """Only the matrix session of Debian's python3 boots (or a run outside the matrix)."""
    if not os.environ.get("URANDOM_SHIM_TEST_INSTALLED"):
        return True
    return os.path.realpath(os.environ.get("URANDOM_SHIM_TEST_PYTHONS", "")) == os.path.realpath("/usr/bin/python3")


class Host:
    def __init__(self) -> None:
        self.qemu = boot_image.Qemu()
        self.accel = debian.accelerator()
        self.base = boot_image.base_tree()


@pytest.fixture(scope="session")
def host() -> Host:
    try:
        return Host()
    except Unavailable as exc:
        unavailable(f"the real-boot tests can't run here: {exc}")


@pytest.fixture(scope="session")
def system(host: Host, wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The system under test as an ext4 image, with this run's wheel in it."""
    try:
        return boot_image.system_under_test(host.base, wheel, docs_units.units(), tmp_path_factory.mktemp("system"))
    except Unavailable as exc:
        unavailable(f"the real-boot system can't be assembled here: {exc}")


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
    def __init__(self, boot: boot_image.Boot) -> None:
        self.entries = boot.journal
        self.boot = boot

    def crng_ready_at(self) -> float | None:
        for entry in self.entries:
            if "crng init done" in message(entry):
                return at(entry)
        found = re.search(r"\[\s*(\d+\.\d+)\] random: crng init done", self.boot.console)
        return float(found.group(1)) if found else None

    def unit_started(self, unit: str) -> float | None:
        """When systemd started the unit's job ("Starting …"). Before journald runs, systemd logs to the kernel's
        buffer, and those lines reach the journal without a ``UNIT`` field: the text names the unit."""
        for entry in self.entries:
            text = message(entry)
            if text.startswith(f"Starting {unit} ") or (entry.get("UNIT") == unit and text.startswith("Starting ")):
                return at(entry)
        return None

    def lines(self, unit: str) -> list[tuple[float, str]]:
        return [(at(e), message(e)) for e in self.entries if e.get("_SYSTEMD_UNIT") == unit]

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


def describe(journal: Journal, probes: dict[str, dict[str, Any]], ready: float | None) -> dict[str, Any]:
    early = probes.get("early-setup", {})
    started = journal.unit_started("early-setup.service")
    if early.get("crng_at_start") == "unready":
        window = f"in the window: {early.get('outcome')} in {early.get('seconds', 0) * 1000:.1f} ms"
    elif early:
        window = f"never reached the window: first line at {early['first_line']:.2f} s, after crng init done"
    else:
        window = "no probe line"
    return {
        "early unit": window,
        "early started": started,
        "early first line": early.get("first_line"),
        "cloud-init-local started": journal.unit_started("cloud-init-local.service"),
        "cloud-init first line": first_line_of(journal, "cloud-init-local.service", r"running 'init-local'"),
        "random password": first_line_of(journal, "cloud-config.service", r"password changed for root"),
        "app first line": probes.get("app", {}).get("first_line"),
        "crng": ready,
    }


def summarise(record: Any, kernel: boot_image.Kernel, policy: str, boot: boot_image.Boot, row: dict[str, Any]) -> None:
    analyze = (boot.files.get("analyze.txt") or "").splitlines()
    row.update(
        kernel=kernel.release,
        policy=policy,
        qemu=boot.qemu,
        wall=boot.wall,
        failed=sorted(line.split()[0] for line in (boot.files.get("failed.txt") or "").splitlines() if line.strip()),
        analyze=analyze[0] if analyze else "",
    )
    record("boot_result", row)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("series", KERNELS)
def test_a_first_boot_with_the_shim_system_wide(
    host: Host, system: Path, tmp_path: Path, record_property: Any, series: str, policy: str
) -> None:
    if os.environ.get("URANDOM_SHIM_BOOT", "") == "0":
        pytest.skip("URANDOM_SHIM_BOOT=0: the real Debian boots are turned off")
    if not in_this_session():
        pytest.skip("the real boots run once, in the session of Debian's /usr/bin/python3")
    if not selected(series, policy):
        pytest.skip("not in every run: URANDOM_SHIM_BOOT_ALL=1 bash tests/run -m boot runs every boot")
    kernel = boot_image.Kernel(host.base, series)
    with Lock(boot_image.cache_dir() / ".boot-lock"):  # one TCG guest at a time on a 2-core machine
        boot = boot_image.boot_with_policy(host.qemu, host.accel, kernel, system, policy, tmp_path)
    journal = Journal(boot)
    assert boot.journal, f"the collector wrote no journal; console:\n{boot.console[-6000:]}"
    ready = journal.crng_ready_at()
    probes = journal.probes()
    summarise(record_property, kernel, policy, boot, describe(journal, probes, ready))

    # The boot was a real first boot whose CRNG initialised by itself, during the boot.
    assert ready is not None and ready > 1.0, "no 'crng init done' in this boot"
    state = (boot.files.get("state.txt") or "").strip()
    assert state in ("running", "degraded"), state

    # Every probe ran under the unit the docs put it in, with the policy and source the docs promise.
    assert set(probes) == set(PROBES), (sorted(probes), boot.console[-4000:])
    for name, unit in PROBES.items():
        assert probes[name]["unit"] == unit, probes[name]
    machine = "/etc/urandom-shim.toml (machine file)"
    early = probes["early-setup"]
    assert (early["policy"], early["policy_source"]) == (policy, machine), early
    assert (probes["app"]["policy"], probes["app"]["policy_source"]) == (
        "pep522",
        "environment variable URANDOM_POLICY",
    )
    assert probes["setup-disks"]["policy"] == "legacy", probes["setup-disks"]
    cloud_final = probes["cloud-final-probe"]
    assert (cloud_final["policy"], cloud_final["policy_source"]) == ("pep524", "environment variable URANDOM_POLICY")

    # The early unit: what the policy did, if its first call met the window; and never a weak hash seed unless legacy.
    if policy != "legacy":
        assert early["hashseed"] is None, early
    if early["crng_at_start"] == "unready":
        assert early["first_line"] < ready, early
        if policy == "legacy":
            assert early["outcome"] == "returned" and early["seconds"] < AT_ONCE and early["hashseed"], early
        elif policy == "pep522":
            assert early["outcome"] == "raised BlockingIOError", early
        else:
            assert early["outcome"] == "returned" and early["crng_after"] == "ready", early
    else:
        assert early["first_line"] >= ready - 0.05, (early, ready)

    # No unit failed, except the early unit under pep522 in the window, which is designed to.
    failed = set(row_unit for row_unit in (boot.files.get("failed.txt") or "").split() if row_unit.endswith(".service"))
    designed = {"early-setup.service"} if policy == "pep522" and early["outcome"] != "returned" else set()
    assert failed <= designed, (failed, boot.files.get("blame.txt"))

    # The documented wait is bounded: app.service's `ExecStartPre=urandom-shim wait --timeout 30` let it start
    # within its timeout, and never gave up.
    app_started = journal.unit_started("app.service")
    assert app_started is not None and probes["app"]["first_line"] - app_started < 30, (app_started, probes["app"])
    assert not [text for _, text in journal.lines("app.service") if "still not ready" in text]

    # cloud-init ran every stage, and made its random root password.
    for unit in CLOUD_INIT:
        assert journal.unit_started(unit) is not None, f"{unit} never started"
    assert first_line_of(journal, "cloud-config.service", r"password changed for root") is not None
