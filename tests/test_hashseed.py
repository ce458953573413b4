"""`legacy` that really never blocks: a start under `urandom-shim run` that never waits for the kernel.

On the fake kernel (``tests/fakekernel.c``) with ``FAKE_KERNEL_URANDOM_WAITS=1``, opening ``/dev/urandom`` waits for the
CRNG, as a read of it does on Linux 5.18+: so an interpreter started without ``PYTHONHASHSEED`` waits before its first
line, exactly as on a real unready machine, and a test can tell a start that waited from one that did not.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from conftest import FakeKernel, Venv, clean_env

#: A program that reports its own start: the hash seed it started with (from the environment it was exec'd with,
#: /proc/self/environ: the shim takes a seed of its own out of os.environ at once), whether hashing is randomised,
#: what is left in os.environ for its children, and, with CHILD set, the same for a child it starts.
REPORT = """\
import json, os, subprocess, sys, time
with open("/proc/self/environ", "rb") as handle:
    initial = dict(item.decode().split("=", 1) for item in handle.read().split(b"\\0") if b"=" in item)
child = None
if os.environ.get("CHILD"):
    child = subprocess.run(
        [sys.executable, "-c", "import json, os, sys; print(json.dumps([os.environ.get('PYTHONHASHSEED'), "
         "os.environ.get('URANDOM_SHIM_HASHSEED'), sys.flags.hash_randomization]))"],
        capture_output=True, text=True, timeout=30,
    )
print(json.dumps({
    "seed": initial.get("PYTHONHASHSEED"), "mark": initial.get("URANDOM_SHIM_HASHSEED"),
    "left": [os.environ.get("PYTHONHASHSEED"), os.environ.get("URANDOM_SHIM_HASHSEED")],
    "randomized": sys.flags.hash_randomization, "child": None if child is None else json.loads(child.stdout or "null"),
    "child_stderr": None if child is None else child.stderr, "ended": time.monotonic(),
}))
"""


@pytest.fixture
def kernel(fake_kernel: FakeKernel, tmp_path: Path) -> Iterator[tuple[dict[str, str], Path]]:
    """The fake kernel, unready until the file is deleted, with /dev/urandom waiting as on Linux 5.18+."""
    flag = tmp_path / "kernel-unready"
    flag.touch()
    env = {**fake_kernel.env(flag), "FAKE_KERNEL_URANDOM_WAITS": "1", "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
           "URANDOM_SHIM_MACHINE_CONFIG": str(tmp_path / "machine.toml")}  # fmt: skip
    yield env, flag
    flag.unlink(missing_ok=True)


def start(command: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(env), cwd=cwd
    )


def finishes_while_unready(proc: subprocess.Popen[str], flag: Path, within: float = 20) -> tuple[bool, str, str]:
    """Whether ``proc`` ended while the kernel was still unready; the kernel is made ready after ``within`` s (or at
    once if it ended), so that a waiting process ends too."""
    try:
        out, err = proc.communicate(timeout=within)
        ended = True
    except subprocess.TimeoutExpired:
        ended = False
    flag.unlink(missing_ok=True)
    if not ended:
        out, err = proc.communicate(timeout=30)
    return ended, out, err


def cli(venv: Venv) -> str:
    return str(venv.path / "bin" / "urandom-shim")


def test_an_interpreter_start_waits_on_this_kernel_without_a_hash_seed(
    shim: Venv, kernel: tuple[dict[str, str], Path]
) -> None:
    """The baseline, and the proof that the fake kernel shows the wait: `python -c pass` waits for the kernel."""
    env, flag = kernel
    ended, _out, err = finishes_while_unready(start([str(shim.python), "-c", "pass"], env), flag, within=1.0)
    assert not ended, "the interpreter started without waiting: the fake kernel does not make /dev/urandom wait"
    flag.touch()
    ended, _out, err = finishes_while_unready(
        start([str(shim.python), "-c", "pass"], {**env, "PYTHONHASHSEED": "7"}), flag
    )
    assert ended, f"with PYTHONHASHSEED set, the start should not have waited: {err}"


def test_run_legacy_never_waits_and_the_seed_never_reaches_a_child(
    shim: Venv, kernel: tuple[dict[str, str], Path]
) -> None:
    env, flag = kernel
    began = time.monotonic()
    proc = start([cli(shim), "run", "--policy", "legacy", "--", str(shim.python), "-c", REPORT], env)
    ended, out, err = finishes_while_unready(proc, flag)
    assert ended and proc.returncode == 0, f"urandom-shim run --policy legacy waited for the kernel: {err}"
    report = json.loads(out)
    assert report["seed"] is not None and report["seed"] == report["mark"] and report["randomized"] == 1, report
    assert 1 <= int(report["seed"]) <= 4294967295
    assert report["left"] == [None, None], "the seed must leave the environment at once: no child may inherit it"
    assert report["ended"] - began < 10
    # A child of the program: nobody resolved its policy, so it gets no seed, and its start waits for the kernel.
    flag.touch()
    proc = start([cli(shim), "run", "--policy", "legacy", "--", str(shim.python), "-c", REPORT], {**env, "CHILD": "1"})
    ended, out, err = finishes_while_unready(proc, flag, within=1.0)
    assert not ended, f"the child's start should have waited for the kernel: {out} {err}"
    report = json.loads(out)
    assert report["seed"] == report["mark"] is not None, report
    assert report["child"][:2] == [None, None] and report["child"][2] == 1, report


@pytest.mark.parametrize("policy", ["pep524", "pep522", "native"])
def test_a_policy_that_forbids_weak_bytes_gets_no_seed_and_waits_as_before(
    shim: Venv, kernel: tuple[dict[str, str], Path], policy: str
) -> None:
    env, flag = kernel
    proc = start([cli(shim), "run", "--policy", policy, "--", str(shim.python), "-c", REPORT], env)
    ended, out, err = finishes_while_unready(proc, flag, within=1.0)
    assert not ended, f"under {policy} the program's start should have waited for the kernel: {out} {err}"
    report = json.loads(out)
    assert report["seed"] is None and report["mark"] is None, report


def test_a_floor_means_no_weak_hash_seed_and_run_says_so(shim: Venv, kernel: tuple[dict[str, str], Path]) -> None:
    env, flag = kernel
    Path(env["URANDOM_SHIM_MACHINE_CONFIG"]).write_text("allow_weak = false\n")
    proc = start([cli(shim), "run", "--policy", "legacy", "--", str(shim.python), "-c", REPORT], env)
    ended, out, err = finishes_while_unready(proc, flag, within=1.0)
    assert not ended and json.loads(out)["seed"] is None, out
    assert "run: --policy legacy would allow weak bytes, but the floor set by" in err, err


def test_fallback_waits_out_its_timeout_then_starts_without_waiting(
    shim: Venv, kernel: tuple[dict[str, str], Path]
) -> None:
    env, flag = kernel
    began = time.monotonic()
    command = [cli(shim), "run", "--policy", "pep524", "--timeout", "0.5", "--on-timeout", "fallback", "--"]
    proc = start([*command, str(shim.python), "-c", REPORT], env)
    ended, out, err = finishes_while_unready(proc, flag)
    assert ended, err
    report = json.loads(out)
    assert report["seed"] == report["mark"] is not None, report
    assert 0.5 <= report["ended"] - began < 10, "run must have waited out the timeout first"


def test_a_seed_the_caller_set_is_kept_as_it_is(shim: Venv, kernel: tuple[dict[str, str], Path]) -> None:
    env, flag = kernel
    proc = start([cli(shim), "run", "--policy", "legacy", "--", str(shim.python), "-c", REPORT],
                 {**env, "PYTHONHASHSEED": "12345"})  # fmt: skip
    ended, out, err = finishes_while_unready(proc, flag)
    report = json.loads(out)
    assert ended and (report["seed"], report["mark"]) == ("12345", None), (report, err)
    assert report["left"] == ["12345", None], report


def test_a_program_rule_for_legacy_gets_the_seed_too(
    shim: Venv, kernel: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    env, flag = kernel
    Path(env["URANDOM_SHIM_MACHINE_CONFIG"]).write_text('[[program]]\nmatch = "early-*"\npolicy = "legacy"\n')
    script = tmp_path / "early-setup.py"
    script.write_text(REPORT)
    other = tmp_path / "late-setup.py"
    other.write_text(REPORT)
    ended, out, err = finishes_while_unready(start([cli(shim), "run", "--", str(shim.python), str(script)], env), flag)
    assert ended and json.loads(out)["seed"] is not None, err
    flag.touch()
    ended, out, err = finishes_while_unready(
        start([cli(shim), "run", "--", str(shim.python), str(other)], env), flag, 1
    )
    assert not ended and json.loads(out)["seed"] is None, err


def test_on_a_ready_kernel_nothing_changes(shim: Venv, tmp_path: Path) -> None:
    result = subprocess.run([cli(shim), "run", "--policy", "legacy", "--", str(shim.python), "-c", REPORT],
                            capture_output=True, text=True, env=clean_env({}), timeout=60)  # fmt: skip
    report = json.loads(result.stdout)
    assert (report["seed"], report["mark"]) == (None, None), result.stderr
    assert report["left"] == [None, None]


def test_a_process_with_our_seed_gives_its_children_none_once_the_kernel_is_ready(shim: Venv) -> None:
    env = {"PYTHONHASHSEED": "4242", "URANDOM_SHIM_HASHSEED": "4242", "CHILD": "1"}
    result = subprocess.run([str(shim.python), "-c", REPORT], capture_output=True, text=True, env=clean_env(env))
    report = json.loads(result.stdout)
    # Started with it, it took it out of its environment at start-up: the kernel is ready, so its children get a
    # full-strength secret. (Its own hashing used seed 4242: that was decided before any code ran.)
    assert report["left"] == [None, None], report
    assert report["child"] == [None, None, 1], report
    # A seed that is not ours (the mark differs) is the user's, and stays.
    env["URANDOM_SHIM_HASHSEED"] = "1"
    result = subprocess.run([str(shim.python), "-c", REPORT], capture_output=True, text=True, env=clean_env(env))
    assert json.loads(result.stdout)["child"][0] == "4242"


def test_the_launcher_never_waits_and_gives_the_caller_back_its_environment(
    shim: Venv, kernel: tuple[dict[str, str], Path]
) -> None:
    env, flag = kernel
    with open(cli(shim), "rb") as launcher:
        assert launcher.readline() == b"#!/bin/sh\n"
    ended, out, err = finishes_while_unready(start([cli(shim), "--version"], env), flag)
    assert ended and out.startswith("urandom-shim "), err
    flag.touch()
    python_cli = str(shim.path / "bin" / "urandom-shim-cli")
    ended, _out, _err = finishes_while_unready(start([python_cli, "--version"], env), flag, within=1.0)
    assert not ended, "the Python entry point waits for the kernel: that is why the launcher exists"
    show = "import os; print([os.environ.get(k) for k in ('PYTHONHASHSEED', 'URANDOM_SHIM_CALLER_HASHSEED', 'URANDOM_SHIM_LAUNCHER')])"
    for caller, seen in ((None, [None, None, None]), ("99", ["99", None, None]), ("", ["", None, None])):
        extra: dict[str, Any] = {} if caller is None else {"PYTHONHASHSEED": caller}
        result = subprocess.run([cli(shim), "run", "--", str(shim.python), "-c", show], capture_output=True,
                                text=True, env=clean_env(extra), timeout=60)  # fmt: skip
        assert result.stdout.strip() == repr(seen), (caller, result.stdout, result.stderr)


def test_the_launcher_works_through_a_symlink_and_without_path(shim: Venv, tmp_path: Path) -> None:
    link = tmp_path / "urandom-shim"
    link.symlink_to(cli(shim))
    result = subprocess.run([str(link), "--version"], capture_output=True, text=True, env={}, timeout=60)
    assert result.returncode == 0 and result.stdout.startswith("urandom-shim "), result.stderr


def test_status_and_check_say_what_run_does_for_a_start(shim: Venv) -> None:
    for policy, says in (("legacy", "never waits"), ("pep524", "which may wait")):
        result = subprocess.run([cli(shim), "check"], capture_output=True, text=True, timeout=60,
                                env=clean_env({"URANDOM_POLICY": policy}))  # fmt: skip
        assert "Started by `urandom-shim run` while the CRNG is not ready" in result.stdout
        assert says in result.stdout, result.stdout
        status = subprocess.run([cli(shim), "status", "--json"], capture_output=True, text=True, timeout=60,
                                env=clean_env({"URANDOM_POLICY": policy}))  # fmt: skip
        assert says in json.loads(status.stdout)["run_start"]


# -- issue 36: the seed is decided from what the command's own interpreter will resolve ------------------------------


def new_venv(python: Path, path: Path) -> Venv:
    """A venv of ``python`` of its own, without pip and without the shim (``run``'s bootstrap starts it there)."""
    if not path.exists():
        subprocess.run([str(python), "-m", "venv", "--without-pip", str(path)], check=True, capture_output=True)
    return Venv(path)


def other_venv(python: Path, tmp_path: Path, package: str, environment: str) -> tuple[Venv, Path]:
    """A venv without the shim holding an app package ``app`` whose ``urandom-shim.toml`` says ``policy =
    package``, with ``policy = environment`` in the venv's own file, and a console script ``app-report`` of pip's
    shape that runs the app: ``run``'s own sys.path has no ``app``."""
    venv = new_venv(python, tmp_path / "other")
    app = venv.site_packages / "app"
    app.mkdir(exist_ok=True)
    (app / "__init__.py").write_text("")
    (app / "__main__.py").write_text(REPORT)
    (app / "cli.py").write_text(
        "def main():\n    exec(compile(open(__file__.replace('cli.py', '__main__.py')).read(), 'app', 'exec'), {})\n"
    )
    (app / "urandom-shim.toml").write_text(f'policy = "{package}"\n')
    (venv.path / "urandom-shim.toml").write_text(f'policy = "{environment}"\n')
    launcher = venv.path / "bin" / "app-report"
    launcher.write_text(
        f"#!{venv.python}\nimport sys\nfrom app.cli import main\nif __name__ == '__main__':\n    sys.exit(main())\n"
    )
    launcher.chmod(0o755)
    return venv, launcher


@pytest.mark.parametrize("how", ["-m", "console script"])
def test_run_decides_the_seed_from_the_package_file_the_command_will_resolve(
    shim: Venv, python: Path, kernel: tuple[dict[str, str], Path], tmp_path: Path, how: str
) -> None:
    """Issue 36: `run -- python -m app` and a console script of another venv found no package (run looked from the
    current directory, and on its own sys.path), so the venv's `legacy` gave a weak seed that the package's `pep522`
    forbids; and the package's `legacy` over the venv's `pep524` gave none."""
    env, flag = kernel
    for package, environment, seeded in (("pep522", "legacy", False), ("legacy", "pep524", True)):
        venv, launcher = other_venv(python, tmp_path, package, environment)
        command = [str(venv.python), "-m", "app"] if how == "-m" else [str(launcher)]
        flag.touch()
        proc = start([cli(shim), "run", "--", *command], env, cwd=tmp_path)
        ended, out, err = finishes_while_unready(proc, flag, within=20 if seeded else 1.0)
        report = json.loads(out)
        assert ended is seeded and (report["seed"] is not None) is seeded, (package, environment, report, err)
        assert "urandom-shim" not in err, err


def test_run_decides_from_the_project_the_commands_module_belongs_to_or_the_directory_it_starts_in(
    shim: Venv, python: Path, kernel: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    """The project of `-m`: the pyproject above the package, on the command's PYTHONPATH, not the current
    directory's; and for a module its interpreter can't find, the current directory's, as the program resolves it
    (issue 36 gave no seed there, and said it could not find the module)."""
    env, flag = kernel
    venv, _launcher = other_venv(python, tmp_path, "legacy", "legacy")
    project = tmp_path / "proj"
    (project / "src" / "tool").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "pep522"\n')
    (project / "src" / "tool" / "__init__.py").write_text("")
    (project / "src" / "tool" / "__main__.py").write_text(REPORT)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = start([cli(shim), "run", "--", str(venv.python), "-m", "tool"],
                 {**env, "PYTHONPATH": str(project / "src")}, cwd=elsewhere)  # fmt: skip
    ended, out, err = finishes_while_unready(proc, flag, within=1.0)
    assert not ended and json.loads(out)["seed"] is None, (out, err)
    # A module its interpreter can't find: the program resolves from the current directory, as its start does.
    for policy, seeded in (("pep522", False), ("legacy", True)):
        (elsewhere / "pyproject.toml").write_text(f'[tool.urandom-shim]\npolicy = "{policy}"\n')
        flag.touch()
        proc = start([cli(shim), "run", "--", str(venv.python), "-m", "nowhere_to_be_found"], env, cwd=elsewhere)
        ended, _out, err = finishes_while_unready(proc, flag, within=20 if seeded else 1.0)
        assert ended is seeded and "No module named nowhere_to_be_found" in err, (policy, err)
        assert "gets no hash seed" not in err, err


def report_of(command: list[str], env: dict[str, str], flag: Path) -> tuple[bool, dict[str, Any], str]:
    ended, out, err = finishes_while_unready(start(command, {**env, "CHILD": "1"}), flag, within=1.0)
    return ended, json.loads(out), err


@pytest.mark.parametrize(
    "kind",
    [
        "URANDOM_SHIM_DISABLE=1",
        "-S",
        "-E",
        "-I",
        "--check-hash-based-pycs default -S",
        "--check-hash-based-pycs default -E",
        "--check-hash-based-pycs default -I",
    ],
)
def test_no_seed_to_an_interpreter_whose_shim_would_not_take_it_out(
    shim: Venv, kernel: tuple[dict[str, str], Path], kind: str
) -> None:
    """Issue 36: under the kill switch no shim starts to take the seed out of the environment, so every Python
    child of the program inherited the weak seed; -S runs no site, and -E and -I ignore the seed but pass it on.
    Issue 48: a long option with a value before them hid them, and the seed reached the program's child."""
    env, flag = kernel
    options = [] if kind.startswith("URANDOM") else kind.split()
    extra = {"URANDOM_SHIM_DISABLE": "1"} if not options else {}
    command = [cli(shim), "run", "--policy", "legacy", "--", str(shim.python), *options, "-c", REPORT]
    _ended, report, err = report_of(command, {**env, **extra}, flag)
    assert report["seed"] is None and report["child"][:2] == [None, None], (report, err)
    assert report["child"][2] == 1


def test_an_interpreter_outside_a_venv_is_asked_without_waiting_and_gets_its_seed(
    shim: Venv, python: Path, kernel: tuple[dict[str, str], Path]
) -> None:
    """An interpreter outside a venv is asked where its library is, with -S and a fixed seed: that start reads nothing
    from the kernel, so the command still starts without waiting."""
    env, flag = kernel
    proc = start([cli(shim), "run", "--policy", "legacy", "--", str(python), "-c", REPORT], env)
    ended, out, err = finishes_while_unready(proc, flag)
    assert ended and json.loads(out)["seed"] is not None, (out, err)


# -- the launcher in the Debian package's layout: /usr/bin/urandom-shim, /usr/libexec/urandom-shim/urandom-shim-cli ----
# However it is started, it finds the entry point there, and never in a directory it was not started from. A stub
# stands in for the entry point: no interpreter starts.

LAUNCHER = Path(__file__).resolve().parents[1] / "bin" / "urandom-shim"


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def _debian_layout(root: Path) -> Path:
    """root/usr/bin/urandom-shim, and a stub root/usr/libexec/urandom-shim/urandom-shim-cli that says it ran."""
    launcher = root / "usr" / "bin" / "urandom-shim"
    launcher.parent.mkdir(parents=True)
    shutil.copy(LAUNCHER, launcher)
    launcher.chmod(0o755)
    _executable(root / "usr" / "libexec" / "urandom-shim" / "urandom-shim-cli", "#!/bin/sh\necho the real cli\n")
    return launcher


def _run(argv: list[str], cwd: Path, path: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": path, "LC_ALL": "C"}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def test_a_symlink_to_the_debian_launcher_finds_the_libexec_entry_point(tmp_path: Path) -> None:
    launcher = _debian_layout(tmp_path / "root")
    links = tmp_path / "local bin"  # as /usr/local/bin, ~/bin or an alternatives link
    links.mkdir()
    (links / "urandom-shim").symlink_to(launcher)
    result = _run([str(links / "urandom-shim")], tmp_path, os.environ.get("PATH", "/usr/bin:/bin"))
    assert result.stdout == "the real cli\n", result.stderr


def test_bash_given_the_bare_name_never_runs_an_entry_point_from_the_current_directory(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    assert bash is not None
    launcher = _debian_layout(tmp_path / "root")
    shared = tmp_path / "shared"  # as /tmp: anyone may put an urandom-shim-cli there
    _executable(shared / "urandom-shim-cli", "#!/bin/sh\necho planted\n")
    _executable(shared / ".." / "libexec" / "urandom-shim" / "urandom-shim-cli", "#!/bin/sh\necho planted\n")
    # `bash urandom-shim`: bash looks the name up in PATH, and $0 is the bare name.
    result = _run([bash, "urandom-shim"], shared, f"{launcher.parent}:/usr/bin:/bin")
    assert result.stdout == "the real cli\n", result.stderr


def _planted(shared: Path) -> None:
    _executable(shared / "urandom-shim-cli", "#!/bin/sh\necho planted\n")
    _executable(shared / "libexec" / "urandom-shim" / "urandom-shim-cli", "#!/bin/sh\necho planted\n")


def test_a_symlink_in_a_sticky_directory_never_runs_an_entry_point_planted_beside_it(tmp_path: Path) -> None:
    """The user's own symlink in /tmp (or in a directory of theirs there): others cannot touch the link, but may put an
    urandom-shim-cli beside it, or a libexec/urandom-shim/ in /tmp itself. Only the target's directory counts."""
    launcher = _debian_layout(tmp_path / "root")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    _planted(shared)
    (shared / "urandom-shim").symlink_to(launcher)
    (shared / "mine").mkdir()
    (shared / "mine" / "urandom-shim").symlink_to(launcher)
    for link in (shared / "urandom-shim", shared / "mine" / "urandom-shim"):
        result = _run([str(link)], tmp_path, os.environ.get("PATH", "/usr/bin:/bin"))
        assert result.stdout == "the real cli\n", (link, result.stderr)
        result = _run(["sh", link.name], link.parent, os.environ.get("PATH", "/usr/bin:/bin"))
        assert result.stdout == "the real cli\n", (link, result.stderr)


def test_a_copy_with_no_entry_point_but_a_planted_one_says_so_and_runs_nothing(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    _planted(shared)
    for copy in (shared / "urandom-shim", shared / "mine" / "urandom-shim"):
        copy.parent.mkdir(exist_ok=True)
        shutil.copy(LAUNCHER, copy)
        result = _run(["sh", str(copy)], tmp_path, "/usr/bin:/bin")
        assert (result.returncode, result.stdout) == (127, ""), result.stderr
        assert result.stderr.startswith(f"urandom-shim: found no urandom-shim-cli beside {copy} ")


def test_a_relative_directory_that_starts_with_a_dash_reaches_the_entry_point_as_a_path(tmp_path: Path) -> None:
    """`sh -- -d/urandom-shim`: a #! entry point is handed its path, and python read `-d/...` as its options."""
    _executable(tmp_path / "-d" / "urandom-shim-cli", '#!/bin/sh\necho "the real cli as $0"\n')
    shutil.copy(LAUNCHER, tmp_path / "-d" / "urandom-shim")
    result = _run(["sh", "--", "-d/urandom-shim"], tmp_path, "/usr/bin:/bin")
    assert result.stdout == "the real cli as ./-d/urandom-shim-cli\n", result.stderr


def test_bash_given_the_bare_name_trusts_the_file_it_opened_over_a_name_planted_since(tmp_path: Path) -> None:
    """`bash urandom-shim` in /tmp: bash found the launcher in PATH, then someone made ./urandom-shim a symlink to a
    directory of theirs with an urandom-shim-cli. Sourcing sets the scene without the race: $0 is the bare name and
    BASH_SOURCE the file bash opened, as when bash found it in PATH."""
    bash = shutil.which("bash")
    assert bash is not None
    launcher = _debian_layout(tmp_path / "root")
    theirs = tmp_path / "theirs"
    _executable(theirs / "urandom-shim-cli", "#!/bin/sh\necho planted\n")
    shutil.copy(LAUNCHER, theirs / "urandom-shim")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    (shared / "urandom-shim").symlink_to(theirs / "urandom-shim")
    result = _run([bash, "-c", '. "$1"', "urandom-shim", str(launcher)], shared, "/usr/bin:/bin")
    assert result.stdout == "the real cli\n", result.stderr


def test_a_symlink_to_a_link_finds_the_entry_point_beside_the_middle_link(tmp_path: Path) -> None:
    """`ln -s VENV/bin/urandom-shim ~/bin/` where uv --link-mode=symlink made VENV/bin/urandom-shim a link into its
    cache: urandom-shim-cli is beside neither the first link nor the end of the chain, but beside the middle one."""
    cached = tmp_path / "cache" / "scripts" / "urandom-shim"
    cached.parent.mkdir(parents=True)
    shutil.copy(LAUNCHER, cached)
    cached.chmod(0o755)
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "urandom-shim").symlink_to(cached)
    _executable(venv_bin / "urandom-shim-cli", "#!/bin/sh\necho the real cli\n")
    links = tmp_path / "home" / "bin"
    links.mkdir(parents=True)
    (links / "absolute").symlink_to(venv_bin / "urandom-shim")
    (links / "relative").symlink_to(Path("..", "..", "venv", "bin", "urandom-shim"))
    for name in ("absolute", "relative"):
        result = _run([str(links / name)], tmp_path, os.environ.get("PATH", "/usr/bin:/bin"))
        assert result.stdout == "the real cli\n", (name, result.stderr)
