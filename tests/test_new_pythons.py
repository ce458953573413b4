"""What Python 3.14 and 3.15 changed underneath the shim, in real subprocesses of real venvs of the wheel.

- 3.15, PEP 829: how the shim starts while ``.pth`` import lines still run (3.15 to 3.17), and once they are ignored
  (3.18 on), what each costs in modules, and that a module another package's ``.pth`` line imported first is covered.
- 3.14: ``multiprocessing`` on Linux starts children with ``forkserver`` by default. ``forkserver`` and ``spawn``
  children, under each policy, in the window and after it, with a forkserver that started inside the window.
- 3.15, PEP 810: explicit lazy imports (``lazy import``, ``lazy from os import urandom``, ``-X lazy_imports=all``).

The multiprocessing tests run on every interpreter (both start methods exist since 3.4); the PEP 829 and PEP 810 tests
need 3.15 and skip, visibly, elsewhere: the matrix runs them in its ``sid-3.15`` session.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeKernel, Venv, clean_env, make_venv

POLICIES = ("pep524", "pep522", "legacy", "native")


def version(venv: Venv) -> tuple[int, int]:
    out = venv.run("-c", "import sys; print(*sys.version_info[:2])")
    major, minor = out.stdout.split()
    return int(major), int(minor)


SKIP_315 = "PEP 829 and PEP 810 are Python 3.15's; the sid-3.15 session of the matrix runs this"


def needs_315(venv: Venv) -> None:
    if version(venv) < (3, 15):
        pytest.skip(SKIP_315)


# -- PEP 829: .start files ---------------------------------------------------------------------------------------

STARTED = "import sys; print(sys._urandom_shim_boot, 'pkgutil' in sys.modules, sorted(sys.modules).__len__())"


@pytest.fixture
def own_venv(python: Path, wheel: Path, tmp_path: Path) -> Venv:
    """A venv of its own, for a test of PEP 829 that edits the installed start-up files. Every such test is 3.15's:
    on an older interpreter it skips here, before a venv it would only skip in is built (seconds each)."""
    asked = subprocess.run(
        [str(python), "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True, env=clean_env()
    )
    major, minor = asked.stdout.split()
    if (int(major), int(minor)) < (3, 15):
        pytest.skip(SKIP_315)
    return make_venv(python, tmp_path / "venv", wheel)


def test_the_start_file_does_not_match_the_pth_file(shim: Venv) -> None:
    # A .start file named like the .pth (urandom_shim.start) would switch the .pth's import line off on 3.15-3.17
    # and make every start resolve an entry point, which imports pkgutil: 1.8x the start-up of python -c pass.
    site = shim.site_packages
    starts = sorted(p.name for p in site.glob("*.start"))
    assert starts == ["urandom_shim_pep829.start"]
    assert (site / "urandom_shim_pep829.start").read_text().strip() == "_urandom_shim_boot:boot"
    assert not (site / "urandom_shim.start").exists()


def test_on_315_the_import_line_starts_the_shim_and_site_never_loads_pkgutil(shim: Venv, bare: Venv) -> None:
    needs_315(shim)
    result = shim.run("-c", STARTED)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    how, pkgutil, count = result.stdout.split()
    assert (how, pkgutil) == ("pth", "False")
    bare_count = int(bare.run("-c", "import sys; print(len(sys.modules))").stdout)
    # The start-up module, and the codec site reads a .pth file with: nothing else.
    assert int(count) <= bare_count + 2, (count, bare_count)
    status = shim.run("-m", "urandom_shim", "status")
    assert "started by urandom_shim.pth, at start-up" in status.stdout, status.stdout


def test_where_import_lines_are_ignored_the_start_file_starts_the_shim(own_venv: Venv) -> None:
    """Python 3.18 ignores import lines in .pth files (PEP 829): site then reads urandom_shim.pth as one comment
    line would read. That is what this venv's .pth holds here, so only the .start entry point can start the shim."""
    needs_315(own_venv)
    pth = own_venv.site_packages / "urandom_shim.pth"
    pth.write_text("# what Python 3.18 reads of an import line: nothing\n")
    result = own_venv.run("-c", STARTED)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert result.stdout.split()[:2] == ["start", "True"]  # site imports pkgutil to resolve it: the price, there
    status = own_venv.run("-m", "urandom_shim", "status")
    assert "started by urandom_shim_pep829.start (PEP 829), at start-up" in status.stdout, status.stdout
    assert "urandom_shim_pep829.start" in status.stdout.split("installed", 1)[1].splitlines()[0], status.stdout
    # Started, it works: pep522 in a simulated window raises.
    code = "import os\ntry:\n    os.urandom(8)\nexcept BlockingIOError:\n    print('raised')\n"
    env = {"URANDOM_POLICY": "pep522", "URANDOM_SHIM_SIMULATE": "unready-forever"}
    assert own_venv.run("-c", code, env=env).stdout == "raised\n"


OTHER_PTH = {
    # Sorts before urandom_shim.pth: site runs its import line first, before the shim has started.
    "aaa_early.pth": "import aaa_early\n",
    "aaa_early.py": "from os import urandom as early_urandom\nimport random as early_random\n",
}


@pytest.mark.parametrize("route", ["import line", "start file"])
def test_a_module_another_pth_imported_first_is_covered(own_venv: Venv, route: str) -> None:
    needs_315(own_venv)
    site = own_venv.site_packages
    for name, text in OTHER_PTH.items():
        (site / name).write_text(text)
    if route == "start file":  # PEP 829 runs every .start entry point after all .pth import lines
        (site / "urandom_shim.pth").write_text("# import lines ignored\n")
    code = (
        "import sys, aaa_early\n"
        "print(sys._urandom_shim_boot)\n"
        "try:\n    aaa_early.early_urandom(8)\nexcept BlockingIOError:\n    print('raised')\n"
    )
    env = {"URANDOM_POLICY": "pep522", "URANDOM_SHIM_SIMULATE": "unready-forever"}
    result = own_venv.run("-c", code, env=env)
    assert result.stdout.split() == ["pth" if route == "import line" else "start", "raised"], result.stderr


def test_site_addsitedir_later_with_an_empty_path_runs_cleanly(shim: Venv) -> None:
    """pip's build isolation empties sys.path and runs site.addsitedir() on the venv's site-packages: a second batch,
    where pkgutil can't be imported. Our entry point must not be left in it (pip failed to build any sdist, on 3.15,
    with 'Error resolving entry point _urandom_shim_boot:boot')."""
    needs_315(shim)
    code = (
        "import site, sys\n"
        "saved, sys.path = sys.path[:], []\n"
        f"site.addsitedir({str(shim.site_packages)!r}, known_paths=set())\n"
        "sys.path = saved\n"
        "print(sys._urandom_shim_boot, 'pkgutil' in sys.modules)\n"
    )
    result = shim.run("-c", code)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert result.stdout.split() == ["pth", "False"]


def test_the_start_file_alone_costs_pkgutil_and_the_import_line_does_not(own_venv: Venv) -> None:
    """The measurement behind the choice (docs/explanation/design-decisions.md), as modules loaded at start-up."""
    needs_315(own_venv)
    site = own_venv.site_packages
    both = int(own_venv.run("-c", "import sys; print(len(sys.modules))").stdout)
    pth = (site / "urandom_shim.pth").read_text()
    (site / "urandom_shim.pth").write_text("# ignored\n")
    start_only = int(own_venv.run("-c", "import sys; print(len(sys.modules))").stdout)
    (site / "urandom_shim.pth").write_text(pth)
    assert start_only >= both + 10, (both, start_only)


# -- multiprocessing: forkserver (3.14's default on Linux) and spawn ----------------------------------------------

CHILDREN = """
import os, sys, json, time

def child(out):
    try:
        data = os.urandom(16)
    except BlockingIOError:
        result = "raised"
    else:
        result = "weak" if b"WEAK" in data else "strong"
    with open(out, "w") as f:
        f.write(json.dumps([result, time.monotonic()]))

def run(ctx, out):
    p = ctx.Process(target=child, args=(out,))
    try:
        p.start()
    except Exception as exc:  # under pep522, the forkserver itself may not get started in the window
        return [None, type(exc).__name__, None]
    p.join(60)
    try:
        with open(out) as f:
            return json.load(f) + [p.exitcode]
    except OSError:
        return [None, None, p.exitcode]  # the child died before it wrote

if __name__ == "__main__":
    method, policy, flag, tmp = sys.argv[1:5]
    import multiprocessing as mp  # in the window, under legacy: its authkey is best-effort
    os.environ["URANDOM_POLICY"] = policy  # what the children start under
    ctx = mp.get_context(method)
    first = run(ctx, tmp + "/first")  # starts the forkserver, in the window
    print(json.dumps({"first": first}), flush=True)
    sys.stdin.readline()  # the test ends the window, then says so
    second = run(ctx, tmp + "/second")  # from the same forkserver, after the window
    print(json.dumps({"second": second}), flush=True)
"""


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_multiprocessing_children_in_and_after_the_window(
    shim: Venv, fake_kernel: FakeKernel, tmp_path: Path, method: str, policy: str
) -> None:
    flag = tmp_path / "unready"
    flag.touch()
    env = {**fake_kernel.env(flag), "URANDOM_POLICY": "legacy"}
    script = tmp_path / "children.py"  # a file: spawn and forkserver children import the target from __main__
    script.write_text(CHILDREN)
    proc = subprocess.Popen(
        [str(shim.python), str(script), method, policy, str(flag), str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(env),
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        if policy in ("pep524", "native"):
            time.sleep(1.0)
            ended = time.monotonic()
            flag.unlink()  # a child that waits can only finish after this
        first: Any = None
        line = proc.stdout.readline()
        first = json.loads(line)["first"] if line else None
        if flag.exists():
            ended = time.monotonic()
            flag.unlink()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=90)
    finally:
        proc.kill()
    assert first is not None, err
    second = json.loads(out.splitlines()[-1])["second"]
    result, when, exitcode = first
    print(first, second, err, sep="\n")  # shown when the test fails
    if policy in ("pep524", "native"):
        assert (result, exitcode) == ("strong", 0), err
        assert when >= ended, "a child in the window returned before the CRNG was ready"
    elif policy == "pep522":
        # Never bytes in the window: os.urandom raises, or the child's (or the forkserver's) own
        # `import multiprocessing` does, and says why.
        assert result in ("raised", None), err
        assert result == "raised" or (exitcode != 0 and "BlockingIOError" in err), err
    else:  # legacy: best-effort bytes at once, and it says so
        assert (result, exitcode) == ("weak", 0), err
        assert "best-effort" in err, err
    # After the window, every policy gives strong bytes at once, even from a forkserver that started inside it...
    if policy == "pep522" and method == "forkserver" and isinstance(first[1], str):
        # ... except where the forkserver itself raised in the window and died (it draws an authentication key when
        # it starts): CPython 3.14 then starts no other one for this parent, which can't start forkserver children
        # at all. The compatibility page says so, and how to avoid it (wait_for_system_rng() before the first one).
        assert second[0] == "strong" or second[1] in ("ConnectionRefusedError", "ConnectionResetError", "EOFError")
        assert "BlockingIOError" in err, err
    else:
        assert second[0] == "strong" and second[2] == 0, (second, err)


# -- PEP 810: explicit lazy imports -------------------------------------------------------------------------------

LAZY = {
    "lazy from os import urandom": (
        "lazy from os import urandom\ntry:\n    urandom(8)\nexcept BlockingIOError:\n    print('raised')\n"
    ),
    "lazy import secrets": "lazy import secrets\nprint(secrets.wait_for_system_rng.__name__)\n",
}


@pytest.mark.parametrize("flags", [(), ("-X", "lazy_imports=all")], ids=["lazy statements", "lazy_imports=all"])
def test_lazy_imports_are_covered(shim: Venv, flags: tuple[str, ...]) -> None:
    needs_315(shim)
    env = {"URANDOM_POLICY": "pep522", "URANDOM_SHIM_SIMULATE": "unready-forever"}
    result = shim.run("-c", LAZY["lazy from os import urandom"], env=env, flags=flags)
    assert result.stdout == "raised\n", result.stderr
    result = shim.run("-c", LAZY["lazy import secrets"], env=env, flags=flags)
    assert result.stdout == "wait_for_system_rng\n", result.stderr
    # A lazy name resolves when first used, to whatever os.urandom is then: the policy's, in the window.
    code = (
        "lazy from os import urandom as late\nlazy import os\n"
        "try:\n    late(8)\nexcept BlockingIOError:\n    print('raised')\n"
        "try:\n    os.urandom(8)\nexcept BlockingIOError:\n    print('raised')\n"
    )
    result = shim.run("-c", code, env=env, flags=flags)
    assert result.stdout.split() == ["raised", "raised"], result.stderr


def test_lazy_imports_all_keeps_the_ready_path_lean(shim: Venv) -> None:
    needs_315(shim)
    result = shim.run("-X", "lazy_imports=all", "-c", STARTED, env={"URANDOM_POLICY": "pep522"})
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert result.stdout.split()[:2] == ["pth", "False"]


def test_lazy_import_random_is_seeded_by_the_policy(shim: Venv, fake_kernel: FakeKernel, tmp_path: Path) -> None:
    """random's hidden instance is seeded when the module really loads, not when the statement runs."""
    needs_315(shim)
    flag = tmp_path / "unready"
    flag.touch()
    code = "import sys\nlazy import random\nprint('random' in sys.modules)\nprint(random.getrandbits(8) >= 0)\n"
    for flags in ((), ("-X", "lazy_imports=all")):
        result = shim.run("-c", code, env={**fake_kernel.env(flag), "URANDOM_POLICY": "legacy"}, flags=flags)
        assert result.stdout.split() == ["False", "True"], result.stderr
        assert "random" in result.stderr and "best-effort" in result.stderr, result.stderr
