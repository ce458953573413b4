"""Activation from the installed wheel: the ready path, idempotency, the kill switch, failures, aliases, restoration."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, Venv, events_in, make_editable_venv, window, without_events

UNREADY = {"URANDOM_SHIM_SIMULATE": "unready-forever"}
FORBIDDEN_ON_READY_PATH = {"tomllib", "tomli", "wrapt", "typing", "asyncio", "pytest", "threading", "enum"}


def loaded_modules(venv: Venv, env: dict[str, str] | None = None, flags: tuple[str, ...] = ()) -> set[str]:
    result = venv.run("-c", "import sys, json; print(json.dumps(sorted(sys.modules)))", env=env, flags=flags)
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout)) - {"json", "json.decoder", "json.scanner", "json.encoder", "_json", "re"}


def py(venv: Venv, code: str, env: dict[str, str] | None = None, **kw: Any) -> subprocess.CompletedProcess[str]:
    return venv.run("-c", code, env=env, **kw)


def test_wheel_installs_the_pth_and_the_pep829_start_file(shim: Venv) -> None:
    site = shim.site_packages
    pth = (site / "urandom_shim.pth").read_text()
    assert pth.startswith("import "), "site only executes .pth lines that start with 'import'"
    # Named apart from the .pth on purpose: a matching .start would switch the .pth's import line off on 3.15.
    assert (site / "urandom_shim_pep829.start").read_text().strip() == "_urandom_shim_boot:boot"
    assert (site / "_urandom_shim_boot.py").is_file()
    # The .pth must sort after hatchling's and setuptools' editable path files.
    assert sorted(["urandom_shim.pth", "__editable__.x.pth", "_urandom_shim.pth", "_editable_impl_x.pth"])[-1] == (
        "urandom_shim.pth"
    )
    # What Python 3.15's site does with it: resolve the entry point and call it (idempotent with the .pth).
    code = "import importlib; m, _, a = '_urandom_shim_boot:boot'.partition(':'); f = getattr(importlib.import_module(m), a); f(); f(); print('ok')"
    result = py(shim, code)
    assert result.returncode == 0 and result.stdout == "ok\n", result.stderr


def test_ready_path_imports_only_the_startup_module_and_replaces_nothing(shim: Venv, bare: Venv) -> None:
    added = loaded_modules(shim, {"URANDOM_POLICY": "pep522"}) - loaded_modules(bare)
    # site decodes .pth files as utf-8-sig from 3.13 on; the bare venv has no .pth file to decode.
    added.discard("encodings.utf_8_sig")
    # PyPy has no os.getrandom: the probe asks /dev/random with one poll() (select is built into PyPy).
    if shim.run("-c", "import sys; print(sys.implementation.name)").stdout.strip() == "pypy":
        added.discard("select")
    assert added == {"_urandom_shim_boot"}
    assert not (added & FORBIDDEN_ON_READY_PATH)
    result = py(
        shim,
        "import os, posix, secrets, sys; "
        "assert os.urandom is posix.urandom and type(os.urandom) is type(len); "
        "assert secrets.wait_for_system_rng() is True; "
        # The hook stays to add wait_for_system_rng to a re-imported secrets; it watches nothing else.
        "import urandom_shim._hooks as h; assert list(h.hook.callbacks) == ['secrets'], h.hook.callbacks; "
        "print('ok')",
        {"URANDOM_POLICY": "pep522"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok\n" and result.stderr == ""


@pytest.mark.cpython_only("PyPy has no -X importtime")
def test_ready_path_importtime_shows_no_heavy_import(shim: Venv) -> None:
    result = shim.run("-c", "pass", flags=("-X", "importtime"), env={"URANDOM_POLICY": "legacy"})
    assert result.returncode == 0
    imported = {
        line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time")
    }
    assert "_urandom_shim_boot" in imported and "urandom_shim" not in imported
    assert not (imported & FORBIDDEN_ON_READY_PATH), imported & FORBIDDEN_ON_READY_PATH


def test_activation_is_idempotent_even_when_boot_runs_again(shim: Venv) -> None:
    code = (
        "import os, posix, sys, _urandom_shim_boot as b, urandom_shim._activation as s, urandom_shim._state as st; "
        "b.boot('pth'); b.boot(); s.boot('pth'); s.boot('bootstrap'); "
        "assert type(os.urandom.__wrapped__) is type(len), 'wrapped twice'; "
        "assert st.state.activated_by == 'pth' and sys._urandom_shim_boot == 'pth', st.state.activated_by; print('ok')"
    )
    result = py(shim, code, {"URANDOM_POLICY": "pep522", **UNREADY})
    assert result.returncode == 0 and result.stdout == "ok\n", result.stderr


def test_kill_switch_means_no_import_no_patch_no_addition(shim: Venv) -> None:
    env = {"URANDOM_SHIM_DISABLE": "1", "URANDOM_POLICY": "pep522", **UNREADY}
    assert not any(m.startswith("urandom_shim") for m in loaded_modules(shim, env))
    result = py(
        shim,
        "import os, secrets; print(type(os.urandom) is type(len), hasattr(secrets, 'wait_for_system_rng'))",
        env,
    )
    assert result.stdout == "True False\n", result.stderr
    # "0" and empty mean "not disabled".
    result = py(shim, "import os; print(type(os.urandom) is type(len))", {**env, "URANDOM_SHIM_DISABLE": "0"})
    assert result.stdout == "False\n", result.stderr


def test_site_disabled_by_dash_S_means_no_shim(shim: Venv) -> None:
    result = shim.run(
        "-c",
        "import sys, os, posix; print('urandom_shim' in sys.modules, type(os.urandom) is type(posix.urandom) is type(len))",
        env={"URANDOM_POLICY": "pep522", **UNREADY},
        flags=("-S",),
    )
    assert result.stdout == "False True\n", result.stderr


@pytest.mark.parametrize("flag", ["-E", "-I"])
def test_dash_E_and_dash_I_ignore_the_policy_variable(shim: Venv, flag: str) -> None:
    result = shim.run(
        "-c", "import os; print(len(os.urandom(4)))", env={"URANDOM_POLICY": "pep522", **UNREADY}, flags=(flag,)
    )
    assert result.returncode == 0 and result.stdout == "4\n", result.stderr


def test_a_failing_activation_prints_one_line_and_the_interpreter_carries_on(shim: Venv, tmp_path: Path) -> None:
    sabotage = shim.site_packages / "aaa_test_sabotage.pth"
    sabotage.write_text(
        "import os, sys; exec(\"sys.modules['gc'] = None\") if os.environ.get('URANDOM_SHIM_TEST_SABOTAGE') else None\n"
    )
    env = {"URANDOM_POLICY": "pep522", "URANDOM_SHIM_TEST_SABOTAGE": "1", **UNREADY}
    result = py(shim, "import os; print(len(os.urandom(4)))", env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "4\n"
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("urandom-shim: not active in this interpreter: activation failed (")
    assert "import of gc halted" in lines[0]  # the stray-reference scan's import, inside engage()
    assert "Traceback" not in result.stderr
    debug = py(shim, "pass", {**env, "URANDOM_SHIM_DEBUG": "1"})
    assert "Traceback" in debug.stderr and debug.returncode == 0


def test_an_unimportable_package_prints_one_line_from_the_pth(shim: Venv) -> None:
    sabotage = shim.site_packages / "aaa_test_hide.pth"
    sabotage.write_text(
        "import os, sys; exec(\"sys.modules['urandom_shim'] = None\") "
        "if os.environ.get('URANDOM_SHIM_TEST_HIDE') else None\n"
    )
    result = py(shim, "print('alive')", {"URANDOM_SHIM_TEST_HIDE": "1", **UNREADY})
    assert result.returncode == 0 and result.stdout == "alive\n"
    assert result.stderr.startswith("urandom-shim: not active in this interpreter: cannot import urandom_shim")
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        (
            "URANDOM_POLICY",
            "PEP522",
            "environment variable URANDOM_POLICY='PEP522' is not a valid policy; expected one "
            "of 'native', 'pep524', 'pep522', 'legacy' (did you mean 'pep522'?); ignoring it, so policy is 'native' from "
            "default.",
        ),
        ("URANDOM_POLICY", " pep524", "(it has whitespace before or after it; did you mean 'pep524'?)"),
        ("URANDOM_POLICY", "strict", "URANDOM_POLICY='strict' is not a valid policy"),
        (
            "URANDOM_SHIM_TIMEOUT",
            "nan",
            "URANDOM_SHIM_TIMEOUT='nan' is not a valid timeout; expected a finite number "
            "of seconds >= 0, or 'none'; ignoring it, so timeout is none from default.",
        ),
        ("URANDOM_SHIM_TIMEOUT", "-1", "URANDOM_SHIM_TIMEOUT='-1' is not a valid timeout"),
        ("URANDOM_SHIM_ON_TIMEOUT", "Fallback", "expected one of 'raise', 'fallback' (did you mean 'fallback'?)"),
        ("URANDOM_SHIM_WARN_AFTER", "soon", "URANDOM_SHIM_WARN_AFTER='soon' is not a valid warn_after"),
        ("URANDOM_SHIM_SEED_RANDOM_INSTANCES", "yes", "expected one of 'nonblocking', 'policy'"),
        (
            "URANDOM_SHIM_SIMULATE",
            "unready-for:abc",
            "environment variable URANDOM_SHIM_SIMULATE='unready-for:abc' is not a simulation",
        ),
    ],
)
def test_bad_environment_values_give_one_line_and_start_up_carries_on(
    shim: Venv, variable: str, value: str, expected: str
) -> None:
    env = {"URANDOM_POLICY": "legacy", **UNREADY, variable: value}
    result = py(shim, "import os; print(len(os.urandom(4)))", env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "4\n"
    lines = without_events(result.stderr).splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("urandom-shim: ") and expected in lines[0], lines[0]
    # Where legacy still applies (the bad value is another key's), the call in the window is one event.
    legacy = variable not in ("URANDOM_POLICY", "URANDOM_SHIM_SIMULATE")
    assert events_in(result.stderr) == legacy * [
        "os.urandom(4) @ <string>:1: used best-effort bytes without waiting under policy 'legacy' (from environment "
        "variable URANDOM_POLICY)."
    ]


BAD_CALLS = [
    "os.urandom(-1)",
    "os.urandom('3')",
    "os.urandom(size=3)",
    "os.urandom()",
    "os.urandom(3.0)",
    "os.urandom(2**70)",
    "os.urandom(None)",
    "os.urandom(1, 2)",
]
ERRORS_CODE = (
    "import os, json\nout = []\n"
    "for call in {calls!r}:\n"
    "    try:\n        eval(call)\n        out.append([call, 'no error'])\n"
    "    except BaseException as e:\n        out.append([call, type(e).__name__, str(e)])\n"
    "print(json.dumps(out))"
)


@pytest.mark.parametrize("policy", ["pep524", "pep522", "legacy"])
def test_bad_arguments_raise_exactly_what_the_interpreter_raises(shim: Venv, bare: Venv, policy: str) -> None:
    code = ERRORS_CODE.format(calls=BAD_CALLS)
    native = json.loads(py(bare, code).stdout)
    shimmed = py(shim, code, {"URANDOM_POLICY": policy, **UNREADY})
    assert shimmed.returncode == 0, shimmed.stderr
    assert json.loads(shimmed.stdout) == native
    assert all(entry[1] != "no error" for entry in native)


def test_patched_functions_keep_names_docstrings_and_signatures(shim: Venv) -> None:
    code = (
        "import os, posix, inspect, secrets, random\n"
        "native = os.urandom.__wrapped__\n"
        "assert type(native) is type(len) and posix.urandom is os.urandom\n"
        "assert os.urandom.__name__ == 'urandom' and os.urandom.__doc__ == native.__doc__\n"
        "assert str(inspect.signature(os.urandom)) == str(inspect.signature(native))\n"
        "for name in ('token_bytes', 'token_hex', 'token_urlsafe', 'randbelow'):\n"
        "    f = getattr(secrets, name)\n"
        "    assert f.__name__ == name and f.__wrapped__.__doc__ == f.__doc__, name\n"
        "assert secrets.choice.__name__ == 'choice' and secrets.randbits.__name__ == 'getrandbits'\n"
        "assert random.Random.seed.__name__ == 'seed' and random.Random.seed.__qualname__ == 'Random.seed'\n"
        "print('ok')"
    )
    result = py(shim, code, {"URANDOM_POLICY": "pep524", **UNREADY})
    assert result.stdout == "ok\n", result.stderr


def test_transition_to_ready_restores_every_original(shim: Venv) -> None:
    spec, _deadline = window(0.8)
    code = (
        "import os, posix, sys, random, secrets, urllib.request\n"
        "native = type(len)  # the interpreter's own functions are builtins; the shim's wrappers are not\n"
        "patched = [type(os.urandom) is not native, type(posix.urandom) is not native,\n"
        "           type(random._urandom) is not native, type(urllib.request._randombytes) is not native,\n"
        "           hasattr(secrets.token_bytes, '__wrapped__'),\n"
        "           'seed' in vars(random.Random) and hasattr(random.Random.seed, '__wrapped__')]\n"
        "assert all(patched), patched\n"
        "secrets.token_bytes(8)  # waits for the window to close\n"
        "assert type(posix.urandom) is native and os.urandom is posix.urandom and random._urandom is posix.urandom\n"
        "assert urllib.request._randombytes is posix.urandom\n"
        "assert not hasattr(secrets.token_bytes, '__wrapped__') and not hasattr(secrets.choice, '__wrapped__')\n"
        "assert not hasattr(random.Random.seed, '__wrapped__') and random.seed.__func__ is random.Random.seed\n"
        "import urandom_shim\n"
        "assert list(urandom_shim._hooks.hook.callbacks) == ['secrets']  # only the addition's hook stays\n"
        "assert hasattr(secrets, 'wait_for_system_rng')  # the addition stays\n"
        "print('ok')"
    )
    result = py(shim, code, {"URANDOM_POLICY": "pep524", "URANDOM_SHIM_SIMULATE": spec})
    assert result.stdout == "ok\n", result.stderr


@pytest.fixture
def preimport(shim: Venv) -> dict[str, str]:
    """Another .pth that sorts before ours and imports random, secrets and urllib.request (when asked to)."""
    pth = shim.site_packages / "aaa_test_preimport.pth"
    pth.write_text(
        "import os; exec('import random, secrets, urllib.request') "
        "if os.environ.get('URANDOM_SHIM_TEST_PREIMPORT') else None\n"
    )
    return {"URANDOM_SHIM_TEST_PREIMPORT": "1"}


@pytest.mark.parametrize(
    ("policy", "site", "outcome"),
    [
        ("pep522", "SystemRandom.random", "raised"),
        ("pep522", "urllib.request._randombytes", "raised"),
        ("pep522", "secrets.token_bytes", "blocked"),
        ("pep522", "secrets.choice", "blocked"),
        ("pep524", "SystemRandom.getrandbits", "blocked"),
        ("legacy", "secrets.randbits", "returned"),
        ("legacy", "urllib.request._randombytes", "returned"),
    ],
)
def test_policy_applies_to_modules_imported_before_the_shim(
    shim: Venv, preimport: dict[str, str], policy: str, site: str, outcome: str
) -> None:
    env = {**preimport, "URANDOM_POLICY": policy, **UNREADY}
    check = py(
        shim,
        "import sys; print(sorted(m for m in ('random', 'secrets', 'urllib.request') if m in sys.modules))",
        {**preimport},
    )
    assert check.stdout.strip() == "['random', 'secrets', 'urllib.request']", "the fixture .pth did not pre-import"
    report = shim.drive(site, env=env, probe=0.6)
    assert report["outcome"] == outcome, report


@pytest.mark.lengthy  # pip installs hatchling from the package index to build the editable install
def test_editable_install_activates_too(python: Path, tmp_path: Path) -> None:
    venv = make_editable_venv(python, tmp_path / "editable")
    pths = sorted(p.name for p in venv.site_packages.glob("*.pth"))
    assert pths[-1] == "urandom_shim.pth", pths
    out = venv.run(
        "-c",
        "import os, urandom_shim; print(urandom_shim.__file__); os.urandom(1)",
        env={"URANDOM_POLICY": "pep522", **UNREADY},
    )
    assert out.returncode == 1 and "BlockingIOError: system random number generator is not ready" in out.stderr
    assert out.stdout.startswith(str(ROOT))


def test_runtime_api_is_importable_lazily(shim: Venv) -> None:
    code = (
        "import sys, urandom_shim\n"
        "assert 'urandom_shim._activation' not in sys.modules\n"
        "s = urandom_shim.current_settings()\n"
        "print(s.policy.value.name, s.policy.source, urandom_shim.is_system_rng_ready(), urandom_shim.system_rng_state())"
    )
    result = py(shim, code, {"URANDOM_POLICY": "pep524"})
    assert result.stdout == "pep524 environment variable URANDOM_POLICY True ready\n", result.stderr
    assert sys.version_info >= (3, 8)


# -- regressions found in review ------------------------------------------------------------------------------------


def test_python_dash_m_secrets_and_loader_introspection_work_on_the_ready_path(shim: Venv, bare: Venv) -> None:
    for venv in (shim, bare):
        result = venv.run("-m", "secrets")
        assert result.returncode == 0 and result.stderr == "", result.stderr
    code = "import importlib.util; print(len(importlib.util.find_spec('secrets').loader.get_source('secrets')) > 0)"
    assert py(shim, code).stdout == "True\n"


def test_python_dash_m_random_works_on_the_unready_path(shim: Venv) -> None:
    result = shim.run("-m", "random", env={"URANDOM_POLICY": "pep524", **UNREADY}, timeout=60)
    assert result.returncode == 0, result.stderr


def test_a_lazy_module_that_fails_to_load_does_not_stop_activation(shim: Venv) -> None:
    lazy = shim.site_packages / "aaa_test_lazy.pth"
    lazy.write_text(
        'import os; exec("import sys, importlib.util as u\\n'
        "spec = u.spec_from_loader('broken_lazy', u.LazyLoader(type('L', (), {'create_module': lambda s, sp: None, "
        "'exec_module': lambda s, m: 1 / 0})()))\\n"
        "m = u.module_from_spec(spec); sys.modules['broken_lazy'] = m; spec.loader.exec_module(m)\") "
        "if os.environ.get('URANDOM_SHIM_TEST_LAZY') else None\n"
    )
    env = {"URANDOM_SHIM_TEST_LAZY": "1", "URANDOM_POLICY": "pep522", **UNREADY}
    result = py(shim, "import os, secrets, sys; print(type(sys.modules['broken_lazy']).__name__); os.urandom(1)", env)
    assert "_LazyModule" in result.stdout, result.stderr
    assert "not active" not in result.stderr, result.stderr
    assert result.stderr.rstrip().splitlines()[-1].startswith("BlockingIOError: system random number generator")


def assert_returns_after_window(venv: Venv, code: str, env: dict[str, str]) -> None:
    """Run ``code`` in a simulated window of 0.6 s and check it returned only once the window had closed."""
    spec, deadline = window(0.6)
    result = py(venv, code + "\nimport time; print(time.monotonic())", {**env, "URANDOM_SHIM_SIMULATE": spec})
    assert result.returncode == 0, result.stderr
    assert float(result.stdout) >= deadline


def test_a_huge_timeout_is_accepted_and_waits_normally(shim: Venv) -> None:
    env = {"URANDOM_POLICY": "pep524", "URANDOM_SHIM_TIMEOUT": "1e10", "URANDOM_SHIM_WARN_AFTER": "1e10"}
    assert_returns_after_window(shim, "import os; os.urandom(1)", env)


def test_runtime_activate_keeps_a_programs_explicit_seed(shim: Venv) -> None:
    code = (
        "import random, urandom_shim\n"
        "random.seed(42); expected = [random.random() for _ in range(3)]\n"
        "random.seed(42); urandom_shim.activate('pep524')\n"
        "print([random.random() for _ in range(3)] == expected)"
    )
    assert py(shim, code, UNREADY).stdout == "True\n"


def test_zero_byte_requests_behave_as_the_interpreter_does(shim: Venv) -> None:
    code = "import os, secrets; print(os.urandom(0), repr(secrets.token_hex(0)))"
    for policy in ("pep522", "pep524"):
        result = py(shim, code, {"URANDOM_POLICY": policy, **UNREADY}, timeout=10)
        assert result.stdout == "b'' ''\n", result.stderr


def test_secrets_functions_imported_by_name_before_the_shim_still_wait_under_pep522(shim: Venv) -> None:
    pth = shim.site_packages / "aaa_test_fromsecrets.pth"
    pth.write_text(
        "import os; exec('import builtins; from secrets import token_bytes; builtins._early_token_bytes = token_bytes') "
        "if os.environ.get('URANDOM_SHIM_TEST_FROMSECRETS') else None\n"
    )
    # The alias above lives in builtins, a module, so it is found by the scan; the call must wait, not raise.
    env = {"URANDOM_SHIM_TEST_FROMSECRETS": "1", "URANDOM_POLICY": "pep522"}
    assert_returns_after_window(shim, "_early_token_bytes(8)", env)


def test_undo_leaves_alone_an_attribute_someone_else_patched_later(shim: Venv) -> None:
    code = (
        "import os, secrets, urandom_shim\n"
        "from unittest import mock\n"
        "with mock.patch('os.urandom', return_value=b'x') as m:\n"
        "    secrets.wait_for_system_rng()\n"
        "    print(os.urandom(1))\n"
        "print(len(os.urandom(3)))\n"
    )
    spec, _deadline = window(0.5)
    result = py(shim, code, {"URANDOM_POLICY": "pep524", "URANDOM_SHIM_SIMULATE": spec})
    # The mock survives the transition to ready; when it exits it puts back the wrapper it found, which now
    # passes every call straight to the interpreter's own function.
    assert result.stdout == "b'x'\n3\n", result.stderr


@pytest.mark.parametrize("env", [{}, {"URANDOM_POLICY": "legacy", **UNREADY}], ids=["ready", "unready-legacy"])
def test_start_up_emits_no_warning_under_dev_mode_and_warnings_as_errors(shim: Venv, env: dict[str, str]) -> None:
    result = shim.run(
        "-c",
        "import secrets, random, tempfile; secrets.token_hex(); random.random()",
        env=env,
        flags=("-X", "dev", "-W", "error"),
    )
    assert result.returncode == 0 and without_events(result.stderr) == "", result.stderr


@pytest.mark.cpython_only("PyPy has no gc.freeze()")
def test_aliases_in_modules_frozen_by_gc_freeze_are_still_covered(shim: Venv, tmp_path: Path) -> None:
    """Hostile review of issue 30: the alias scan finds modules through ``gc.get_referrers()``, which does not see
    what ``gc.freeze()`` moved to the permanent generation. A frozen module's alias must still raise under pep522,
    whether it was frozen before the shim started (another ``.pth``) or before ``activate()``."""
    (tmp_path / "frozen_early.py").write_text("from os import urandom as my_urandom\nimport gc\ngc.freeze()\n")
    (tmp_path / "frozen_late.py").write_text("from os import urandom as my_urandom\n")
    hook = shim.site_packages / "aaa_test_freeze.pth"
    hook.write_text(
        f'import os, sys; exec("sys.path.insert(0, {str(tmp_path)!r}); import frozen_early") '
        "if os.environ.get('URANDOM_SHIM_TEST_FREEZE') else None\n"
    )
    call = "try:\n    {}.my_urandom(4)\n    print('bytes')\nexcept BlockingIOError:\n    print('raised')\n"
    try:
        early = py(
            shim,
            "import frozen_early\n" + call.format("frozen_early"),
            {"URANDOM_POLICY": "pep522", "URANDOM_SHIM_TEST_FREEZE": "1", **UNREADY},
        )
        assert early.stdout == "raised\n", early.stdout + early.stderr
    finally:
        hook.unlink()
    late = py(
        shim,
        f"import sys, gc; sys.path.insert(0, {str(tmp_path)!r}); import frozen_late; gc.freeze()\n"
        "import urandom_shim; urandom_shim.activate('pep522')\n" + call.format("frozen_late"),
        dict(UNREADY),
    )
    assert late.stdout == "raised\n", late.stdout + late.stderr


def test_stray_references_from_code_run_before_the_shim_are_covered_with_or_without_the_walk(
    shim: Venv, tmp_path: Path
) -> None:
    """Issue 37's changes to the alias scan (modules found by name, aliases at C speed): a module of another .pth
    that keeps os.urandom in a list, a default argument and an object's attribute, and the standard library's own
    aliases imported by another .pth, each raise under pep522."""
    (tmp_path / "early_holder.py").write_text(
        "import os\nHELD = [os.urandom]\ndef read(n, rand=os.urandom):\n    return rand(n)\n"
        "class Box:\n    pass\nBOX = Box()\nBOX.rand = os.urandom\n"
    )
    hook = shim.site_packages / "aaa_test_holder.pth"
    hook.write_text(
        f'import os, sys; exec("sys.path.insert(0, {str(tmp_path)!r}); import early_holder") '
        "if os.environ.get('URANDOM_SHIM_TEST_HOLDER') else "
        "exec('import random, urllib.request') if os.environ.get('URANDOM_SHIM_TEST_STDLIB') else None\n"
    )
    call = "try:\n    {}\n    print('bytes')\nexcept BlockingIOError:\n    print('raised')\n"
    try:
        holder = py(
            shim,
            "import early_holder as h\n"
            + "".join(call.format(c) for c in ("h.HELD[0](4)", "h.read(4)", "h.BOX.rand(4)")),
            {"URANDOM_POLICY": "pep522", "URANDOM_SHIM_TEST_HOLDER": "1", **UNREADY},
        )
        assert holder.stdout == "raised\n" * 3, holder.stdout + holder.stderr
        stdlib = py(
            shim,
            "import random, urllib.request\n"
            + "".join(call.format(c) for c in ("random._urandom(4)", "urllib.request._randombytes(4)")),
            {"URANDOM_POLICY": "pep522", "URANDOM_SHIM_TEST_STDLIB": "1", **UNREADY},
        )
        assert stdlib.stdout == "raised\n" * 2, stdlib.stdout + stdlib.stderr
    finally:
        hook.unlink()


LATE_SITE = """
import os, sys
def token(rand=os.urandom):
    return rand(4)
class Box:
    rand = os.urandom
held = {"rand": os.urandom}
import site
site.main()
for call in (lambda: token(), lambda: Box.rand(4), lambda: held["rand"](4)):
    try:
        call()
        print("bytes")
    except BlockingIOError:
        print("raised")
"""


def test_references_taken_before_a_late_site_run_are_covered(shim: Venv, tmp_path: Path) -> None:
    """Hostile review of issue 37: with ``python -S`` and ``site.main()`` later (or ``site.addsitedir()``, as
    virtualenv's ``activate_this.py`` does), the program's own code ran before the shim, and ``__main__`` holds
    references that must be covered."""
    done = shim.run("-S", "-c", LATE_SITE, env={"URANDOM_POLICY": "pep522", **UNREADY}, cwd=tmp_path)
    assert done.stdout == "raised\n" * 3, done.stdout + done.stderr


def test_a_module_named_like_the_standard_librarys_or_an_odd_sys_modules_key_doesnt_skip_the_walk(
    shim: Venv, tmp_path: Path
) -> None:
    """Hostile review of issue 37: ``winreg`` is in ``sys.stdlib_module_names`` but not in this standard library,
    so a ``winreg.py`` in site-packages is another .pth's module like any other, whose references are covered; and
    a non-string key in ``sys.modules`` must not switch the policy off."""
    (shim.site_packages / "winreg.py").write_text("import os\ndef token(rand=os.urandom):\n    return rand(4)\n")
    hook = shim.site_packages / "aaa_test_winreg.pth"
    hook.write_text(
        "import os, sys; exec('import winreg') if os.environ.get('URANDOM_SHIM_TEST_WINREG') else None; "
        "sys.modules[('odd', 1)] = sys if os.environ.get('URANDOM_SHIM_TEST_ODD') else None\n"
    )
    call = "try:\n    {}\n    print('bytes')\nexcept BlockingIOError:\n    print('raised')\n"
    try:
        named = py(
            shim, "import winreg\n" + call.format("winreg.token()"),
            {"URANDOM_POLICY": "pep522", "URANDOM_SHIM_TEST_WINREG": "1", **UNREADY},
        )  # fmt: skip
        assert named.stdout == "raised\n", named.stdout + named.stderr
        odd = py(shim, "import os\n" + call.format("os.urandom(4)"),
                 {"URANDOM_POLICY": "pep522", "URANDOM_SHIM_TEST_ODD": "1", **UNREADY})  # fmt: skip
        assert odd.stdout == "raised\n" and "activation failed" not in odd.stderr, odd.stdout + odd.stderr
    finally:
        hook.unlink()
        (shim.site_packages / "winreg.py").unlink()


def test_random_imported_by_another_pth_is_not_charged_to_the_shims_own_file(
    shim: Venv, preimport: dict[str, str], tmp_path: Path
) -> None:
    # Newcomer pass of issue 36: hatchling's dev-mode-exact hook imports random before the shim starts, and the
    # reseed's event said "import random called from .../site-packages/_urandom_shim_boot.py:63", naming the shim.
    result = shim.run("-c", "pass", env={**preimport, "URANDOM_POLICY": "legacy", **UNREADY}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "import random called from" in line]
    assert len(lines) == 1, result.stderr
    assert "import random called from <start-up, before urandom-shim> before" in lines[0], lines
