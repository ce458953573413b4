"""The pytest plugin, through pytester: each test writes a small test suite with ``pytester.makepyfile`` and runs it
with pytest in a real venv that has the wheel and pytest installed, so the plugin is loaded by its ``pytest11`` entry
point exactly as in a user's project.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["pytester", "plugin_suite"]  # plugin_suite: the fixture suite, shared by the plugin's test files


# Appended to a suite: the last test checks that the plugin put everything back after the tests before it. Indented
# like the suites' own text, because makepyfile dedents the whole.
AFTER = """
        def test_zz_everything_is_back():
            import os, posix, random, secrets, sys
            assert os.urandom is posix.urandom and type(posix.urandom) is type(len)
            assert random._urandom is posix.urandom
            assert random.Random.seed.__module__ == "random" and not hasattr(random.Random.seed, "__wrapped__")
            assert not hasattr(random.seed, "__wrapped__")
            assert not hasattr(secrets.token_bytes, "__wrapped__")
            import urandom_shim
            from urandom_shim.pytest_plugin import variables
            assert [v for v in os.environ if v in variables()] == []
            assert urandom_shim.system_rng_state() == "ready"
            assert urandom_shim.current_settings().policy.value.name == "native"
"""


def test_marker_applies_a_policy_with_an_unready_kernel(pytester: pytest.Pytester, suite: Any) -> None:
    pytester.makepyfile(
        """
        import os, secrets, pytest

        @pytest.mark.urandom(policy="pep522")
        def test_pep522_raises():
            with pytest.raises(BlockingIOError, match="policy 'pep522'"):
                os.urandom(8)

        @pytest.mark.urandom("legacy")
        def test_positional_policy_returns_best_effort_bytes():
            assert len(os.urandom(8)) == 8

        @pytest.mark.urandom(policy="pep524", timeout=0.3)
        def test_pep524_waits_up_to_the_timeout():
            with pytest.raises(BlockingIOError, match=r"waited 0.3 s"):
                secrets.token_bytes(8)

        @pytest.mark.urandom(policy="pep522", unready=False)
        def test_unready_false_leaves_the_real_kernel():
            assert len(os.urandom(8)) == 8

        @pytest.mark.urandom(policy="pep522")
        class TestOnAClass:
            def test_inherits_the_marker(self):
                with pytest.raises(BlockingIOError):
                    os.urandom(1)
        """
        + AFTER
    )
    result = suite("--strict-markers", "-v")
    result.assert_outcomes(passed=6)


def test_urandom_policy_fixture_sets_the_policy_for_the_rest_of_the_test(pytester: pytest.Pytester, suite: Any) -> None:
    pytester.makepyfile(
        """
        import os, pytest

        def test_policy_then_unready(urandom_policy, system_rng):
            urandom_policy("pep522")
            assert os.environ["URANDOM_POLICY"] == "pep522"
            assert len(os.urandom(4)) == 4          # the kernel is ready: no policy changes anything
            system_rng.unready()
            with pytest.raises(BlockingIOError):
                os.urandom(4)
            urandom_policy("legacy")                 # a second call replaces the first
            assert len(os.urandom(4)) == 4

        def test_options_are_passed_on(urandom_policy, system_rng):
            system_rng.unready()
            urandom_policy("pep524", timeout=0.2, on_timeout="fallback", warn_after=None)
            assert os.environ["URANDOM_SHIM_TIMEOUT"] == "0.2"
            assert len(os.urandom(4)) == 4          # fell back to best-effort bytes after 0.2 s

        def test_a_bad_policy_is_a_clear_error(urandom_policy):
            with pytest.raises(ValueError, match="'pep255' is not valid"):
                urandom_policy("pep255")
            with pytest.raises(TypeError, match="unknown option"):
                urandom_policy("pep524", timout=1)
        """
        + AFTER
    )
    suite().assert_outcomes(passed=4)


def test_system_rng_controls_the_simulated_kernel(pytester: pytest.Pytester, suite: Any) -> None:
    pytester.makepyfile(
        """
        import os, time, secrets, urandom_shim

        def test_unready_ready_and_ready_after(system_rng, urandom_policy):
            assert system_rng.state == "ready" and system_rng.is_ready()
            system_rng.unready()
            assert system_rng.state == "unready" and urandom_shim.system_rng_state() == "unready"
            system_rng.ready()
            assert system_rng.state == "ready"
            urandom_policy("pep524")
            system_rng.ready_after(0.4)
            assert system_rng.state == "unready"
            start = time.monotonic()
            assert secrets.wait_for_system_rng(5.0) is True
            waited = time.monotonic() - start
            assert 0.3 <= waited < 3, waited
            assert len(os.urandom(4)) == 4

        def test_unready_again_after_ready(system_rng, urandom_policy):
            urandom_policy("pep522")
            system_rng.unready()
            system_rng.ready()
            system_rng.unready()
            import pytest
            with pytest.raises(BlockingIOError):
                os.urandom(1)
        """
        + AFTER
    )
    suite().assert_outcomes(passed=3)


def test_child_processes_inherit_the_simulated_state_and_the_policy(pytester: pytest.Pytester, suite: Any) -> None:
    pytester.makepyfile(
        """
        import subprocess, sys

        CHILD = (
            "import os, subprocess, sys, urandom_shim\\n"
            "print(urandom_shim.system_rng_state(), urandom_shim.current_settings().policy.value.name)\\n"
            "try:\\n"
            "    os.urandom(4); print('returned')\\n"
            "except BlockingIOError:\\n"
            "    print('raised')\\n"
            "sys.stdout.flush()\\n"
            "if len(sys.argv) > 1:\\n"
            "    subprocess.run([sys.executable, '-c', sys.argv[1]])\\n"
        )

        def child(*args):
            return subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True, timeout=60)

        def test_child_and_grandchild_see_the_unready_kernel_then_the_ready_one(system_rng, urandom_policy):
            urandom_policy("pep522")
            system_rng.unready()
            out = child(CHILD)
            assert out.stdout.split() == ["unready", "pep522", "raised", "unready", "pep522", "raised"], out.stderr
            system_rng.ready()
            assert child().stdout.split() == ["ready", "pep522", "returned"]
        """
        + AFTER
    )
    suite().assert_outcomes(passed=2)


def test_command_line_option_runs_the_whole_suite_at_early_boot(pytester: pytest.Pytester, suite: Any) -> None:
    pytester.makepyfile(
        """
        import os, secrets, pytest

        def test_plain_code_raises():
            with pytest.raises(BlockingIOError):
                os.urandom(4)

        def test_secrets_waits_and_the_timeout_bounds_it():
            with pytest.raises(BlockingIOError, match="waited 0.2 s"):
                secrets.token_hex(4)

        @pytest.mark.urandom(policy="legacy")
        def test_the_marker_wins():
            assert len(os.urandom(4)) == 4
        """
    )
    result = suite("--urandom-policy=pep522", "--urandom-timeout=0.2")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "urandom-shim: every test runs under policy 'pep522' with an unready kernel CRNG (simulated), waits bounded to 0.2 s"
        ]
    )


def test_ini_keys_do_what_the_options_do(pytester: pytest.Pytester, suite: Any) -> None:
    pytester.makeini("[pytest]\nurandom_policy = pep522\n")
    pytester.makepyfile(
        """
        import os, pytest

        def test_raises():
            with pytest.raises(BlockingIOError):
                os.urandom(4)
        """
    )
    suite().assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--urandom-policy=PEP522"],
            "*urandom-shim: --urandom-policy='PEP522' is not valid; expected one of 'native', 'pep524', 'pep522', 'legacy' (did you mean 'pep522'?)*",
        ),
        (
            ["--urandom-policy=pep524", "--urandom-timeout=-1"],
            "*urandom-shim: --urandom-timeout='-1' is not valid; expected a finite number of seconds >= 0, or 'none'*",
        ),
    ],
)
def test_a_bad_option_is_a_usage_error(pytester: pytest.Pytester, suite: Any, args: list[str], message: str) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = suite(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stderr.str()


def test_everything_is_restored_after_a_failing_test_and_a_failing_fixture(
    pytester: pytest.Pytester, suite: Any
) -> None:
    pytester.makepyfile(
        """
        import os, random, secrets, pytest

        @pytest.mark.urandom(policy="pep522")
        def test_fails_while_unready():
            assert random._urandom is not os.urandom or True
            os.urandom(4)  # raises: the test fails with the policy and the simulation in place

        @pytest.fixture
        def broken(system_rng, urandom_policy):
            urandom_policy("legacy")
            system_rng.unready()
            raise RuntimeError("fixture broke after making the kernel unready")

        def test_with_a_broken_fixture(broken):
            pass

        def test_replaces_functions_by_hand(system_rng, urandom_policy):
            urandom_policy("pep524")
            system_rng.unready()
            os.urandom = lambda n: b"x" * n           # without monkeypatch: still put back
            secrets.token_bytes = lambda n=None: b""
            assert False, "fails with the replacements in place"
        """
        + AFTER
    )
    result = suite()
    result.assert_outcomes(passed=1, failed=2, errors=1)
    result.stdout.fnmatch_lines(["*RuntimeError: fixture broke after making the kernel unready*"])


def test_unused_plugin_changes_nothing(pytester: pytest.Pytester, suite: Any) -> None:
    pytester.makepyfile(
        """
        import os, posix, sys

        def test_nothing_is_patched_or_loaded():
            assert os.urandom is posix.urandom and type(posix.urandom) is type(len)
            assert "urandom_shim.pytest_plugin" in sys.modules   # registered ...
            for name in ("_activation", "_config", "_readiness", "_patching", "_simulation"):
                assert f"urandom_shim.{name}" not in sys.modules, name   # ... but nothing else was done
            assert [v for v in os.environ if v in sys.modules["urandom_shim.pytest_plugin"].variables()] == []
        """
    )
    suite("-W", "error").assert_outcomes(passed=1)


def test_no_assert_rewrite_warning_even_when_start_up_imported_the_package(
    pytester: pytest.Pytester, suite: Any
) -> None:
    pytester.makepyfile(
        """
        import sys

        def test_the_start_up_modules_are_loaded():
            assert "_urandom_shim_boot" in sys.modules
        """
    )
    suite("-W", "error::pytest.PytestAssertRewriteWarning").assert_outcomes(passed=1)
    # A simulated early boot makes start-up import the whole package before pytest marks it for rewriting.
    pytester._monkeypatch.setenv("URANDOM_SHIM_SIMULATE", "unready-until-monotonic:0")
    result = suite("-W", "error::pytest.PytestAssertRewriteWarning", "-W", "error")
    result.assert_outcomes(passed=1)
    assert "PytestAssertRewriteWarning" not in result.stdout.str() + result.stderr.str()


def test_p_no_urandom_shim_disables_the_plugin(pytester: pytest.Pytester, suite: Any) -> None:
    pytester.makepyfile(
        """
        import sys, pytest

        def test_not_loaded():
            assert "urandom_shim.pytest_plugin" not in sys.modules

        def test_fixture_is_missing(system_rng):
            pass
        """
    )
    result = suite("-p", "no:urandom_shim")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*fixture 'system_rng' not found*"])
    marked = suite("-p", "no:urandom_shim", "--strict-markers", "-k", "nothing", "--urandom-policy=pep522")
    assert marked.ret == pytest.ExitCode.USAGE_ERROR
    marked.stderr.fnmatch_lines(["*unrecognized arguments: --urandom-policy=pep522*"])


def test_suite_mode_never_hangs_a_wait_that_nothing_can_end_fails_at_once(
    pytester: pytest.Pytester, suite: Any
) -> None:
    """The testing how-to's `pytest --urandom-policy=pep522`: `secrets` waits under pep522, and in suite mode the
    simulated CRNG never becomes ready, so such a test used to hang forever with its warning captured."""
    pytester.makepyfile(
        """
        import os, secrets, threading, time, pytest

        def test_secrets_would_wait_forever():
            secrets.token_hex(8)

        def test_os_urandom_raises_as_pep522_says():
            with pytest.raises(BlockingIOError):
                os.urandom(8)

        @pytest.mark.urandom(policy="pep524")
        def test_the_marker_is_bounded_too():
            os.urandom(8)

        def test_the_fixture_is_bounded_too(urandom_policy, system_rng):
            urandom_policy("pep524")
            system_rng.unready()
            os.urandom(8)

        def test_a_window_that_ends_is_waited_out(system_rng):
            system_rng.ready_after(0.3)
            began = time.monotonic()
            secrets.token_hex(8)
            assert 0.2 < time.monotonic() - began < 10

        def test_a_wait_another_thread_could_end_is_bounded(system_rng, monkeypatch):
            import urandom_shim.pytest_plugin.state as state

            monkeypatch.setattr(state, "WAIT_BOUND", 0.5)  # 60 s in real use
            stop = threading.Event()
            threading.Thread(target=stop.wait, daemon=True).start()
            try:
                secrets.token_hex(8)
            finally:
                stop.set()

        @pytest.mark.urandom(policy="pep524", timeout=0.2)
        def test_a_policy_timeout_still_ends_the_wait_as_configured():
            with pytest.raises(BlockingIOError):
                os.urandom(8)
        """
    )
    result = suite("--urandom-policy=pep522", timeout=300)
    outcomes = result.parseoutcomes()
    assert (outcomes.get("failed"), outcomes.get("passed")) == (4, 3), result.stdout.str()[-4000:]
    assert result.duration < 60, result.duration  # no wait was sat out
    text = " ".join(result.stdout.str().split())
    module = "test_suite_mode_never_hangs_a_wait_that_nothing_can_end_fails_at_once.py"
    for test, call, line, source in (
        ("test_secrets_would_wait_forever", "secrets.token_hex()", 4, "--urandom-policy"),
        ("test_the_marker_is_bounded_too", "os.urandom(8)", 12, "@pytest.mark.urandom"),
        ("test_the_fixture_is_bounded_too", "os.urandom(8)", 17, "urandom_policy()"),
    ):
        assert f"FAILED {module}::{test}" in text
        policy = "pep522" if source == "--urandom-policy" else "pep524"
        assert (
            f"urandom-shim: {call} at {module}:{line} would wait forever for the simulated kernel CRNG: "
            f"nothing in this test will ever make it ready (under urandom-shim policy '{policy}' (from {source}))."
            in text
        ), text[-4000:]
    assert re.search(
        r"urandom-shim: secrets\.token_hex\(\) at \S+:32 waited 0\.[5-9] s \(the plugin's bound\) for "
        r"the simulated kernel CRNG: no other thread of the test has called system_rng\.ready\(\) \(under "
        r"urandom-shim policy 'pep522' \(from --urandom-policy\)\)",
        text,
    ), text[-4000:]


def test_marker_and_fixture_mistakes_name_themselves_and_the_valid_choices(
    pytester: pytest.Pytester, suite: Any
) -> None:
    pytester.makepyfile(
        """
        import os, pytest

        @pytest.mark.urandom(policy="PEP522")
        def test_bad_value():
            pass

        @pytest.mark.urandom(polcy="pep522")
        def test_misspelt_keyword():
            pass

        @pytest.mark.urandom("pep522", "extra")
        def test_two_positionals():
            pass

        def test_fixture_bad_option(urandom_policy):
            with pytest.raises(TypeError) as info:
                urandom_policy("pep522", polcy=1)
            assert str(info.value) == (
                "urandom_policy() got unknown option(s) ['polcy']; valid: policy, timeout, on_timeout, warn_after, "
                "seed_random_instances, mode, events"
            )
            with pytest.raises(ValueError, match=r"^urandom_policy\\(\\): policy='PEP522' is not valid"):
                urandom_policy("PEP522")

        @pytest.mark.urandom(policy="pep522")
        def test_runtime_messages_name_the_marker():
            with pytest.raises(BlockingIOError, match=r"policy 'pep522' \\(from @pytest.mark.urandom\\)") as info:
                os.urandom(8)
            # URANDOM_POLICY would change nothing here: the way to wait names the marker.
            assert "or choose pep524 with @pytest.mark.urandom to wait here." in str(info.value)
            assert "URANDOM_POLICY=pep524" not in str(info.value)
        """
    )
    result = suite()
    outcomes = result.parseoutcomes()
    assert (outcomes.get("errors"), outcomes.get("passed")) == (3, 2), result.stdout.str()[-4000:]
    text = " ".join(result.stdout.str().split())
    assert "urandom-shim: @pytest.mark.urandom: policy='PEP522' is not valid" in text
    assert (
        "urandom-shim: @pytest.mark.urandom got unknown option(s) ['polcy']; valid: policy, unready, timeout, "
        "on_timeout, warn_after, seed_random_instances, mode, events" in text
    )
    assert "@pytest.mark.urandom takes at most one positional argument, the policy; got 2: 'pep522', 'extra'." in text


def test_suite_mode_messages_name_the_option_and_the_header_tells_the_truth_under_a_floor(
    pytester: pytest.Pytester, suite: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        """
        import os, pytest

        def test_raises_naming_the_option():
            with pytest.raises(BlockingIOError, match=r"policy 'pep522' \\(from --urandom-policy\\)") as info:
                os.urandom(8)
            assert "or choose pep524 with --urandom-policy to wait here." in str(info.value)
        """
    )
    assert suite("--urandom-policy=pep522").ret == 0
    # --urandom-timeout alone did nothing, silently; now it is a usage error.
    alone = suite("--urandom-timeout=2")
    assert alone.ret == 4
    assert "--urandom-timeout (or the ini key urandom_timeout) applies only to the whole-suite mode" in (
        alone.stderr.str()
    )
    # Under a floor, legacy is not what the tests get: the header says what they do get.
    floor = tmp_path / "machine.toml"
    floor.write_text("allow_weak = false\n")
    monkeypatch.setenv("URANDOM_SHIM_MACHINE_CONFIG", str(floor))
    pytester.makepyfile(test_floor="def test_nothing():\n    pass\n")
    header = [line for line in suite("--urandom-policy=legacy", "test_floor.py").outlines if "every test runs" in line]
    assert len(header) == 1 and "every test runs under policy 'pep524' (" in header[0], header
    assert "(allow_weak = false), instead of 'legacy' from --urandom-policy)" in header[0], header


def test_report_only_runs_the_suite_as_native_and_ends_with_the_report(pytester: pytest.Pytester, suite: Any) -> None:
    """The dry run of the testing how-to: the suite under pep522 in report mode passes, as it would under native,
    and the summary says what pep522 would have broken, where."""
    pytester.makepyfile(
        test_keys="""
        import os, secrets, subprocess, sys

        def test_makes_a_key():
            assert len(os.urandom(16)) == 16

        def test_makes_a_token():
            assert len(secrets.token_hex(8)) == 16

        def test_a_child_process_is_reported_too():
            code = "import os; os.urandom(4)"
            assert subprocess.run([sys.executable, "-c", code]).returncode == 0
        """
    )
    result = suite("--urandom-policy=pep522", "--urandom-report-only")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*report-only: every call behaves as native*",
            "*= urandom-shim report =*",
            "Under policy 'pep522' (from --urandom-policy), report-only (every call behaved as native), 3 of 3 tests *",
            "os.urandom(16) at test_keys.py:4",
            "*tests*1: test_keys.py::test_makes_a_key",
            "*would*native waits, pep524 waits, pep522 raises, legacy weak bytes",
            "*fix*call secrets.wait_for_system_rng() once before test_keys.py:4, where waiting is acceptable*",
            "os.urandom(4) at <string>:1",
            "*in*child processes: python -c*",  # and the code, from Python 3.10 (sys.orig_argv)
            "*fix*call secrets.wait_for_system_rng() once before the call, where waiting is acceptable*",
            "secrets.token_hex() at test_keys.py:7",
            "*under pep522, 2 tests would raise BlockingIOError; 1 test would wait for the CRNG.",
        ]
    )
    # One story of time: the run's window is the plugin's, so the real kernel's `crng init done` is not told.
    assert "crng init done" not in result.stdout.str()


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_run_that_stops_early_says_its_report_is_of_part_of_the_suite(
    pytester: pytest.Pytester, suite: Any, workers: list[str]
) -> None:
    """With -x (or --maxfail, or a Ctrl-C) the report covers the tests that ran: it says so, with pytest's own
    reason (pytest-xdist's, which ends its run as interrupted), and never that there is "nothing to change" in a suite
    most of which never ran. A run whose last test was the failure that stopped it left nothing out."""
    pytester.makepyfile(
        test_first_fails="""
        import os

        def test_fails():
            assert False

        def test_would_raise_under_pep522():
            os.urandom(16)
        """
    )
    many = 40 if workers else 0  # under xdist, tests the other worker is still busy with when the stop comes
    pytester.makepyfile(
        test_then_many="import time\n" + "".join(f"def test_{n}():\n    time.sleep(0.1)\n" for n in range(many))
    )
    result = suite("--urandom-policy=pep522", "--urandom-report-only", "-x", "--urandom-report=report.json", *workers)
    ran = result.parseoutcomes()
    flat = " ".join(result.stdout.str().split())
    assert ran.get("failed") == 1, flat[-3000:]
    written = json.loads((pytester.path / "report.json").read_text())
    run, collected = written["tests_run"], written["tests_collected"]
    assert run == ran.get("failed", 0) + ran.get("passed", 0) and run < collected == 2 + many, (ran, written)
    assert (
        f"The run stopped early (stopping after 1 failures): {run} of {collected} collected tests finished, so this "
        "report covers part of the suite, not the whole of it." in flat
    ), flat[-3000:]
    assert written["stopped"] == "stopping after 1 failures", written
    if not workers:  # (under xdist, the other worker may have reached the call before the stop)
        assert "Nothing to change:" not in flat and "Nothing to change in the tests that ran" in flat, flat[-3000:]
    # The whole suite, for the control: no such line, and the call that -x hid is found.
    result = suite("--urandom-policy=pep522", "--urandom-report-only", "--urandom-report=report.json", *workers)
    result.assert_outcomes(failed=1, passed=1 + many)
    out = result.stdout.str()
    assert "stopped early" not in out and "os.urandom(16) at test_first_fails.py:7" in out, out[-3000:]
    assert json.loads((pytester.path / "report.json").read_text())["stopped"] is None
    # The last test's failure stops the run, and nothing was left out.
    result = suite("--urandom-policy=pep522", "--maxfail=1", "test_first_fails.py::test_would_raise_under_pep522")
    result.assert_outcomes(failed=1)
    assert "stopping after 1 failures" in result.stdout.str() and "stopped early" not in result.stdout.str()


def test_report_only_needs_a_policy(pytester: pytest.Pytester, suite: Any) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = suite("--urandom-report-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--urandom-report-only (or urandom_report_only) needs --urandom-policy*"])
