"""`urandom-shim run` asks the program's own interpreter what the program will resolve (issue 48), and gives a hash seed
only where that answer allows weak bytes: the decision is the program's own, whatever its flags, venv or layout.

Each layout below is a real interpreter on the fake kernel with its CRNG unready, and `/dev/urandom` not waiting, so
that every program starts: the program reports the seed it really started with (``/proc/self/environ``) and the
settings its own shim resolved (``urandom_shim.current_settings()``), and the two must agree. Each layout is built
so that the file-reading model `run` used before (issue 36) decided otherwise, giving a weak seed to a program
whose own policy forbids it, and has a twin whose program allows it, where the seed must come.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, FakeKernel, Venv, clean_env, find_python

#: The program of every layout: the seed its interpreter started with, and what its own shim resolved.
PROGRAM = """\
import json, os, urandom_shim
with open(os.environ.get("PROC_AT", "/proc") + "/self/environ", "rb") as handle:
    initial = dict(item.split(b"=", 1) for item in handle.read().split(b"\\0") if b"=" in item)
seed, mark = initial.get(b"PYTHONHASHSEED"), initial.get(b"URANDOM_SHIM_HASHSEED")
settings = urandom_shim.current_settings()
print(json.dumps({"seeded": seed is not None and seed == mark, "policy": settings.policy.value.name,
                  "source": settings.policy.source, "mode": settings.mode.value}))
"""

DEBIAN_PYTHON = Path("/usr/bin/python3")


def cli(venv: Venv) -> str:
    return str(venv.path / "bin" / "urandom-shim")


@pytest.fixture
def unready(fake_kernel: FakeKernel, tmp_path: Path) -> Any:
    """The environment of an unready kernel whose `/dev/urandom` does not wait, with no configuration but the
    machine file at ``machine.toml`` (absent until a test writes it)."""
    flag = tmp_path / "kernel-unready"
    flag.touch()
    env = {**fake_kernel.env(flag), "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
           "URANDOM_SHIM_MACHINE_CONFIG": str(tmp_path / "machine.toml")}  # fmt: skip
    yield env
    flag.unlink(missing_ok=True)


def decided(
    shim: Venv, command: list[str], env: dict[str, str], cwd: Path, policy: str, wrapper: tuple[str, ...] = ()
) -> dict[str, Any]:
    """`run -- command` (inside ``wrapper``): the program's own report, which must be seeded exactly where what it
    resolved allows weak bytes, and have resolved ``policy``."""
    result = subprocess.run(
        [*wrapper, cli(shim), "run", "--", *command], capture_output=True, text=True, env=clean_env(env), cwd=cwd,
        timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    report: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    allowed = report["policy"] == "legacy" and report["mode"] == "enforce"
    assert report["seeded"] is allowed, f"run decided otherwise than the program resolved: {report}\n{result.stderr}"
    assert report["policy"] == policy, (report, result.stderr)
    assert "gets no hash seed" not in result.stderr, result.stderr
    return report


def package(directory: Path, name: str, policy: str | None) -> Path:
    """A package ``name`` in ``directory`` whose ``__main__`` is :data:`PROGRAM`, and whose ``cli.main()`` (a
    console script's entry point) runs it, with a package file saying ``policy`` (none if None)."""
    path = directory / name
    path.mkdir(parents=True, exist_ok=True)
    (path / "__init__.py").write_text("")
    (path / "__main__.py").write_text(PROGRAM)
    (path / "cli.py").write_text(
        f"def main():\n    import runpy\n    runpy.run_module({name!r}, run_name='__main__')\n"
    )
    if policy is not None:
        (path / "urandom-shim.toml").write_text(f'policy = "{policy}"\n')
    return path


def ask(python: str | Path, code: str, env: dict[str, str] | None = None) -> list[str]:
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env=clean_env(env), check=True)
    return out.stdout.split("\n")[:-1]  # lines as print() ends them: a path may hold a \x1c


def private_prefix(python: Path, root: Path) -> tuple[Path, str]:
    """A private installation of ``python`` at ``root``, as `./configure --prefix=root && make install` makes one:
    a copy of its executable in ``root/bin``, and a library directory of its own whose standard library links to
    ``python``'s, with an empty site-packages of its own. Returns the executable and its X.Y."""
    version, stdlib, executable = ask(
        python, "import os, sys, sysconfig; print('%d.%d' % sys.version_info[:2]); "
        "print(sysconfig.get_paths()['stdlib']); print(os.path.realpath(sys.executable))",
    )  # fmt: skip
    (root / "bin").mkdir(parents=True)
    copy = root / "bin" / f"python{version}"
    shutil.copy2(executable, copy)
    library = root / "lib" / f"python{version}"
    library.mkdir(parents=True)
    for entry in os.listdir(stdlib):
        if entry not in ("site-packages", "dist-packages"):
            (library / entry).symlink_to(Path(stdlib) / entry)
    for site in ask(copy, "import site; print('\\n'.join(site.getsitepackages()))"):
        Path(site).mkdir(parents=True, exist_ok=True)
    return copy, version


def site_packages(python: str | Path, env: dict[str, str] | None = None) -> tuple[Path, Path]:
    """(its first site-packages, its user site) for ``python`` with ``env``."""
    found = ask(python, "import site; print(site.getsitepackages()[0]); print(site.getusersitepackages())", env)
    return Path(found[0]), Path(found[1])


# -- the layouts of the issue: what the file model got wrong ----------------------------------------------------------


def test_a_private_prefix_started_with_dash_s_never_sees_its_user_site(
    shim: Venv, python: Path, unready: dict[str, str], tmp_path: Path
) -> None:
    """`/usr/local/bin/python3 -s -m app` (and Fedora's `#!/usr/bin/python3 -s` console scripts): `app` in
    site-packages says pep522, another `app` in the user site says legacy. `-s` leaves the user site out, but the
    file model asked the interpreter with `-S` alone, looked in the user site, and gave a seed."""
    interpreter, _version = private_prefix(python, tmp_path / "prefix")
    env = {**unready, "PYTHONUSERBASE": str(tmp_path / "userbase")}
    site, user_site = site_packages(interpreter, env)
    package(site, "app", "pep522")
    package(user_site, "app", "legacy")
    decided(shim, [str(interpreter), "-s", "-m", "app"], env, tmp_path, "pep522")
    decided(shim, [str(interpreter), "-m", "app"], env, tmp_path, "legacy")
    launcher = tmp_path / "app-tool"  # a console script of pip's shape whose #! line carries the -s
    launcher.write_text(f"#!{interpreter} -s\nimport sys\nfrom app.cli import main\nif __name__ == '__main__':\n"
                        "    sys.exit(main())\n")  # fmt: skip
    launcher.chmod(0o755)
    decided(shim, [str(launcher)], env, tmp_path, "pep522")


def test_an_upgraded_venv_whose_pyvenv_cfg_names_the_old_version(
    shim: Venv, python: Path, unready: dict[str, str], tmp_path: Path
) -> None:
    """A venv made by Python 3.11 whose base `python3` became another version in place (a distribution upgrade):
    `pyvenv.cfg` still says 3.11.7, and the old library is still there. The file model trusted the version and read
    `lib/python3.11`; the interpreter reads its own version's."""
    interpreter, version = private_prefix(python, tmp_path / "prefix")
    old = "3.11" if version != "3.11" else "3.10"
    (tmp_path / "prefix" / "lib" / f"python{old}").mkdir()
    (tmp_path / "prefix" / "lib" / f"python{old}" / "os.py").write_text("")  # the old standard library, left behind
    venv = tmp_path / "venv"
    subprocess.run([str(interpreter), "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    config = venv / "pyvenv.cfg"
    lines = [line for line in config.read_text().splitlines() if not line.startswith("version")]
    config.write_text("\n".join([*lines, f"version = {old}.7"]) + "\n")
    (venv / "urandom-shim.toml").write_text('policy = "legacy"\n')
    package(venv / "lib" / f"python{old}" / "site-packages", "app", None)  # the app as the old version had it
    site, _user = site_packages(venv / "bin" / "python")
    assert site.parent.name == f"python{version}", site
    new = package(site, "app", "pep522")
    decided(shim, [str(venv / "bin" / "python"), "-m", "app"], unready, tmp_path, "pep522")
    (new / "urandom-shim.toml").unlink()
    decided(shim, [str(venv / "bin" / "python"), "-m", "app"], unready, tmp_path, "legacy")


def test_an_interpreter_installed_in_a_project_directory_runs_its_library_without_that_project(
    shim: Venv, python: Path, unready: dict[str, str], tmp_path: Path
) -> None:
    """An interpreter installed under a checkout (`proj/.python`) whose `pyproject.toml` says legacy, running a
    module of its own library: the walk up from the module stops at the interpreter's prefix, so the program
    resolves the default. The file model, which knew only its own prefixes, walked past it into the project."""
    project = tmp_path / "proj"
    interpreter, version = private_prefix(python, project / ".python")
    (project / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "legacy"\n')
    (project / ".python" / "lib" / f"python{version}" / "reportmod.py").write_text(PROGRAM)
    decided(shim, [str(interpreter), "-m", "reportmod"], unready, tmp_path, "native")
    (project / "tools").mkdir()
    (project / "tools" / "toolmod.py").write_text(PROGRAM)  # a module of the project itself: its policy
    env = {**unready, "PYTHONPATH": str(project / "tools")}
    decided(shim, [str(interpreter), "-m", "toolmod"], env, tmp_path, "legacy")


def test_debians_python3_reads_a_pth_line_with_a_control_character_as_its_site_does(
    shim: Venv, unready: dict[str, str], tmp_path: Path
) -> None:
    """Debian's /usr/bin/python3 (3.11), with a `.pth` file in the user site whose path line holds `\\x1c`: `site`
    before 3.13 reads lines as a text file does, so the whole line is one directory; the file model split it as
    `str.splitlines()` does, into two, and found another `app` first."""
    if not DEBIAN_PYTHON.exists():
        pytest.skip("Debian's /usr/bin/python3 is not here")
    env = {**unready, "PYTHONUSERBASE": str(tmp_path / "userbase")}
    _site, user_site = site_packages(DEBIAN_PYTHON, env)
    user_site.mkdir(parents=True)
    split = tmp_path / "two"  # what the line's second half names on its own
    whole = Path(f"{tmp_path / 'one'}\x1c{split}")  # what `site` adds: the line as it is
    (user_site / "paths.pth").write_text(f"{whole}\n", encoding="utf-8")
    real = package(whole, "app", "pep522")
    package(split, "app", "legacy")
    Path(env["URANDOM_SHIM_MACHINE_CONFIG"]).write_text('policy = "legacy"\n')
    # 3.13's site splits the line as str.splitlines() does (Debian sid's python3): there the model was right.
    whole_line = ask(DEBIAN_PYTHON, "import app, os; print(os.path.dirname(os.path.dirname(app.__file__)))", env)
    assert whole_line[0] in (str(whole), str(split)), whole_line
    decided(
        shim, [str(DEBIAN_PYTHON), "-m", "app"], env, tmp_path, "pep522" if whole_line[0] == str(whole) else "legacy"
    )
    (real / "urandom-shim.toml").unlink()
    decided(shim, [str(DEBIAN_PYTHON), "-m", "app"], env, tmp_path, "legacy")


def toml_11_reader(python: Path) -> bool | None:
    """Whether the shim under ``python`` reads TOML 1.1 (a newline inside an inline table): tomli 2.3 and later do,
    tomllib before 3.15 does not. None where it has neither (Python < 3.11 without tomli)."""
    code = (
        "import sys\ntry:\n    import tomllib as t\nexcept ImportError:\n    try:\n        import tomli as t\n"
        "    except ImportError:\n        print('none'); sys.exit()\ntry:\n    t.loads('x = {a = 1,\\n b = 2}\\n')\n"
        "    print('1.1')\nexcept Exception:\n    print('1.0')\n"
    )
    said = ask(python, code)[0]
    return None if said == "none" else said == "1.1"


#: A venv file that TOML 1.1 reads and TOML 1.0 refuses: under 1.0 it is invalid, so its floor is allow_weak = false.
TOML_11_FILE = 'policy = "legacy"\nnote = {written = "by hand",\n  on = "two lines"}\n'


def test_a_venv_file_is_read_by_the_programs_toml_reader_not_runs(
    shim: Venv, python: Path, unready: dict[str, str], tmp_path: Path
) -> None:
    """`run` on 3.8 to 3.10 (tomli 2.5 reads TOML 1.1) read a venv file with a multi-line inline table as valid and
    gave a seed; the program on 3.13 (tomllib reads TOML 1.0) finds the file invalid, and its floor applies."""
    ours = toml_11_reader(shim.python)
    target = find_python("3.13")
    if not ours or target is None:
        pytest.skip("needs a command line whose TOML reader takes TOML 1.1 (tomli on Python < 3.11), and Python 3.13")
    assert toml_11_reader(target) is False
    venv = tmp_path / "venv"
    subprocess.run([str(target), "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    (venv / "urandom-shim.toml").write_text(TOML_11_FILE)
    site, _user = site_packages(venv / "bin" / "python")
    package(site, "app", None)
    decided(shim, [str(venv / "bin" / "python"), "-m", "app"], unready, tmp_path, "native")  # the file is ignored
    (venv / "urandom-shim.toml").write_text('policy = "legacy"\n')
    decided(shim, [str(venv / "bin" / "python"), "-m", "app"], unready, tmp_path, "legacy")


@pytest.mark.slow
def test_a_venv_file_that_the_programs_toml_reader_takes_gives_the_seed_runs_would_refuse(
    shim: Venv, python: Path, venvs: Any, unready: dict[str, str], tmp_path: Path
) -> None:
    """The other way round: `run` on 3.11+ (tomllib, TOML 1.0) refused the file and gave no seed; the program on 3.8
    with tomli 2.5 reads it, and resolves legacy."""
    ours = toml_11_reader(shim.python)
    older = find_python("3.8")
    if ours is not False or older is None:
        pytest.skip("needs a command line whose TOML reader refuses TOML 1.1 (tomllib before 3.15), and Python 3.8")
    target: Venv = venvs(older, "shim")  # the shim and tomli installed, as pip installs them on 3.8
    assert toml_11_reader(target.python) is True
    environment_file = target.path / "urandom-shim.toml"
    try:
        environment_file.write_text(TOML_11_FILE)
        package(tmp_path / "apps", "tomlapp", None)
        env = {**unready, "PYTHONPATH": str(tmp_path / "apps")}
        decided(shim, [str(target.python), "-m", "tomlapp"], env, tmp_path, "legacy")
    finally:
        environment_file.unlink(missing_ok=True)


# -- the layouts of issue 36, now answered by the program's interpreter ---------------------------------------------


def plain_venv(python: Path, path: Path) -> Path:
    """A venv of ``python`` without pip and without the shim (`run`'s bootstrap starts it there): its python."""
    subprocess.run([str(python), "-m", "venv", "--without-pip", str(path)], check=True, capture_output=True)
    return path / "bin" / "python"


def test_an_editable_checkout_that_a_pth_path_line_adds_decides_the_seed(
    shim: Venv, python: Path, unready: dict[str, str], tmp_path: Path
) -> None:
    """pip's and hatchling's editable installs of a src layout add the checkout's `src` with a `.pth` path line."""
    interpreter = plain_venv(python, tmp_path / "venv")
    site, _user = site_packages(interpreter)
    checkout = tmp_path / "checkout"
    package(checkout / "src", "edapp", None)
    (site / "_edapp.pth").write_text(f"import os\n{checkout / 'src'}\n")
    (tmp_path / "venv" / "urandom-shim.toml").write_text('policy = "legacy"\n')
    decided(shim, [str(interpreter), "-m", "edapp"], unready, tmp_path, "legacy")
    (checkout / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "pep522"\n')
    decided(shim, [str(interpreter), "-m", "edapp"], unready, tmp_path, "pep522")


FINDER = """\
from __future__ import annotations
import importlib.util, sys
MAPPING: dict[str, str] = {mapping!r}
class _Finder:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name in MAPPING:
            return importlib.util.spec_from_file_location(
                name, MAPPING[name] + "/__init__.py", submodule_search_locations=[MAPPING[name]])
def install():
    sys.meta_path.append(_Finder)
"""


def test_a_flat_layout_editable_install_is_found_through_its_import_hook(
    shim: Venv, python: Path, unready: dict[str, str], tmp_path: Path
) -> None:
    """setuptools' editable install of a flat layout: an import hook whose `MAPPING` names the checkout's package."""
    interpreter = plain_venv(python, tmp_path / "venv")
    site, _user = site_packages(interpreter)
    checkout = tmp_path / "checkout"
    found = package(checkout, "flatapp", None)
    (site / "__editable___flatapp_0_1_finder.py").write_text(FINDER.format(mapping={"flatapp": str(found)}))
    (site / "__editable__.flatapp-0.1.pth").write_text(
        "import __editable___flatapp_0_1_finder; __editable___flatapp_0_1_finder.install()\n"
    )
    (tmp_path / "venv" / "urandom-shim.toml").write_text('policy = "legacy"\n')
    decided(shim, [str(interpreter), "-m", "flatapp"], unready, tmp_path, "legacy")
    (checkout / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "pep522"\n')
    decided(shim, [str(interpreter), "-m", "flatapp"], unready, tmp_path, "pep522")


def test_safe_path_m_is_looked_for_where_the_programs_python_looks(
    shim: Venv, python: Path, unready: dict[str, str], tmp_path: Path
) -> None:
    """Under -P (3.11+) `-m` never looks in the current directory, whose `app` says legacy."""
    if find_python_version(python) < (3, 11):
        pytest.skip("-P is Python 3.11's")
    interpreter = plain_venv(python, tmp_path / "venv")
    package(tmp_path / "real", "app", "pep522")
    package(tmp_path / "cwd", "app", "legacy")
    env = {**unready, "PYTHONPATH": str(tmp_path / "real")}
    decided(shim, [str(interpreter), "-P", "-m", "app"], env, tmp_path / "cwd", "pep522")
    decided(shim, [str(interpreter), "-m", "app"], env, tmp_path / "cwd", "legacy")
    decided(shim, [str(interpreter), "-X", "dev", "-Pm", "app"], env, tmp_path / "cwd", "pep522")


def find_python_version(python: Path) -> tuple[int, int]:
    major, minor = ask(python, "import sys; print(sys.version_info[0]); print(sys.version_info[1])")
    return int(major), int(minor)


# -- what the program reads of its own start, the question reads the same way -----------------------------------------


#: Run the rest of the command line with /proc hidden, as in an initramfs or a chroot without it; the program reads
#: its environment through a second mount of it ($PROC_AT), where no shim looks.
WITHOUT_PROC = 'mkdir -p "$PROC_AT" && mount --bind /proc "$PROC_AT" && mount -t tmpfs none /proc && exec "$@"'


@pytest.mark.parametrize("version", ["3.8", pytest.param("pypy3", marks=pytest.mark.slow)])
def test_an_m_modules_name_is_read_by_the_question_as_the_program_reads_it(
    shim: Venv, unready: dict[str, str], tmp_path: Path, version: str
) -> None:
    """Before 3.10 (and on PyPy 3.9) a program's start reads its `-m` module's name from /proc/self/cmdline, which
    dropped empty arguments and is missing without /proc; the question read its own copy of the command line. So
    `-W '' -m app`, or `-m app` without /proc, resolved `app`'s [[program]] rule (legacy) in the question, and the
    venv's policy (pep522) in the program, which got the seed."""
    interpreter = find_python(version) if version != "pypy3" else shutil.which("pypy3")
    if interpreter is None:
        pytest.skip(f"{version} is not installed here")
    target = plain_venv(Path(interpreter), tmp_path / "venv")
    (tmp_path / "venv" / "urandom-shim.toml").write_text(
        'policy = "pep522"\n[[program]]\nmatch = "app"\npolicy = "legacy"\n'
    )
    package(tmp_path / "work", "app", None)
    decided(shim, [str(target), "-W", "", "-m", "app"], unready, tmp_path / "work", "legacy")
    decided(shim, [str(target), "-X", "", "-m", "app"], unready, tmp_path / "work", "legacy")
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        pytest.skip("hiding /proc needs root and unshare")
    env = {**unready, "PROC_AT": str(tmp_path / "proc")}
    wrapper = (unshare, "--mount", "--propagation", "private", "sh", "-c", WITHOUT_PROC, "sh")
    if ask(target, "import sys; print(hasattr(sys, 'orig_argv'))") == ["False"]:
        # The name read from /proc/self/cmdline, missing without /proc: the program resolves the venv's policy.
        decided(shim, [str(target), "-m", "app"], env, tmp_path / "work", "pep522", wrapper)
        return
    # Where the start reads its own arguments (sys.orig_argv: 3.10+, and sid's PyPy 3.11), the program resolves its
    # rule's legacy without /proc too, as the question does; but without /proc the question can't see whether its
    # start started a process that would keep the seed, so `run` gives none, and says why.
    result = subprocess.run(
        [*wrapper, cli(shim), "run", "--", str(target), "-m", "app"], capture_output=True, text=True,
        env=clean_env(env), cwd=tmp_path / "work", timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert (report["policy"], report["seeded"]) == ("legacy", False), (report, result.stderr)
    assert "gets no hash seed" in result.stderr and "processes /proc does not show" in result.stderr, result.stderr


@pytest.mark.parametrize("how", ["/dev/stdin", "/dev/fd/3", "a link to /proc/self/fd/3"])
def test_a_script_reached_through_proc_gets_no_seed(
    shim: Venv, unready: dict[str, str], tmp_path: Path, how: str
) -> None:
    """`python /dev/stdin < tool.py`: the question ran with another stdin (/dev/null) and without descriptor 3, so
    what the program's script path names there is another file, or none. It found no project and answered with the
    machine file's legacy; the program found its own pyproject.toml (pep522), and got the seed."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "pep522"\n')
    tool = project / "tool.py"
    tool.write_text(PROGRAM)
    Path(unready["URANDOM_SHIM_MACHINE_CONFIG"]).write_text('policy = "legacy"\n')
    script = how
    if how.startswith("a link"):
        script = "link.py"  # relative to cwd: a path that the line, at most 1,000 characters, never shortens
        os.symlink("/proc/self/fd/3", tmp_path / script)
    result = subprocess.run(
        ["sh", "-c", 'exec "$@" <"$TOOL" 3<"$TOOL"', "sh", cli(shim), "run", "--", str(shim.python), script],
        capture_output=True, text=True, env=clean_env({**unready, "TOOL": str(tool)}), cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert (report["seeded"], report["policy"]) == (False, "pep522"), (report, result.stderr)
    said = [line for line in result.stderr.splitlines() if "gets no hash seed" in line]
    assert len(said) == 1 and f"its script {script!r} is reached through /proc" in said[0], result.stderr


def test_a_programs_own_arguments_can_not_make_its_start_the_question(shim: Venv, tmp_path: Path) -> None:
    """`python -c CODE urandom-shim-question ...` while the CRNG is unready was taken for run's question: the shim
    printed an answer on the program's stdout and ended it, and CODE never ran. The question is marked by a token
    in its environment too, which no argument can give."""
    code = "import sys; print('ran with', sys.argv[1:])"
    for marker in ("urandom-shim-question", "urandom-shim-question:x"):
        result = subprocess.run(
            [cli(shim), "simulate", "--unready-forever", "--", str(shim.python), "-c", code, marker, "--force"],
            capture_output=True, text=True, env=clean_env(), timeout=60,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert result.stdout == f"ran with {[marker, '--force']}\n", result.stdout


def site_of(interpreter: Path) -> Path:
    return Path(ask(interpreter, "import site; print(site.getsitepackages()[0])")[0])


#: A .pth line that starts a process, which lives on for a while; in the question with its stdout and stderr (in the
#: program with neither, so that the test reads the program's output to its end at once).
HELPER_PTH = (
    "import os, subprocess, sys; own = None if os.environ.get('URANDOM_SHIM_QUESTION') else subprocess.DEVNULL; "
    "subprocess.Popen([sys.executable, '-S', '-c', 'import time; time.sleep({seconds})'], stdout=own, stderr=own)\n"
)


@pytest.mark.parametrize("seconds", [0, 15], ids=["ended", "lives on with the question's output"])
def test_no_seed_where_the_start_starts_a_process_before_the_shim_takes_the_seed_out(
    shim: Venv, python: Path, unready: dict[str, str], tmp_path: Path, seconds: int
) -> None:
    """A process started from a .pth file (which `site` runs before the shim, or before run's bootstrap) inherited
    the weak seed, which the shim takes out of the environment only when it starts. And a helper that kept the
    question's stdout open made `run` wait its 10 s for an end of file and throw the answer away."""
    interpreter = plain_venv(python, tmp_path / "venv")
    (site_of(interpreter) / "aa_helper.pth").write_text(HELPER_PTH.format(seconds=seconds))
    began = time.monotonic()
    result = subprocess.run(
        [cli(shim), "run", "--policy", "legacy", "--", str(interpreter), "-c", PROGRAM], capture_output=True,
        text=True, env=clean_env(unready), timeout=60,
    )  # fmt: skip
    assert time.monotonic() - began < 8, "run waited for the question's output to end"
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1])["seeded"] is False, result.stderr
    said = [line for line in result.stderr.splitlines() if "gets no hash seed" in line]
    assert len(said) == 1 and "before its shim could take the seed out" in said[0], result.stderr


@pytest.mark.slow  # waits for a question that sleeps
def test_sigterm_to_run_ends_its_question_too(
    shim: Venv, python: Path, unready: dict[str, str], tmp_path: Path
) -> None:
    """SIGTERM (or SIGHUP) to `run` while it waited for its question ended `run` and left the question running."""
    interpreter = plain_venv(python, tmp_path / "venv")
    (site_of(interpreter) / "aa_slow.pth").write_text(
        "import os, time; os.environ.get('URANDOM_SHIM_QUESTION') and time.sleep(30)\n"
    )
    run = subprocess.Popen([cli(shim), "run", "--policy", "legacy", "--", str(interpreter), "-c", "pass"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(unready))  # fmt: skip
    try:
        question = None
        deadline = time.monotonic() + 30
        while question is None and time.monotonic() < deadline:
            children = Path(f"/proc/{run.pid}/task/{run.pid}/children").read_text().split()
            question = int(children[0]) if children else None
            time.sleep(0.05)
        assert question is not None, "run never asked"
        time.sleep(0.3)
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=10) == -signal.SIGTERM
        deadline = time.monotonic() + 5
        while Path(f"/proc/{question}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not Path(f"/proc/{question}").exists(), "the question outlived run"
    finally:
        run.kill()
        run.communicate()


def test_a_silent_question_is_quoted_by_the_line_that_says_most() -> None:
    from urandom_shim.cli import target

    fatal = "Python path configuration:\n  PYTHONHOME = '/x'\nFatal Python error: init_fs_encoding: failed\nend\n"
    assert target._why_silent(1, fatal) == "exit status 1: Fatal Python error: init_fs_encoding: failed"
    assert target._why_silent(2, "Unknown option: -J\nusage: python ...\n") == "exit status 2: Unknown option: -J"
    assert target._why_silent(3, "first\nsecond\n") == "exit status 3: first"
    assert target._why_silent(None, "") == "no exit status"


# -- where the target can't answer: no seed, and one line says why --------------------------------------------------

SHOW = "import os; print(os.environ.get('PYTHONHASHSEED'))"


@pytest.mark.parametrize("version", ["3.7", "2.7"])
def test_no_seed_to_a_python_before_3_8_which_says_so(
    shim: Venv, unready: dict[str, str], tmp_path: Path, version: str
) -> None:
    """Python 3.7 and 2.7 run no shim, so they would keep the seed for their children; their own version says so,
    whatever a venv's files say."""
    old = find_python(version)
    if old is None:
        pytest.skip(f"Python {version} is not installed here")
    code = "import os; print(os.environ.get('PYTHONHASHSEED'))"
    result = subprocess.run([cli(shim), "run", "--policy", "legacy", "--", str(old), "-c", code],
                            capture_output=True, text=True, env=clean_env(unready), timeout=60)  # fmt: skip
    assert result.stdout.strip() == "None", result.stdout + result.stderr
    said = [line for line in result.stderr.splitlines() if "gets no hash seed" in line]
    assert len(said) == 1 and f"it is Python {version}, where no shim starts" in said[0], result.stderr
    # The bootstrap parses there too (2.7 once failed on it: `'import sitecustomize' failed`, without our prefix,
    # and the sitecustomize it shadows did not run), and says what that Python's own os.urandom() does.
    assert "import sitecustomize" not in result.stderr, result.stderr
    own = [line for line in result.stderr.splitlines() if f"urandom-shim: Python {version} is not supported" in line]
    assert len(own) == 1, result.stderr
    expected = "predictable bytes without waiting" if version == "2.7" else "never returns weak bytes"
    assert expected in own[0], own


def test_a_wrapper_gets_no_seed_and_run_says_so_where_its_settings_allow_weak_bytes(
    shim: Venv, unready: dict[str, str]
) -> None:
    """`sh -c`, `env`, a pyenv shim: what they start, and when, can't be known, so they get no seed. `-S`, `-E`,
    `-I` and Python 3.7 got a line saying so, a wrapper none."""
    for settings, says in ((["--policy", "legacy"], True), (["--policy", "pep524"], False), ([], False)):
        result = subprocess.run([cli(shim), "run", *settings, "--", "sh", "-c", "true"], capture_output=True,
                                text=True, env=clean_env(unready), timeout=60)  # fmt: skip
        assert result.returncode == 0, result.stderr
        said = [line for line in result.stderr.splitlines() if "gets no hash seed" in line]
        assert len(said) == says, (settings, result.stderr)
        assert not says or "sh is not a Python interpreter that run starts itself" in said[0], said


@pytest.mark.parametrize(
    "variables",
    [{"URANDOM_POLICY": "pep524", "URANDOM_SHIM_TIMEOUT": "none"},
     {"URANDOM_POLICY": "legacy", "URANDOM_SHIM_MODE": "report"},
     {"URANDOM_POLICY": "pep524", "URANDOM_SHIM_TIMEOUT": "1", "URANDOM_SHIM_ON_TIMEOUT": "raise"}],
    ids=["pep524 without a timeout", "report mode", "pep524 that raises"],
)  # fmt: skip
def test_no_line_about_a_seed_where_the_settings_given_rule_one_out(
    shim: Venv, unready: dict[str, str], variables: dict[str, str]
) -> None:
    """`-S` keeps a seed, but where the settings `run` gives already rule a seed out, saying so is noise."""
    result = subprocess.run([cli(shim), "run", "--", str(shim.python), "-S", "-c", "pass"], capture_output=True,
                            text=True, env=clean_env({**unready, **variables}), timeout=60)  # fmt: skip
    assert result.returncode == 0 and result.stderr == "", result.stderr


@pytest.mark.parametrize("option", ["-S", "-E", "-I"])
def test_options_that_keep_the_settings_out_are_said_once_on_any_kernel(
    shim: Venv, unready: dict[str, str], option: str
) -> None:
    """`run --policy pep522 -- python -E ...` applied nothing, silently, on any kernel (a false all-clear under
    simulate): one line says so, and on an unready kernel it says why there is no seed too."""
    for env in ({}, unready):
        result = subprocess.run(
            [cli(shim), "run", "--policy", "legacy", "--", str(shim.python), option, "-c", "pass"],
            capture_output=True, text=True, env=clean_env(env), timeout=60,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert result.stderr.count("urandom-shim:") == 1, result.stderr
        assert f"starts Python with {option}, so the settings given to run do not reach its program" in result.stderr


def test_no_seed_where_neither_the_bootstrap_nor_an_installed_shim_starts(
    shim: Venv, python: Path, unready: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from urandom_shim import _readiness
    from urandom_shim.cli import launch

    monkeypatch.setattr(_readiness, "kernel_state", lambda: _readiness.UNREADY)
    env = {**clean_env(unready), "URANDOM_POLICY": "legacy"}
    bare = plain_venv(python, tmp_path / "venv")
    assert launch.start_without_waiting([str(bare), "-c", "pass"], dict(env)) is False  # no PYTHONPATH: no bootstrap
    assert launch.start_without_waiting([str(shim.python), "-c", "pass"], dict(env)) is True  # its own .pth


def test_the_question_never_runs_the_program(shim: Venv, unready: dict[str, str], tmp_path: Path) -> None:
    """The program runs once: its interpreter is asked with `-c` in its place, whether a shim answers or not."""
    runs = tmp_path / "runs"
    script = tmp_path / "prog.py"
    script.write_text(f"open({str(runs)!r}, 'a').write('ran\\n')\n")
    for interpreter in (shim.python, find_python("3.7")):
        if interpreter is None:
            continue
        runs.unlink(missing_ok=True)
        result = subprocess.run([cli(shim), "run", "--policy", "legacy", "--", str(interpreter), str(script)],
                                capture_output=True, text=True, env=clean_env(unready), timeout=60)  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert runs.read_text() == "ran\n", (interpreter, result.stderr)


# -- the interpreter's options, as CPython reads them -----------------------------------------------------------------

#: Command lines whose program prints the interpreter's own reading of its options (CODE: as `-c` code, SCRIPT: a
#: script, a last `-`: from stdin).
OPTIONS = [
    ["-S", "-c", "CODE"],
    ["--check-hash-based-pycs", "default", "-S", "-c", "CODE"],
    ["--check-hash-based-pycs", "default", "-E", "-c", "CODE"],
    ["--check-hash-based-pycs", "default", "-I", "SCRIPT"],
    ["-s-check-hash-based-pycs", "default", "-E", "-c", "CODE"],
    ["-X", "dev", "-S", "-c", "CODE"],
    ["-Xdev", "-E", "SCRIPT"],
    ["-W", "error", "-I", "-c", "CODE"],
    ["-Werror", "-sS", "-c", "CODE"],
    ["-X", "-S", "-c", "CODE"],
    ["-bBdOqRsux", "-c", "CODE"],
    ["-c", "CODE", "-S"],
    ["-Sc", "CODE"],
    ["-sc", "CODE", "-E"],
    ["-u", "--", "SCRIPT", "-I"],
    ["-E", "-"],
    ["SCRIPT", "-S"],
]
FLAGS_CODE = "import sys; print(sys.flags.no_site, sys.flags.ignore_environment, sys.flags.isolated)"


@pytest.mark.parametrize("options", OPTIONS, ids=[" ".join(o) for o in OPTIONS])
def test_the_options_are_read_as_the_interpreter_reads_them(python: Path, tmp_path: Path, options: list[str]) -> None:
    """The options that keep a seed (-S, -E, -I), read by `run` before anything starts, against the interpreter's
    own reading of the same command line (sys.flags). A long option with a value once hid a later -S."""
    from urandom_shim.cli import launch, target

    script = tmp_path / "flags.py"
    script.write_text(FLAGS_CODE + "\n")
    command = [str(python), *(FLAGS_CODE if o == "CODE" else str(script) if o == "SCRIPT" else o for o in options)]
    flags = subprocess.run(command, input=FLAGS_CODE + "\n", capture_output=True, text=True, env=clean_env(),
                           timeout=60)  # fmt: skip
    assert flags.returncode == 0, flags.stderr
    keeps = any(int(word) for word in flags.stdout.split()[-3:])
    read = target.read_options(command)
    assert not isinstance(read, str) and not read.exits, read
    assert (target.keeps_the_seed(read) is not None) is keeps, (read.options, flags.stdout)
    assert launch.starts_without_the_shim(command[1:]) is keeps


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["-h"], "exits"),
        (["--version"], "exits"),
        (["-sV"], "exits"),
        (["--help-all"], "exits"),
        (["--jit", "off", "app.py"], "run does not know the interpreter option '--jit'"),
        (["-J", "app.py"], "run does not know the interpreter option '-J'"),
        (["-X"], "run does not know the interpreter option '-X'"),
        (["--check-hash-based-pycs"], "run does not know the interpreter option '--check-hash-based-pycs'"),
        (["-s-", "app.py"], "run does not know the interpreter option '-s-'"),
    ],
)
def test_options_that_end_the_start_or_run_can_not_read(options: list[str], expected: str) -> None:
    from urandom_shim.cli import target

    read = target.read_options(["python", *options])
    if expected == "exits":
        assert not isinstance(read, str) and read.exits, read
    else:
        assert read == expected + ", so it can't tell what that interpreter will do with a seed"


def test_the_start_up_module_knows_the_question_as_the_package_asks_it() -> None:
    from urandom_shim import _hashseed

    tree = ast.parse((ROOT / "_urandom_shim_boot.py").read_text(encoding="utf-8"))
    assigned = {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "_QUESTION"
    }
    assert assigned == {"_QUESTION": _hashseed.QUESTION}


# -- an environment no program can be given -------------------------------------------------------------------------

EXEC_WITH = """\
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
argv = [a.encode() for a in sys.argv[1:]]
envp = [b"=x", ("PATH=" + os.environ["PATH"]).encode()]
arr = lambda items: (ctypes.c_char_p * (len(items) + 1))(*items, None)
libc.execve(argv[0], arr(argv), arr(envp))
sys.exit("execve failed: %d" % ctypes.get_errno())
"""


@pytest.mark.parametrize("subcommand", ["run", "simulate"])
def test_an_environment_entry_without_a_name_is_a_clear_error(shim: Venv, tmp_path: Path, subcommand: str) -> None:
    """`=x` in the environment (a parent's execve may pass one; `env` can't set it) ended in "internal error"
    (exit 70): execve refuses to pass it on."""
    entry = str(shim.path / "bin" / "urandom-shim-cli")
    window = ["--unready-forever"] if subcommand == "simulate" else []
    result = subprocess.run([sys.executable, "-c", EXEC_WITH, entry, subcommand, *window, "--", "true"],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "internal error" not in result.stderr
    assert result.stderr.splitlines()[-1] == (
        f"urandom-shim {subcommand}: error: the environment holds an entry with an empty name ('=x'), which no "
        f"program can be given; start {subcommand} from an environment without it (env -i NAME=VALUE ... "
        f"urandom-shim {subcommand} ...)"
    )
