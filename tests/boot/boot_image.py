"""A real Debian 12 system with systemd and cloud-init, built from Debian's packages and booted under qemu.

Three layers, each cached where it can be:

1. **The base system** (cached under ``~/.cache/urandom-shim/boot/``, rebuilt when :data:`RECIPE` changes):
   ``mmdebstrap`` (installed with apt if missing) builds Debian 12 with systemd, udev, python3, cloud-init and two
   kernels from the archive, 6.1 from bookworm and 6.12 from bookworm-backports, each with its initramfs made by
   initramfs-tools inside the image. The tree is kept unpacked; the kernels and initramfs images are read from its
   ``/boot``.
2. **The system under test** (once per test session, because the wheel is built fresh on every run): a copy of that
   tree with the wheel installed twice, into the system Python (``/usr/local``, with pip's
   ``--break-system-packages``, the documented way on Debian 12) and into an app venv in ``/opt/app/venv``; the units
   taken word for word from the docs (:mod:`docs_units`), the test's own probes, a NoCloud seed for cloud-init, and a
   collector; then written to an ext4 image with ``mke2fs -d``.
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
import time
from pathlib import Path
from typing import Any, Iterable

import debian
from debian import Lock, Unavailable, apt_install, run

SUITE = "bookworm"
MIRRORS = (
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
    "deb http://deb.debian.org/debian bookworm-backports main",
)
PACKAGES = (
    "systemd-sysv",
    "udev",
    "python3",
    "python3-venv",
    "python3-pip",
    "cloud-init",
    "linux-image-cloud-amd64",  # 6.1, from bookworm
    "initramfs-tools",
    "zstd",
    "netbase",
    "e2fsprogs",
)
#: After the packages: the 6.12 kernel from backports, beside 6.1 (the metapackage moves; 6.1's image stays).
HOOKS = ("apt-get install -y -q --no-install-recommends -t bookworm-backports linux-image-cloud-amd64",)
#: Everything that decides the base tree's content; a change to it means a rebuild.
RECIPE = {"suite": SUITE, "mirrors": MIRRORS, "variant": "minbase", "packages": PACKAGES, "hooks": HOOKS, "v": 1}

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


def recipe_key() -> str:
    return hashlib.sha256(json.dumps(RECIPE, sort_keys=True).encode()).hexdigest()[:16]


def mmdebstrap() -> str:
    apt_install("mmdebstrap", lambda: shutil.which("mmdebstrap") is not None)
    return str(shutil.which("mmdebstrap"))


def base_tree() -> Path:
    """The base system's unpacked tree, built once per recipe (about a minute) and cached."""
    cache = cache_dir()
    tree = cache / f"base-{recipe_key()}"
    with Lock(cache / ".lock"):
        if (tree / ".complete").exists():
            return tree
        for old in cache.glob("base-*"):  # an older recipe's tree: about 1 GB each
            shutil.rmtree(old, ignore_errors=True)
        tarball = cache / "base.tar"
        hooks = [f'--customize-hook=chroot "$1" {hook}' for hook in HOOKS]
        began = time.monotonic()
        run(
            mmdebstrap(), "--variant=minbase", f"--include={','.join(PACKAGES)}", *hooks,
            "--customize-hook=rm -f \"$1\"/etc/machine-id \"$1\"/var/lib/systemd/random-seed",
            SUITE, str(tarball), *MIRRORS,
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


def boot(qemu: Qemu, accel: list[str], kernel: Kernel, image: Path, work: Path, timeout: float = 300) -> Boot:
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
NOCLOUD = {
    "/var/lib/cloud/seed/nocloud/meta-data": "instance-id: urandom-shim-boot-1\nlocal-hostname: boot-test\n",
    "/var/lib/cloud/seed/nocloud/user-data": (
        "#cloud-config\nlocale: C.UTF-8\nchpasswd:\n  expire: false\n  users:\n    - name: root\n      type: RANDOM\n"
        "runcmd:\n  - [/usr/bin/python3, /usr/local/sbin/cloud-final-probe.py]\n"
    ),
    "/etc/cloud/cloud.cfg.d/90-urandom-shim-boot.cfg": "datasource_list: [NoCloud, None]\n",
}

#: The programs the docs' units start; each is tests/boot/probe.py.
PROGRAMS = (
    "/opt/app/venv/lib/python3.11/site-packages/app/__main__.py",
    "/usr/local/sbin/setup-disks.py",
    "/usr/local/sbin/early-setup.py",
    "/usr/local/sbin/cloud-final-probe.py",  # run by cloud-init's runcmd, in cloud-final.service
)


def system_under_test(base: Path, wheel: Path, units: dict[str, str], work: Path) -> Path:
    """The base tree with the wheel installed (system Python, /opt/app/venv, /opt/tools/venv), the docs' units, the
    probes, the NoCloud seed and the collector, as an ext4 image in ``work``."""
    tree = work / "tree"
    run("cp", "-a", "--reflink=auto", str(base), str(tree))
    shutil.copy(wheel, tree / "tmp" / wheel.name)
    inside = f"/tmp/{wheel.name}"
    chroot(tree, "python3", "-m", "pip", "install", "-q", "--no-index", "--break-system-packages", inside)
    for venv in ("/opt/app/venv", "/opt/tools/venv"):
        chroot(tree, "python3", "-m", "venv", venv)
        chroot(tree, f"{venv}/bin/python", "-m", "pip", "install", "-q", "--no-index", inside)
    (tree / "tmp" / wheel.name).unlink()
    probe = (HERE / "probe.py").read_text()
    files = {**units, **NOCLOUD, **{program: probe for program in PROGRAMS}}
    files["/opt/app/venv/lib/python3.11/site-packages/app/__init__.py"] = ""
    files["/etc/systemd/system/urandom-shim-boot-collect.service"] = COLLECTOR_UNIT
    files["/usr/local/sbin/urandom-shim-boot-collect"] = COLLECTOR
    write_files(tree, files, executable=("/usr/local/sbin/urandom-shim-boot-collect",))
    enable = [name.rsplit("/", 1)[1] for name in files if name.endswith(".service") and "[Install]" in files[name]]
    chroot(tree, "systemctl", "enable", *enable)
    (tree / "etc" / "machine-id").unlink(missing_ok=True)  # a first boot
    image = work / "root.ext4"
    make_image(tree, image)
    shutil.rmtree(tree)
    return image


def boot_with_policy(
    qemu: Qemu, accel: list[str], kernel: Kernel, system: Path, policy: str, work: Path, timeout: float = 300
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
