"""Every policy x every call site x three kernel states, each in a fresh interpreter of a venv built from the wheel.

States:
- ready: the real kernel (initialised on every machine that runs this);
- unready: ``unready-forever``; a waiting call is reported "blocked" after a probe interval;
- window: unready until a deadline on CLOCK_MONOTONIC, which every process shares. A call that waits can only return
  at or after the deadline; a call that must not wait has to finish before it.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import window

from urandom_shim._policies import (
    BEST_EFFORT,
    POLICIES,
    RAISE,
    SECRETS,
    SEED_INSTANCE,
    SEED_NEW,
    UNTOUCHED,
    URANDOM,
    WAIT,
    action,
)

PEP522_TEXT = "system random number generator is not ready"
WINDOW = 1.2  # seconds; waits in the window state cost this much
# Seconds a call may run under unready-forever before it counts as blocked. A call that waits never returns there, so
# the bound only has to exceed what a loaded 2-core machine takes to import uuid or multiprocessing and return.
PROBE = 1.5

# Call site (as tests/driver.py names it) -> column of the SPEC table.
SITES = {
    "os.urandom": URANDOM,
    "from-os-import-urandom": URANDOM,
    "SystemRandom.random": URANDOM,
    "SystemRandom.getrandbits": URANDOM,
    "uuid.uuid4": URANDOM,
    "urllib.request._randombytes": URANDOM,
    "import multiprocessing": URANDOM,
    "secrets.token_bytes": SECRETS,
    "secrets.token_hex": SECRETS,
    "secrets.token_urlsafe": SECRETS,
    "secrets.choice": SECRETS,
    "secrets.randbelow": SECRETS,
    "secrets.randbits": SECRETS,
    "import random": SEED_INSTANCE,
    "random.seed()": SEED_INSTANCE,
    "random.Random()": SEED_NEW,
    "tempfile.mkstemp": SEED_NEW,
}


def test_every_column_of_the_policy_table_is_exercised() -> None:
    assert set(SITES.values()) == {URANDOM, SECRETS, SEED_INSTANCE, SEED_NEW}


def expected(policy_name: str, site: str, seed_mode: str = "nonblocking") -> str:
    policy = next(p for p in POLICIES if p.name == policy_name)
    return action(policy, SITES[site], seed_mode)


def assert_not_ready_error(report: dict[str, Any], policy: str) -> None:
    assert report["outcome"] == "raised", report
    assert report["exc_type"] == "BlockingIOError", report
    assert report["message"].startswith(PEP522_TEXT), report
    assert "secrets.wait_for_system_rng()" in report["message"], report
    assert f"policy '{policy}'" in report["message"], report


def assert_window_outcome(report: dict[str, Any], policy: str, site: str, deadline: float) -> None:
    """A call in a window that closes at ``deadline``: a wait returns at or after it, anything else before it."""
    todo = expected(policy, site)
    if todo == WAIT:
        assert report["outcome"] == "returned", report
        assert report["t_end"] >= deadline, "a waiting call returned before the CRNG was ready"
        assert report["t_end"] < deadline + 5.0
    elif todo == RAISE:
        assert_not_ready_error(report, policy)
        assert report["t_end"] < deadline
    else:
        assert report["outcome"] == "returned", report
        assert report["t_end"] < deadline, "this call site must not wait"


def best_effort_reads(report: dict[str, Any]) -> list[int]:
    return [size for size, flags in report["getrandom_calls"] if flags == 4]


POLICY_NAMES = [p.name for p in POLICIES]


@pytest.mark.parametrize("site", SITES)
@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_ready_kernel_every_policy_behaves_natively(shim: Any, policy: str, site: str) -> None:
    report = shim.drive(site, env={"URANDOM_POLICY": policy}, timeout=30)
    assert report["outcome"] == "returned", report
    assert report["native_urandom_restored"], "on the ready path os.urandom must stay the interpreter's own"
    assert best_effort_reads(report) == [], "the ready path never reads best-effort bytes"
    assert report["stderr"] == ""


def unready_forever_cases() -> list[Any]:
    """Every policy at every call site. A call that waits shows it only by still waiting after :data:`PROBE`
    seconds, so the quick tier keeps the first waiting site of each column of the table under each policy and leaves
    the others (16 of 19, 24 s of waiting) to the full run, which runs them all on every interpreter (``lengthy``)."""
    cases, waited = [], set()
    for policy in POLICY_NAMES:
        for site, column in SITES.items():
            waits = expected(policy, site) == WAIT
            marks = [pytest.mark.lengthy] if waits and (policy, column) in waited else []
            if waits:
                waited.add((policy, column))
            cases.append(pytest.param(policy, site, marks=marks, id=f"{policy}-{site}"))
    return cases


@pytest.mark.parametrize(("policy", "site"), unready_forever_cases())
def test_unready_forever_each_call_site_follows_the_policy_table(shim: Any, policy: str, site: str) -> None:
    todo = expected(policy, site)
    env = {"URANDOM_POLICY": policy, "URANDOM_SHIM_SIMULATE": "unready-forever"}
    report = shim.drive(site, env=env, probe=PROBE, timeout=30)
    elapsed = report["t_end"] - report["t_start"]
    if todo == WAIT:
        assert report["outcome"] == "blocked", report
    elif todo == RAISE:
        assert_not_ready_error(report, policy)
        assert elapsed < PROBE
    else:
        assert todo in (BEST_EFFORT, UNTOUCHED)
        assert report["outcome"] == "returned", report
        assert elapsed < PROBE
    if todo == BEST_EFFORT:
        assert best_effort_reads(report), "best-effort bytes come from getrandom(GRND_INSECURE)"
    if policy == "native":
        assert best_effort_reads(report) == []


@pytest.mark.slow
@pytest.mark.parametrize("site", SITES)
@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_unready_then_ready_waits_end_with_the_window_and_nothing_else_waits(shim: Any, policy: str, site: str) -> None:
    spec, deadline = window(WINDOW)
    report = shim.drive(site, env={"URANDOM_POLICY": policy, "URANDOM_SHIM_SIMULATE": spec}, timeout=30)
    assert_window_outcome(report, policy, site, deadline)
    if expected(policy, site) == WAIT:
        assert report["native_urandom_restored"], "after the transition to ready every original is restored"


@pytest.mark.parametrize("policy", ["pep524", "pep522", "legacy"])
def test_import_random_seeds_the_module_generator_from_best_effort_kernel_bytes(shim: Any, policy: str) -> None:
    env = {"URANDOM_POLICY": policy, "URANDOM_SHIM_SIMULATE": "unready-forever"}
    report = shim.drive("import random", env=env, probe=PROBE)
    assert report["outcome"] == "returned", report
    # CPython reads 624 32-bit words for a seed; the shim reads as many, with GRND_INSECURE, instead of time and pid.
    assert 2496 in best_effort_reads(report), report["getrandom_calls"]


@pytest.mark.parametrize(
    ("policy", "outcome"), [("pep524", "blocked"), ("pep522", "raised"), ("legacy", "returned"), ("native", "returned")]
)
def test_seed_random_instances_policy_makes_new_instances_follow_os_urandom(
    shim: Any, policy: str, outcome: str
) -> None:
    env = {
        "URANDOM_POLICY": policy,
        "URANDOM_SHIM_SIMULATE": "unready-forever",
        "URANDOM_SHIM_SEED_RANDOM_INSTANCES": "policy",
    }
    report = shim.drive("random.Random()", env=env, probe=PROBE)
    assert report["outcome"] == outcome, report
    assert expected(policy, "random.Random()", "policy") == expected(policy, "os.urandom")
    if outcome == "raised":
        assert_not_ready_error(report, policy)
    # The module's own generator is never subject to the fuse.
    assert shim.drive("import random", env=env, probe=PROBE)["outcome"] == "returned"
