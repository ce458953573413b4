"""The Debian package (``debian/``): built with the distribution's own tools, installed into a clean Debian root
file system, and checked there.

The build runs in a copy of a real-boot base system (``boot_image.base_tree``), in a chroot on this machine's kernel:
its build dependencies are installed there with apt, then ``dpkg-buildpackage -us -uc -b``. On Debian 13 (trixie, in
every run) everything comes from the release itself. On Debian 12 (with ``URANDOM_SHIM_BOOT_ALL=1``) hatchling comes
from bookworm-backports, and its list of classifiers (trove-classifiers 2023.4) is older than the project's, so the
build is told not to check them (``HATCH_METADATA_CLASSIFIERS_NO_VERIFY=1``, in the build's environment: debian/rules
has no such workaround). The package is installed with ``dpkg -i`` into another, untouched copy, where
``/usr/bin/python3`` must start the shim and ``urandom-shim status`` must work; ``apt-get remove`` must then leave no
``.pth`` behind. Like the boots, it runs in the matrix session of Debian's ``/usr/bin/python3`` only, and with
``URANDOM_SHIM_BOOT=0`` not at all.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import boot_image
import pytest
from test_real_boot import every_boot, in_this_session

from debian import Unavailable, run, unavailable

pytestmark = pytest.mark.boot

ROOT = Path(__file__).resolve().parents[2]
#: What the build needs beyond the base system: debhelper and dh-python with the pyproject plugin; build-essential,
#: which dpkg-buildpackage checks for every package; hatchling >= 1.24 (debian/control).
BUILD_DEPENDS = ("build-essential", "debhelper", "dh-python", "pybuild-plugin-pyproject", "python3-all")
#: Per suite: where hatchling comes from, and what the build's environment needs.
HATCHLING = {"trixie": "python3-hatchling", "bookworm": "python3-hatchling/bookworm-backports"}
BUILD_ENV = {"trixie": (), "bookworm": ("HATCH_METADATA_CLASSIFIERS_NO_VERIFY=1",)}
#: Debian 13 in every run; Debian 12 with URANDOM_SHIM_BOOT_ALL=1.
IN_EVERY_RUN = {"trixie"}
#: Left out of the source handed to the build: what a clean clone does not have.
NOT_SOURCE = (".git", ".venv*", ".nox", "docs/_build", "*.egg-info", "__pycache__", ".pytest_cache", "dist")
PTH = "/usr/lib/python3/dist-packages/urandom_shim.pth"


def inside(tree: Path, *command: str, check: bool = True) -> str:
    """A command in ``tree`` (a chroot), with apt non-interactive; its output, stderr included."""
    script = 'DEBIAN_FRONTEND=noninteractive; export DEBIAN_FRONTEND; "$@" 2>&1'
    if not check:
        script += '; echo "exit status $?"'
    return boot_image.chroot(tree, "sh", "-c", script, "sh", *command)


def fresh_tree(suite: str, work: Path, name: str) -> Path:
    tree = work / name
    run("cp", "-a", "--reflink=auto", str(boot_image.base_tree(boot_image.SUITES[suite])), str(tree))
    return tree


@pytest.fixture(scope="module", params=sorted(HATCHLING, reverse=True))
def suite(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def package(suite: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The .deb, built from this checkout with dpkg-buildpackage in a chroot of ``suite``."""
    if os.environ.get("URANDOM_SHIM_BOOT", "") == "0":
        pytest.skip("URANDOM_SHIM_BOOT=0: the Debian package test is turned off")
    if not in_this_session():
        pytest.skip("the Debian package is built once, in the session of Debian's /usr/bin/python3")
    if suite not in IN_EVERY_RUN and not every_boot():
        pytest.skip(f"{suite} is not in every run: URANDOM_SHIM_BOOT_ALL=1 builds the package there too")
    work = tmp_path_factory.mktemp(f"deb-{suite}")
    try:
        tree = fresh_tree(suite, work, "build-root")
        shutil.copy("/etc/resolv.conf", tree / "etc" / "resolv.conf")  # apt inside fetches from Debian's mirrors
        source = tree / "build" / "urandom-shim"
        source.mkdir(parents=True)
        excludes = [f"--exclude=./{pattern}" for pattern in NOT_SOURCE]
        run("sh", "-c", f'tar -C "$1" {" ".join(excludes)} -cf - . | tar -C "$2" -xf -', "sh", str(ROOT), str(source))
        inside(tree, "apt-get", "update", "-q")
        inside(tree, "apt-get", "install", "-y", "-q", "--no-install-recommends", *BUILD_DEPENDS, HATCHLING[suite])
        build = "cd /build/urandom-shim && dpkg-buildpackage -us -uc -b"
        log = inside(tree, "env", *BUILD_ENV[suite], "sh", "-c", build)
    except Unavailable as exc:
        unavailable(f"the Debian package can't be built here on {suite}: {exc}")
    (built,) = (tree / "build").glob("python3-urandom-shim_*_all.deb")
    kept = work / built.name
    shutil.copy(built, kept)
    (work / "build.log").write_text(log)
    shutil.rmtree(tree)
    return kept


def test_the_package_starts_the_shim_in_the_system_python_and_leaves_nothing_behind(
    suite: str, package: Path, tmp_path: Path
) -> None:
    tree = fresh_tree(suite, tmp_path, "clean-root")
    shutil.copy(package, tree / "tmp" / package.name)
    inside(tree, "dpkg", "-i", f"/tmp/{package.name}")
    contents = inside(tree, "dpkg", "-L", "python3-urandom-shim").split()
    assert PTH in contents and "/usr/bin/urandom-shim" in contents and "/usr/bin/urandom-shim-cli" in contents

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

    # apt remove takes it all away: no .pth, no start-up module, no package.
    inside(tree, "apt-get", "remove", "-y", "-q", "python3-urandom-shim")
    left = inside(tree, "find", "/usr", "-name", "urandom_shim*", "-o", "-name", "_urandom_shim_boot*")
    assert left.strip() == "", left
    after = inside(tree, "/usr/bin/python3", "-c", "import sys; print('_urandom_shim_boot' in sys.modules)")
    assert after.strip() == "False", after
