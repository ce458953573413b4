"""An editable install's import hook in site-packages, as a hostile writer of site-packages may shape it (issue 48):
the unready start that reads the hooks (``urandom_shim._editables``) opens only regular files, pays a bounded cost
whatever their number and size, and prints nothing of its own but ``urandom-shim:`` lines.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Venv, clean_env, find_python

MAPPING_LINE = "MAPPING: dict[str, str] = {mapping!r}\n"


#: Looks for the hook ``app`` in the site-packages argv[1], and prints the paths it opened (an audit hook sees each).
OPENS = """\
import sys
opened = []
sys.addaudithook(lambda event, args: opened.append(args[0]) if event == "open" else None)
from urandom_shim import _editables
found = _editables.find_editable("app", [sys.argv[1]])
print(found)
print("\\n".join(str(path) for path in opened))
"""


def test_a_hook_that_is_no_regular_file_is_never_opened(tmp_path: Path) -> None:
    """A FIFO under a hook's name was opened (without blocking) before its type was checked: the open alone wakes a
    writer waiting on it, and a device's open can do more. Its type is checked first now."""
    import urandom_shim

    site = tmp_path / "site-packages"
    site.mkdir()
    fifo = site / "__editable___a_finder.py"
    os.mkfifo(fifo)
    (site / "_editable_impl_b.py").symlink_to(fifo)
    (site / "__editable___c_finder.py").write_text("MAPPING = {'other': '/nowhere'}\n")
    home = os.path.dirname(os.path.dirname(urandom_shim.__file__))
    result = subprocess.run([sys.executable, "-c", OPENS, str(site)], capture_output=True, text=True, timeout=60,
                            env=clean_env({"PYTHONPATH": home}))  # fmt: skip
    assert result.returncode == 0, result.stderr
    found, *opened = result.stdout.splitlines()
    assert found == "None"
    assert str(site / "__editable___c_finder.py") in opened, opened  # the audit hook sees the regular one
    assert str(fifo) not in opened and str(site / "_editable_impl_b.py") not in opened, opened


def test_hostile_hooks_cost_a_bounded_amount_whatever_their_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hooks of 64 KiB each whose mapping line names the module, with escapes (which sent each through
    `ast.literal_eval`): 20 of them made an unready start take 0.43 s, and 200 ten times that. What a start reads
    and parses of them is bounded, and the same for 200 as for 20."""
    from urandom_shim import _editables, _programs

    read: list[int] = []
    parsed: list[int] = []
    real_read, real_pairs = _programs.read_regular, _editables._string_pairs

    def counted_read(path: str, limit: int) -> Any:
        data = real_read(path, limit)
        read.append(0 if data is None else len(data))
        return data

    def counted_pairs(text: str, *args: str) -> Any:
        parsed.append(len(text))
        return real_pairs(text, *args)

    monkeypatch.setattr(_programs, "read_regular", counted_read)
    monkeypatch.setattr(_editables, "_string_pairs", counted_pairs)
    pairs = ", ".join(f"'k\\x41{n}': 'v{n}'" for n in range(4000))
    line = "MAPPING = {" + pairs + ", 'app': '/nowhere'}\n"
    body = (line * (64 * 1024 // len(line) + 1))[: 64 * 1024 - 1] + "\n"
    work = {}
    for count in (20, 200):
        site = tmp_path / f"site{count}" / "site-packages"
        site.mkdir(parents=True)
        for number in range(count):
            (site / f"__editable___x{number}_finder.py").write_text(body)
        del read[:], parsed[:]
        assert _editables.find_editable("app", [str(site)]) is None
        work[count] = (sum(read), sum(parsed))
    assert work[200] <= work[20], work
    assert work[20][0] <= _editables.HOOKS_READ_MAX and work[20][1] <= _editables.PARSED_MAX, work


def test_a_real_hook_is_still_found_past_many_ordinary_ones(tmp_path: Path) -> None:
    """The bound leaves room for a venv with a hundred editable installs, each with its finder (about 4 KB)."""
    from urandom_shim import _editables

    site = tmp_path / "site-packages"
    site.mkdir()
    filler = "# " + "x" * 78 + "\n"
    for number in range(100):
        mapping = {f"pkg{number}": str(tmp_path / f"checkout{number}" / f"pkg{number}")}
        (site / f"__editable___pkg{number}_1_0_finder.py").write_text(
            filler * 50 + MAPPING_LINE.format(mapping=mapping)
        )
    package = tmp_path / "checkout99" / "pkg99"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    hook = str(site / "__editable___pkg99_1_0_finder.py")
    assert _editables.find_editable("pkg99", [str(site)]) == (str(package), None, hook)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{'a': '/p\\\\q'}", [("a", "/p\\q")]),
        ('{\'a\': \'it\\\'s\', "b": "say \\"x\\""}', [("a", "it's"), ("b", 'say "x"')]),
        ("{'a': '\\t\\n\\r\\x41\\u00e9\\U0001f600'}", [("a", "\t\n\rA\u00e9\U0001f600")]),
        ("{'a': '\\d'}", None),  # no escape repr() writes: SyntaxWarning on 3.12+, so never compiled
        ("{'a': '\\N{BULLET}'}", None),
        ("{'a': '\\x4'}", None),
        ("{'a': '\\U00110000'}", None),
        ("{'a': '\\'}", None),
        ("{'a': not '\\x41'}", None),
        ("{'a': " + "not " * 5000 + "'\\x41'}", None),
        ("{'a': " + "~" * 5000 + "'\\x41'}", None),
        ("{'a': " + "lambda: " * 2000 + "'\\x41'}", None),
    ],
)
def test_the_hook_literal_reader_reads_reprs_escapes_by_hand(text: str, expected: Any) -> None:
    from urandom_shim import _editables

    assert _editables._string_pairs(text, "{", ":", "}") == expected


@pytest.mark.parametrize("which", ["3.8", "this"])
def test_a_hostile_hook_line_prints_nothing_without_our_prefix_at_an_unready_start(
    shim: Venv, python: Path, tmp_path: Path, which: str
) -> None:
    """Python 3.8's parser printed `s_push: parser stack overflow` (no prefix) for a mapping line with a long chain
    of `not`, `~` or `lambda:` and an escape, which went to `ast.literal_eval`; 3.12 and later print a
    `SyntaxWarning` for an escape Python does not know (`\\d`)."""
    interpreter = find_python("3.8") if which == "3.8" else python
    if interpreter is None:
        pytest.skip("Python 3.8 is not installed here")
    venv = tmp_path / "venv"
    subprocess.run([str(interpreter), "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import site; print(site.getsitepackages()[0])"],
                               capture_output=True, text=True, check=True).stdout.strip())  # fmt: skip
    chains = ["not " * 1000, "~" * 1000, "lambda: " * 1000, "-" * 1000, "(" * 200, ""]
    lines = "".join(f"MAPPING = {{'app': {chain}'\\x41\\d'}}\n" for chain in chains)
    (site / "__editable___app_finder.py").write_text(lines)
    started = time.monotonic()
    result = subprocess.run(
        [str(shim.path / "bin" / "urandom-shim"), "simulate", "--unready-forever", "--",
         str(venv / "bin" / "python"), "-m", "app"],
        capture_output=True, text=True, env=clean_env(), timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert time.monotonic() - started < 30
    theirs = [line for line in result.stderr.splitlines() if not line.startswith("urandom-shim:")]
    assert theirs == [f"{venv / 'bin' / 'python'}: No module named app"], result.stderr
