"""Properties, checked with Hypothesis.

- Under pep524 and pep522, no call returns bytes while the (simulated) CRNG is unready; once it is ready, they all do.
  This runs in-process through the runtime API, which is the same engine start-up installs; and again in fresh
  interpreters on the fake kernel (``tests/fakekernel.c``), policy from the environment, where weak bytes show.
- Start-up never breaks, whatever the environment variables hold (real subprocesses).
"""

from __future__ import annotations

import os
import random
import secrets
import sys
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Callable

import pytest
from conftest import Venv, find_python, python_specs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import urandom_shim
from urandom_shim import _config, _readiness, _simulation

pytestmark = pytest.mark.usefixtures("restored")  # conftest: every test gets the runner's functions back


def engage(policy: str, trigger: Path) -> None:
    trigger.touch()
    _simulation.override(_simulation.parse(f"unready-until-file:{trigger}"))
    _readiness.reset()
    urandom_shim.activate(policy, timeout=0, on_timeout="raise", warn_after=None)


# Each operation: (name, call). Sizes come from Hypothesis; invalid ones must fail exactly like the interpreter.
def operations(size: int, k: int) -> list[tuple[str, Callable[[], Any]]]:
    from os import urandom as aliased  # an alias taken while the shim is engaged

    return [
        ("os.urandom", lambda: os.urandom(size)),
        ("alias", lambda: aliased(size)),
        ("SystemRandom.random", lambda: random.SystemRandom().random()),
        ("SystemRandom.getrandbits", lambda: random.SystemRandom().getrandbits(k)),
        ("secrets.token_bytes", lambda: secrets.token_bytes(size)),
        ("secrets.token_hex", lambda: secrets.token_hex(size)),
        ("secrets.token_urlsafe", lambda: secrets.token_urlsafe(size)),
        ("secrets.choice", lambda: secrets.choice("abc")),
        ("secrets.randbelow", lambda: secrets.randbelow(k + 1)),
        ("secrets.randbits", lambda: secrets.randbits(k)),
        ("uuid.uuid4", lambda: uuid.uuid4()),
        ("urllib.request._randombytes", lambda: urllib.request._randombytes(size)),
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    policy=st.sampled_from(["pep524", "pep522"]),
    steps=st.lists(st.tuples(st.integers(0, 11), st.integers(-2, 70), st.integers(0, 200)), min_size=1, max_size=25),
    ready_at=st.integers(0, 25),
)
def test_no_call_returns_bytes_while_unready_under_pep524_and_pep522(
    tmp_path: Path, policy: str, steps: list[tuple[int, int, int]], ready_at: int
) -> None:
    trigger = tmp_path / "unready"
    engage(policy, trigger)
    try:
        for index, (op, size, k) in enumerate(steps):
            if index == ready_at:
                trigger.unlink()
            unready = trigger.exists()
            name, call = operations(size, k)[op]
            try:
                result = call()
            except BlockingIOError as exc:
                assert unready, f"{name} raised BlockingIOError after the CRNG was ready"
                assert str(exc).startswith("system random number generator is not ready")
                continue
            except (ValueError, TypeError, OverflowError):
                # Before 3.9 getrandbits(0) raises ValueError; the shim must raise what the interpreter raises.
                zero_bits = k == 0 and sys.version_info < (3, 9) and name.endswith(("getrandbits", "randbits"))
                assert size < 0 or k < 0 or zero_bits, f"{name} failed on valid input"
                continue
            if result in (b"", "", 0):  # zero bytes asked for: the interpreter answers without the kernel
                continue
            assert not unready, f"{name} returned {result!r} while the CRNG was unready under {policy}"
    finally:
        urandom_shim.deactivate()
        trigger.unlink(missing_ok=True)


@settings(max_examples=30, deadline=None)
@given(policy=st.sampled_from(["native", "pep524", "pep522", "legacy"]), seed_none=st.booleans())
def test_random_seeding_never_blocks_or_raises_under_any_policy(
    tmp_path_factory: Any, policy: str, seed_none: bool
) -> None:
    trigger = tmp_path_factory.mktemp("seed") / "unready"
    engage(policy, trigger)
    try:
        generator = random.Random()
        if seed_none:
            generator.seed(None)
            random.seed()
        assert 0 <= generator.random() < 1
    finally:
        urandom_shim.deactivate()


# -- the same property on the fake kernel, in a real interpreter -------------------------------------------------

SEQUENCE = """\
import json, os, sys, random, secrets, urllib.request, uuid
from os import urandom as aliased  # an alias taken while the shim is engaged
steps, ready_at, flag = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def operations(size, k):
    return [
        ("os.urandom", lambda: os.urandom(size)),
        ("alias", lambda: aliased(size)),
        ("SystemRandom.random", lambda: random.SystemRandom().random()),
        ("SystemRandom.getrandbits", lambda: random.SystemRandom().getrandbits(k)),
        ("secrets.token_bytes", lambda: secrets.token_bytes(size)),
        ("secrets.token_hex", lambda: secrets.token_hex(size)),
        ("secrets.token_urlsafe", lambda: secrets.token_urlsafe(size)),
        ("secrets.choice", lambda: secrets.choice("abc")),
        ("secrets.randbelow", lambda: secrets.randbelow(k + 1)),
        ("secrets.randbits", lambda: secrets.randbits(k)),
        ("uuid.uuid4", lambda: uuid.uuid4()),
        ("urllib.request._randombytes", lambda: urllib.request._randombytes(size)),
    ]
report = []
for index, (op, size, k) in enumerate(steps):
    if index == ready_at:
        os.unlink(flag)
    unready = os.path.exists(flag)
    name, call = operations(size, k)[op]
    try:
        result = call()
    except BlockingIOError as exc:
        report.append([name, unready, "raised", str(exc)[:43]])
    except (ValueError, TypeError, OverflowError) as exc:
        report.append([name, unready, "invalid", type(exc).__name__])
    else:
        report.append([name, unready, "returned", repr(result)])
print(json.dumps(report))
"""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    policy=st.sampled_from(["pep524", "pep522"]),
    steps=st.lists(st.tuples(st.integers(0, 11), st.integers(-2, 70), st.integers(0, 200)), min_size=1, max_size=25),
    ready_at=st.integers(0, 25),
)
def test_no_call_returns_bytes_while_the_fake_kernel_is_unready(
    first_shim: Venv,
    fake_kernel: Any,
    tmp_path_factory: pytest.TempPathFactory,
    policy: str,
    steps: list[tuple[int, int, int]],
    ready_at: int,
) -> None:
    """The property above, in a fresh interpreter on the fake kernel: the interpreter's own getrandom() calls see the
    unready CRNG, and a weak byte (GRND_INSECURE's "WEAK-RNG") would show in any output."""
    import json

    flag = tmp_path_factory.mktemp("kernel") / "unready"
    flag.touch()
    env = {
        **fake_kernel.env(flag),
        "URANDOM_POLICY": policy,
        "URANDOM_SHIM_TIMEOUT": "0",
        "URANDOM_SHIM_ON_TIMEOUT": "raise",
        "URANDOM_SHIM_WARN_AFTER": "none",
    }
    result = first_shim.run("-c", SEQUENCE, json.dumps(steps), str(ready_at), str(flag), env=env)
    assert result.returncode == 0, result.stderr
    for name, unready, outcome, detail in json.loads(result.stdout):
        assert "WEAK" not in detail and "5745414b" not in detail and "V0VBSy" not in detail, (name, detail)
        if outcome == "raised":
            assert unready and detail == "system random number generator is not ready", (name, unready, detail)
        elif outcome == "returned" and unready:
            assert detail in ("b''", "''", "0"), f"{name} returned {detail} while the fake kernel was unready"


# -- start-up never breaks ----------------------------------------------------------------------------------------

env_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12
) | st.sampled_from(["native", "pep524", "pep522", "legacy", "none", "nan", "-1", "1e999", "raise", "fallback", ""])

VARIABLES = [*_config.KEY_VARIABLES, _config.ENV_SIMULATE]


@pytest.fixture(scope="module")
def first_shim(venvs: Any) -> Venv:
    found = find_python(python_specs()[0])
    if found is None:
        pytest.skip("no interpreter to test start-up with")
    venv: Venv = venvs(found, "shim")
    return venv


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.fixed_dictionaries({}, optional={name: env_text for name in VARIABLES}))
def test_start_up_never_breaks_whatever_the_environment_holds(first_shim: Venv, values: dict[str, str]) -> None:
    env = {"URANDOM_SHIM_SIMULATE": "unready-forever", **values}
    result = first_shim.run("-c", "import random; print('alive')", env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "alive\n"
    for line in result.stderr.splitlines():
        assert line.startswith("urandom-shim: "), line
    settings_line = first_shim.run(
        "-c", "import urandom_shim; print(urandom_shim.current_settings().policy.value.name)", env=env
    )
    assert settings_line.stdout.strip() in {"native", "pep524", "pep522", "legacy"}, settings_line.stderr
