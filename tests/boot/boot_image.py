"""Real Debian systems with systemd and cloud-init, built from Debian's packages and booted under qemu: one per
:class:`Suite` (Debian 11, 12, 13 and sid), all by the same code.

Three layers, each cached where it can be:

1. **The base system** (cached under ``~/.cache/urandom-shim/boot/``, one tree per suite, rebuilt when its
   :meth:`Suite.recipe` changes): ``mmdebstrap`` (installed with apt if missing) builds the suite with systemd, udev,
   python3, cloud-init and its kernels from the archive (Debian 12: 6.1, and 6.12 from bookworm-backports), each with
   its initramfs made by initramfs-tools inside the image. The tree is kept unpacked; the kernels and initramfs images
   are read from its ``/boot``.
2. **The system under test** (once per suite and test session, because the wheel is built fresh on every run): a
   copy of that tree with the wheel installed twice, into the system Python (``/usr/local``, with pip's
   ``--break-system-packages`` where PEP 668 applies, the documented way) and into an app venv in ``/opt/app/venv``
   (with tomli from the host's pip where the guest's Python is older than 3.11); the units
   taken word for word from the docs (:mod:`docs_units`), an ordinary service, the test's own probes, a NoCloud seed
   for cloud-init, and a collector; then written to an ext4 image with ``mke2fs -d``.
3. **One boot**: a copy of that image (sparse, about a second), with ``/etc/urandom-shim.toml`` written into it by
   ``debugfs`` for the policy under test, booted as a first boot: no machine ID, no saved random seed, no entropy
   device, ``random.trust_cpu=off random.trust_bootloader=off``. The collector waits for the boot to finish, writes
   the journal (``journalctl -b -o json``) and ``systemd-analyze``'s views to ``/var/lib/urandom-shim-boot/``, and
   powers off; the host reads them back with ``debugfs``. In a boot in report-only mode (:data:`REPORT_MARKER` in the
   image), the collector also saves what ``urandom-shim report`` says in the guest (``--json``, and the text with
   ``--fail-for pep522`` and its exit status) and a copy of the events file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import debian
from debian import Lock, Unavailable, apt_install, run


@dataclass(frozen=True)
class Suite:
    """One Debian release as the real boots build it: where its packages come from, what goes into the base tree,
    which kernels its ``/boot`` holds, and how its Python takes a wheel."""

    name: str  #: the suite, as mmdebstrap and apt name it: "bookworm"
    release: str  #: as people name it: "Debian 12"
    mirrors: tuple[str, ...]
    kernels: tuple[str, ...]  #: the kernel series in its /boot: "6.1" means vmlinuz-6.1.*
    python: str  #: its python3's version, which names the app venv's site-packages
    packages: tuple[str, ...] = ()  #: beyond :data:`PACKAGES`
    hooks: tuple[str, ...] = ()  #: commands run in the tree after the packages are installed
    apt_options: tuple[str, ...] = ()  #: for mmdebstrap, and left in the tree's apt configuration
    pip_system: tuple[str, ...] = ("--break-system-packages",)  #: what pip needs to install into /usr/local
    wheels: tuple[str, ...] = ()  #: dependencies of the shim the guest's python needs, fetched by the host's pip
    #: cloud-init 24.3 and later: every stage in one Python process, cloud-init-main.service's
    cloud_init_main: bool = False
    #: cloud-init before 22.2 reads only the old form of chpasswd, ``list: ["root:RANDOM"]``
    chpasswd_list: bool = False
    #: Boot without systemd-random-seed.service, as a system where nothing waits for the CRNG early: masked in the
    #: system under test. With it, systemd 247 waits for the CRNG on every boot (first boot or saved seed alike,
    #: measured), and on 5.4 to 5.17 that wait runs the jitter generator and closes the window before
    #: sysinit.target, as on 5.18 and later; without it, the window stays open until some process waits.
    no_random_seed: bool = False

    def recipe(self) -> dict[str, Any]:
        """Everything that decides the base tree's content; a change to it means a rebuild."""
        return {
            "suite": self.name, "mirrors": self.mirrors, "variant": "minbase", "packages": PACKAGES + self.packages,
            "hooks": self.hooks, "apt": self.apt_options, "v": 1,
        }  # fmt: skip

    def site_packages(self) -> str:
        return f"/opt/app/venv/lib/python{self.python}/site-packages"


def debian_mirrors(suite: str, *extra: str) -> tuple[str, ...]:
    return (
        f"deb http://deb.debian.org/debian {suite} main",
        f"deb http://deb.debian.org/debian {suite}-updates main",
        f"deb http://deb.debian.org/debian-security {suite}-security main",
        *(f"deb http://deb.debian.org/debian {name} main" for name in extra),
    )


#: Every suite's base tree has these; a suite adds its own (:attr:`Suite.packages`).
PACKAGES = (
    "systemd-sysv",
    "udev",
    "python3",
    "python3-venv",
    "python3-pip",
    "cloud-init",
    "linux-image-cloud-amd64",
    "initramfs-tools",
    "zstd",
    "netbase",
    "e2fsprogs",
)
#: The suites the real boots use, oldest first: three kernel generations (5.10, where /dev/urandom never blocks and
#: the window can last the whole boot; 6.1 and 6.12, 5.18 and later; sid's 7.x).
SUITES = {
    suite.name: suite
    for suite in (
        # Debian 11: kernel 5.10, systemd 247, cloud-init 20.4, python 3.9, whose pip (20.3) predates PEP 668 and
        # which needs tomli for the configuration files (Python < 3.11 has no tomllib).
        # Only the main suite: the security archive's index names kernels (5.10.262) whose files it doesn't serve.
        Suite(
            "bullseye",
            "Debian 11",
            ("deb http://deb.debian.org/debian bullseye main",),
            kernels=("5.10",),
            python="3.9",
            # ifupdown's DHCP client (minbase has none, and networking.service fails without it); networkd's
            # wait-online masked (ifupdown brings network-online.target, and networkd's would wait 2 minutes for
            # links it doesn't manage); the initramfs compressed with zstd, as later releases do (gzip's took 35 s to
            # unpack under emulation).
            packages=("isc-dhcp-client",),
            hooks=(
                "systemctl mask systemd-networkd-wait-online.service",
                "sed -i s/^COMPRESS=.*/COMPRESS=zstd/ /etc/initramfs-tools/initramfs.conf",
                "update-initramfs -u -k all",
            ),
            pip_system=(),
            wheels=("tomli",),
            chpasswd_list=True,
            no_random_seed=True,
        ),
        # Debian 12: 6.1, and 6.12 from bookworm-backports beside it (the metapackage moves; 6.1's image stays).
        Suite(
            "bookworm",
            "Debian 12",
            debian_mirrors("bookworm", "bookworm-backports"),
            kernels=("6.1", "6.12"),
            python="3.11",
            hooks=("apt-get install -y -q --no-install-recommends -t bookworm-backports linux-image-cloud-amd64",),
        ),
        # Debian 13, the stable release: 6.12, systemd 257, cloud-init 25, python 3.13.
        # iproute2: cloud-init's networkd renderer needs `ip`, which minbase lacks from Debian 13 on; without a
        # renderer no link is configured, and systemd-networkd-wait-online holds the boot for 2 minutes.
        Suite(
            "trixie",
            "Debian 13",
            debian_mirrors("trixie"),
            kernels=("6.12",),
            python="3.13",
            packages=("iproute2",),
            cloud_init_main=True,
        ),
        # sid: the 7.x kernel, systemd 262, cloud-init 26, python 3.14. The archive's sid Release is past its Valid-Until.
        Suite(
            "sid",
            "Debian sid",
            ("deb http://deb.debian.org/debian sid main",),
            kernels=("7",),
            python="3.14",
            packages=("iproute2",),
            cloud_init_main=True,
            apt_options=('Acquire::Check-Valid-Until "false"',),
        ),
    )
}

#: The kernel command line of every boot: the CRNG must initialise by itself, as on a fresh VM without virtio-rng.
#: ``panic=-1`` (with qemu's ``-no-reboot``) ends a boot whose kernel crashed at once, instead of at the timeout.
CMDLINE = "root=/dev/vda rw console=ttyS0,115200 random.trust_cpu=off random.trust_bootloader=off panic=-1"
IMAGE_SIZE = "3G"


#: qemu from bookworm-backports. Debian 12's own qemu (7.2) can't run Debian's 6.12 kernel under TCG: measured here,
#: 36 of 82 boots to the initramfs crashed in their first 20 s ("Fatal exception in interrupt", slab list corruption,
#: init killed), with every CPU model and kernel option tried (qemu64, x86-64-v2, Haswell, Nehalem; mitigations=off,
#: nokaslr, preempt=none, nohz=off highres=off, 1 or 1.5 GB), and so did 1 of 2 full boots; qemu 10.0 from
#: bookworm-backports ran 12 of 12 such boots and every full boot since. The 6.1 kernel boots on either; every real
#: boot uses this one, so both kernels meet the same machine.
QEMU_PACKAGES = ("qemu-system-x86", "qemu-system-common", "qemu-system-data")
BACKPORTS = "deb http://deb.debian.org/debian bookworm-backports main"


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = base / "urandom-shim" / "boot"
    path.mkdir(parents=True, exist_ok=True)
    return path


def recipe_key(suite: Suite) -> str:
    return hashlib.sha256(json.dumps(suite.recipe(), sort_keys=True).encode()).hexdigest()[:16]


def mmdebstrap() -> str:
    apt_install("mmdebstrap", lambda: shutil.which("mmdebstrap") is not None)
    return str(shutil.which("mmdebstrap"))


def base_tree(suite: Suite) -> Path:
    """The suite's base system as an unpacked tree, built once per recipe (a minute or two) and cached."""
    cache = cache_dir()
    tree = cache / f"base-{suite.name}-{recipe_key(suite)}"
    with Lock(cache / f".lock-{suite.name}"):
        if (tree / ".complete").exists():
            return tree
        for old in cache.glob(f"base-{suite.name}-*"):  # an older recipe's tree: about 1 GB each
            shutil.rmtree(old, ignore_errors=True)
        tarball = cache / f"base-{suite.name}.tar"
        hooks = [f'--customize-hook=chroot "$1" {hook}' for hook in suite.hooks]
        apt = [f"--aptopt={option}" for option in suite.apt_options]
        began = time.monotonic()
        run(
            mmdebstrap(), "--variant=minbase", f"--include={','.join(PACKAGES + suite.packages)}", *apt, *hooks,
            "--customize-hook=rm -f \"$1\"/etc/machine-id \"$1\"/var/lib/systemd/random-seed",
            suite.name, str(tarball), *suite.mirrors,
        )  # fmt: skip
        tree.mkdir()
        run("tar", "-xf", str(tarball), "-C", str(tree), "--numeric-owner")
        tarball.unlink()
        (tree / ".complete").write_text(f"built in {time.monotonic() - began:.0f} s\n")
    return tree


class Qemu:
    """qemu-system-x86_64 from bookworm-backports, unpacked into the cache (the host's apt configuration and its
    installed qemu are left alone). Its libraries are those of Debian 12's qemu, installed first for that reason;
    its firmware is its own, then Debian 12's SeaBIOS."""

    def __init__(self) -> None:
        debian.qemu()  # Debian 12's qemu: its libraries and SeaBIOS
        root = cache_dir() / "qemu-backports"
        binary = root / "usr" / "bin" / "qemu-system-x86_64"
        with Lock(cache_dir() / ".qemu-lock"):
            if not (root / ".complete").exists():
                shutil.rmtree(root, ignore_errors=True)
                self._unpack(root)
        missing = [line.strip() for line in run("ldd", str(binary)).splitlines() if "not found" in line]
        if missing:
            raise Unavailable(f"qemu from bookworm-backports lacks libraries here: {'; '.join(missing)}")
        self.binary = binary
        self.version = (root / ".complete").read_text().strip()
        self.firmware = ["-L", str(root / "usr/share/qemu"), "-L", "/usr/share/seabios", "-L", "/usr/share/qemu"]

    @staticmethod
    def _unpack(root: Path) -> None:
        apt = root.parent / "qemu-apt"
        for sub in ("lists/partial", "archives/partial"):
            (apt / sub).mkdir(parents=True, exist_ok=True)
        (apt / "sources.list").write_text(BACKPORTS + "\n")
        options = [
            f"-o=Dir::Etc::SourceList={apt / 'sources.list'}", "-o=Dir::Etc::SourceParts=/dev/null",
            f"-o=Dir::State::Lists={apt / 'lists'}", f"-o=Dir::Cache::Archives={apt / 'archives'}",
            "-o=APT::Sandbox::User=root", "-q",
        ]  # fmt: skip
        run("apt-get", *options, "update")
        policy = run("apt-cache", *options, "policy", QEMU_PACKAGES[0])
        found = re.search(r"Candidate: (\S+)", policy)
        if not found or "bpo" not in found.group(1):
            raise Unavailable(f"no qemu in bookworm-backports: {policy.strip()[-300:]}")
        version = found.group(1)
        debs = apt / "debs"
        shutil.rmtree(debs, ignore_errors=True)
        debs.mkdir()
        run("apt-get", *options, "download", *(f"{name}={version}" for name in QEMU_PACKAGES), cwd=debs)
        root.mkdir(parents=True)
        for deb in sorted(debs.glob("*.deb")):
            run("dpkg-deb", "-x", str(deb), str(root))
        shutil.rmtree(debs)
        (root / ".complete").write_text(version + "\n")


class Kernel:
    """One of the image's kernels: its release, and the vmlinuz and initrd read from the image's /boot."""

    def __init__(self, tree: Path, series: str) -> None:
        images = sorted((tree / "boot").glob(f"vmlinuz-{series}.*"))
        if not images:
            raise Unavailable(f"no {series} kernel in {tree / 'boot'}")
        self.image = images[-1]
        self.release = self.image.name[len("vmlinuz-") :]
        self.initrd = tree / "boot" / f"initrd.img-{self.release}"
        self.series = series


def chroot(tree: Path, *args: str) -> str:
    """Run a command inside ``tree`` (with /proc and /dev for pip and venv), on the host's ready kernel."""
    script = (
        'mount -t proc proc "$1/proc" && mount --rbind /dev "$1/dev" && shift && '
        'root="$0"; chroot "$root" "$@"; status=$?; umount -R "$root/dev"; umount "$root/proc"; exit $status'
    )
    return run("unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(tree), str(tree), *args)


def write_files(tree: Path, files: dict[str, str], executable: Iterable[str] = ()) -> None:
    for name, text in files.items():
        path = tree / name.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o755 if name in executable else 0o644)


def make_image(tree: Path, image: Path) -> None:
    """``tree`` as an ext4 file system image (sparse)."""
    run("mke2fs", "-q", "-F", "-t", "ext4", "-L", "root", "-d", str(tree), str(image), IMAGE_SIZE)


def debugfs(image: Path, *requests: str, write: bool = False) -> str:
    """Run debugfs ``requests`` on ``image`` (the guest is powered off)."""
    done = subprocess.run(
        ["debugfs", *(["-w"] if write else []), "-f", "-", str(image)],
        input="\n".join(requests) + "\n", capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if done.returncode != 0:
        raise Unavailable(f"debugfs on {image}: {done.stderr.strip()[-800:]}")
    return done.stdout


def put_file(image: Path, name: str, text: str, work: Path) -> None:
    """Write ``name`` (an absolute path in an existing directory) into ``image``, replacing it."""
    local = work / "put"
    local.write_text(text)
    debugfs(image, f"rm {name}", f"write {local} {name}", f"set_inode_field {name} mode 0100644", write=True)


def read_file(image: Path, name: str, work: Path) -> str | None:
    local = work / "got"
    local.unlink(missing_ok=True)
    debugfs(image, f"dump {name} {local}")
    return local.read_text(errors="replace") if local.exists() else None


class Boot:
    """What one boot left behind: the serial console, and what the collector wrote."""

    def __init__(self, kernel: Kernel, qemu: str, console: str, wall: float, files: dict[str, str | None]) -> None:
        self.kernel = kernel
        self.qemu = qemu
        self.console = console
        self.wall = wall
        self.files = files
        text = files.get("journal.json") or ""
        self.journal: list[dict[str, Any]] = []
        for line in text.splitlines():
            try:
                self.journal.append(json.loads(line))
            except ValueError:
                continue

    def save(self, where: Path) -> None:
        """Keep this boot in ``where`` for :meth:`load` (another pytest worker's, or a later test's): what
        :func:`boot` left in its ``collected`` directory, and qemu's version and the wall time."""
        kept = where / "collected"
        kept.mkdir(parents=True, exist_ok=True)
        (kept / "console.txt").write_text(self.console)
        for name, text in self.files.items():
            if text is not None:
                (kept / name).write_text(text)
        (where / "boot.json").write_text(json.dumps({"qemu": self.qemu, "wall": self.wall}))

    @classmethod
    def load(cls, kernel: Kernel, where: Path) -> Boot:
        """A boot that :meth:`save` kept in ``where``."""
        kept = where / "collected"
        files = {name: (kept / name).read_text() if (kept / name).exists() else None for name in COLLECTED}
        meta = json.loads((where / "boot.json").read_text())
        return cls(kernel, meta["qemu"], (kept / "console.txt").read_text(), meta["wall"], files)


def boot(qemu: Qemu, accel: list[str], kernel: Kernel, image: Path, work: Path, timeout: float = 420) -> Boot:
    """Boot ``image`` with ``kernel`` until the collector powers it off, and read back what it collected."""
    command = [
        str(qemu.binary), *qemu.firmware, *accel, "-m", "1536", "-smp", "1", "-nodefaults", "-display", "none", "-no-reboot",
        "-serial", "stdio", "-kernel", str(kernel.image), "-initrd", str(kernel.initrd), "-append", CMDLINE,
        "-drive", f"file={image},format=raw,if=virtio,cache=unsafe",
        # A network card on qemu's own user-mode network (no traffic leaves the host): cloud-init configures it,
        # and systemd-networkd-wait-online has something to wait for instead of timing out after 2 minutes.
        "-nic", "user,model=virtio-net-pci",
    ]  # fmt: skip
    began = time.monotonic()
    try:
        out = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        console = (exc.stdout or b"").decode(errors="replace")
        raise AssertionError(f"the guest did not power off within {timeout} s; console:\n{console[-6000:]}") from None
    wall = time.monotonic() - began
    console = out.stdout.decode(errors="replace") + out.stderr.decode(errors="replace")
    files = {name: read_file(image, f"{STATE}/{name}", work) for name in COLLECTED}
    kept = work / "collected"  # for a person reading a failure: the journal and systemd-analyze's views
    kept.mkdir(exist_ok=True)
    (kept / "console.txt").write_text(console)
    for name, text in files.items():
        if text is not None:
            (kept / name).write_text(text)
    return Boot(kernel, qemu.version, console, wall, files)


HERE = Path(__file__).resolve().parent
STATE = "/var/lib/urandom-shim-boot"
#: A file whose presence makes the collector run ``urandom-shim report`` (the boot in report-only mode).
REPORT_MARKER = "/etc/urandom-shim-boot-report"
#: The events file of report-only mode, as the docs configure it.
EVENTS_DIR = "/run/urandom-shim"
EVENTS = f"{EVENTS_DIR}/events.jsonl"
#: What the collector writes to STATE, and the host reads back: the journal and systemd-analyze's views; in report-only
#: mode, the report (``--json`` and its exit status and stderr; the text with ``--fail-for pep522`` and its exit status),
#: and the events file (a copy, and its directory's and its own type, mode and owner).
COLLECTED = ("journal.json", "analyze.txt", "blame.txt", "critical-chain.txt", "failed.txt", "state.txt")
COLLECTED += ("report.json", "report-json.err", "report-json.rc", "report.txt", "fail-for.rc")
COLLECTED += ("events.jsonl", "events-stat.txt")

#: Waits for the boot to finish (so systemd-analyze can answer), writes what the host reads back, and powers off.
COLLECTOR_UNIT = """\
[Unit]
Description=urandom-shim boot test: collect the journal, then power off

[Service]
Type=simple
ExecStart=/usr/local/sbin/urandom-shim-boot-collect

[Install]
WantedBy=multi-user.target
"""
COLLECTOR = f"""\
#!/bin/sh
d={STATE}
mkdir -p $d
timeout 240 systemctl is-system-running --wait > $d/state.txt 2>&1
systemd-analyze > $d/analyze.txt 2>&1
systemd-analyze blame > $d/blame.txt 2>&1
systemd-analyze critical-chain > $d/critical-chain.txt 2>&1
systemctl list-units --failed --no-legend --plain > $d/failed.txt 2>&1
journalctl -b -o json > $d/journal.json 2>&1
if [ -e {REPORT_MARKER} ]; then
    /usr/local/bin/urandom-shim report --json > $d/report.json 2> $d/report-json.err
    echo $? > $d/report-json.rc
    /usr/local/bin/urandom-shim report --fail-for pep522 > $d/report.txt 2>&1
    echo $? > $d/fail-for.rc
    cp {EVENTS} $d/events.jsonl
    stat -c '%n %F %a %U:%G' {EVENTS_DIR} {EVENTS} > $d/events-stat.txt 2>&1
fi
sync
systemctl poweroff
"""


#: cloud-init's NoCloud seed: a first boot whose user-data makes cloud-init generate a random root password
#: (cc_set_passwords -> util.rand_str -> random.SystemRandom, that is os.urandom).
def nocloud(suite: Suite) -> dict[str, str]:
    """The NoCloud seed, in the form of chpasswd the suite's cloud-init reads."""
    chpasswd = (
        '  list: ["root:RANDOM"]\n' if suite.chpasswd_list else "  users:\n    - name: root\n      type: RANDOM\n"
    )
    return {
        "/var/lib/cloud/seed/nocloud/meta-data": "instance-id: urandom-shim-boot-1\nlocal-hostname: boot-test\n",
        "/var/lib/cloud/seed/nocloud/user-data": (
            f"#cloud-config\nlocale: C.UTF-8\nchpasswd:\n  expire: false\n{chpasswd}"
            "runcmd:\n  - [/usr/bin/python3, /usr/local/sbin/cloud-final-probe.py]\n"
        ),
        "/etc/cloud/cloud.cfg.d/90-urandom-shim-boot.cfg": "datasource_list: [NoCloud, None]\n",
    }


#: A unit of no page: an ordinary service, with systemd's default dependencies (so after basic.target) and the
#: machine's policy, the shape of most services. Before 5.18 it can start inside the window; from 5.18 on it can't.
#: Ordered before app.service, whose `urandom-shim wait` closes the window on 5.4 to 5.17 (measured: 4 s after
#: this unit's call, without the ordering), so that which of the two runs first is not a race.
ORDINARY_UNIT = """\
[Unit]
Description=urandom-shim boot test: an ordinary service under the machine's policy
Before=app.service

[Service]
Type=oneshot
ExecStart=/usr/bin/python3 /usr/local/sbin/ordinary.py

[Install]
WantedBy=multi-user.target
"""

#: The programs the units start, each tests/boot/probe.py; the app's is in the app venv (:func:`programs`).
PROGRAMS = (
    "/usr/local/sbin/setup-disks.py",
    "/usr/local/sbin/early-setup.py",
    "/usr/local/sbin/cloud-final-probe.py",  # run by cloud-init's runcmd, in cloud-final.service
    "/usr/local/sbin/ordinary.py",
)


def app_program(suite: Suite) -> str:
    return f"{suite.site_packages()}/app/__main__.py"


def guest_wheels(suite: Suite, work: Path) -> list[Path]:
    """The wheels of the shim's dependencies for the guest's python, fetched by the host's pip (pip inside a 3.13+
    chroot rejects the registry's certificate chain, and the guest installs with ``--no-index``)."""
    if not suite.wheels:
        return []
    where = work / "wheels"
    where.mkdir(exist_ok=True)
    run(
        sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--only-binary=:all:",
        "--python-version", suite.python, "--platform", "manylinux2014_x86_64", "--dest", str(where), *suite.wheels,
    )  # fmt: skip
    return sorted(where.glob("*.whl"))


def system_under_test(suite: Suite, base: Path, wheel: Path, units: dict[str, str], work: Path) -> Path:
    """The base tree with the wheel installed (system Python, /opt/app/venv, /opt/tools/venv), the docs' units, an
    ordinary unit, the probes, the NoCloud seed and the collector, as an ext4 image in ``work``."""
    tree = work / "tree"
    run("cp", "-a", "--reflink=auto", str(base), str(tree))
    wheels = tree / "tmp" / "wheels"
    wheels.mkdir()
    for path in [wheel, *guest_wheels(suite, work)]:
        shutil.copy(path, wheels / path.name)
    install = ["-m", "pip", "install", "-q", "--no-index", "--find-links", "/tmp/wheels", f"/tmp/wheels/{wheel.name}"]
    chroot(tree, "python3", *install[:3], *suite.pip_system, *install[3:])
    for venv in ("/opt/app/venv", "/opt/tools/venv"):
        chroot(tree, "python3", "-m", "venv", venv)
        chroot(tree, f"{venv}/bin/python", *install)
    shutil.rmtree(wheels)
    probe = (HERE / "probe.py").read_text()
    files = {**units, **nocloud(suite), **{program: probe for program in (*PROGRAMS, app_program(suite))}}
    files[f"{suite.site_packages()}/app/__init__.py"] = ""
    files["/etc/systemd/system/ordinary.service"] = ORDINARY_UNIT
    files["/etc/systemd/system/urandom-shim-boot-collect.service"] = COLLECTOR_UNIT
    files["/usr/local/sbin/urandom-shim-boot-collect"] = COLLECTOR
    write_files(tree, files, executable=("/usr/local/sbin/urandom-shim-boot-collect",))
    enable = [name.rsplit("/", 1)[1] for name in files if name.endswith(".service") and "[Install]" in files[name]]
    chroot(tree, "systemctl", "enable", *enable)
    (tree / "etc" / "machine-id").unlink(missing_ok=True)  # a first boot
    if suite.no_random_seed:
        chroot(tree, "systemctl", "mask", "systemd-random-seed.service")
    image = work / "root.ext4"
    make_image(tree, image)
    shutil.rmtree(tree)
    return image


def boot_with_policy(
    qemu: Qemu, accel: list[str], kernel: Kernel, system: Path, policy: str, work: Path, timeout: float = 420
) -> Boot:
    """One first boot of a copy of ``system`` with ``policy`` in /etc/urandom-shim.toml."""
    machine = f'# the machine-wide policy of this boot\npolicy = "{policy}"\n'
    return boot_with_files(qemu, accel, kernel, system, {"/etc/urandom-shim.toml": machine}, work, timeout)


def boot_in_report_mode(
    qemu: Qemu, accel: list[str], kernel: Kernel, system: Path, files: dict[str, str], work: Path, timeout: float = 420
) -> Boot:
    """One first boot of a copy of ``system`` with ``files`` (the docs' report-mode machine file and tmpfiles.d
    snippet), whose collector also saves what ``urandom-shim report`` says and the events file."""
    marker = "# this boot is in report-only mode: the collector runs urandom-shim report\n"
    return boot_with_files(qemu, accel, kernel, system, {**files, REPORT_MARKER: marker}, work, timeout)


def boot_with_files(
    qemu: Qemu, accel: list[str], kernel: Kernel, system: Path, files: dict[str, str], work: Path, timeout: float
) -> Boot:
    """One first boot of a copy of ``system`` with ``files`` (absolute paths in directories the image has) in it."""
    work.mkdir(parents=True, exist_ok=True)
    image = work / "boot.ext4"
    run("cp", "--sparse=always", str(system), str(image))
    for name, text in files.items():
        put_file(image, name, text, work)
    try:
        return boot(qemu, accel, kernel, image, work, timeout)
    finally:
        image.unlink(missing_ok=True)
