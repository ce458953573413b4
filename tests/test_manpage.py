"""The man page ``urandom-shim(1)`` (``urandom_shim/cli/manpage.py``): generated from the command line's parser, it has
every command, option and exit status, groff reads it without a warning (lintian's groff-message check), and two
builds give the same bytes.

In-process and with groff: the page is made at package build time, never at interpreter start.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, clean_env

from urandom_shim import __version__, _config
from urandom_shim.cli import exits, manpage, parser

GROFF = shutil.which("groff")
needs_groff = pytest.mark.skipif(GROFF is None, reason="groff is not installed (apt-get install groff-base)")


def roff_text(roff: str) -> str:
    """What a roff line says, as plain text: font changes gone, escapes read back."""
    text = re.sub(r"\\f[BIRP]", "", roff)
    for escape, char in (("\\-", "-"), ("\\(aq", "'"), ("\\(ga", "`"), ("\\(dq", '"'), ("\\&", ""), ("\\%", "")):
        text = text.replace(escape, char)
    return text.replace("\\e", "\\")


def sections(roff: str) -> dict[str, list[str]]:
    """The page's lines by section (``.SH``), and by subsection (``.SS``) as ``SECTION/SUBSECTION``."""
    found: dict[str, list[str]] = {"": []}
    current = section = ""
    for line in roff.splitlines():
        if line.startswith(".SH "):
            current = section = line[4:].strip('"')
        elif line.startswith(".SS "):
            current = f"{section}/{roff_text(line[4:].strip(chr(34)))}"
        else:
            found.setdefault(current, []).append(line)
            continue
        found.setdefault(current, [])
    return found


def tagged(lines: list[str]) -> dict[str, str]:
    """The entries of a ``.TP`` list: the tag line, read back, and the text after it up to the next request."""
    entries: dict[str, str] = {}
    index = 0
    while index < len(lines):
        if lines[index] == ".TP":
            tag = roff_text(lines[index + 1])
            body = []
            index += 2
            while index < len(lines) and not lines[index].startswith("."):
                body.append(roff_text(lines[index]))
                index += 1
            entries[tag] = " ".join(body)
            continue
        index += 1
    return entries


def options_in(lines: list[str]) -> set[str]:
    """The option strings the ``.TP`` tags of ``lines`` name (``--events PATH`` is ``--events``)."""
    return {name for tag in tagged(lines) for name in re.findall(r"(?:^|, )(-[-\w]+)", tag)}


@pytest.fixture(scope="module")
def page() -> str:
    return manpage.page()


def test_every_command_of_the_parser_has_its_subsection_with_each_of_its_options(page: str) -> None:
    top, subs = parser.build_parser()
    found = sections(page)
    commands = [name.split("/", 1)[1] for name in found if name.startswith("COMMANDS/")]
    assert commands == [f"urandom-shim {name}" for name in subs]
    for name, sub in subs.items():
        expected = {s for action in sub._actions for s in action.option_strings} - {"-h", "--help"}
        assert expected, name
        assert options_in(found[f"COMMANDS/urandom-shim {name}"]) == expected, name
    assert options_in(found["OPTIONS"]) == {s for action in top._actions for s in action.option_strings}
    # ... and the synopsis has each command's usage, as argparse makes it
    synopsis = " ".join(roff_text(line) for line in found["SYNOPSIS"] if not line.startswith("."))
    for sub in subs.values():
        assert manpage.usage(sub) in synopsis


def test_each_option_has_its_metavar_and_help_and_each_command_its_examples(page: str) -> None:
    _top, subs = parser.build_parser()
    found = sections(page)
    for name, sub in subs.items():
        entries = tagged(found[f"COMMANDS/urandom-shim {name}"])
        for action in sub._actions:
            if not action.option_strings or action.option_strings[0] == "-h":
                continue
            tag = next(tag for tag in entries if tag.split(" ")[0].rstrip(",") == action.option_strings[0])
            if action.nargs != 0:
                assert tag.endswith(f" {action.metavar}"), tag
            if action.help:
                assert " ".join(action.help.replace("`", "").split()) in entries[tag], (tag, entries[tag])
        examples = (sub.description or "").split("examples:\n", 1)[1].splitlines()
        text = "\n".join(roff_text(line) for line in found[f"COMMANDS/urandom-shim {name}"])
        assert all(line[2:] in text.splitlines() for line in examples if line), name  # unfilled, one per line
    run = tagged(found["COMMANDS/urandom-shim run"])
    assert run["--policy native|pep524|pep522|legacy"] == "sets URANDOM_POLICY"
    assert "URANDOM_SHIM" not in tagged(found["COMMANDS/urandom-shim report"])["--events PATH"]  # not a setting there


def test_every_exit_status_is_on_the_page_with_its_meaning(page: str) -> None:
    entries = tagged(sections(page)["EXIT STATUS"])
    meanings = {str(status): meaning.replace("`", "") for status, meaning in exits.MEANINGS}
    assert entries == meanings
    constants = {value for name, value in vars(exits).items() if name.startswith("EXIT_")}
    assert len(constants) >= 9 and {str(value) for value in constants} <= set(entries)


def test_the_environment_and_files_are_the_codes(page: str) -> None:
    found = sections(page)
    assert set(tagged(found["ENVIRONMENT"])) == set(_config.VARIABLES)
    files = set(tagged(found["FILES"]))
    assert {"/etc/urandom-shim.toml", "~/.config/urandom-shim/config.toml", "/run/urandom-shim/events.jsonl"} <= files
    assert "PREFIX/urandom-shim.toml" in files and "pyproject.toml" in files
    see_also = roff_text(" ".join(found["SEE ALSO"]))
    assert all(ref in see_also for ref in ("python3(1)", "random(4)", "getrandom(2)", manpage.URL))


def make(env: dict[str, str]) -> bytes:
    result = subprocess.run(
        [sys.executable, "-m", "urandom_shim.cli.manpage"], cwd=ROOT, env=clean_env(env), capture_output=True
    )
    assert result.returncode == 0 and not result.stderr, result.stderr
    return result.stdout


def test_two_builds_give_the_same_bytes_and_the_date_is_source_date_epochs_or_the_versions() -> None:
    first = make({"SOURCE_DATE_EPOCH": "1767225600", "COLUMNS": "40"})
    assert first == make({"SOURCE_DATE_EPOCH": "1767225600", "COLUMNS": "200"})  # nor does the terminal matter
    assert b'.TH URANDOM\\-SHIM 1 "2026\\-01\\-01" "urandom\\-shim ' + __version__.encode() in first
    assert __version__ in manpage.RELEASED  # the release that changes the version gives it its date
    without = make({})
    assert without == make({}) and manpage.RELEASED[__version__].replace("-", "\\-").encode() in without


@pytest.fixture(scope="module")
def page_file(page: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("man") / "urandom-shim.1"
    path.write_text(page, encoding="utf-8")
    return path


@needs_groff
def test_groff_reads_the_page_without_a_warning(page_file: Path) -> None:
    # lintian's groff-message check, exactly.
    result = subprocess.run([GROFF or "groff", "-man", "-Tutf8", "-ww", "-z", str(page_file)], capture_output=True)
    assert (result.returncode, result.stderr) == (0, b""), result.stderr.decode()
    man = shutil.which("man")
    if man is not None:
        result = subprocess.run(
            [man, "--warnings", "-E", "UTF-8", "-l", str(page_file)],
            capture_output=True,
            env=clean_env({"MANWIDTH": "80", "LC_ALL": "C.UTF-8", "MAN_KEEP_FORMATTING": ""}),
        )
        assert (result.returncode, result.stderr) == (0, b""), result.stderr.decode()


@needs_groff
def test_the_rendered_page_shows_options_as_typed(page_file: Path) -> None:
    result = subprocess.run([GROFF or "groff", "-man", "-Tutf8", str(page_file)], capture_output=True, check=True)
    text = re.sub(".\x08", "", result.stdout.decode("utf-8"))  # groff's bold is overstruck
    assert "--fail-for POLICY" in text and "urandom-shim report --fail-for pep522" in text
    assert "give up after SECONDS (exit 1), or 'none' (the default)" in text
    assert "\\-" not in text and "\\(" not in text and "\\f" not in text and "\u2212" not in text, text


def test_roff_escapes_what_troff_would_read_as_a_request_or_an_escape() -> None:
    assert manpage.escape(".pth\n'quoted' a\\b --x") == "\\&.pth\n\\(aqquoted\\(aq a\\eb \\-\\-x"
    assert manpage.prose("`.pth` at the start, and `--x`") == "\\fB.pth\\fR at the start, and \\fB\\-\\-x\\fR"
    assert manpage.prose(".pth") == "\\&.pth"


@needs_groff
def test_the_synopsis_is_not_stretched_to_the_margin(page_file: Path) -> None:
    # Justified usage lines that wrap read as "urandom-shim   report   [-h]   [--events   PATH]".
    result = subprocess.run(
        [GROFF or "groff", "-man", "-Tutf8", "-rLL=80n", str(page_file)], capture_output=True, check=True
    )
    text = re.sub(".\x08", "", result.stdout.decode("utf-8"))
    synopsis = text.split("SYNOPSIS", 1)[1].split("DESCRIPTION", 1)[0]
    assert "report [-h] [--events PATH]" in synopsis, synopsis
    assert not re.search(r"\S  +\S", synopsis), synopsis
