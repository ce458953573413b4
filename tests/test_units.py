"""In-process unit tests of the pure parts: the policy table, configuration parsing, simulation specs."""

from __future__ import annotations

import time

import pytest

from urandom_shim import _config, _simulation
from urandom_shim._policies import (
    BEST_EFFORT,
    LEGACY,
    NATIVE,
    PEP522,
    PEP524,
    POLICIES,
    RAISE,
    SECRETS,
    SEED_INSTANCE,
    SEED_NEW,
    SITES,
    UNTOUCHED,
    URANDOM,
    WAIT,
    action,
)

# The SPEC section 2 table, transcribed independently of _policies._TABLE.
SPEC_TABLE = {
    ("native", URANDOM): UNTOUCHED, ("native", SECRETS): UNTOUCHED,
    ("native", SEED_INSTANCE): UNTOUCHED, ("native", SEED_NEW): UNTOUCHED,
    ("pep524", URANDOM): WAIT, ("pep524", SECRETS): WAIT,
    ("pep524", SEED_INSTANCE): BEST_EFFORT, ("pep524", SEED_NEW): BEST_EFFORT,
    ("pep522", URANDOM): RAISE, ("pep522", SECRETS): WAIT,
    ("pep522", SEED_INSTANCE): BEST_EFFORT, ("pep522", SEED_NEW): BEST_EFFORT,
    ("legacy", URANDOM): BEST_EFFORT, ("legacy", SECRETS): BEST_EFFORT,
    ("legacy", SEED_INSTANCE): BEST_EFFORT, ("legacy", SEED_NEW): BEST_EFFORT,
}  # fmt: skip


@pytest.mark.parametrize("policy", POLICIES, ids=str)
@pytest.mark.parametrize("site", SITES)
def test_policy_table_matches_the_spec_for_every_policy_and_site(policy: object, site: str) -> None:
    assert action(policy, site) == SPEC_TABLE[(str(policy), site)]  # type: ignore[arg-type]


def test_the_fuse_option_makes_new_instances_follow_os_urandom_but_never_the_module_instance() -> None:
    for policy in POLICIES:
        assert action(policy, SEED_NEW, "policy") == action(policy, URANDOM)
        assert action(policy, SEED_INSTANCE, "policy") == action(policy, SEED_INSTANCE)
    assert action(PEP524, SEED_NEW, "policy") == WAIT and action(PEP522, SEED_NEW, "policy") == RAISE
    assert {p.name for p in POLICIES} == {"native", "pep524", "pep522", "legacy"}
    assert {NATIVE, PEP524, PEP522, LEGACY} == set(POLICIES)


@pytest.mark.parametrize(
    ("environ", "key", "value", "source"),
    [
        ({}, "policy", "native", "default"),
        ({"URANDOM_POLICY": "pep522"}, "policy", "pep522", "environment variable URANDOM_POLICY"),
        ({"URANDOM_SHIM_TIMEOUT": "2.5"}, "timeout", 2.5, "environment variable URANDOM_SHIM_TIMEOUT"),
        ({"URANDOM_SHIM_TIMEOUT": "none"}, "timeout", None, "environment variable URANDOM_SHIM_TIMEOUT"),
        ({"URANDOM_SHIM_TIMEOUT": "0"}, "timeout", 0.0, "environment variable URANDOM_SHIM_TIMEOUT"),
        ({}, "warn_after", 5.0, "default"),
        ({"URANDOM_SHIM_WARN_AFTER": "none"}, "warn_after", None, "environment variable URANDOM_SHIM_WARN_AFTER"),
        ({"URANDOM_SHIM_ON_TIMEOUT": "fallback"}, "on_timeout", "fallback", "environment variable URANDOM_SHIM_ON_TIMEOUT"),
        ({"URANDOM_SHIM_SEED_RANDOM_INSTANCES": "policy"}, "seed_random_instances", "policy",
         "environment variable URANDOM_SHIM_SEED_RANDOM_INSTANCES"),
    ],
)  # fmt: skip
def test_environment_settings_resolve_with_their_source(
    environ: dict[str, str], key: str, value: object, source: str
) -> None:
    settings, problems = _config.resolve(environ, flags=object())
    assert problems == []
    assert settings.as_dict()[key] == (value, source)


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"URANDOM_POLICY": "Pep524"}, "environment variable URANDOM_POLICY='Pep524' is not a valid policy; expected one "
         "of 'native', 'pep524', 'pep522', 'legacy' (did you mean 'pep524'?); ignoring it, so policy is 'native' from "
         "default."),
        ({"URANDOM_POLICY": "pep-522"}, "(did you mean 'pep522'?)"),
        ({"URANDOM_POLICY": " pep522"}, "(it has whitespace before or after it; did you mean 'pep522'?)"),
        ({"URANDOM_SHIM_TIMEOUT": "inf"}, "URANDOM_SHIM_TIMEOUT='inf' is not a valid timeout; expected a finite number "
         "of seconds >= 0, or 'none'; ignoring it, so timeout is none from default."),
        ({"URANDOM_SHIM_TIMEOUT": "5s"}, "URANDOM_SHIM_TIMEOUT='5s' is not a valid timeout"),
        ({"URANDOM_SHIM_WARN_AFTER": "-0.1"}, "ignoring it, so warn_after is 5 from default."),
        ({"URANDOM_SHIM_ON_TIMEOUT": "ignore"}, "expected one of 'raise', 'fallback'; ignoring it, so on_timeout is "
         "'raise' from default."),
    ],
)  # fmt: skip
def test_bad_environment_values_are_one_message_each_naming_source_value_choices_and_outcome(
    environ: dict[str, str], message: str
) -> None:
    _settings, problems = _config.resolve(environ, flags=object())
    assert len(problems) == 1
    assert message in problems[0], problems[0]
    assert "\n" not in problems[0]


class Flags:
    ignore_environment = 1
    isolated = 0


def test_ignore_environment_flag_ignores_every_variable() -> None:
    settings, problems = _config.resolve({"URANDOM_POLICY": "pep522", "URANDOM_SHIM_TIMEOUT": "x"}, flags=Flags())
    assert settings.as_dict()["policy"] == ("native", "default") and problems == []


@pytest.mark.parametrize(
    "spec",
    ["unready-forever", "unready-until-file:/tmp/x", "unready-until-monotonic:12.5", "unready-for:0", "unready-for:3"],
)
def test_valid_simulation_specs_parse(spec: str) -> None:
    sim = _simulation.parse(spec)
    assert sim.spec.startswith("unready-")


def test_relative_simulation_window_is_pinned_to_an_absolute_deadline() -> None:
    before = time.monotonic()
    sim = _simulation.parse("unready-for:10")
    assert sim.deadline is not None and before + 10 <= sim.deadline <= time.monotonic() + 10
    assert sim.spec == f"unready-until-monotonic:{sim.deadline!r}" and sim.unready()
    assert not _simulation.parse("unready-until-monotonic:0").unready()


@pytest.mark.parametrize(
    "spec", ["", "unready", "unready-for:", "unready-for:-1", "unready-for:nan", "unready-for:inf", "unready-until-file:",
             "ready", "unready-forever:5", "unready-until-monotonic:abc"],
)  # fmt: skip
def test_invalid_simulation_specs_are_rejected_with_the_valid_forms(spec: str) -> None:
    with pytest.raises(_simulation.InvalidSimulation, match="expected one of 'unready-forever'"):
        _simulation.parse(spec)


def test_activate_rejects_bad_values_with_the_valid_choices() -> None:
    import urandom_shim

    with pytest.raises(ValueError, match=r"policy='strict' is not valid; expected one of 'native'"):
        urandom_shim.activate("strict")
    with pytest.raises(ValueError, match="timeout=-1 is not valid"):
        urandom_shim.activate("pep524", timeout=-1)
