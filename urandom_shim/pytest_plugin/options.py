"""The plugin's options, ini keys and marker: registered, read once per run and checked, each value with its source.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fnmatch import fnmatchcase

import pytest

from .. import _messages

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Where a test's policy comes from, as every message names it.
MARKER, FIXTURE, OPTION = "@pytest.mark.urandom", "urandom_policy()", "--urandom-policy"
#: The source of the events file the plugin gives every test it applies a policy to.
RECORDS_SOURCE = "the pytest plugin's records"
#: The options of ``@pytest.mark.urandom`` and ``urandom_policy()`` besides the policy.
POLICY_OPTIONS = ("timeout", "on_timeout", "warn_after", "seed_random_instances", "mode", "events")


@dataclass(frozen=True)
class Options:
    """The run's choices, from the command line or the ini file, each source named as messages name it."""

    policy: str | None
    policy_source: str
    timeout: float | None
    timeout_source: str
    report_only: bool
    report_only_source: str
    exempt: tuple[str, ...]
    report_path: str | None
    stderr: bool

    def exempts(self, nodeid: str) -> bool:
        """Whether ``nodeid`` runs without ``--urandom-policy``: a pattern matches it whole (``fnmatch``, or as
        written, so ``[`` of a parametrised id needs no escaping), or names its file or class (``tests/test_a.py``)."""
        return any(
            nodeid == glob or nodeid.startswith(glob + "::") or fnmatchcase(nodeid, glob) for glob in self.exempt
        )

    def overrides(self) -> dict[str, Any]:
        """The settings ``--urandom-policy`` gives a test (the events file is the run's, added by the caller)."""
        found: dict[str, Any] = {"policy": self.policy}
        if self.timeout is not None:
            found["timeout"] = self.timeout
        if self.report_only:
            found["mode"] = "report"
        return found

    def sources(self) -> dict[str, str]:
        """Each key ``--urandom-policy`` sets, and the option or ini key it came from."""
        return {
            "policy": self.policy_source,
            "timeout": self.timeout_source,
            "mode": self.report_only_source,
            "events": RECORDS_SOURCE,
        }


_OPTIONS = pytest.StashKey[Options]()


def options(config: pytest.Config) -> Options:
    """The run's options (read by :func:`pytest_configure`)."""
    found = config.stash.get(_OPTIONS, None)
    if found is None:
        found = config.stash[_OPTIONS] = _read(config)
    return found


def _source(config: pytest.Config, option: str, ini: str) -> tuple[Any, str]:
    """The value of ``--option`` (with its name), else of the ini key (named with its file)."""
    value = config.getoption(option.lstrip("-").replace("-", "_"), None)
    if value not in (None, [], False):
        return value, option
    inipath = getattr(config, "inipath", None)
    return config.getini(ini), f"{ini} in {inipath.name if inipath is not None else 'the ini file'}"


def _read(config: pytest.Config) -> Options:
    policy, policy_source = _source(config, "--urandom-policy", "urandom_policy")
    timeout_text, timeout_source = _source(config, "--urandom-timeout", "urandom_timeout")
    report_only, report_only_source = _source(config, "--urandom-report-only", "urandom_report_only")
    stderr, _stderr_source = _source(config, "--urandom-stderr", "urandom_stderr")
    exempt = [*(config.getoption("urandom_exempt", None) or ()), *(config.getini("urandom_exempt") or ())]
    timeout = None
    if timeout_text:
        from .._config import parse_seconds_text

        timeout = parse_seconds_text(str(timeout_text))
    return Options(
        policy=str(policy) if policy else None,
        policy_source=policy_source,
        timeout=timeout,
        timeout_source=timeout_source,
        report_only=bool(report_only),
        report_only_source=report_only_source,
        exempt=tuple(str(glob).strip() for glob in exempt if str(glob).strip()),
        report_path=config.getoption("urandom_report", None),
        stderr=bool(stderr),
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("urandom-shim", "urandom-shim: early-boot randomness")
    group.addoption(
        "--urandom-policy",
        metavar="POLICY",
        default=None,
        help="run every test under POLICY (native, pep524, pep522, legacy) with an unready simulated kernel CRNG",
    )
    group.addoption(
        "--urandom-report-only",
        action="store_true",
        default=None,
        help="with --urandom-policy: every test behaves as native, and the report says what POLICY would have done",
    )
    group.addoption(
        "--urandom-timeout",
        metavar="SECONDS",
        default=None,
        help="with --urandom-policy: the longest any wait may last (a hang under pep524 becomes BlockingIOError)",
    )
    group.addoption(
        "--urandom-exempt",
        metavar="NODEID",
        action="append",
        default=None,
        help="with --urandom-policy: run the tests whose node id matches this glob (or that lie in this file or "
        "class) with the kernel ready, as without the option; may be given many times",
    )
    group.addoption(
        "--urandom-report",
        metavar="PATH",
        default=None,
        help="write the run's findings to PATH as JSON: per test, its calls, processes and what each policy "
        "would do, in the shape of `urandom-shim report --json`",
    )
    group.addoption(
        "--urandom-stderr",
        action="store_true",
        default=None,
        help="keep urandom-shim's event lines on the stderr of the tests and their child processes (by default "
        "they go to the plugin's records only)",
    )
    parser.addini("urandom_policy", "like --urandom-policy", default=None)
    parser.addini("urandom_timeout", "like --urandom-timeout", default=None)
    parser.addini("urandom_report_only", "like --urandom-report-only", type="bool", default=False)
    parser.addini("urandom_exempt", "like --urandom-exempt: node-id globs, one a line", type="linelist", default=[])
    parser.addini("urandom_stderr", "like --urandom-stderr", type="bool", default=False)


#: The project this process had before the run: a run nested in another (pytester's inline runs) puts it back.
_OUTER_ROOT = pytest.StashKey["tuple[str, str] | None"]()


def pytest_configure(config: pytest.Config) -> None:
    # The project under test is pytest's: its configuration file's directory, else its rootdir. The same for
    # `pytest` and `python -m pytest`, and from any subdirectory.
    from .. import _sources

    config.stash[_OUTER_ROOT] = _sources.project_root()  # a run nested in another's (pytester) gives it back
    inipath = getattr(config, "inipath", None)
    if inipath is not None:
        _sources.set_project_root(str(inipath.parent), _messages.RULE_PYTEST_CONFIG_FILE.format(inipath=inipath))
    else:
        _sources.set_project_root(str(config.rootpath), f"pytest: its rootdir, {config.rootpath}")
    config.addinivalue_line(
        "markers",
        "urandom(policy=None, unready=True, **options): run the test under an urandom-shim policy, with the "
        "simulated kernel CRNG unready (options: timeout, on_timeout, warn_after, seed_random_instances)",
    )
    _check(config)


def _check(config: pytest.Config) -> None:
    """Every mistake in the options is one usage error, before any test runs."""
    policy, _ = _source(config, "--urandom-policy", "urandom_policy")
    timeout, _ = _source(config, "--urandom-timeout", "urandom_timeout")
    if not policy and timeout:
        raise pytest.UsageError(_messages.PLUGIN_TIMEOUT_WITHOUT_POLICY)
    if not policy and _source(config, "--urandom-report-only", "urandom_report_only")[0]:
        raise pytest.UsageError(_messages.PLUGIN_REPORT_ONLY_WITHOUT_POLICY)
    if not policy and config.getoption("urandom_exempt", None):
        raise pytest.UsageError(_messages.PLUGIN_EXEMPT_WITHOUT_POLICY)
    for option, value, key in (("--urandom-policy", policy, "policy"), ("--urandom-timeout", timeout, "timeout")):
        if value:
            from .._config import KEYS, InvalidValue

            try:
                KEYS[key].read(str(value), from_text=True)
            except InvalidValue as exc:
                raise pytest.UsageError(f"urandom-shim: {option}={exc}") from None
    path = config.getoption("urandom_report", None)
    if path is not None:
        directory = os.path.dirname(os.path.abspath(path)) if path else ""
        if not path or not os.path.isdir(directory) or os.path.isdir(path):
            raise pytest.UsageError(_messages.PLUGIN_REPORT_PATH.format(path=path))
    options(config)


def pytest_report_header(config: pytest.Config) -> str | None:
    found = options(config)
    if found.policy is None:
        return None
    bound = f", waits bounded to {found.timeout} s" if found.timeout is not None else ""
    if found.report_only:
        bound += _messages.PLUGIN_HEADER_REPORT_ONLY
    if found.exempt:
        bound += _messages.PLUGIN_HEADER_EXEMPT.format(count=len(found.exempt))
    effective = _effective_policy(found)
    if effective is not None and effective[0] != found.policy:
        runs = f"policy {effective[0]!r} ({effective[1]})"  # the source says what it raised, and from what
    else:
        runs = f"policy {found.policy!r}"
    return _messages.PLUGIN_HEADER.format(runs=runs, bound=bound)


def _effective_policy(found: Options) -> tuple[str, str] | None:
    """The policy the tests really get for ``--urandom-policy`` (a floor can raise it), and why."""
    try:
        from .._config import resolve

        settings, _problems = resolve(overrides={"policy": found.policy}, overrides_source=found.policy_source)
        return settings.policy_value.name, settings.policy.source
    except Exception:  # noqa: BLE001 - the header must never break a run
        return None


def pytest_unconfigure(config: pytest.Config) -> None:
    """The project is again what it was before this run: none, or the outer run's, for a run pytester nested in it."""
    from .. import _sources

    outer = config.stash.get(_OUTER_ROOT, None)
    _sources.set_project_root(*(outer or (None,)))
