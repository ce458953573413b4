"""An unready start costs the same in a venv of a thousand distributions as in a bare one (issue 37).

The package-file lookup used to read every distribution's ``RECORD`` in sorted order until one listed the app's
``urandom-shim.toml``: 5x the start-up in a 200-package venv, 15.8x at 1,000. Now it reads the ``RECORD`` of the
distribution named after the module, and only that one, for a package that isn't a namespace package. These tests
count the ``RECORD`` files a real start-up opens (an audit hook, installed by a ``.pth`` file that sorts before
ours), in a real venv of the real wheel, with hundreds of distributions sorting ahead of the app; they don't time
anything. ``benchmarks/bench.py --scale-only`` measures the cost.
"""

from __future__ import annotations

import base64
import json
import os
import random
from pathlib import Path

import pytest
from conftest import Venv, clean_env, make_venv

#: Distributions written straight into site-packages, every one sorting ahead of the apps.
FABRICATED = 300

#: Runs first among the .pth files (digits sort before letters): every RECORD any start-up code opens is noted on
#: ``sys``, for the program to print.
AUDIT_PTH = (
    "import sys; sys.addaudithook(lambda event, args: event == 'open' and isinstance(args[0], str) "
    "and args[0].endswith('/RECORD') and sys.__dict__.setdefault('_opened_records', []).append(args[0]))\n"
)

REPORT = (
    "import json, sys\n"
    "def main():\n"
    "    opened = list(getattr(sys, '_opened_records', []))\n"
    "    import urandom_shim\n"
    "    s = urandom_shim.current_settings()\n"
    "    print(json.dumps([s.policy.value.name, s.policy.source, opened]))\n"
    "if __name__ == '__main__':\n"
    "    main()\n"
)

#: name -> (files, console scripts). `zzapp` is named after its package; `othertool` ships `mtool`, a name no
#: distribution has; `zzapp_plugin` puts a subpackage into zzapp's package and must not get zzapp's file.
APPS = {
    "zzapp": (
        {"zzapp/__init__.py": "", "zzapp/cli.py": REPORT, "zzapp/urandom-shim.toml": 'policy = "pep522"\n'},
        {"zzapp": "zzapp.cli:main"},
    ),
    "othertool": (
        {"mtool/__init__.py": "", "mtool/cli.py": REPORT, "mtool/urandom-shim.toml": 'policy = "pep524"\n'},
        {"mtool": "mtool.cli:main"},
    ),
    "zzapp_plugin": (
        {"zzapp/plugin/__init__.py": "", "zzapp/plugin/cli.py": REPORT},
        {"zzapp-plugin": "zzapp.plugin.cli:main"},
    ),
}

#: module -> (policy, how the source ends, the RECORDs it may open: names of dist-info directories).
EXPECTED = {
    "zzapp.cli": ("pep522", "zzapp/urandom-shim.toml (the app's package file)", ["zzapp-1.0.dist-info"]),
    "mtool.cli": ("pep524", "mtool/urandom-shim.toml (the app's package file)", []),
    "zzapp.plugin.cli": ("native", "default", ["zzapp_plugin-1.0.dist-info"]),
}
SCRIPTS = {"zzapp.cli": "zzapp", "mtool.cli": "mtool", "zzapp.plugin.cli": "zzapp-plugin"}


def fabricate(site: Path, count: int) -> None:
    """``count`` installed distributions of the usual shape, RECORD lines as installers write them."""
    rng = random.Random(37)
    for index in range(count):
        name = f"dist{index:04d}"
        info = site / f"{name}-1.0.dist-info"
        info.mkdir()
        (site / name).mkdir()
        (site / name / "__init__.py").write_text("")
        lines = [f"{name}/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0"]
        for number in range(rng.randint(5, 60)):
            digest = base64.urlsafe_b64encode(rng.getrandbits(256).to_bytes(32, "little"))
            lines.append(f"{name}/module_{number}.py,sha256={digest.rstrip(b'=').decode()},{rng.randint(1, 9999)}")
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        lines.append(f"{name}-1.0.dist-info/METADATA,,")
        lines.append(f"{name}-1.0.dist-info/RECORD,,")
        (info / "RECORD").write_text("\n".join(lines) + "\n")


def make_wheel(directory: Path, name: str, files: dict[str, str], scripts: dict[str, str]) -> Path:
    from test_routes import make_wheel as routes_make_wheel

    return routes_make_wheel(directory, name, files, scripts)


_CROWDED: dict[str, Venv] = {}


@pytest.fixture
def crowded(wheel: Path, python: Path, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A venv of ``python`` with the shim, the apps above installed by pip, and :data:`FABRICATED` more
    distributions; made once per session."""
    if str(python) not in _CROWDED:
        import subprocess

        work = tmp_path_factory.mktemp("crowded")
        venv = make_venv(python, work / "venv", wheel)
        wheels = [make_wheel(work, name, files, scripts) for name, (files, scripts) in APPS.items()]
        done = subprocess.run(
            [str(venv.python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", *map(str, wheels)],
            capture_output=True, text=True, env=clean_env(), timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        site = venv.site_packages
        fabricate(site, FABRICATED)
        (site / "00_record_audit.pth").write_text(AUDIT_PTH)
        _CROWDED[str(python)] = venv
    return _CROWDED[str(python)]


@pytest.mark.parametrize("how", ["console script", "python -m"])
@pytest.mark.parametrize("module", list(EXPECTED))
def test_the_package_file_lookup_reads_no_record_but_the_apps_own(
    crowded: Venv, tmp_path: Path, module: str, how: str
) -> None:
    import subprocess

    env = clean_env(
        {"URANDOM_SHIM_SIMULATE": "unready-forever", "XDG_CONFIG_HOME": str(tmp_path),
         "URANDOM_SHIM_MACHINE_CONFIG": str(tmp_path / "machine.toml")}
    )  # fmt: skip
    if how == "console script":
        command = [str(crowded.path / "bin" / SCRIPTS[module])]
    else:
        command = [str(crowded.python), "-m", module]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    policy, source, opened = json.loads(done.stdout.strip().splitlines()[-1])
    expected_policy, expected_source, allowed = EXPECTED[module]
    assert (policy, source.endswith(expected_source)) == (expected_policy, True), (how, source, done.stderr)
    # Every RECORD opened is named, so a failure shows which ones were read.
    assert [Path(path).parent.name for path in opened] == allowed, opened
    assert not done.stderr, done.stderr


def test_the_fabricated_distributions_sort_ahead_of_the_apps(crowded: Venv) -> None:
    """The test above means something only if the old lookup, which read RECORDs in sorted order until one listed
    the file, would have read the fabricated ones first."""
    names = sorted(path.name for path in crowded.site_packages.glob("*.dist-info"))
    first_app = min(names.index(f"{name}-1.0.dist-info") for name in APPS)
    assert first_app >= FABRICATED, names[:5]


# -- the unready start's own loader (urandom_shim._load) ------------------------------------------------------------

LOADED = """
import importlib, inspect, json, sys
import urandom_shim, urandom_shim._config as config, urandom_shim._activation as activation
report = {}
for name in urandom_shim._UNREADY:
    module = sys.modules["urandom_shim." + name]
    spec = module.__spec__
    report[name] = [spec.name, spec.origin == module.__file__, spec.cached == module.__cached__, spec.has_location,
                    type(module.__loader__).__name__, module.__package__, getattr(urandom_shim, name) is module]
report["source"] = "def resolve(" in inspect.getsource(config)
report["reloaded"] = importlib.reload(config) is config
report["engaged"] = activation.state.engine is not None
report["file"] = config.__file__
print(json.dumps(report))
"""


def test_the_unready_start_loads_its_modules_as_the_import_system_does(shim: Venv, tmp_path: Path) -> None:
    env = {"URANDOM_POLICY": "pep524", "URANDOM_SHIM_SIMULATE": "unready-forever"}
    done = shim.run("-c", LOADED, env=env, cwd=tmp_path)
    assert done.returncode == 0 and not done.stderr, done.stderr
    report = json.loads(done.stdout)
    for name in ("_messages", "_config", "_activation"):
        assert report[name] == [f"urandom_shim.{name}", True, True, True, "SourceFileLoader", "urandom_shim", True]
    assert report["source"] and report["reloaded"] and report["engaged"], report
    assert report["file"] == str(shim.site_packages / "urandom_shim" / "_config.py")


AUDITED = """
import sys
seen = []
sys.addaudithook(lambda event, args: event == "import" and seen.append(args[0]))
import _urandom_shim_boot
_urandom_shim_boot.boot()
print(" ".join(name for name in seen if name.startswith("urandom_shim")))
print(sys.modules["urandom_shim._config"].__file__)
"""


@pytest.mark.lengthy  # a venv of its own for each case
@pytest.mark.parametrize("cache", ["current", "stale", "none"])
def test_each_module_is_imported_once_with_its_audit_event_whatever_the_cache(
    python: Path, wheel: Path, tmp_path: Path, cache: str
) -> None:
    """The start-up module under ``-S`` (no .pth ran), with the caches as pip left them, made stale by a newer
    source, or removed: every module of the unready start raises its "import" audit event once, and the policy is
    engaged. A stale or missing cache falls back to the import system, which writes a new one."""
    import os
    import subprocess

    venv = make_venv(python, tmp_path / "venv", wheel)
    package = venv.site_packages / "urandom_shim"
    if cache == "stale":
        source = package / "_config.py"
        later = source.stat().st_mtime + 10
        os.utime(source, (later, later))
    elif cache == "none":
        for compiled in (package / "__pycache__").glob("*.pyc"):
            compiled.unlink()
    env = clean_env({"URANDOM_POLICY": "pep522", "URANDOM_SHIM_SIMULATE": "unready-forever"})
    env["PYTHONPATH"] = str(venv.site_packages)
    # -X importtime lists what the import system loads (run first, while the caches are as the test left them):
    # with current caches, none of the eleven; with _config's stale, the loader stops there and the import system
    # loads it and what follows; with none, all of them.
    timed = subprocess.run(
        [str(venv.python), "-S", "-X", "importtime", "-c", AUDITED], capture_output=True, text=True, env=env,
        cwd=tmp_path,
    )  # fmt: skip
    by_import_system = {line.rsplit("|", 1)[-1].strip() for line in timed.stderr.splitlines() if "|" in line}
    names = ("_messages", "_state", "_config", "_runtime", "_activation")
    expected_slow = {"current": set(), "stale": {"_config", "_runtime", "_activation"}, "none": set(names)}
    for name in names:
        assert (f"urandom_shim.{name}" in by_import_system) == (name in expected_slow[cache]), (
            name,
            sorted(by_import_system),
        )
    done = subprocess.run(
        [str(venv.python), "-S", "-c", AUDITED], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    imported = done.stdout.splitlines()[0].split()
    assert sorted(imported) == sorted(set(imported)), imported
    expected = {"urandom_shim", *(f"urandom_shim.{name}" for name in ("_config", "_activation", "_sources"))}
    assert expected <= set(imported), imported
    assert f"{package}/_config.py" in done.stdout, "the venv's copy was loaded, not another on sys.path"
    check = subprocess.run(
        [str(venv.python), "-S", "-c", AUDITED + "import os\ntry:\n    os.urandom(1)\nexcept BlockingIOError:\n"
         "    print('RAISED')\n"],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert check.stdout.strip().endswith("RAISED"), check.stdout + check.stderr
    if cache != "current":
        written = sorted(path.name for path in (package / "__pycache__").glob("*.pyc"))
        assert any(name.startswith("_config.") for name in written), (written, env)


# -- the lookup against what a hostile review put in site-packages (issue 37) ----------------------------------------
#
# Each app's package file says pep524; the environment's file says pep522; a plugin's file says legacy. Every
# distribution is written straight into site-packages, RECORD and all, as an installer (or a person) leaves it.

LAUNCHER = (
    "#!{python}\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom {module} import main\n"
    "if __name__ == '__main__':\n    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
    "    sys.exit(main())\n"
)
OWN = 'policy = "pep524"\n'
PLUGIN = 'policy = "legacy"\n'


def install_by_hand(site: Path, info: str, files: dict[str, str], record: str | None = None) -> None:
    """``files`` into ``site``, and a metadata directory ``info`` whose RECORD lists them (or is ``record``)."""
    for path, text in files.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(text)
    (site / info).mkdir()
    lines = [f"{path},sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0" for path in files]
    (site / info / "RECORD").write_text(record if record is not None else "\n".join([*lines, f"{info}/RECORD,,"]))


def hostile_layouts(site: Path, suffix: str) -> None:
    app = {"__init__.py": "", "cli.py": REPORT}
    # A plugin named after the console script's module (`aaapp-cli`), whose one quoted path holds a newline and,
    # after it, what looks like a line for the app's module.
    install_by_hand(
        site, "aaapp-1.0.dist-info", {f"aaapp/{k}": v for k, v in {**app, "urandom-shim.toml": OWN}.items()}
    )
    install_by_hand(
        site, "aaapp_cli-1.0.dist-info", {"aaapp_cli/__init__.py": ""},
        '"aaapp_cli/x\naaapp/cli.py,data",sha256=x,1\naaapp_cli/__init__.py,,\n',
    )  # fmt: skip
    # A plugin named after the module that puts files under `bbapp/cli/` and a package file into the app's package.
    install_by_hand(site, "bbapp-1.0.dist-info", {f"bbapp/{k}": v for k, v in app.items()})
    install_by_hand(
        site, "bbapp_cli-1.0.dist-info", {"bbapp/cli/plugin-data.txt": "", "bbapp/urandom-shim.toml": PLUGIN}
    )
    # An old version's metadata left behind, spelt differently, whose RECORD doesn't list the package file.
    install_by_hand(
        site, "ccapp-1.0.dist-info", {f"ccapp/{k}": v for k, v in {**app, "urandom-shim.toml": OWN}.items()}
    )
    install_by_hand(site, "CCApp-0.1.dist-info", {}, "ccapp/__init__.py,,\nccapp/cli.py,,\n")
    # A RECORD that is a FIFO: nothing may wait on it.
    install_by_hand(
        site, "ddapp-1.0.dist-info", {f"ddapp/{k}": v for k, v in {**app, "urandom-shim.toml": OWN}.items()}
    )
    (site / "ddapp-1.0.dist-info" / "RECORD").unlink()
    os.mkfifo(site / "ddapp-1.0.dist-info" / "RECORD")
    # A namespace package without __init__.py (PEP 420) that two distributions share; one ships the package file.
    install_by_hand(
        site, "pns_a-1.0.dist-info", {"pns/a/__init__.py": "", "pns/a/cli.py": REPORT, "pns/urandom-shim.toml": OWN}
    )
    install_by_hand(site, "pns_b-1.0.dist-info", {"pns/b/__init__.py": "", "pns/b/cli.py": REPORT})
    # A console script whose module is an extension module (as mypyc or Cython build it): `check` doesn't import it.
    install_by_hand(
        site, "eeapp-1.0.dist-info",
        {"eeapp/__init__.py": "", f"eeapp/cli{suffix}": "not loaded by check", "eeapp/urandom-shim.toml": OWN},
    )  # fmt: skip


#: module -> (policy, how its source ends) under `check --for`, and from a start of the console script itself.
HOSTILE = {
    "aaapp.cli": ("pep524", "aaapp/urandom-shim.toml (the app's package file)"),
    "bbapp.cli": ("pep522", "urandom-shim.toml (environment file)"),  # not the plugin's legacy
    "ccapp.cli": ("pep524", "ccapp/urandom-shim.toml (the app's package file)"),
    "ddapp.cli": ("pep524", "ddapp/urandom-shim.toml (the app's package file)"),
    "eeapp.cli": ("pep524", "eeapp/urandom-shim.toml (the app's package file)"),
    "pns.a.cli": ("pep524", "pns/urandom-shim.toml (the app's package file)"),
    "pns.b.cli": ("pep522", "urandom-shim.toml (environment file)"),  # pns-a's file is not pns-b's
}
#: The programs whose package holds a file that isn't theirs: `check` says so.
IGNORED = {"bbapp.cli": "bbapp", "pns.b.cli": "pns"}

_HOSTILE: dict[str, Venv] = {}


@pytest.fixture
def hostile_site(wheel: Path, python: Path, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    if str(python) not in _HOSTILE:
        import subprocess

        work = tmp_path_factory.mktemp("hostile")
        venv = make_venv(python, work / "venv", wheel)
        suffix = subprocess.run(
            [str(venv.python), "-c", "import _imp; print(_imp.extension_suffixes()[0])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        site = venv.site_packages
        hostile_layouts(site, suffix)
        for module in HOSTILE:
            launcher = venv.path / "bin" / module.replace(".", "-")
            launcher.write_text(LAUNCHER.format(python=venv.python, module=module))
            launcher.chmod(0o755)
        (venv.path / "urandom-shim.toml").write_text('policy = "pep522"\n')
        _HOSTILE[str(python)] = venv
    return _HOSTILE[str(python)]


@pytest.mark.parametrize("module", list(HOSTILE))
def test_a_plugin_a_leftover_or_an_odd_record_never_gives_an_app_another_distributions_file(
    hostile_site: Venv, tmp_path: Path, module: str
) -> None:
    import subprocess

    bin_dir = hostile_site.path / "bin"
    env = clean_env(
        {"URANDOM_SHIM_SIMULATE": "unready-forever", "XDG_CONFIG_HOME": str(tmp_path),
         "URANDOM_SHIM_MACHINE_CONFIG": str(tmp_path / "machine.toml"),
         "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    )  # fmt: skip
    script = module.replace(".", "-")
    policy, source = HOSTILE[module]
    check = subprocess.run(
        [str(bin_dir / "urandom-shim"), "check", "--json", "--for", script],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=30,
    )  # fmt: skip
    report = json.loads(check.stdout)
    got = (report["settings"]["policy"]["value"], report["settings"]["policy"]["source"])
    assert got[0] == policy and got[1].endswith(source), (got, check.stderr)
    # A file there that doesn't apply is named, with the reason; one that applies is not.
    ignored = [line for line in report["advice"] if "does not apply to" in line]
    if module in IGNORED:
        file = hostile_site.site_packages / IGNORED[module] / "urandom-shim.toml"
        expected = f"{file} does not apply to {script}: the RECORD"
        assert len(ignored) == 1 and ignored[0].startswith(expected), report["advice"]
    else:
        assert ignored == [], report["advice"]
    if module != "eeapp.cli":  # the others start for real
        done = subprocess.run(
            [str(bin_dir / script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=30
        )
        assert done.returncode == 0, done.stderr
        started = json.loads(done.stdout.strip().splitlines()[-1])
        assert (started[0], started[1].endswith(source)) == (policy, True), (started, done.stderr)


def test_a_name_that_lowering_lengthens_doesnt_hide_the_apps_distribution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Hostile review of issue 37: "İ" lowered is two characters, and the listing was searched lowered: every name
    after it was read from the wrong place, and the app's distribution was never found."""
    from urandom_shim import _programs

    listing = ["İİİ.txt", "zzapp_plugin-1.0.dist-info", "ZZApp-2.0.dist-info", "zzapp-1.0.dist-info", "zzapp"]
    monkeypatch.setattr(_programs.os, "listdir", lambda entry: list(listing))
    assert _programs._named_after("/nowhere", "zzapp.plugin.cli") == [
        ["zzapp_plugin-1.0.dist-info"],
        ["ZZApp-2.0.dist-info", "zzapp-1.0.dist-info"],
    ]
    listing.insert(0, "new\nline-1.0.dist-info")  # a name with a newline in it must not shift the others either
    assert _programs._named_after("/nowhere", "zzapp") == [["ZZApp-2.0.dist-info", "zzapp-1.0.dist-info"]]


def test_modules_loaded_from_caches_compiled_elsewhere_know_where_they_are(shim: Venv, tmp_path: Path) -> None:
    """Caught by the real-kernel boots of issue 37: a cache keeps the path its source had when it was compiled (the
    guest images compile in a build directory, then move the files). The import system writes the real path into
    the code; the loader must too, or the events name the shim's own frames as the caller."""
    import shutil
    import subprocess

    moved = tmp_path / "elsewhere"
    moved.mkdir()
    shutil.copytree(shim.site_packages / "urandom_shim", moved / "urandom_shim")  # caches and times kept
    shutil.copy2(shim.site_packages / "_urandom_shim_boot.py", moved)
    env = clean_env({"URANDOM_POLICY": "pep522", "URANDOM_SHIM_SIMULATE": "unready-forever", "PYTHONPATH": str(moved)})
    code = "import _urandom_shim_boot, os\ntry:\n    os.urandom(1)\nexcept BlockingIOError:\n    print('raised')\n"
    done = subprocess.run(
        [str(shim.python), "-S", "-B", "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.stdout == "raised\n", done.stdout + done.stderr
    assert "urandom-shim: os.urandom(1) called from <string>:" in done.stderr, done.stderr
