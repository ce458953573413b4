"""The fast TOML reader (``urandom_shim/_toml.py``) against the full parser (``tomllib``, ``tomli`` before 3.11).

A differential property, in-process, on every interpreter of the matrix: over generated documents, plain and hostile,
every document the fast reader accepts gives exactly the full parser's result (types, order and all), and every one it
declines goes to the full parser, so that what a user sees from a file, a message included, is what it was before
the fast reader existed. A floor (``allow_weak``) is never read differently. Then the cost it exists for: an unready
start that reads configuration files imports no TOML parser.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from conftest import Venv
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_guarantees import _rules, _tables, toml_document

from urandom_shim import _config, _sources, _toml

if sys.version_info >= (3, 11):
    import tomllib as full_parser
else:
    import tomli as full_parser

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "benchmarks" / "pyproject-sample.toml"
EXAMPLES = 400
MISSING = object()


def full(text: str) -> tuple[Any, str | None]:
    """(document, None), or (None, the full parser's error)."""
    try:
        return full_parser.loads(text), None
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"


def check_agrees(text: str, record: bool = True) -> Any:
    """The property itself: if the fast reader accepts ``text``, the full parser accepts it with the same result."""
    fast = _toml.loads(text)
    if record:
        event("accepted by the fast reader" if fast is not None else "declined: the full parser decides")
    if fast is not None:
        document, error = full(text)
        assert error is None, f"the fast reader accepted a document the full parser rejects ({error}): {text!r}"
        assert repr(fast) == repr(document), text  # repr: True is not 1, 1 is not 1.0, and key order counts
    return fast


def without_fast_reader() -> Any:
    return mock.patch.object(_toml, "loads", lambda text: None)


def user_facing(data: bytes, ending: str = _sources.IGNORED) -> tuple[str, str | None, str | None, list[str]]:
    """What a file's bytes come to for a user: the document, the problem line, and the floor with its message."""
    document, problem = _sources.parse_toml(data, "/etc/urandom-shim.toml (machine file)", ending)
    layer = _sources.Layer("/etc/urandom-shim.toml (machine file)")
    layer.problems.extend([problem] if problem else [])
    layer.values = document or {}
    messages: list[str] = []
    return repr(document), problem, _config._floor(layer, messages), messages


# -- what documents look like ------------------------------------------------------------------------------------

_text = st.lists(
    st.characters(blacklist_categories=("Cs",))
    | st.sampled_from(
        [*list("\"'\\#[]{}=,.\t \r\n\ufeff\x7f\x00\x1f"), "[tool.urandom-shim]", '"""', "'''", "\\u002d"]
    ),
    max_size=12,
).map("".join)
_numbers = st.sampled_from(
    [
        "0", "1", "-1", "+1", "-0", "+0", "01", "-01", "00", "1_000", "0x10", "0o17", "0b101", "inf", "-inf", "+inf",
        "nan", "+nan", "-nan", "1.5", "-0.0", "+0.5", "1.", ".5", "1e5", "1E-5", "3.14_15", "0.1e2", "1__0",
        "99999999999999999999999999", "123456789012345678", "1234567890123456789", "0.000000000000000001",
        "1979-05-27", "07:32:00", "1979-05-27T07:32:00Z", "1979-05-27 07:32:00",
    ]
) | st.integers().map(str) | st.floats(allow_nan=False, allow_infinity=False).map(repr)  # fmt: skip
_booleans = st.sampled_from(["true", "false", "True", "False", "TRUE", "fAlse", "tru", "truee", "true1"])
_strings = st.one_of(
    _text.map(lambda t: f'"{t}"'),
    _text.map(lambda t: f"'{t}'"),
    _text.map(lambda t: f'"""{t}"""'),
    _text.map(lambda t: f"'''{t}'''"),
    st.sampled_from(['"pep524"', "'legacy'", '"a\\tb"', '"\\u0041"', '"\\x41"', '"\\e"', '""', "''", '"""\n"""']),
)
_bare_keys = st.sampled_from(
    ["policy", "allow_weak", "timeout", "warn_after", "on_timeout", "match", "program", "tool", "a", "b", "1", "-_"]
) | st.from_regex(r"[A-Za-z0-9_-]{1,6}", fullmatch=True)
_keys = st.one_of(
    _bare_keys,
    _bare_keys.map(lambda k: f'"{k}"'),
    _bare_keys.map(lambda k: f"'{k}'"),
    _text.map(lambda t: f'"{t}"'),
    _text.map(lambda t: f"'{t}'"),
    st.sampled_from(
        ["a.b", "tool.urandom-shim.policy", "tool . urandom-shim", '"a.b"', "'a b'", '"\\u0061"', '""', "a b", "ä"]
    ),
)
_spaces = st.sampled_from(["", " ", "  ", "\t", " \t "])
_comments = st.sampled_from(["", " # a comment", "# [tool.urandom-shim]", ' # "quoted" = 1', " #\t", " # \x7f"])


def _join(items: list[str], trailing: bool, newlines: bool) -> str:
    separator = ",\n    " if newlines else ", "
    return separator.join(items) + ("," if trailing else "")


_values = st.recursive(
    st.one_of(_strings, _numbers, _booleans),
    lambda inner: st.one_of(
        st.builds(
            lambda items, trailing, newlines, comment: (
                "["
                + ("\n    " if newlines else "")
                + _join(items, trailing, newlines)
                + (comment + "\n" if newlines else "")
                + "]"
            ),
            st.lists(inner, max_size=4),
            st.booleans(),
            st.booleans(),
            _comments,
        ),
        st.builds(
            lambda pairs, trailing, newlines: "{" + _join([f"{k} = {v}" for k, v in pairs], trailing, newlines) + "}",
            st.lists(st.tuples(_keys, inner), max_size=3),
            st.booleans(),
            st.booleans() | st.just(False),
        ),
    ),
    max_leaves=6,
)
_headers = st.sampled_from(
    [
        "tool", "tool.urandom-shim", "tool.urandom-shim.program", "program", "a", "a.b", "a.b.c", "tool.ruff",
        "tool.ruff.lint", "tool . urandom-shim", 'tool."urandom-shim"', "a..b", "", "a.", " a ", "tool.urandom-shim ",
    ]
)  # fmt: skip
_lines = st.one_of(
    st.builds(lambda s, k, e, v, c: f"{s}{k}{e}={e}{v}{c}", _spaces, _keys, _spaces, _values, _comments),
    st.builds(lambda s, h, c: f"{s}[{h}]{c}", _spaces, _headers, _comments),
    st.builds(lambda s, h, c: f"{s}[[{h}]]{c}", _spaces, _headers, _comments),
    _comments,
    _spaces,
    st.sampled_from(
        [
            'x = """\n[tool.urandom-shim]\npolicy = "legacy"\n"""',
            "x = '''\n[[program]]\n'''",
            'tool = {urandom-shim = {policy = "legacy"}}',
            'tool.urandom-shim.policy = "legacy"',
            "tool.urandom-shim = {allow_weak = true}",
            "[ [program]]",
            "[[program] ]",
            "[a]]",
            "[[a]",
            "a = 1 2",
            "= 1",
            "a =",
            "a = [1,,2]",
            "a = [,]",
            "a = {,}",
            "a = {b = 1,}",
            "a = {b = 1\n}",
            "a = {\nb = 1}",
            "a = [\n1 # c\n, 2]",
        ]
    ),
)
_plain = st.builds(
    lambda lines, newline, last: newline.join(lines) + (newline if last else ""),
    st.lists(_lines, max_size=12),
    st.sampled_from(["\n", "\n", "\n", "\r\n"]),
    st.booleans(),
)


_plain_text = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters='"\\\ufeff'), max_size=10)
_plain_values = st.recursive(
    st.one_of(
        _plain_text.map(lambda t: f'"{t}"'),
        _plain_text.filter(lambda t: "'" not in t).map(lambda t: f"'{t}'"),
        st.integers(-(10**17), 10**17).map(str),
        st.sampled_from(["true", "false", "0.5", "-2.25", "+1", "-0", "10.0"]),
    ),
    lambda inner: (
        st.lists(inner, max_size=3).map(lambda items: "[" + ", ".join(items) + "]")
        | st.lists(st.tuples(_bare_keys, inner), max_size=3).map(
            lambda pairs: "{" + ", ".join(f"{k} = {v}" for k, v in pairs) + "}"
        )
    ),
    max_leaves=5,
)
_plain_lines = st.one_of(
    st.builds(lambda k, v, c: f"{k} = {v}{c}", _bare_keys | _bare_keys.map(lambda k: f'"{k}"'), _plain_values,
              st.sampled_from(["", " # comment"])),
    st.sampled_from(["[tool.urandom-shim]", "[[program]]", "[[tool.urandom-shim.program]]", "[tool]", "[a.b]", "",
                     "# a comment", "[project]", "[[a.b]]"]),
)  # fmt: skip
#: Documents in the reader's subset (most of them valid; duplicates happen): the accepting side of the property.
_wellformed = st.lists(_plain_lines, max_size=10).map(lambda lines: "\n".join(lines) + "\n")


@st.composite
def _hostile(draw: st.DrawFn) -> str:
    """A document, then one hostile change: a character inserted or replaced, a BOM, a CR, trailing whitespace."""
    text = draw(_plain | _wellformed)
    where = draw(st.integers(0, len(text)))
    what = draw(
        st.sampled_from(
            ["\ufeff", "\r", " ", "\t", "#", '"', "'", "\\", "[", "]", "{", "}", "=", ",", ".", "\n", "\x00"]
        )
        | st.characters(blacklist_categories=("Cs",))
    )
    replace = draw(st.booleans())
    return text[:where] + what + text[where + (1 if replace else 0) :]


def _corpus(spec: Any, table: str | None) -> str:
    """The fuzz corpus of the guarantees tests, as text: their documents are what files really hold."""
    data = toml_document(spec, table)
    return "" if data is None else data.decode("utf-8", "replace")


_documents = st.one_of(
    _wellformed,
    _plain,
    _hostile(),
    st.builds(_corpus, st.tuples(_tables, _rules), st.sampled_from([None, "tool.urandom-shim"])),
    st.text(max_size=40),
)


# -- the properties ----------------------------------------------------------------------------------------------


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(_documents)
def test_every_document_the_fast_reader_accepts_reads_exactly_as_the_full_parser_reads_it(text: str) -> None:
    check_agrees(text)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(_documents)
def test_a_file_gives_the_same_document_problem_and_floor_with_and_without_the_fast_reader(text: str) -> None:
    """The user-facing path (``_sources.parse_toml``, then the floor): a declined document goes to the full parser,
    whose message the user sees exactly as before."""
    data = text.encode("utf-8", "surrogatepass")
    event("accepted by the fast reader" if _toml.loads(text) is not None else "declined: the full parser decides")
    with without_fast_reader():
        before = user_facing(data, ending=_config.FLOOR_ENDING)
    assert user_facing(data, ending=_config.FLOOR_ENDING) == before


_floor_values = st.sampled_from(
    [
        "false", "true", "False", "TRUE", "0", "1", '"false"', "'true'", "[false]", "{}", "false false", "f",
        "false # no weak bytes", "true#", "nan", "-0", "1979-05-27", '"""false"""',
    ]
)  # fmt: skip
_floor_keys = st.sampled_from(["allow_weak", '"allow_weak"', "'allow_weak'", "allow_weak ", "allow-weak", "ALLOW_WEAK"])


@st.composite
def _floor_documents(draw: st.DrawFn) -> str:
    """A machine file around an ``allow_weak`` line (or two), with noise before and after it."""
    before = draw(st.lists(_plain_lines | _lines, max_size=4))
    after = draw(st.lists(_plain_lines | _lines, max_size=4))
    floor = [f"{draw(_spaces)}{draw(_floor_keys)} ={draw(_spaces)}{draw(_floor_values)}"]
    if draw(st.booleans()):
        floor.append(f"allow_weak = {draw(_floor_values)}")
    return "\n".join([*before, *floor, *after]) + draw(st.sampled_from(["", "\n", "\r\n"]))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(_floor_documents())
def test_a_floor_is_never_read_differently_by_the_fast_reader(text: str) -> None:
    fast = check_agrees(text)
    if fast is not None:
        document, _ = full(text)
        assert repr(fast.get("allow_weak", MISSING)) == repr(document.get("allow_weak", MISSING))
    data = text.encode("utf-8")
    with without_fast_reader():
        before = user_facing(data, ending=_config.FLOOR_ENDING)
    assert user_facing(data, ending=_config.FLOOR_ENDING) == before


# -- a pyproject: our tables read alone --------------------------------------------------------------------------

#: Where else a pyproject may hold our name: in values (a dependency on us), in keys, in comments, and in every other
#: spelling of our table, plain and hostile.
_MENTIONS = [
    'dependencies = ["urandom-shim>=1.0"]',
    'dependencies = [\n    "flask",\n    "urandom-shim>=1.0",\n]',
    'dependencies = [\n    "urandom-shim>=1.0"]',
    '"src/urandom-shim.toml" = "pkg/urandom-shim.toml"',
    "'src/urandom-shim.toml' = 'x'",
    "'urandom-shim' = 1",
    '"urandom-shim" = {policy = "legacy"}',
    'urandom-shim = {policy = "legacy"}',
    'urandom-shim.policy = "legacy"',
    'tool = {urandom-shim = {policy = "legacy"}}',
    'tool.urandom-shim.policy = "legacy"',
    'tool."urandom-shim".policy = "legacy"',
    '"tool" = {"urandom-shim" = {}}',
    "'tool' = {}",
    '"a"."urandom-shim" = 1',
    '"urandom\\u002dshim" = 1',
    "# configured by urandom-shim",
    "x = 1 # urandom-shim",
    'x = """\n[tool.urandom-shim]\npolicy = "legacy"\n"""',
    "x = '''\n[tool.urandom-shim]\n'''",
    "x = [\n[tool.urandom-shim]\n]",
    'x = [\n  ["urandom-shim"],\n]',
    'x = [{ name = "urandom-shim" }]',
    'a = {b = "urandom-shim"}',
    '[tool."urandom-shim"]',
    "[tool . urandom-shim]",
    "[ tool.urandom-shim ]",
    "[tool.urandom-shim.program]",
    '[[tool.urandom-shim.program]]\nmatch = "cron*"\npolicy = "legacy"',
    "[tool.urandom-shimmer]",
    "[tool.urandom-shim] # ours",
    "[tool.urandom-shim]x",
    "[tool]\nurandom-shim = 1",
    '[tool.urandom-shim]\npolicy = "legacy"\nx = [\n  [1, 2],\n]',
    '[tool.urandom-shim]\nx = [\n  "a",\n]\npolicy = "legacy"',
    # tool as a value or through dotted keys: our header would then go through a value, or our table be elsewhere.
    "tool = 1",
    '"tool" = 1',
    "tool.x = 1",
    "'tool'.x = {}",
    "  tool   =  []",
    "[project]\ntool = 1",
    "\ufeff[project]",
    # Near misses of our name, and our name in other cases: a table the shim says "did you mean" about.
    "[tool.urandom_shim]",
    '[tool.Urandom-Shim]\npolicy = "legacy"',
    '[tool]\nurandom_shim = {policy = "legacy"}',
    '"urandomshim" = 1',
    "'URANDOM-SHIMS' = {}",
    'tool.urandom_shim.policy = "legacy"',
    'x = "urandom_shim"',
    "# the Urandom Shim",
    'deps = ["Urandom-Shim>=1"]',
]


def _table(headers: list[str], lines: st.SearchStrategy[str], most: int) -> st.SearchStrategy[str]:
    """A header from ``headers``, then up to ``most`` of ``lines``."""
    return st.builds(
        lambda header, body: header + "\n" + "\n".join(body), st.sampled_from(headers), st.lists(lines, max_size=most)
    )


_our_table = _table(
    ["[tool.urandom-shim]", "[[tool.urandom-shim.program]]", "[tool.urandom-shim.x]"], _plain_lines | _lines, 5
)
_other_table = _table(
    ["[project]", "[tool]", "[tool.ruff]", "[[tool.x]]", "[build-system]", ""], _plain_lines | _lines, 5
)
_plain_table = _table(
    ["[tool.urandom-shim]", "[project]", "[tool]", "[tool.ruff]", "[[tool.urandom-shim.program]]", "[[tool]]"],
    _plain_lines.filter(lambda line: not line.startswith("[")),
    4,
)
_blocks = st.lists(st.one_of(_our_table, _other_table, st.sampled_from(_MENTIONS)), max_size=7)
#: Mostly valid ones, whose tables hold only what the reader takes.
_plain_blocks = st.lists(st.one_of(_plain_table, _plain_table, st.sampled_from(_MENTIONS)), max_size=6)
#: Pyprojects: other tools' tables, our tables, and our name elsewhere, in any order; plain, hostile, and broken.
_pyprojects = st.one_of(
    _plain_blocks.map(lambda blocks: "\n".join(blocks) + "\n"),
    _plain_blocks.map(lambda blocks: "\n".join(blocks) + "\n"),
    _blocks.map(lambda blocks: "\n".join(blocks) + "\n"),
    _hostile().map(lambda text: "[tool.urandom-shim]\n" + text),
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(_pyprojects)
def test_our_tables_read_alone_are_what_the_full_parser_reads_in_the_whole_document(text: str) -> None:
    """For every pyproject the full parser accepts: where the reader is certain of our tables' lines, they read
    alone as the full parser reads ``tool.urandom-shim`` in the whole document; where it finds no header of ours,
    the document has no table of ours."""
    ours = _toml.our_tables(text)
    document, error = full(text)
    if ours is None:
        event("not certain: the whole document is read")
        return
    if error is not None:
        event("certain, in a document the full parser rejects: our tables alone are read")
        return
    tool = document.get("tool")
    expected = tool.get("urandom-shim", MISSING) if isinstance(tool, dict) else MISSING
    if ours == "":
        event("certain: no header of ours")
        assert expected is MISSING, text
        if _toml.no_table_of_ours(text):
            event("certain: no table of ours, and no near miss")
            assert _sources.near_miss(document) is None, text
        return
    alone = _toml.loads(ours)
    if alone is None:
        event("certain, but the fast reader declines our lines: the whole document is read")
        return
    event("certain, and read alone")
    assert list(alone) == ["tool"] and list(alone["tool"]) == ["urandom-shim"], ours
    assert repr(alone["tool"]["urandom-shim"]) == repr(expected), text


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(_pyprojects)
def test_a_pyproject_gives_the_same_table_and_problems_as_the_whole_document_read_in_full(text: str) -> None:
    """Through the function that reads a project's file: the same layer (values and problem lines) with our tables
    read alone as with the whole document read by the full parser, for every pyproject the full parser accepts."""
    if full(text)[1] is not None:
        return
    with tempfile.TemporaryDirectory() as where:
        path = Path(where) / "pyproject.toml"
        path.write_text(text, encoding="utf-8")
        got = _sources.read_pyproject(str(path))
        with mock.patch.object(_toml, "our_tables", lambda text: None), without_fast_reader():
            before = _sources.read_pyproject(str(path))
    assert (got is None) == (before is None), text
    if got is not None and before is not None:
        assert (repr(got.values), got.problems) == (repr(before.values), before.problems), text


def test_a_broken_table_of_another_tool_does_not_hide_ours(tmp_path: Path) -> None:
    """The deliberate difference: our tables are read alone, so another tool's broken table is that tool's to
    report. The same broken document with our table written another way is read in full, and its error reported."""
    broken = "[tool.ruff]\nline-length = = 120\n"
    path = tmp_path / "pyproject.toml"
    path.write_text(broken + '[tool.urandom-shim]\npolicy = "pep522"\n', encoding="utf-8")
    assert full(path.read_text())[1] is not None
    layer = _sources.read_pyproject(str(path))
    assert layer is not None and layer.values == {"policy": "pep522"} and layer.problems == []
    path.write_text(broken + '[tool]\nurandom-shim = {policy = "pep522"}\n', encoding="utf-8")
    layer = _sources.read_pyproject(str(path))
    assert layer is not None and layer.values == {} and len(layer.problems) == 1
    assert "is not valid TOML" in layer.problems[0]


@pytest.mark.parametrize(
    "before", ["tool = 1\n", '"tool" = "x"\n', "tool.other = 1\n", "\ufeff[project]\n", "[[tool]]\n"]
)
def test_a_document_that_makes_our_header_invalid_is_read_whole_and_reported(tmp_path: Path, before: str) -> None:
    """Hostile review: ``tool = 1`` before ``[tool.urandom-shim]`` makes our own header invalid (it goes through a
    value), so the file must be read whole, and its error reported, as the full parser reports it."""
    text = before + '[tool.urandom-shim]\npolicy = "legacy"\n'
    assert _toml.our_tables(text) is None
    path = tmp_path / "pyproject.toml"
    path.write_text(text, encoding="utf-8")
    layer = _sources.read_pyproject(str(path))
    document, error = full(text)
    if error is not None:
        assert layer is not None and layer.values == {} and "is not valid TOML" in layer.problems[0]
    elif isinstance(document["tool"], list):  # [[tool]]: our table is part of its last element, not ours
        assert layer is None
    else:  # tool.other = 1 and [tool.urandom-shim] together are valid TOML: read whole, the same table
        assert layer is not None and layer.values == document["tool"]["urandom-shim"]


@pytest.mark.parametrize(
    "text",
    [
        '[project]\ndependencies = [\n  "a",\n\n[tool.urandom-shim]\npolicy = "legacy"\n',
        '[project]\ndependencies = [\n  "a",\n  ["b", "c"],\n  [\n[tool.urandom-shim]\npolicy = "legacy"\n',
        '[project]\nx = {a = 1,\n[tool.urandom-shim]\npolicy = "legacy"\n',
        '[tool.urandom-shim]\npolicy = "pep522"\n[tool.ruff]\nselect = [\n  "E",\n'
        '[[tool.urandom-shim.program]]\nname = "app"\npolicy = "legacy"\n',
        '[project]\nx = [\n[true]\n[tool.urandom-shim]\npolicy = "legacy"\n',
        '[project]\nx = [\n[\n[tool.urandom-shim]\npolicy = "legacy"\n',
        # The hostile review's second pass: a bracket in a string or a comment that "closes" the open array.
        '[project]\ndependencies = ["a]",\n[tool.urandom-shim]\npolicy = "legacy"\n',
        '[project]\nclassifiers = [ "x",  # keep sorted ]\n[tool.urandom-shim]\npolicy = "legacy"\n',
        '[project]\nx = [\'a]\', """b]""",\n[tool.urandom-shim]\npolicy = "legacy"\n',
        '[project]\nx = """\n[tool.urandom-shim]\npolicy = "legacy"\n',
        '[project]\nx = "a\\\n[tool.urandom-shim]\npolicy = "legacy"\n',
    ],
    ids=[
        "unclosed-array",
        "unclosed-nested-array",
        "unclosed-inline-table",
        "unclosed-before-our-second-table",
        "a-header-that-is-a-value-between",
        "an-open-bracket-line-between",
        "a-bracket-in-a-string",
        "a-bracket-in-a-comment",
        "brackets-in-two-kinds-of-string",
        "a-multi-line-string-left-open",
        "a-backslash-that-takes-the-newline",
    ],
)
def test_an_array_left_open_before_our_header_is_read_whole_and_reported_as_tomllib_reports_it(
    tmp_path: Path, text: str
) -> None:
    """Issue 36: an array (or inline table) left open before ``[tool.urandom-shim]`` takes our header into its
    value, and ``tomllib`` rejects the document there. The fast reader must not read our lines alone and apply
    ``legacy``: the file is read whole, and its error is the full parser's."""
    assert full(text)[1] is not None
    assert _toml.our_tables(text) is None
    path = tmp_path / "pyproject.toml"
    path.write_text(text, encoding="utf-8")
    layer = _sources.read_pyproject(str(path))
    with mock.patch.object(_toml, "our_tables", lambda text: None), without_fast_reader():
        whole = _sources.read_pyproject(str(path))
    assert layer is not None and whole is not None
    assert layer.values == {} and len(layer.problems) == 1 and "is not valid TOML" in layer.problems[0], layer.problems
    assert layer.problems == whole.problems


def test_an_array_left_open_above_another_tools_header_is_that_tools_error_not_ours(tmp_path: Path) -> None:
    """An array left open in ``[tool.ruff]`` takes ``[tool.black]``'s header into it, where ``tomllib`` rejects the
    document: an error in another tool's table, which doesn't switch ours off (docs/reference/configuration.md).
    Only the lines between our header and the header above it are counted."""
    text = '[tool.ruff]\nselect = [\n  "E",\n[tool.black]\nx = 1\n[tool.urandom-shim]\npolicy = "pep522"\n'
    error = full(text)[1]
    assert error is not None and "line 4" in str(error), error
    assert _toml.our_tables(text) == '[tool.urandom-shim]\npolicy = "pep522"\n'


def test_a_project_that_only_depends_on_us_is_not_read_and_another_tools_error_is_not_ours(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[project]\ndependencies = ["urandom-shim>=1.0"]\n[tool.ruff]\nline-length = = 1\n')
    with mock.patch.object(_toml, "loads", side_effect=AssertionError("read")):
        assert _sources.read_pyproject(str(path)) is None
    path.write_text('[project]\ndependencies = ["urandom-shim>=1.0"]\n[tool.urandom_shim]\npolicy = "pep522"\n')
    layer = _sources.read_pyproject(str(path))
    assert layer is not None and len(layer.problems) == 1 and "did you mean [tool.urandom-shim]" in layer.problems[0]


def test_the_realistic_pyproject_is_read_by_its_table_alone() -> None:
    text = SAMPLE.read_text(encoding="utf-8")
    ours = _toml.our_tables(text)
    assert ours is not None and ours.startswith("[tool.urandom-shim]\n"), ours
    assert "[project]" not in ours and "ruff" not in ours
    alone = _toml.loads(ours)
    assert alone is not None and alone["tool"]["urandom-shim"] == full_parser.loads(text)["tool"]["urandom-shim"]


# -- what it accepts, what it leaves to the full parser ------------------------------------------------------------

ACCEPTED = {
    "the fleet-floor machine file": 'policy = "pep524"\nallow_weak = false\n',
    "a machine file with rules": (
        '# /etc/urandom-shim.toml\npolicy = "pep524"\nallow_weak = false\n\n[[program]]   # init scripts\n'
        'match = \'cloud-init*\'\npolicy = "legacy"\ntimeout = 2.5\n[[program]]\nmatch = "*"\nwarn_after = 5\n'
    ),
    "a project's table": '[project]\nname = "app"\n[tool.urandom-shim]\npolicy = "pep522"\ntimeout = 30\n',
    "the realistic pyproject": SAMPLE.read_text(encoding="utf-8"),
    "this project's own pyproject": (ROOT / "pyproject.toml").read_text(encoding="utf-8"),
    # The whole document is read, so an inline table can't hide anything: it is read as the full parser reads it.
    "tool as an inline table": 'tool = {urandom-shim = {policy = "legacy", allow_weak = false}}\n',
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_the_fast_reader_reads_the_files_the_docs_recommend_without_the_full_parser(name: str) -> None:
    text = ACCEPTED[name]
    assert check_agrees(text, record=False) is not None, (
        "declined: this file would import the full parser on every unready start"
    )


DECLINED = {
    "a multi-line string holding our table": 'x = """\n[tool.urandom-shim]\npolicy = "legacy"\n"""\n',
    "a dotted key": 'tool.urandom-shim.policy = "legacy"\n',
    "an escape in a key": '[tool]\n"urandom\\u002dshim" = {policy = "legacy"}\n',
    "an escape in a string": 'policy = "pep\\u0035" \n',
    "a duplicate key": "allow_weak = false\nallow_weak = true\n",
    "a duplicate table": "[tool.urandom-shim]\n[tool.urandom-shim]\n",
    "a table after an array of tables of the same name": "[[program]]\n[program]\n",
    "a header through a value": "[a]\nb = 1\n[a.b]\n",
    "a header through an inline table": "a = {b = {}}\n[a.b.c]\n",
    "a leading zero": "timeout = 01\n",
    "an underscore in a number": "timeout = 1_000\n",
    "hexadecimal": "timeout = 0x10\n",
    "inf": "timeout = inf\n",
    "a boolean in the wrong case": "allow_weak = False\n",
    "CRLF": 'policy = "pep524"\r\nallow_weak = false\r\n',
    "a BOM": '\ufeffpolicy = "pep524"\n',
    "a trailing comma in an inline table (TOML 1.1)": "a = {b = 1,}\n",
    "an inline table over two lines (TOML 1.1)": "a = {b = 1,\nc = 2}\n",
}


@pytest.mark.parametrize("name", sorted(DECLINED))
def test_a_document_the_fast_reader_is_not_certain_of_goes_to_the_full_parser(name: str) -> None:
    text = DECLINED[name]
    assert _toml.loads(text) is None
    with mock.patch.object(full_parser, "loads", wraps=full_parser.loads) as spy:
        document, _ = full(text)  # what it must come to
        try:
            got = _sources._loads(text)
        except Exception as exc:
            assert document is None and "TOMLDecodeError" in type(exc).__name__
        else:
            assert repr(got) == repr(document)
    assert spy.call_count == 2  # once for the expectation, once through _sources


def test_a_document_the_fast_reader_accepts_does_not_reach_the_full_parser() -> None:
    with mock.patch.object(full_parser, "loads", side_effect=AssertionError("the full parser was called")):
        assert _sources._loads('policy = "pep524"\nallow_weak = false\n') == {"policy": "pep524", "allow_weak": False}


def test_a_broken_file_keeps_the_full_parsers_message() -> None:
    document, problem = _sources.parse_toml(b"policy = pep524\nallow_weak = false\n", "machine.toml (machine file)")
    assert document is None and problem is not None
    assert problem.startswith("machine.toml (machine file): is not valid TOML (Invalid value (at line 1, column 10))")


# -- the cost it exists for -----------------------------------------------------------------------------------------

PARSERS = ("tomllib", "tomli", "re", "string", "collections", "operator")
OURS = ("urandom_shim._sources", "urandom_shim._toml")
LOADED = f"import sys; print(' '.join(sorted(m for m in {PARSERS + OURS!r} if m in sys.modules)))"


def test_an_unready_start_reading_every_kind_of_file_imports_no_toml_parser(shim: Venv, tmp_path: Path) -> None:
    """With a machine file holding a floor, and a project whose realistic pyproject holds our table: the settings
    come from the files, and neither tomllib (tomli) nor what it imports is loaded beyond what the same start loads
    with the shim switched off. A ready start loads neither the reader nor the module that reads files."""
    machine = tmp_path / "machine.toml"
    machine.write_text('policy = "pep524"\nallow_weak = false\n')
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        SAMPLE.read_text(encoding="utf-8").replace('policy = "pep524"', 'policy = "pep522"'), encoding="utf-8"
    )
    env = {"URANDOM_SHIM_MACHINE_CONFIG": str(machine), "URANDOM_SHIM_SIMULATE": "unready-forever"}
    off = shim.run("-c", LOADED, env={**env, "URANDOM_SHIM_DISABLE": "1"}, cwd=project).stdout.split()
    unready = shim.run("-c", LOADED, env=env, cwd=project)
    assert unready.returncode == 0 and unready.stderr == "", unready.stderr
    assert set(unready.stdout.split()) - set(off) == set(OURS), "an unready start imported more: " + unready.stdout
    show = "import urandom_shim; s = urandom_shim.current_settings(); print(s.policy.value.name, s.policy.source)"
    settings_ = shim.run("-c", show, env=env, cwd=project)
    assert settings_.stdout.split()[:2] == ["pep522", str(project / "pyproject.toml")], settings_.stdout
    ready = shim.run("-c", LOADED, env={"URANDOM_SHIM_MACHINE_CONFIG": str(machine)}, cwd=project)
    assert ready.returncode == 0 and ready.stdout.split() == off, ready.stdout + ready.stderr
