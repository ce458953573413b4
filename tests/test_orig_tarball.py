"""``debian/orig-tarball``'s own checks: it links the sdist as the orig tarball, never replaces an orig of other bytes,
reads the upstream version out of any Debian version (an epoch, a revision), says which side to fix when the
changelog and the sdist disagree, and leaves nothing behind when a signal stops it.

The sdist itself is built by ``python -m build`` in ``tests/run`` and in the Debian package test
(``tests/boot/test_debian_package.py``). Here ``PYTHON`` names a builder that writes a given tarball where
``build --outdir`` would, so each check runs in a fraction of a second and on any interpreter of the matrix.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ROOT

SCRIPT = ROOT / "debian" / "orig-tarball"

BUILDER = """#!/bin/sh
# Called as: PYTHON -m build --sdist --no-isolation --outdir DIR .
while [ "$#" -gt 0 ]; do
    [ "$1" = --outdir ] && out=$2
    shift
done
[ -z "${BUILD_TEMP:-}" ] || mktemp >/dev/null  # as hatchling, which writes the sdist to a temporary name first
[ -z "${BUILD_SLEEP:-}" ] || sleep "$BUILD_SLEEP"
cp "$FAKE_SDIST" "$out/"
"""

pytestmark = pytest.mark.skipif(not SCRIPT.is_file(), reason="debian/ is not in the sdist; this runs from a checkout")


def checkout(tmp_path: Path, changelog_version: str) -> Path:
    """The files the script reads, as in the top of a checkout, with the newest changelog entry at that version."""
    top = tmp_path / "checkout"
    (top / "debian").mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", top / "pyproject.toml")
    shutil.copy(SCRIPT, top / "debian" / "orig-tarball")
    entry = f"urandom-shim ({changelog_version}) unstable; urgency=medium\n\n  * A release.\n"
    (top / "debian" / "changelog").write_text(entry, encoding="utf-8")
    return top


def sdist(tmp_path: Path, version: str, content: bytes = b"the sdist's bytes") -> Path:
    path = tmp_path / "sdists" / version / f"urandom_shim-{version}.tar.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def env_for(tmp_path: Path, tarball: Path, **extra: str) -> dict[str, str]:
    builder = tmp_path / "builder"
    builder.write_text(BUILDER, encoding="utf-8")
    builder.chmod(0o755)
    scratch = tmp_path / "tmp"
    scratch.mkdir(exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHON": str(builder), "FAKE_SDIST": str(tarball)}
    return {**env, "TMPDIR": str(scratch), **extra}


def run(top: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", "debian/orig-tarball", *args], cwd=top, env=env, capture_output=True, text=True, timeout=60
    )


def test_links_the_sdist_as_the_orig_and_a_second_run_of_the_same_bytes_is_fine(tmp_path: Path) -> None:
    top = checkout(tmp_path, "0.1.0-1")
    tarball = sdist(tmp_path, "0.1.0")
    out = tmp_path / "out"
    env = env_for(tmp_path, tarball)
    for _ in range(2):
        done = run(top, env, str(out))
        assert done.returncode == 0, done.stderr
        orig = out / "urandom-shim_0.1.0.orig.tar.gz"
        assert done.stdout.strip() == str(orig)
        assert orig.read_bytes() == tarball.read_bytes()
        assert orig.stat().st_ino == (out / tarball.name).stat().st_ino  # one file, two names
    assert {p.name for p in out.iterdir()} == {tarball.name, "urandom-shim_0.1.0.orig.tar.gz"}
    assert not list((tmp_path / "tmp").iterdir()), "the work directory was left behind"


@pytest.mark.parametrize("name", ["urandom-shim_0.1.0.orig.tar.gz", "urandom_shim-0.1.0.tar.gz"], ids=["orig", "sdist"])
def test_an_orig_or_sdist_of_other_bytes_is_left_as_it_is(tmp_path: Path, name: str) -> None:
    """The orig a version was uploaded with, or the sdist fetched from PyPI (uscan), is never replaced."""
    top = checkout(tmp_path, "0.1.0-1")
    out = tmp_path / "out"
    out.mkdir()
    there = out / name
    there.write_bytes(b"the tarball 0.1.0-1 was uploaded with")
    done = run(top, env_for(tmp_path, sdist(tmp_path, "0.1.0")), str(out))
    assert done.returncode == 1
    assert done.stderr == (
        f"debian/orig-tarball: {there} exists and is not the sdist built now; left as it is (remove it to replace it)\n"
    )
    assert there.read_bytes() == b"the tarball 0.1.0-1 was uploaded with"
    assert [p.name for p in out.iterdir()] == [name]


@pytest.mark.parametrize("changelog_version", ["0.1.0-1", "1:0.1.0-1", "0.1.0-1~bpo12+1", "2:0.1.0-0.1"])
def test_the_orig_is_named_by_the_upstream_version_alone(tmp_path: Path, changelog_version: str) -> None:
    top = checkout(tmp_path, changelog_version)
    done = run(top, env_for(tmp_path, sdist(tmp_path, "0.1.0")), str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "urandom-shim_0.1.0.orig.tar.gz").is_file()


BEHIND = ("0.0.9-1", "0.0.9", "add a changelog entry for it (dch -v 0.1.0-1)")
#: dch refuses a version below the newest entry's, and 0.1.0-1 is below 1:0.0.9-1: the entry asked for keeps the epoch.
BEHIND_WITH_EPOCH = ("1:0.0.9-1", "0.0.9", "add a changelog entry for it (dch -v 1:0.1.0-1)")
AHEAD = (
    "1:0.2.0-1",
    "0.2.0",
    "the changelog is ahead: give the project that version (urandom_shim/__init__.py), or build from the release "
    "the changelog names",
)
#: Without dpkg to compare them, the message gives both fixes.
EITHER = (
    "0.2.0-1",
    "0.2.0",
    "if the project moved on, add a changelog entry for it (dch -v 0.1.0-1); if the changelog is ahead, give the "
    "project that version (urandom_shim/__init__.py), or build from the release the changelog names",
)
NO_DPKG = pytest.mark.skipif(shutil.which("dpkg") is None, reason="dpkg compares the two versions; none here")


@pytest.mark.parametrize(
    ("changelog_version", "packaged", "fix"),
    [
        pytest.param(*BEHIND, id="behind"),
        pytest.param(*BEHIND_WITH_EPOCH, id="behind-with-epoch"),
        pytest.param(*AHEAD, id="ahead", marks=NO_DPKG),
    ],
)
def test_a_version_mismatch_names_the_side_to_fix(
    tmp_path: Path, changelog_version: str, packaged: str, fix: str
) -> None:
    top = checkout(tmp_path, changelog_version)
    done = run(top, env_for(tmp_path, sdist(tmp_path, "0.1.0")), str(tmp_path / "out"))
    assert done.returncode == 1
    assert done.stderr == (
        f"debian/orig-tarball: the sdist is version 0.1.0, but debian/changelog's newest entry packages {packaged}: "
        f"{fix}\n"
    )
    assert not (tmp_path / "out").exists()


def test_without_dpkg_a_version_mismatch_gives_both_fixes(tmp_path: Path) -> None:
    tools = tmp_path / "tools"  # every command the script and the builder run, and no dpkg
    tools.mkdir()
    for tool in ("sh", "mktemp", "rm", "sed", "cat", "cmp", "mkdir", "cp", "chmod", "mv", "ln", "sleep"):
        found = shutil.which(tool)
        assert found, tool
        (tools / tool).symlink_to(found)
    top = checkout(tmp_path, EITHER[0])
    env = {**env_for(tmp_path, sdist(tmp_path, "0.1.0")), "PATH": str(tools)}
    done = run(top, env, str(tmp_path / "out"))
    assert done.returncode == 1
    assert done.stderr == (
        f"debian/orig-tarball: the sdist is version 0.1.0, but debian/changelog's newest entry packages {EITHER[1]}: "
        f"{EITHER[2]}\n"
    )


def test_outside_a_checkout_it_says_where_to_run_it(tmp_path: Path) -> None:
    done = subprocess.run(
        ["sh", str(SCRIPT)], cwd=tmp_path, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (
        2,
        "debian/orig-tarball: run it from the top of a urandom-shim checkout\n",
    )


def sleeping(session: int) -> bool:
    """Whether a ``sleep`` process runs in the session ``session`` (the fake builder's, while it builds)."""
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
        except (OSError, ValueError):
            continue  # not a process, or one that just ended
        comm, _, rest = stat.partition("(")[2].rpartition(")")
        fields = rest.split()
        if comm == "sleep" and len(fields) > 4 and fields[3] == str(session):
            return True
    return False


@pytest.mark.parametrize(
    "signum",
    # 16 (SIGSTKFLT), which dash has no name for; 32 and 33, which glibc keeps for itself, can't be caught at all.
    [signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGUSR1, signal.SIGALRM, signal.SIGPIPE,
     16, signal.SIGRTMIN],
    ids=lambda signum: signal.Signals(signum).name if signum in signal.Signals._value2member_map_ else str(signum),
)  # fmt: skip
def test_a_signal_leaves_no_work_directory_and_no_orig(tmp_path: Path, signum: int) -> None:
    top = checkout(tmp_path, "0.1.0-1")
    env = env_for(tmp_path, sdist(tmp_path, "0.1.0"), BUILD_SLEEP="30", BUILD_TEMP="1")
    out = tmp_path / "out"
    # Its own process group, signalled whole, as a terminal's ^C or a service manager's stop does: a shell runs its
    # trap only once the command it waits for has ended. With every signal at its default: a shell can't trap a
    # signal ignored when it started, and a test runner under nohup (as CI may be) ignores HUP.
    command = ["env", "--default-signal", "sh", "debian/orig-tarball", str(out)]
    script = subprocess.Popen(command, cwd=top, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        # Until the builder has made its temporary file and then sleeps. Signalled between the two, a builder that
        # has caught the signal (dash does, to act on it once its foreground command ends) starts a sleep that never
        # got it, and the whole run then waits out the sleep (seen under load): the script's trap is not what that
        # tests. A real builder is one process.
        while not (list((tmp_path / "tmp").glob("*/tmp.*")) and sleeping(script.pid)) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert list((tmp_path / "tmp").iterdir()), "the script never made its work directory"
        assert sleeping(script.pid), "the builder never began its sleep"
        os.killpg(script.pid, signum)
        assert script.wait(timeout=30) == 128 + signum
    finally:
        if script.poll() is None:
            os.killpg(script.pid, signal.SIGKILL)
            script.wait()
    assert not list((tmp_path / "tmp").iterdir()), "the work directory was left behind"
    assert not out.exists()


def test_names_planted_in_a_shared_directory_are_never_written_through(tmp_path: Path) -> None:
    """In a directory others can write (``/tmp``), a symlink planted under the sdist's name, or under the name a
    temporary copy would take, must not make the script write to the file it points at."""
    top = checkout(tmp_path, "0.1.0-1")
    out = tmp_path / "shared"
    out.mkdir()
    tarball = sdist(tmp_path, "0.1.0")
    victim = tmp_path / "victim"
    victim.write_bytes(tarball.read_bytes())  # the same bytes, or the script refuses to replace the name (above)
    victim.chmod(0o444)
    (out / "urandom_shim-0.1.0.tar.gz").symlink_to(victim)
    other = tmp_path / "other-victim"
    other.write_bytes(b"another user's file")
    script = subprocess.Popen(
        ["sh", "debian/orig-tarball", str(out)], cwd=top, env=env_for(tmp_path, tarball, BUILD_SLEEP="1"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    # While it builds, the name a copy made as DIR/.SDIST.PID would take (what the script once used).
    (out / f".urandom_shim-0.1.0.tar.gz.{script.pid}").symlink_to(other)
    stdout, stderr = script.communicate(timeout=60)
    assert script.returncode == 0, stderr
    assert other.read_bytes() == b"another user's file"
    assert victim.read_bytes() == tarball.read_bytes() and (victim.stat().st_mode & 0o777) == 0o444
    written = out / "urandom_shim-0.1.0.tar.gz"
    assert not written.is_symlink() and written.read_bytes() == tarball.read_bytes()
    assert (written.stat().st_mode & 0o777) == 0o644
    assert stdout.strip() == str(out / "urandom-shim_0.1.0.orig.tar.gz")


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("urandom_shim-0.1.0.tar.gz", "symlink to a directory"),
        ("urandom-shim_0.1.0.orig.tar.gz", "symlink to a directory"),
        ("urandom_shim-0.1.0.tar.gz", "directory"),
        ("urandom-shim_0.1.0.orig.tar.gz", "fifo"),
    ],
)
def test_a_name_planted_as_no_file_is_left_as_it_is_and_nothing_goes_into_it(
    tmp_path: Path, name: str, kind: str
) -> None:
    """A symlink to a directory under the sdist's name once had mv move the copy into that directory, and ln link
    the orig name to the symlink (the orig became whatever the planter later put there); a FIFO hung cmp."""
    top = checkout(tmp_path, "0.1.0-1")
    out = tmp_path / "shared"
    out.mkdir()
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    planted = out / name
    if kind == "symlink to a directory":
        planted.symlink_to(theirs)
    elif kind == "directory":
        planted.mkdir()
    else:
        os.mkfifo(planted)
    done = run(top, env_for(tmp_path, sdist(tmp_path, "0.1.0")), str(out))
    assert (done.returncode, done.stderr) == (
        1,
        f"debian/orig-tarball: {planted} exists and is not a file; left as it is (remove it to make the orig tarball)\n",
    )
    assert [p.name for p in out.iterdir()] == [name]
    assert not list(theirs.iterdir()) and (kind != "directory" or not list(planted.iterdir()))


@pytest.mark.skipif(os.geteuid() != 0, reason="makes a directory of another user's (nobody's)")
@pytest.mark.parametrize("how", ["directory", "symlink"])
def test_a_dir_in_a_sticky_directory_that_another_user_made_first_is_refused(tmp_path: Path, how: str) -> None:
    """`debian/orig-tarball /tmp/debs`: anyone could have made /tmp/debs (or a link there to a directory of theirs)
    first, and swap the tarballs in it for theirs after the script put them there."""
    top = checkout(tmp_path, "0.1.0-1")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    out = shared / "debs"
    if how == "directory":
        theirs.rename(out)
    else:
        out.symlink_to(theirs)
        os.lchown(out, 65534, 65534)
    done = run(top, env_for(tmp_path, sdist(tmp_path, "0.1.0")), str(out) + "/")
    assert done.returncode == 1
    assert "another user's" in done.stderr
    assert list(out.iterdir()) == []


def test_a_reader_that_left_leaves_no_work_directory_and_both_tarballs(tmp_path: Path) -> None:
    """`debian/orig-tarball DIR | head -0`: the last line's write meets a closed pipe, and SIGPIPE ended the shell
    without its EXIT trap, leaving the work directory in TMPDIR; then (`| true`) dash said `echo: I/O error` and the
    script exited 141, though both tarballs were made. The line is what it was for: the tarballs are the result."""
    top = checkout(tmp_path, "0.1.0-1")
    command = ["env", "--default-signal", "sh", "debian/orig-tarball", str(tmp_path / "out")]
    script = subprocess.Popen(command, cwd=top, env=env_for(tmp_path, sdist(tmp_path, "0.1.0")),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert script.stdout is not None and script.stderr is not None
    script.stdout.close()  # the reader leaves before the script writes its line
    said = script.stderr.read()
    assert (script.wait(timeout=60), said) == (0, b"")
    assert not list((tmp_path / "tmp").iterdir()), "the work directory was left behind"
    assert (tmp_path / "out" / "urandom-shim_0.1.0.orig.tar.gz").is_file()


def _refused(tmp_path: Path, out: Path, says: str) -> None:
    top = checkout(tmp_path, "0.1.0-1")
    done = run(top, env_for(tmp_path, sdist(tmp_path, "0.1.0")), str(out))
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    assert done.stderr.startswith(f"debian/orig-tarball: {out} is ") and says in done.stderr, done.stderr
    assert done.stderr.endswith("; give a directory of your own\n"), done.stderr
    assert not [p for p in out.iterdir() if p.name.endswith(".tar.gz")]


@pytest.mark.skipif(os.geteuid() != 0, reason="makes a directory of another user's (nobody's)")
def test_a_dir_anywhere_below_a_directory_another_user_owns_is_refused(tmp_path: Path) -> None:
    """`/srv/debs/mine/out`, where `/srv/debs` is another user's: they may move `mine` away and put a directory of
    theirs, with their own orig tarball, in its place. Only DIR's parent was checked, and only in a sticky
    directory."""
    theirs = tmp_path / "debs"
    theirs.mkdir()
    out = theirs / "mine" / "out"
    out.mkdir(parents=True)  # root's, inside theirs
    os.chown(theirs, 65534, 65534)
    _refused(tmp_path, out, f"below {theirs}, another user's (uid 65534)")


@pytest.mark.parametrize("mode", [0o777, 0o773])
def test_a_dir_below_a_directory_others_may_write_to_is_refused(tmp_path: Path, mode: int) -> None:
    """A directory anyone may write to, without the sticky bit: anyone may rename what is in it."""
    open_ = tmp_path / "open"
    out = open_ / "out"
    out.mkdir(parents=True)
    open_.chmod(mode)
    _refused(tmp_path, out, f"below {open_}, which other users may write to")


@pytest.mark.skipif(os.geteuid() != 0, reason="makes a group directory of another user's group (nogroup)")
def test_a_dir_below_a_directory_of_a_group_others_are_in_is_refused(tmp_path: Path) -> None:
    grouped = tmp_path / "grouped"
    out = grouped / "out"
    out.mkdir(parents=True)
    os.chown(grouped, 0, 65534)
    grouped.chmod(0o775)
    _refused(tmp_path, out, f"below {grouped}, which other users may write to")


@pytest.mark.skipif(os.geteuid() != 0, reason="makes a symlink of another user's (nobody's)")
def test_a_dir_reached_through_another_users_symlink_in_a_shared_directory_is_refused(tmp_path: Path) -> None:
    """`/tmp/link/out` where `/tmp/link` is another user's symlink to a directory of ours: they may point it
    elsewhere at any time."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    mine = tmp_path / "mine"
    (mine / "out").mkdir(parents=True)
    link = shared / "link"
    link.symlink_to(mine)
    os.lchown(link, 65534, 65534)
    # DIR is below their link, not theirs: the line says so (it said "DIR is another user's").
    says = f"below another user's directory: {link}, in {shared} where anyone may write, is theirs"
    _refused(tmp_path, link / "out", says)


def test_a_dir_of_its_own_in_a_sticky_directory_is_fine(tmp_path: Path) -> None:
    top = checkout(tmp_path, "0.1.0-1")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    out = shared / "mine" / "out"
    done = run(top, env_for(tmp_path, sdist(tmp_path, "0.1.0")), str(out))
    assert done.returncode == 0, done.stderr
    assert (out / "urandom-shim_0.1.0.orig.tar.gz").is_file()


@pytest.mark.skipif(os.geteuid() != 0, reason="makes a symlink of another user's (nobody's)")
def test_a_dir_through_another_users_link_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    """`orig-tarball /tmp/theirs/link/a/b`, where another user's link points at a directory of ours (as root: /etc):
    `mkdir -p` made `a/b` there before the path was checked, then refused."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    theirs = shared / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    target = tmp_path / "etc"
    target.mkdir()
    (theirs / "link").symlink_to(target)
    os.lchown(theirs / "link", 65534, 65534)
    top = checkout(tmp_path, "0.1.0-1")
    done = run(top, env_for(tmp_path, sdist(tmp_path, "0.1.0")), str(theirs / "link" / "a" / "b"))
    assert done.returncode == 1 and "another user's" in done.stderr, done.stderr
    assert list(target.iterdir()) == [], "a directory was made where another user's link points"


def test_a_dir_below_a_directory_with_an_access_control_list_is_refused(tmp_path: Path) -> None:
    """A directory whose POSIX ACL lets another user write (`setfacl -m u:OTHER:rwx`) shows mode 775 with the
    caller's own group, and passed. Any directory with an ACL is refused (written here as the raw attribute, which
    is what setfacl writes)."""
    import struct

    shared = tmp_path / "acl"
    out = shared / "out"
    out.mkdir(parents=True)
    undefined = 0xFFFFFFFF  # user::rwx user:65534:rwx group::r-x mask::rwx other::r-x
    entries = [(0x01, 7, undefined), (0x02, 7, 65534), (0x04, 5, undefined), (0x10, 7, undefined), (0x20, 5, undefined)]
    try:
        os.setxattr(shared, "system.posix_acl_access",
                    struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *entry) for entry in entries))  # fmt: skip
    except OSError as exc:
        pytest.skip(f"this file system takes no ACL: {exc}")
    _refused(tmp_path, out, f"below {shared}, which has an access control list: other users may write to it")


def test_a_relative_dir_is_below_the_current_directory_whatever_cdpath_says(tmp_path: Path) -> None:
    """With CDPATH set, `cd` went to CDPATH's DIR and printed it into the path the script checked."""
    top = checkout(tmp_path, "0.1.0-1")
    elsewhere = tmp_path / "cdpath"
    (elsewhere / "out").mkdir(parents=True)
    done = run(top, env_for(tmp_path, sdist(tmp_path, "0.1.0"), CDPATH=str(elsewhere)), "out")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "out/urandom-shim_0.1.0.orig.tar.gz"
    assert (top / "out" / "urandom-shim_0.1.0.orig.tar.gz").is_file()
    assert list((elsewhere / "out").iterdir()) == []
