"""The man page ``urandom-shim(1)``, generated from the command line's own parser, so that it can't drift from it.

``python -m urandom_shim.cli.manpage`` writes the page (roff, for ``man``) to standard output: the Debian package
builds and installs it; anywhere else, ``python -m urandom_shim.cli.manpage | man -l -`` reads it. The commands,
their descriptions, examples and options come from :func:`urandom_shim.cli.parser.build_parser` (what ``--help``
prints), the exit statuses from :data:`urandom_shim.cli.exits.MEANINGS`, the variables and files from the code that
reads them. The date is ``SOURCE_DATE_EPOCH``'s when it is set, else the version's (:data:`RELEASED`): two builds of
one version give the same bytes. Never imported at interpreter start.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time

from .. import __version__, _config, _events, _policies, _sources
from . import exits
from .launch import PROG
from .parser import build_parser

#: The date each version was released (or is to be, for the version in development), for the page's ``.TH`` line
#: when ``SOURCE_DATE_EPOCH`` is not set. tests/test_manpage.py fails when ``__version__`` is missing here.
RELEASED = {"0.1.0": "2026-12-06"}

URL = "https://urandom-shim.readthedocs.io/"

#: Wide enough that argparse never wraps a usage line: troff fills the page to the reader's width itself.
_USAGE_WIDTH = 1000

DESCRIPTION = (
    "urandom-shim is installed into a Python environment (a virtual environment, or the system's Python), and a "
    "`.pth` file starts it in every interpreter of that environment. While the kernel's CRNG is initialised, as it "
    "is for nearly every start, it asks the kernel once, replaces nothing and only adds "
    "`secrets.wait_for_system_rng()`; before that, it makes `os.urandom()`, `random` and `secrets` do what the "
    "policy says.",
    "The policy (one of {policies}) and its options come from `URANDOM_POLICY` and the other variables below, from "
    "the `[{table}]` table of the program's `pyproject.toml`, or from the configuration files under FILES; the "
    "default is `native`, the interpreter's own behaviour. `urandom-shim run` starts a command with a policy, also "
    "where the shim is not installed.",
)

#: What each variable a user sets does (the names are the code's: :data:`urandom_shim._config.VARIABLES`).
VARIABLES = {
    _config.ENV_POLICY: "The policy: {policies}.",
    _config.ENV_TIMEOUT: "The longest any wait may last, in seconds, or `none` (no limit, the default).",
    _config.ENV_ON_TIMEOUT: "When the timeout runs out: `raise` BlockingIOError (the default), or `fallback` to "
    "best-effort bytes with a warning.",
    _config.ENV_WARN_AFTER: "Seconds of waiting before one diagnostic line, or `none` (default 5).",
    _config.ENV_SEED_RANDOM_INSTANCES: "`nonblocking` (the default), or `policy`: `Random()` instances after the "
    "module's own follow the policy of `os.urandom()`.",
    _config.ENV_MODE: "`enforce` (the default), or `report`: behave as `native` and record what the policy would do.",
    _config.ENV_EVENTS: "An absolute path: each event is also appended to this JSON-lines file; or `none`.",
    _config.ENV_CONFIG: "A configuration file to read, with the keys at the top level; it must exist.",
    _config.ENV_MACHINE: "A machine file to read instead of {machine}; it can add a floor, never remove one.",
    _config.ENV_DISABLE: "Anything but empty or `0` turns the shim off completely: no patches, no additions.",
    _config.ENV_DEBUG: "`1` prints the traceback behind an activation failure or an internal error of the command "
    "line.",
    _config.ENV_SIMULATE: "A simulated unready CRNG (`unready-forever`, `unready-until-file:PATH`, "
    "`unready-for:SECONDS`), inherited by child processes; `urandom-shim simulate` sets it.",
    _config.ENV_WAIT_BOUND: "Seconds after which a wait on the simulated CRNG raises BlockingIOError (the pytest "
    "plugin sets it for a test's child processes).",
    _config.ENV_HASHSEED: "Set by `urandom-shim run` beside the `PYTHONHASHSEED` it gave a program, so that the "
    "interpreter takes both away; a `PYTHONHASHSEED` without it is yours and is never touched.",
}

#: The title of the group of options that set the configuration's keys (``urandom_shim.cli.parser._add_settings``).
SETTINGS = "settings"

SEE_ALSO = (("python3", 1), ("random", 4), ("getrandom", 2))


# -- roff ------------------------------------------------------------------------------------------------------------


def escape(text: str) -> str:
    """Text as roff prints it literally: backslashes, every hyphen-minus as a minus (options must copy as ``--``),
    quotes and backquotes as their ASCII selves, and a line never starting a request."""
    return _guard(_chars(text))


def _chars(text: str) -> str:
    return text.replace("\\", "\\e").replace("-", "\\-").replace("'", "\\(aq").replace("`", "\\(ga")


def _guard(text: str) -> str:
    """Each line that troff would read as a request (a leading ``.``; ``'`` is never left as itself) made text."""
    return "\n".join("\\&" + line if line.startswith(".") else line for line in text.split("\n"))


def prose(text: str) -> str:
    """Running text, filled by troff: its line breaks and indentation go, and `names` are set in bold."""
    text = " ".join(text.split())
    pieces = re.split(r"`([^`]+)`", text)
    out = "".join(_chars(piece) if i % 2 == 0 else f"\\fB{_chars(piece)}\\fR" for i, piece in enumerate(pieces))
    return _guard("\n".join(_lines(out)))


def _lines(text: str, width: int = 100) -> list[str]:
    """Source lines of about ``width`` characters, broken at spaces (the output does not depend on them)."""
    lines: list[str] = []
    current = ""
    for word in text.split(" "):
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    return [*lines, current] if current else lines


def arg(text: str) -> str:
    """A macro's argument, quoted."""
    return '"' + escape(text).replace('"', "\\(dq") + '"'


def description(text: str) -> list[str]:
    """A command's description (its ``*_HELP``): paragraphs filled, and its examples as an indented block, unfilled."""
    out: list[str] = []
    for paragraph in text.strip("\n").split("\n\n"):
        head, _, rest = paragraph.partition("\n")
        if head.endswith(":") and rest.startswith("  "):
            out += [".PP", prose(head[:1].upper() + head[1:]), ".RS 4", ".nf"]
            out += [escape(line[2:] if line.startswith("  ") else line) for line in rest.split("\n")]
            out += [".fi", ".RE"]
        else:
            out += [".PP", prose(paragraph)]
    return out


# -- the parser, read ------------------------------------------------------------------------------------------------


def usage(parser: argparse.ArgumentParser) -> str:
    """The parser's usage line without ``usage:``, as argparse makes it, never wrapped."""
    formatter = argparse.HelpFormatter(prog=parser.prog, width=_USAGE_WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, prefix="")
    return " ".join(formatter.format_help().split())


def _is_help(action: argparse.Action) -> bool:
    return isinstance(action, argparse._HelpAction)


def option(action: argparse.Action, setting: bool = False) -> list[str]:
    """One option: its strings and metavar, then its help; a setting also names the variable it sets."""
    names = ", ".join(f"\\fB{escape(name)}\\fR" for name in action.option_strings)
    if action.nargs != 0:
        metavar = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
        names += f" \\fI{escape(metavar)}\\fR"
    text = action.help or ""
    if "%(" in text:
        text = text % {**vars(action), "prog": PROG}
    key = _config.KEYS.get(action.dest)
    if setting and key is not None and action.option_strings[0] == "--" + action.dest.replace("_", "-"):
        text = f"{text}; it sets `{key.variable}`" if text else f"sets `{key.variable}`"
    return [".TP", names, prose(text) if text else "\\&"]


def options(parser: argparse.ArgumentParser) -> list[str]:
    """Every option of a command, group by group, a group other than argparse's own under its title."""
    out: list[str] = []
    for group in parser._action_groups:
        actions = [action for action in group._group_actions if not _is_help(action)]
        if not actions:
            continue
        title = group.title or ""
        own = title in ("options", "optional arguments", "positional arguments")
        out += [".PP", "Options:" if own else f"\\fI{escape(title)}\\fR:"]
        for action in actions:
            out += option(action, setting=title.startswith(SETTINGS))
    return out


# -- the page --------------------------------------------------------------------------------------------------------


def date() -> str:
    """``SOURCE_DATE_EPOCH``'s day (UTC) when it is set, else the day this version was released."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        return time.strftime("%Y-%m-%d", time.gmtime(int(epoch)))
    return RELEASED[__version__]


def page() -> str:
    parser, subs = build_parser()
    summary = parser.description or ""
    policies = ", ".join(f"`{policy.name}`" for policy in _policies.POLICIES)
    helps = {
        choice.dest: choice.help or ""
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for choice in action._choices_actions
    }
    out = [
        ".\\\" Generated by `python -m urandom_shim.cli.manpage` from the command line's parser: do not edit.",
        f".TH URANDOM\\-SHIM 1 {arg(date())} {arg(f'{PROG} {__version__}')} {arg('User Commands')}",
        ".nh",
        ".SH NAME",
        f"{escape(PROG)} \\- {escape(summary[:1].lower() + summary[1:].rstrip('.'))}",
        ".SH SYNOPSIS",
        # Left-adjusted: a usage line that wraps must not be stretched to the margin ("report   [-h]   [--events").
        ".ad l",
        f"\\fB{escape(PROG)}\\fR \\fICOMMAND\\fR [\\fIoptions\\fR]",
    ]
    for sub in subs.values():
        out += [".br", escape(usage(sub))]
    out += [".ad b", ".SH DESCRIPTION", prose(summary)]
    for paragraph in DESCRIPTION:
        out += [".PP", prose(paragraph.format(policies=policies, table=_sources.TABLE))]
    out += [".PP", "The commands:"]
    for name in subs:
        out += [".TP", f"\\fB{escape(name)}\\fR", prose(helps[name])]
    out += [".SH OPTIONS"]
    for action in parser._actions:
        if action.option_strings:
            text = "show the help, of the program or of a COMMAND, and exit" if _is_help(action) else "show the version"
            out += [".TP", ", ".join(f"\\fB{escape(s)}\\fR" for s in action.option_strings), prose(text)]
    out.append(".SH COMMANDS")
    for name, sub in subs.items():
        out += [f".SS {arg(f'{PROG} {name}')}", *description(sub.description or ""), *options(sub)]
    out.append(".SH EXIT STATUS")
    for status, meaning in exits.MEANINGS:
        out += [".TP", f"\\fB{status}\\fR", prose(meaning)]
    out.append(".SH ENVIRONMENT")
    assert set(VARIABLES) == set(_config.VARIABLES), "a variable the shim reads is missing from the man page"
    for variable in VARIABLES:
        text = VARIABLES[variable].format(policies=policies, machine=_sources.MACHINE_FILE)
        out += [".TP", f"\\fB{escape(variable)}\\fR", prose(text)]
    out += [".PP", prose("Under `python -E` or `-I` the variables that choose settings are ignored.")]
    out += [".SH FILES", *_files(), ".SH SEE ALSO"]
    pages = [f"\\fB{escape(name)}\\fR({section})" for name, section in SEE_ALSO]
    out += [",\n".join(pages), ".PP", f"The documentation: \\%{escape(URL)}"]
    return "\n".join(out) + "\n"


def _files() -> list[str]:
    machine, environment = _sources.MACHINE_FILE, _sources.ENVIRONMENT_FILE
    entries = [
        (
            machine,
            "The machine's configuration. It may also hold per-program rules (`[[program]]`) and a floor "
            "(`allow_weak = false`) that no other source can go below.",
        ),
        (
            f"PREFIX/{environment}",
            "The environment's configuration, in its `sys.prefix`; like the machine's, it may hold rules and a floor.",
        ),
        (
            _sources.user_file({"XDG_CONFIG_HOME": "~/.config"}, ignore_environment=False),
            "The user's configuration (under `$XDG_CONFIG_HOME` when it is set).",
        ),
        ("pyproject.toml", f"A project's configuration, in its `[{_sources.TABLE}]` table."),
        (
            _events.DEFAULT_FILE,
            "The events file that `urandom-shim report` reads when no other is configured; events go there when the "
            "`events` setting names it.",
        ),
    ]
    out: list[str] = []
    for name, text in entries:
        out += [".TP", f"\\fI{escape(name)}\\fR", prose(text)]
    return out


def main() -> int:
    sys.stdout.write(page())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
