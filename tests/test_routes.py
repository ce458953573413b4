"""Every route to randomness in the standard library, what each policy promises for it, and what really happens.

Each route runs in a real interpreter of a venv built from the wheel, while the CRNG is unready, in two ways:
simulated (``URANDOM_SHIM_SIMULATE``), and on the fake kernel (``tests/fakekernel.c``), where the interpreter's own
``getrandom()`` calls see an unready CRNG, block in the kernel, and ``GRND_INSECURE`` bytes spell ``WEAK-RNG``. The
parent makes the CRNG ready half a second after the routes start (``tests/routes.py``), and classifies each route
by when it ended:

- ``early``: returned while the CRNG was unready;
- ``raised``: raised ``BlockingIOError`` while it was unready;
- ``waited``: returned only after it became ready.

``native`` rows are the interpreter's own behaviour: under simulation the real kernel is ready, so they return at
once; on the fake kernel they wait in the kernel, as on a real unready machine. Under ``pep524`` and ``pep522`` no
route that returns kernel bytes may end ``early``, and on the fake kernel no output may ever hold a weak byte.

The documented gaps are here too, asserting what the documentation says: ``os.getrandom()`` and ``ssl.RAND_bytes()``
go to the kernel without ``os.urandom`` (the interpreter's own behaviour under every policy), and a reference to
``os.urandom`` held in a tuple that is not a default argument, or in a frozenset, can't be replaced.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeKernel, Venv, clean_env

ROUTES_SCRIPT = Path(__file__).resolve().parent / "routes.py"
POLICIES = ("native", "pep524", "pep522", "legacy")
NATIVE = "native"  # "early" under simulation, "waited" on the fake kernel: see the module's docstring

#: What each kind of route does while the CRNG is unready, per policy (docs/reference/policies.md).
EXPECTED = {
    "urandom": {"native": NATIVE, "pep524": "waited", "pep522": "raised", "legacy": "early"},
    "secrets": {"native": NATIVE, "pep524": "waited", "pep522": "waited", "legacy": "early"},
    "seeding": {"native": "early", "pep524": "early", "pep522": "early", "legacy": "early"},
    "wait": {"native": "waited", "pep524": "waited", "pep522": "waited", "legacy": "waited"},
    "gap": {"native": NATIVE, "pep524": NATIVE, "pep522": NATIVE, "legacy": NATIVE},
}

#: group -> route -> kind. A route's group is the process it runs in (tests/routes.py).
ROUTES: dict[str, dict[str, str]] = {
    "plain": {
        "os.urandom": "urandom",
        "from os import urandom": "urandom",
        "posix.urandom": "urandom",
        "random._urandom": "urandom",
        "SystemRandom().random()": "urandom",
        "SystemRandom().getrandbits(64)": "urandom",
        "SystemRandom().choice()": "urandom",
        "SystemRandom().randbytes(16)": "urandom",  # Python 3.9+
        "uuid.uuid4()": "urandom",
        "urllib.request._randombytes": "urandom",
        "import multiprocessing": "urandom",  # os.urandom(32) for its authkey, while it is imported
        "secrets.token_bytes": "secrets",
        "secrets.token_hex": "secrets",
        "secrets.token_urlsafe": "secrets",
        "secrets.choice": "secrets",
        "secrets.randbelow": "secrets",
        "secrets.randbits": "secrets",
        "secrets.SystemRandom().random()": "urandom",  # a SystemRandom like any other, not a secrets function
        "secrets.wait_for_system_rng()": "wait",
        "random.random()": "seeding",
        "random.seed()": "seeding",
        "random.Random()": "seeding",
        "tempfile.mkstemp()": "seeding",
        "email.utils.make_msgid()": "seeding",
    },
    "reimported": {
        "importlib.reload(os)": "urandom",
        "os imported again": "urandom",
        "importlib.reload(secrets)": "secrets",
        "secrets imported again": "secrets",
        "secrets imported again: wait_for_system_rng()": "wait",
        "importlib.reload(random): SystemRandom": "urandom",
        "importlib.reload(random): Random()": "seeding",
    },
    "references": {
        "dict value": "urandom",
        "list item": "urandom",
        "default argument": "urandom",
        "keyword-only default": "urandom",
        "functools.partial": "urandom",
        "staticmethod": "urandom",
        "class attribute": "urandom",
        "instance attribute": "urandom",
        "closure": "urandom",
        "a tuple (not a default)": "gap",
        "a frozenset": "gap",
    },
    "getrandom": {"os.getrandom(16)": "gap"},
    "openssl": {"ssl.RAND_bytes(16)": "gap"},
}


def expected(kind: str, policy: str, kernel: str) -> str:
    outcome = EXPECTED[kind][policy]
    if outcome == NATIVE:
        return "early" if kernel == "simulated" else "waited"
    return outcome


def run_group(
    venv: Venv, fake_kernel: FakeKernel, tmp_path: Path, group: str, policy: str, kernel: str
) -> tuple[dict[str, Any], float]:
    """Run ``group`` under ``policy`` with an unready CRNG that becomes ready 0.5 s after the routes start; returns
    the child's report and the moment the CRNG became ready (on the system-wide monotonic clock). On a machine so
    loaded that a route only started after that moment, which tells nothing, run it again with more time."""
    for delay in (0.5, 2.0, 5.0):
        report, ready_at = _run_group(venv, fake_kernel, tmp_path, group, policy, kernel, delay)
        if all(classify(result, ready_at) != "started too late to tell" for result in report.values()):
            break
    return report, ready_at


def _run_group(
    venv: Venv, fake_kernel: FakeKernel, tmp_path: Path, group: str, policy: str, kernel: str, delay: float
) -> tuple[dict[str, Any], float]:
    flag = tmp_path / f"unready-{group}-{policy}-{kernel}"
    flag.touch()
    env = fake_kernel.env(flag) if kernel == "fake-kernel" else {"URANDOM_SHIM_SIMULATE": f"unready-until-file:{flag}"}
    if group != "references":  # those install the policy at runtime, after taking their references
        env["URANDOM_POLICY"] = policy
    env.update(URANDOM_SHIM_WARN_AFTER="none", XDG_CONFIG_HOME=str(tmp_path), URANDOM_SHIM_MACHINE_CONFIG="/none")
    proc = subprocess.Popen(
        [str(venv.python), str(ROUTES_SCRIPT), group, policy],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0, env=clean_env(env), cwd=tmp_path,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        # Unbuffered, so readline() takes one byte at a time and leaves the report (which may already have arrived
        # when every route finished at once) for communicate(), which reads the pipe itself, past any buffer.
        assert proc.stdout.readline().strip() == b"starting", proc.communicate(timeout=30)
        time.sleep(delay)
        ready_at = time.monotonic()
        flag.unlink()
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        flag.unlink(missing_ok=True)
    assert proc.returncode == 0, err.decode(errors="replace")
    assert out.strip(), f"no report from the routes child; stderr: {err.decode(errors='replace')}"
    report: dict[str, Any] = json.loads(out.decode().splitlines()[-1])
    return report, ready_at


def classify(result: dict[str, Any], ready_at: float) -> str:
    if result["outcome"] == "blocked":
        return "blocked"
    if result["started"] >= ready_at:
        return "started too late to tell"
    if result["ended"] < ready_at:
        return "raised" if result["outcome"] == "raised" else "early"
    return "waited" if result["outcome"] == "returned" else "raised late"


@pytest.mark.parametrize("kernel", ["simulated", "fake-kernel"])
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("group", list(ROUTES))
def test_every_route_does_what_the_policy_promises(
    shim: Venv,
    fake_kernel: FakeKernel,
    tmp_path: Path,
    record_property: Any,
    request: pytest.FixtureRequest,
    group: str,
    policy: str,
    kernel: str,
) -> None:
    report, ready_at = run_group(shim, fake_kernel, tmp_path, group, policy, kernel)
    python = request.node.callspec.params["python"]
    wrong = []
    for route, kind in ROUTES[group].items():
        if route not in report:
            assert route == "SystemRandom().randbytes(16)", f"{route} did not run"  # only on Python 3.9+
            continue
        result = report[route]
        got = classify(result, ready_at)
        want = expected(kind, policy, kernel)
        weak = result.get("weak", False)
        record_property(
            "route_result",
            {"python": python, "route": route, "policy": policy, "kernel": kernel, "got": got, "weak": weak},
        )
        if got != want:
            times = {k: round(result[k] - ready_at, 3) for k in ("started", "ended") if k in result}
            wrong.append(f"{route}: expected {want}, got {got} ({result.get('error') or result.get('value')}; {times})")
        if weak and policy != "legacy":
            wrong.append(f"{route}: returned weak bytes under {policy}: {result.get('value')}")
        if want == "raised" and "system random number generator is not ready" not in result.get("error", ""):
            wrong.append(f"{route}: raised something other than PEP 522's BlockingIOError: {result.get('error')}")
    assert not wrong, "\n".join(wrong)


def test_legacy_bytes_on_the_fake_kernel_are_the_kernels_weak_bytes(
    shim: Venv, fake_kernel: FakeKernel, tmp_path: Path
) -> None:
    """The mark check above can fail: under legacy, on the fake kernel, the bytes are GRND_INSECURE's."""
    report, ready_at = run_group(shim, fake_kernel, tmp_path, "plain", "legacy", "fake-kernel")
    for route in ("os.urandom", "posix.urandom", "secrets.token_bytes", "secrets.token_hex", "secrets.token_urlsafe"):
        assert report[route]["weak"] and report[route]["ended"] < ready_at, (route, report[route])


def test_a_wait_at_interpreter_shutdown_is_bounded(shim: Venv, fake_kernel: FakeKernel, tmp_path: Path) -> None:
    """A ``__del__`` that runs while the interpreter shuts down can't use the helper thread (3.8 to 3.12 never run
    it again; 3.13 refuses to start it). Without a timeout it waits in the kernel in its own thread and returns when
    the CRNG is ready; with one, it raises when the timeout runs out."""
    code = (
        "import os, sys, time\n"
        "class AtExit:\n"
        "    def __del__(self):\n"
        "        start = time.monotonic()\n"
        "        try:\n"
        "            os.urandom(16)\n"
        "            print('returned', time.monotonic(), flush=True)\n"
        "        except BlockingIOError as exc:\n"
        "            print('raised', round(time.monotonic() - start, 1), str(exc)[:43], flush=True)\n"
        "sys.modules['keep_until_shutdown'] = AtExit()\n"
        "print('exiting', flush=True)\n"
    )
    flag = tmp_path / "unready"
    for extra in ({}, {"URANDOM_SHIM_TIMEOUT": "0.5"}):
        flag.touch()
        env = {**fake_kernel.env(flag), "URANDOM_POLICY": "pep524", "URANDOM_SHIM_WARN_AFTER": "0.2", **extra}
        proc = subprocess.Popen(
            [str(shim.python), "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=clean_env(env),
        )  # fmt: skip
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "exiting"
            time.sleep(1.0)
            ready_at = time.monotonic()
            flag.unlink()
            out, err = proc.communicate(timeout=20)
        finally:
            proc.kill()
            flag.unlink(missing_ok=True)
        assert proc.returncode == 0, err
        what, *rest = out.split()
        if extra:
            assert (what, rest[0]) == ("raised", "0.5"), out + err
            assert " ".join(rest[1:]) == "system random number generator is not ready", out
        else:
            assert what == "returned" and ready_at <= float(rest[0]) < ready_at + 2, (out, err, ready_at)


# -- `urandom-shim run`'s hash seed, by floor, wrapper, nesting and the moment the CRNG becomes ready -------------
#
# The seed `run` makes is weak (GRND_INSECURE bytes). It may reach only an interpreter that `run` starts itself,
# whose own resolved policy allows weak bytes, while the CRNG is unready. The program below reports the seed its
# interpreter really started with: the environment it was exec'd with (/proc/self/environ), since the shim takes
# the seed out of os.environ at start-up.

SHOW_SEED = """\
import sys
with open("/proc/self/environ", "rb") as handle:
    initial = dict(item.split(b"=", 1) for item in handle.read().split(b"\\0") if b"=" in item)
seed, mark = initial.get(b"PYTHONHASHSEED"), initial.get(b"URANDOM_SHIM_HASHSEED")
print("SEED", seed.decode() if seed is not None and seed == mark else None, sys.argv[0], flush=True)
"""

#: route -> whether the program gets a seed of ours. Every route runs `run --policy legacy` (or a machine file
#: whose policy is legacy) on the fake kernel while its CRNG is unready.
SEED_ROUTES = {
    "interpreter": True,  # the control: an interpreter run starts itself, policy legacy
    "console script (#! names the interpreter)": True,
    "another venv whose environment file holds a floor": False,
    "machine floor": False,
    "[[program]] rule pep524": False,
    "/usr/bin/env python, [[program]] rule pep524": False,
    "/usr/bin/env python, legacy everywhere": False,  # a wrapper: run can't know what it starts, or when
    "sh -c python": False,
    "sh -c 'urandom-shim run --policy pep524'": False,
    "python starting `urandom-shim run --policy pep524`": False,
    "python starting python": False,  # a child whose policy nobody resolved
    "sh: python started after the CRNG is ready": False,
    "python: python started after the CRNG is ready": False,
}


@pytest.mark.parametrize("route", list(SEED_ROUTES))
def test_runs_hash_seed_reaches_only_an_interpreter_whose_own_policy_allows_it_while_unready(
    shim: Venv, venvs: Any, python: Path, fake_kernel: FakeKernel, tmp_path: Path, route: str
) -> None:
    flag = tmp_path / "kernel-unready"
    flag.touch()
    machine = tmp_path / "machine.toml"
    env = {
        **fake_kernel.env(flag),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "URANDOM_SHIM_MACHINE_CONFIG": str(machine),
    }
    app = tmp_path / "app.py"
    app.write_text(SHOW_SEED)
    cli = str(shim.path / "bin" / "urandom-shim")
    py = str(shim.python)
    run = [cli, "run", "--policy", "legacy", "--"]
    wait_then = f"import os, subprocess, sys, time\nwhile os.path.exists({str(flag)!r}): time.sleep(0.02)\n"
    other_env_file = None
    if route == "interpreter":
        command = [*run, py, str(app)]
    elif route.startswith("console script"):
        script = tmp_path / "app-tool"
        script.write_text(f"#!{py}\n" + SHOW_SEED)
        script.chmod(0o755)
        command = [*run, str(script)]
    elif route.startswith("another venv"):
        other = venvs(python, "bare")
        other_env_file = other.path / "urandom-shim.toml"
        other_env_file.write_text("allow_weak = false\n")
        command = [*run, str(other.python), str(app)]
    elif route == "machine floor":
        machine.write_text("allow_weak = false\n")
        command = [*run, py, str(app)]
    elif route.endswith("rule pep524"):
        machine.write_text('policy = "legacy"\n[[program]]\nmatch = "app.py"\npolicy = "pep524"\n')
        command = [cli, "run", "--", *(["/usr/bin/env"] if "env" in route else []), py, str(app)]
    elif route.startswith("/usr/bin/env"):
        command = [*run, "/usr/bin/env", py, str(app)]
    elif route == "sh -c python":
        command = [*run, "sh", "-c", f'exec "{py}" "{app}"']
    elif route.startswith("sh -c 'urandom-shim run"):
        command = [*run, "sh", "-c", f'exec "{cli}" run --policy pep524 -- "{py}" "{app}"']
    elif route.startswith("python starting `urandom-shim run"):
        code = f"import subprocess; subprocess.run([{cli!r}, 'run', '--policy', 'pep524', '--', {py!r}, {str(app)!r}])"
        command = [*run, py, "-c", code]
    elif route == "python starting python":
        command = [*run, py, "-c", f"import subprocess; subprocess.run([{py!r}, {str(app)!r}])"]
    elif route.startswith("sh:"):
        command = [*run, "sh", "-c", f'while [ -e "{flag}" ]; do sleep 0.02; done; exec "{py}" "{app}"']
    else:
        command = [*run, py, "-c", wait_then + f"subprocess.run([{py!r}, {str(app)!r}])"]
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(env))
        try:
            out, err = proc.communicate(timeout=1.0 if "after the CRNG is ready" in route else 30)
        except subprocess.TimeoutExpired:
            flag.unlink()  # the moment the CRNG becomes ready: before the program's interpreter starts
            out, err = proc.communicate(timeout=30)
    finally:
        flag.unlink(missing_ok=True)
        if other_env_file is not None:
            other_env_file.unlink(missing_ok=True)
    seeds = [line.split()[1] for line in out.splitlines() if line.startswith("SEED ")]
    assert proc.returncode == 0 and seeds, out + err
    got = seeds[-1] != "None"
    assert got == SEED_ROUTES[route], f"{route}: the program's interpreter started with seed {seeds[-1]}\n{err}"


# -- package files, by namespace package and stray project file ------------------------------------------------------
#
# Distributions installed for real (pip, from wheels made here) into one venv: `nsa` and `nsb` share the
# pkgutil-style namespace package `ns`, and `nsb` ships `ns/urandom-shim.toml` (legacy); `appa` ships its own package
# file (pep522); `stray` ships a `pyproject.toml` with our table (legacy) at the root of site-packages, and a
# `pyproject.toml` sits in the venv's root too. Each program must get its own distribution's policy, and nothing
# else's.

NAMESPACE_INIT = "__path__ = __import__('pkgutil').extend_path(__path__, __name__)\n"
REPORT_POLICY = (
    "import json, urandom_shim\n"
    "def main():\n"
    "    s = urandom_shim.current_settings()\n"
    "    print(json.dumps([s.policy.value.name, s.policy.source]))\n"
    "if __name__ == '__main__':\n"
    "    main()\n"
)
DISTRIBUTIONS = {
    "nsa": {
        "files": {"ns/__init__.py": NAMESPACE_INIT, "ns/a/__init__.py": "", "ns/a/cli.py": REPORT_POLICY},
        "scripts": {"ns-a-tool": "ns.a.cli:main"},
    },
    "nsb": {
        "files": {
            "ns/__init__.py": NAMESPACE_INIT,
            "ns/urandom-shim.toml": 'policy = "legacy"\n',
            "ns/b/__init__.py": "",
            "ns/b/cli.py": REPORT_POLICY,
        },
        "scripts": {"ns-b-tool": "ns.b.cli:main"},
    },
    "appa": {
        "files": {
            "appa/__init__.py": "",
            "appa/urandom-shim.toml": 'policy = "pep522"\n',
            "appa/cli.py": REPORT_POLICY,
        },
        "scripts": {"appa-tool": "appa.cli:main"},
    },
    "appb": {
        "files": {"appb/__init__.py": "", "appb/cli.py": REPORT_POLICY},
        "scripts": {"appb-tool": "appb.cli:main"},
    },
    "stray": {
        "files": {"pyproject.toml": '[tool.urandom-shim]\npolicy = "legacy"\n', "stray_mod.py": ""},
        "scripts": {},
    },
}


def make_wheel(directory: Path, name: str, files: dict[str, str], scripts: dict[str, str]) -> Path:
    """A real wheel of ``name`` 1.0, as any build backend writes one."""
    import base64
    import hashlib
    import zipfile

    info = f"{name}-1.0.dist-info"
    contents = dict(files)
    contents[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
    contents[f"{info}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    if scripts:
        contents[f"{info}/entry_points.txt"] = "[console_scripts]\n" + "".join(
            f"{k} = {v}\n" for k, v in scripts.items()
        )
    record = []
    for path, text in contents.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    contents[f"{info}/RECORD"] = "\n".join(record) + "\n"
    wheel = directory / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in contents.items():
            archive.writestr(path, text)
    return wheel


@pytest.fixture
def installed_apps(wheel: Path, python: Path, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A venv of ``python`` with the shim and the distributions above installed by pip, made once per session."""
    from conftest import make_venv

    if str(python) not in _APPS:
        work = tmp_path_factory.mktemp("apps")
        venv = make_venv(python, work / "venv", wheel)
        wheels = [make_wheel(work, name, spec["files"], spec["scripts"]) for name, spec in DISTRIBUTIONS.items()]
        done = subprocess.run(
            [str(venv.python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", *map(str, wheels)],
            capture_output=True, text=True, env=clean_env(), timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        (venv.path / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "legacy"\n')  # the venv's root
        _APPS[str(python)] = venv
    return _APPS[str(python)]


_APPS: dict[str, Venv] = {}

#: program -> (policy, how its source ends). Each program started three ways: its console script, ``python -m``, and
#: ``urandom-shim check --for``.
PACKAGE_ROUTES = {
    "ns.a.cli": ("native", "default"),  # nsb's file in the shared namespace is not nsa's
    "ns.b.cli": ("legacy", "ns/urandom-shim.toml (the app's package file)"),  # nsb's own program: it applies
    "appa.cli": ("pep522", "appa/urandom-shim.toml (the app's package file)"),  # not the stray pyproject's legacy
    "appb.cli": ("native", "default"),  # no file of its own: neither site-packages' nor the venv's pyproject
}
SCRIPTS = {"ns.a.cli": "ns-a-tool", "ns.b.cli": "ns-b-tool", "appa.cli": "appa-tool", "appb.cli": "appb-tool"}


@pytest.mark.parametrize("how", ["console script", "python -m", "check --for"])
@pytest.mark.parametrize("program", list(PACKAGE_ROUTES))
def test_a_package_file_applies_only_to_its_own_distributions_program_and_no_install_dir_is_a_project(
    installed_apps: Venv, tmp_path: Path, program: str, how: str
) -> None:
    venv = installed_apps
    bin_dir = venv.path / "bin"
    env = clean_env(
        {"URANDOM_SHIM_SIMULATE": "unready-forever", "XDG_CONFIG_HOME": str(tmp_path),
         "URANDOM_SHIM_MACHINE_CONFIG": str(tmp_path / "machine.toml")}
    )  # fmt: skip
    if how == "console script":
        command = [str(bin_dir / SCRIPTS[program])]
    elif how == "python -m":
        command = [str(venv.python), "-m", program]
    else:
        command = [str(bin_dir / "urandom-shim"), "check", "--json", "--for", SCRIPTS[program]]
        env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    if how == "check --for":
        report = json.loads(done.stdout)
        got = (report["settings"]["policy"]["value"], report["settings"]["policy"]["source"])
    else:
        assert done.returncode == 0, done.stdout + done.stderr
        got = tuple(json.loads(done.stdout.strip().splitlines()[-1]) or ())
    policy, source = PACKAGE_ROUTES[program]
    assert got[0] == policy and str(got[1]).endswith(source), (how, got, done.stderr)
    assert "pyproject.toml" not in str(got[1]), got


# -- the pytest plugin's children ---------------------------------------------------------------------------------------
#
# A test under `--urandom-policy` starts a child interpreter that runs every plain route (tests/routes.py). Nothing in
# the test makes the simulated CRNG ready, so every route that waits must end by the guard the child inherits
# (URANDOM_SHIM_WAIT_BOUND): none may block, and none may return weak bytes under a policy that forbids them.

CHILD_OF_A_TEST = """\
import json, subprocess, sys

def test_every_route_in_a_child_ends():
    child = subprocess.run([sys.executable, {routes!r}, "plain", "{policy}"], capture_output=True, text=True,
                           timeout=90)
    assert child.returncode == 0, child.stderr
    report = json.loads(child.stdout.splitlines()[-1])
    print("REPORT " + json.dumps(report))
"""


@pytest.mark.slow
@pytest.mark.parametrize("policy", POLICIES)
def test_every_route_in_a_child_of_a_plugin_test_ends_and_keeps_the_policys_promise(
    venvs: Any, python: Path, tmp_path: Path, policy: str
) -> None:
    venv: Venv = venvs(python, "pytest")
    (tmp_path / "test_child.py").write_text(CHILD_OF_A_TEST.format(routes=str(ROUTES_SCRIPT), policy=policy))
    result = venv.run(
        "-m", "pytest", "-p", "no:cacheprovider", "-s", f"--urandom-policy={policy}", "test_child.py",
        env={"XDG_CONFIG_HOME": str(tmp_path), "URANDOM_SHIM_WARN_AFTER": "none"}, cwd=tmp_path, timeout=150,
    )  # fmt: skip
    assert result.returncode == 0 and "1 passed" in result.stdout, result.stdout + result.stderr
    (line,) = [text for text in result.stdout.splitlines() if "REPORT " in text]
    report = json.loads(line.split("REPORT ", 1)[1])
    wrong = []
    for route, kind in ROUTES["plain"].items():
        if route not in report:
            continue  # SystemRandom().randbytes(16): Python 3.9+
        result_ = report[route]
        if result_["outcome"] == "blocked":
            wrong.append(f"{route}: still waiting after 20 s")
        if result_.get("weak") and policy != "legacy":
            wrong.append(f"{route}: weak bytes under {policy}")
        want = EXPECTED[kind][policy]
        if want in ("waited", "raised") and kind != "seeding" and policy != "native":
            # Nothing ends the window: a wait ends by the guard, as BlockingIOError; a refusal is one at once.
            if result_["outcome"] != "raised" or "BlockingIOError" not in result_.get("error", ""):
                wrong.append(f"{route}: expected BlockingIOError, got {result_}")
    assert not wrong, "\n".join(wrong)
