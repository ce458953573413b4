"""The Debian package (``debian/``): the source package built from the sdist with the distribution's own tools,
checked with lintian and autopkgtest, installed into a clean Debian root file system and purged.

Everything runs in copies of a real-boot base system (``boot_image.base_tree``), in a chroot on this machine's
kernel, as the Debian page (docs/howto/debian-package.md) tells a user to do it:

- ``debian/orig-tarball`` makes the orig tarball from the project's sdist; it is unpacked, ``debian/`` is put
  into it, ``apt-get build-dep`` installs exactly what ``debian/control`` declares, and ``dpkg-buildpackage -us -uc``
  builds the 3.0 (quilt) source package and the ``.deb``, running the in-process tests with Debian's own pytest
  and hypothesis. A second build with ``DEB_BUILD_OPTIONS=nocheck`` runs none and gives a byte-identical ``.deb``.
- lintian (``-EvIL +pedantic``) must report no error and no warning.
- autopkgtest runs ``debian/tests`` with its ``null`` runner inside another, clean copy (no VM nesting needed).
- ``dpkg -i`` into a third copy: ``/usr/bin/python3`` starts the shim and applies ``/etc/urandom-shim.toml``;
  ``apt-get purge`` leaves nothing behind.

On Debian 13 (trixie, in every run) everything comes from the release itself. On Debian 12 (with
``URANDOM_SHIM_BOOT_ALL=1``) hatchling comes from bookworm-backports. Like the boots, this runs in the matrix
session of Debian's ``/usr/bin/python3`` only, and with ``URANDOM_SHIM_BOOT=0`` not at all.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import boot_image
import pytest
from test_real_boot import every_boot, in_this_session

from debian import Unavailable, run, unavailable

pytestmark = [pytest.mark.boot, pytest.mark.stage("the Debian package")]

ROOT = Path(__file__).resolve().parents[2]
#: What the build host needs beyond debian/control's Build-Depends: build-essential, which dpkg-buildpackage checks
#: for every package; python3-build for debian/orig-tarball; lintian.
BUILD_TOOLS = ("build-essential", "python3-build", "lintian")
#: Per suite: hatchling >= 1.24, which debian/orig-tarball needs before `apt-get build-dep` runs; on Debian 12 it
#: comes from bookworm-backports.
HATCHLING = {"trixie": ("python3-hatchling",), "bookworm": ("python3-hatchling/bookworm-backports",)}
#: Per suite: what debian/orig-tarball runs under. Debian 12's trove-classifiers predates the project's newest
#: classifiers, so hatchling's check of them is off there, as the page says (debian/rules does the same for builds).
ORIG_TARBALL_ENV = {"trixie": "", "bookworm": "HATCH_METADATA_CLASSIFIERS_NO_VERIFY=1 "}
#: Per suite: lintian tags the page says to expect. Debian 12's lintian knows policy 4.6.2, Debian 13's is 4.7.2.
LINTIAN_EXPECTED = {"trixie": (), "bookworm": ("newer-standards-version",)}
#: Debian 13 in every run; Debian 12 with URANDOM_SHIM_BOOT_ALL=1.
IN_EVERY_RUN = {"trixie"}
#: Left out of the checkout handed to the build: what a clean clone does not have.
NOT_SOURCE = (".git", ".venv*", ".nox", "docs/_build", "*.egg-info", "__pycache__", ".pytest_cache", "dist")
PTH = "/usr/lib/python3/dist-packages/urandom_shim.pth"
#: debian/tests/control's tests: the import test has no name of its own.
AUTOPKGTESTS = ("command1", "smoke", "pytest-plugin")


#: The whole environment of a command in a chroot, as a build daemon gives it: nothing of this test run's own (its
#: URANDOM_SHIM_TEST_* variables would tell the build's tests they run in the matrix, against an installed wheel).
CLEAN_ENV = ("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8")


def inside(tree: Path, *command: str, check: bool = True) -> str:
    """A command in ``tree`` (a chroot), in a clean environment with apt non-interactive; its output, stderr
    included."""
    script = 'DEBIAN_FRONTEND=noninteractive; export DEBIAN_FRONTEND; "$@" 2>&1'
    if not check:
        script += '; echo "exit status $?"'
    return boot_image.chroot(tree, "env", "-i", *CLEAN_ENV, "sh", "-c", script, "sh", *command)


def fresh_tree(suite: str, work: Path, name: str) -> Path:
    tree = work / name
    run("cp", "-a", "--reflink=auto", str(boot_image.base_tree(boot_image.SUITES[suite])), str(tree))
    shutil.copy("/etc/resolv.conf", tree / "etc" / "resolv.conf")  # apt inside fetches from Debian's mirrors
    return tree


@dataclass
class Built:
    """What one build left: its files (.deb, .dsc, orig tarball, debian.tar.xz, .changes), logs and lintian's say."""

    files: Path
    deb: Path
    log: str
    nocheck_log: str
    nocheck_deb_same: bool
    lintian: str


@pytest.fixture(scope="module", params=sorted(HATCHLING, reverse=True))
def suite(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def built(suite: str, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The source and binary packages, built from the sdist of this checkout in a chroot of ``suite``."""
    if os.environ.get("URANDOM_SHIM_BOOT", "") == "0":
        pytest.skip("URANDOM_SHIM_BOOT=0: the Debian package test is turned off")
    if not in_this_session():
        pytest.skip("the Debian package is built once, in the session of Debian's /usr/bin/python3")
    if suite not in IN_EVERY_RUN and not every_boot():
        pytest.skip(f"{suite} is not in every run: URANDOM_SHIM_BOOT_ALL=1 builds the package there too")
    work = tmp_path_factory.mktemp(f"deb-{suite}")
    try:
        tree = fresh_tree(suite, work, "build-root")
        checkout = tree / "build" / "checkout"
        checkout.mkdir(parents=True)
        excludes = [f"--exclude=./{pattern}" for pattern in NOT_SOURCE]
        run("sh", "-c", f'tar -C "$1" {" ".join(excludes)} -cf - . | tar -C "$2" -xf -', "sh", str(ROOT), str(checkout))
        inside(tree, "apt-get", "update", "-q")
        inside(tree, "apt-get", "install", "-y", "-q", "--no-install-recommends", *BUILD_TOOLS, *HATCHLING[suite])
        # The docs' steps: the orig tarball from the sdist, unpacked, with debian/ put in.
        make_orig = f"cd /build/checkout && {ORIG_TARBALL_ENV[suite]}debian/orig-tarball /build"
        orig = inside(tree, "sh", "-c", make_orig).strip().splitlines()[-1]
        version = re.fullmatch(r"/build/urandom-shim_(.+)\.orig\.tar\.gz", orig)
        assert version, orig
        source = f"/build/urandom-shim-{version[1]}"
        unpack = f'cd /build && tar -xzf "$1" && mv urandom_shim-{version[1]} "$2" && cp -a checkout/debian "$2"/'
        inside(tree, "sh", "-c", unpack, "sh", orig, source)
        inside(tree, "apt-get", "build-dep", "-y", "-q", source)
        log = inside(tree, "sh", "-c", f"cd {source} && dpkg-buildpackage -us -uc")
        (changes,) = (tree / "build").glob("urandom-shim_*.changes")
        lintian = inside(tree, "lintian", "-EvIL", "+pedantic", f"/build/{changes.name}", check=False)
        files = work / "files"
        files.mkdir()
        for built_file in (tree / "build").iterdir():
            if built_file.is_file():
                shutil.copy(built_file, files / built_file.name)
        # The same build again, without the tests: nocheck skips them, and the .deb is the same, byte for byte.
        nocheck_log = inside(tree, "sh", "-c", f"cd {source} && DEB_BUILD_OPTIONS=nocheck dpkg-buildpackage -us -uc -b")
    except Unavailable as exc:
        unavailable(f"the Debian package can't be built here on {suite}: {exc}")
    (deb,) = files.glob("python3-urandom-shim_*_all.deb")
    same = (tree / "build" / deb.name).read_bytes() == deb.read_bytes()
    (work / "build.log").write_text(log)
    shutil.rmtree(tree)
    return Built(files, deb, log, nocheck_log, same, lintian)


def test_the_source_package_builds_from_the_sdist_with_the_tests_run_and_counted(built: Built) -> None:
    (dsc,) = built.files.glob("urandom-shim_*.dsc")
    fields = dsc.read_text()
    assert "Format: 3.0 (quilt)" in fields and "Testsuite: autopkgtest" in fields, fields
    assert re.search(r"building urandom-shim using existing \./urandom-shim_[^ ]+\.orig\.tar\.gz", built.log)
    assert list(built.files.glob("urandom-shim_*.debian.tar.xz")), sorted(p.name for p in built.files.iterdir())
    # The in-process tests ran against the package as built, and none failed.
    summary = re.findall(r"=+ (.*) in [\d.]+s.* =+$", built.log, re.MULTILINE)
    assert summary, built.log[-3000:]
    counts = {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|failed|errors?|skipped)", summary[-1])}
    assert counts.get("passed", 0) >= 400 and not counts.get("failed") and not counts.get("error"), summary
    assert "dh_auto_test" in built.nocheck_log and not re.search(r"\d+ passed", built.nocheck_log)
    assert built.nocheck_deb_same, "the nocheck build's .deb differs from the first build's"


def test_lintian_reports_no_error_and_no_warning(suite: str, built: Built) -> None:
    tags = [line for line in built.lintian.splitlines() if re.match(r"[A-Z]: ", line)]
    assert tags or "exit status 0" in built.lintian, built.lintian
    expected = LINTIAN_EXPECTED[suite]
    problems = [tag for tag in tags if tag.startswith(("E: ", "W: ")) and not any(f" {t} " in tag for t in expected)]
    assert problems == [], built.lintian


def test_autopkgtest_passes_in_a_clean_root(suite: str, built: Built, tmp_path: Path) -> None:
    tree = fresh_tree(suite, tmp_path, "autopkgtest-root")
    shutil.copytree(built.files, tree / "build")
    try:
        inside(tree, "apt-get", "update", "-q")
        inside(tree, "apt-get", "install", "-y", "-q", "--no-install-recommends", "autopkgtest")
    except Unavailable as exc:
        unavailable(f"autopkgtest can't be installed here on {suite}: {exc}")
    (dsc,) = built.files.glob("urandom-shim_*.dsc")
    out = inside(
        tree, "autopkgtest", "--output-dir", "/tmp/autopkgtest-out", f"/build/{built.deb.name}", f"/build/{dsc.name}",
        "--", "null", check=False,
    )  # fmt: skip
    results = dict(re.findall(r"^(\S+)\s+(PASS|FAIL|SKIP|FLAKY)\b", out, re.MULTILINE))
    assert {name: results.get(name) for name in AUTOPKGTESTS} == dict.fromkeys(AUTOPKGTESTS, "PASS"), out[-4000:]
    assert out.rstrip().endswith("exit status 0"), out[-4000:]


def test_the_package_starts_the_shim_in_the_system_python_and_leaves_nothing_behind(
    suite: str, built: Built, tmp_path: Path
) -> None:
    tree = fresh_tree(suite, tmp_path, "clean-root")
    package = built.deb
    shutil.copy(package, tree / "tmp" / package.name)
    inside(tree, "dpkg", "-i", f"/tmp/{package.name}")
    contents = inside(tree, "dpkg", "-L", "python3-urandom-shim").split()
    assert PTH in contents and "/usr/bin/urandom-shim" in contents, contents
    # The internal launcher is out of PATH, and the command has its man page.
    assert "/usr/libexec/urandom-shim/urandom-shim-cli" in contents and "/usr/bin/urandom-shim-cli" not in contents
    assert "/usr/share/man/man1/urandom-shim.1.gz" in contents, contents

    # /usr/bin/python3 starts the shim: its start-up module runs, and under a simulated unready CRNG the machine's
    # policy applies to every system Python process.
    started = inside(tree, "/usr/bin/python3", "-c", "import sys; print('_urandom_shim_boot' in sys.modules)")
    assert started.strip() == "True", started
    (tree / "etc" / "urandom-shim.toml").write_text('policy = "pep522"\n')
    refused = inside(
        tree, "env", "URANDOM_SHIM_SIMULATE=unready-forever", "/usr/bin/python3", "-c", "import os; os.urandom(1)",
        check=False,
    )  # fmt: skip
    assert "BlockingIOError: system random number generator is not ready" in refused, refused
    assert "urandom-shim policy 'pep522' (from /etc/urandom-shim.toml (machine file))" in refused, refused

    status = inside(tree, "urandom-shim", "status")
    assert "active       yes, started by urandom_shim.pth" in status, status
    assert "policy                 pep522" in status and "/etc/urandom-shim.toml (machine file)" in status, status

    # apt purge takes it all away: no .pth, no start-up module, no launcher, no man page; the machine file is the
    # administrator's and stays.
    inside(tree, "apt-get", "purge", "-y", "-q", "python3-urandom-shim")
    left = inside(
        tree, "find", "/usr", "/var/lib/dpkg/info", "-name", "urandom_shim*", "-o", "-name", "urandom-shim*",
        "-o", "-name", "_urandom_shim_boot*", "-o", "-name", "python3-urandom-shim*",
    )  # fmt: skip
    assert left.strip() == "", left
    assert (tree / "etc" / "urandom-shim.toml").exists()
    after = inside(tree, "/usr/bin/python3", "-c", "import sys; print('_urandom_shim_boot' in sys.modules)")
    assert after.strip() == "False", after
