"""A reader for the plain TOML that configuration files are written in, which declines everything else.

:func:`loads` returns exactly what ``tomllib.loads`` returns for a document it accepts, and None for every other
document, which then goes to the full parser (``tomllib``, or ``tomli`` before 3.11) as before: so a result, and an
error with its message, are always the full parser's. It accepts lines of

- table headers ``[a.b]`` and ``[[a.b]]`` of bare keys;
- ``key = value`` with a bare key or a quoted key without escapes (no dotted keys);
- values: basic strings without escapes, literal strings, ``true``/``false``, decimal integers and plain decimal
  fractions (``-12``, ``0.5``: no ``_``, exponent, ``inf``, ``nan``, leading zero, or more than 18 characters),
  arrays of values (over several lines, with comments and a trailing comma), and one-line inline tables of values
  (without the trailing comma that TOML 1.1 allows);
- comments and blank lines, in a document without a byte-order mark, carriage returns or control characters.

A duplicate key or table, a table header through a value or an inline table, and anything not listed (multi-line
strings, escapes, dates, dotted keys, hexadecimal) decline the whole document, so it never has to judge what TOML
forbids: it only recognises what it is certain of.

Why it is worth its lines: every file read on the unready path (a machine file with a floor, an environment or app
file, a project's ``[tool.urandom-shim]``) used to import ``tomllib``, which imports ``re``, ``string``, ``datetime``
and (3.13) ``typing``; ``tomli`` before 3.11 adds ``enum``, ``collections`` and ``functools``. That import cost more
than the rest of an unready start: a two-line machine file took it from 1.49x to 3.37x an interpreter without the
shim, on 3.11. This module imports nothing, costs about 0.8 M instructions to load, reads a two-line file in about
0.1 M, and a 7.6 KB ``pyproject.toml`` in about 0.3 M when :func:`our_tables` can take our lines out of it (about
3.7 M read whole; tomllib: about 70 M to import, 15 M to parse it); see docs/explanation/design-decisions.md.
Differential Hypothesis properties (tests/test_toml_reader.py) hold both to the full parser's results and messages
on every interpreter. One piece, though over 500 lines: the pyproject search shares the reader's helpers, and a
second module would cost its own load on the unready start path.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: What TOML never allows outside a multi-line string (tab and newline aside), and the byte-order mark and the
#: carriage return, which this reader leaves to the full parser.
REFUSED = tuple(chr(c) for c in (*range(0x09), *range(0x0B, 0x20), 0x7F, 0xFEFF))
#: What may follow a number or a boolean.
ENDS = " \t,]}#"


class Decline(Exception):
    """The document is not one this reader is certain of: the full parser decides."""


def loads(text: str) -> "dict[str, Any] | None":
    """The document ``tomllib.loads(text)`` returns, or None if this reader is not certain of it."""
    for char in REFUSED:
        if char in text:
            return None
    try:
        return _Reader(text.split("\n")).document()
    except (Decline, IndexError, ValueError, RecursionError):  # RecursionError: arrays nested very deep
        return None


class _Reader:
    __slots__ = ("arrays", "declared", "index", "line", "lines", "opened", "pos")

    def __init__(self, lines: "list[str]") -> None:
        self.lines = lines
        self.index = 0
        self.line = ""
        self.pos = 0
        #: The ids of the tables that headers made (or walked through) and of the arrays of tables: a header may
        #: only go through these, never through a value.
        self.opened: set[int] = set()
        self.arrays: set[int] = set()
        #: The ids of the tables that headers declared: declaring one again (a second ``[a]``, or ``[a]`` after
        #: ``[[a]]``, which names its last element) is an error. A new element of an array of tables is a new table,
        #: so the headers under it are free again, as tomllib's flags make them.
        self.declared: set[int] = set()

    def document(self) -> "dict[str, Any]":
        root: dict[str, Any] = {}
        self.opened.add(id(root))
        table = root
        lines = self.lines
        count = len(lines)
        index = 0
        while index < count:
            stripped = lines[index].strip(" \t")
            index += 1
            if not stripped or stripped[0] == "#":
                continue
            first = stripped[0]
            if first == "[":
                table = self.header(root, stripped)
                continue
            if first != '"' and first != "'":
                # The common line, at the cost of a few str methods: a bare key, and a value that is all of the
                # rest of the line, a string without quotes or escapes in it, or a number or boolean.
                key, equals, rest = stripped.partition("=")
                key = key.rstrip(" \t")
                if not equals or not ((key.isascii() and key.isidentifier()) or bare(key)) or key in table:
                    raise Decline
                rest = rest.lstrip(" \t")
                if rest[:1] == '"' and rest[-1] == '"' and rest.count('"') == 2 and "\\" not in rest:
                    table[key] = rest[1:-1]
                    continue
                if rest[:1] not in ("", '"', "'", "[", "{") and "#" not in rest:
                    table[key] = scalar(rest)
                    continue
                if rest[:1] == "[":
                    # An array of plain strings, on one line or over several: a few C-level calls for all of it.
                    if rest[-1] == "]":
                        items = plain_strings(rest[1:-1])
                        after = index
                    else:
                        after = index
                        while after < count and lines[after].lstrip(" \t")[:1] != "]":
                            after += 1
                        items = None
                        if after < count and lines[after].strip(" \t") == "]":
                            items = plain_strings("\n".join((rest[1:], *lines[index:after])))
                            after += 1
                    if items is not None:
                        table[key] = items
                        index = after
                        continue
            else:
                self.line = stripped
                self.pos = 0
                key = self.key("=")
                if key in table:
                    raise Decline
                rest = stripped[self.pos + 1 :].lstrip(" \t")
            self.line = stripped
            self.pos = len(stripped) - len(rest)
            self.index = index
            table[key] = self.value()
            self.end_of_line()
            index = self.index
        return root

    def header(self, root: "dict[str, Any]", stripped: str) -> "dict[str, Any]":
        many = stripped.startswith("[[")
        start = 2 if many else 1
        end = stripped.find("]", start)
        inner = stripped[start:end]
        if " " in inner or "\t" in inner:
            path = tuple(part.strip(" \t") for part in inner.split("."))
        else:
            path = tuple(inner.split("."))
        after = end + (2 if many else 1)
        if end < 0 or (many and stripped[end + 1 : after] != "]"):
            raise Decline
        rest = stripped[after:].lstrip(" \t")
        if rest and rest[0] != "#":
            raise Decline
        if "" in path or not bare("-".join(path)):
            raise Decline
        table = root
        for part in path[:-1]:
            table = self.through(table, part)
        last = path[-1]
        if many:
            found = table.get(last)
            if found is None:
                found = table[last] = []
                self.arrays.add(id(found))
            elif id(found) not in self.arrays:
                raise Decline
            new: dict[str, Any] = {}
            found.append(new)
            self.opened.add(id(new))
        else:
            new = self.through(table, last)
            if id(new) in self.declared:
                raise Decline
        self.declared.add(id(new))
        return new

    def through(self, table: "dict[str, Any]", part: str) -> "dict[str, Any]":
        """The table ``part`` of ``table``, made if absent; in an array of tables, its last element."""
        found = table.get(part)
        if found is None:
            found = table[part] = {}
            self.opened.add(id(found))
        elif id(found) in self.arrays:
            found = found[-1]
        elif id(found) not in self.opened:
            raise Decline  # a value, or an inline table: a header can't go through it
        result: dict[str, Any] = found
        return result

    def key(self, then: str) -> str:
        """A bare or quoted key at ``pos``, followed by spaces and ``then``; ``pos`` is left on ``then``."""
        line = self.line
        pos = self.pos
        quote = line[pos]
        if quote == '"' or quote == "'":
            end = line.find(quote, pos + 1)
            if end < 0:
                raise Decline
            key = line[pos + 1 : end]
            if quote == '"' and "\\" in key:
                raise Decline
            mark = end + 1
            while line[mark] in " \t":
                mark += 1
            if line[mark] != then:
                raise Decline
        else:
            mark = line.find(then, pos)
            if mark < 0:
                raise Decline
            key = line[pos:mark].rstrip(" \t")
            if not bare(key):
                raise Decline
        self.pos = mark
        return key

    def skip_spaces(self) -> None:
        line = self.line
        pos = self.pos
        while line[pos] in " \t":
            pos += 1
        self.pos = pos

    def skip_blank(self) -> None:
        """Spaces, comments and line ends, inside an array."""
        line = self.line
        pos = self.pos
        count = len(line)
        while pos < count and line[pos] in " \t":  # no slice of the rest: a long one-line array stays linear
            pos += 1
        if pos < count and line[pos] != "#":
            self.pos = pos
            return
        lines = self.lines
        while True:
            line = lines[self.index]  # IndexError at the end: an unclosed array
            self.index += 1
            rest = line.lstrip(" \t")
            if rest and rest[0] != "#":
                break
        self.line = line
        self.pos = len(line) - len(rest)

    def end_of_line(self) -> None:
        rest = self.line[self.pos :].lstrip(" \t")
        if rest and rest[0] != "#":
            raise Decline

    def value(self) -> "Any":
        line = self.line
        pos = self.pos
        first = line[pos]
        if first == '"':
            end = line.find('"', pos + 1)
            text = line[pos + 1 : end]
            if end < 0 or (end == pos + 1 and line.startswith('"""', pos)) or "\\" in text:
                raise Decline
            self.pos = end + 1
            return text
        if first == "'":
            end = line.find("'", pos + 1)
            if end < 0 or (end == pos + 1 and line.startswith("'''", pos)):
                raise Decline
            self.pos = end + 1
            return line[pos + 1 : end]
        if first == "[":
            return self.array()
        if first == "{":
            return self.inline_table()
        end = pos
        while end < len(line) and line[end] not in ENDS:
            end += 1
        self.pos = end
        return scalar(line[pos:end])

    def array(self) -> "list[Any]":
        items: list[Any] = []
        self.pos += 1
        while True:
            self.skip_blank()
            line = self.line
            pos = self.pos
            if line[pos] == "]":
                self.pos = pos + 1
                return items
            if line[pos] == '"':  # the common item, inline: a plain string, then a comma or the end
                end = line.find('"', pos + 1)
                text = line[pos + 1 : end]
                if end > pos + 1 and "\\" not in text and line[end + 1 : end + 2] in (",", "]"):
                    items.append(text)
                    self.pos = end + 2
                    if line[end + 1] == "]":
                        return items
                    continue
            items.append(self.value())
            self.skip_blank()
            mark = self.line[self.pos]
            self.pos += 1
            if mark == "]":
                return items
            if mark != ",":
                raise Decline

    def inline_table(self) -> "dict[str, Any]":
        table: dict[str, Any] = {}
        self.pos += 1
        self.skip_spaces()
        if self.line[self.pos] == "}":
            self.pos += 1
            return table
        while True:
            key = self.key("=")
            if key in table:
                raise Decline
            self.pos += 1
            self.skip_spaces()
            table[key] = self.value()
            self.skip_spaces()
            mark = self.line[self.pos]
            self.pos += 1
            if mark == "}":
                return table
            if mark != ",":
                raise Decline
            self.skip_spaces()  # then a key: a trailing comma (TOML 1.1) or a line end is declined there


#: The only spellings of our tables' headers that :func:`our_tables` takes: ``[tool.urandom-shim]`` and the tables
#: under it (``[[tool.urandom-shim.program]]``), bare, without spaces.
OURS = "tool.urandom-shim"


def our_tables(text: str) -> "str | None":
    """The lines of ``[tool.urandom-shim]`` and of the tables under it, with their headers, out of a pyproject: all
    that the document says about our table, when it says it only in those headers. None when that is not certain:
    the whole document is read then.

    Certain means every ``urandom-shim`` in the document is in one of our headers, in the lines under them, or in a
    plain string value elsewhere (a dependency on us); no multi-line string (whose lines could look like a header)
    and no escape that could spell ``urandom-shim`` in a quoted key; and the brackets and braces from the plain
    header above each of ours balance (:func:`_last_header`: an array or inline table left open there swallows our
    header, where ``tomllib`` rejects the document). Each of our tables runs from its header to the next line that
    starts with ``[``: if that line is inside one of our arrays instead, the reader fails on the part and the whole
    document is read. Other tools' tables are not read at all; for every document ``tomllib`` accepts, this gives
    its ``tool.urandom-shim`` exactly (tests/test_toml_reader.py)."""
    if _may_hide_a_name(text):
        return None
    many = text.find("[[")
    while many >= 0:  # [[tool]] makes tool an array of tables, and our table a part of its last element
        _start, end = _line_around(text, many)
        close = text.find("]", many, end)
        if close >= 0 and text[many + 2 : close].strip(" \t\"'") == "tool":
            return None
        many = text.find("[[", end)  # the next line: each line is looked at once
    if _defines_tool(text):
        return None
    parts: list[str] = []
    counted = 0
    found = text.find("urandom-shim")
    while found >= 0:
        start, end = _line_around(text, found)
        line = text[start:end].strip(" \t")
        if line[:1] == "[":
            name = line[2 : line.find("]]")] if line[:2] == "[[" else line[1 : line.find("]")]
            if name != OURS and not name.startswith(OURS + "."):
                return None  # our name in a header that is not plainly ours
            begin = _last_header(text, counted, start)
            if _left_open(text, begin, start):
                return None  # an array or inline table left open before our header swallows it: tomllib decides
            counted = start
            # The table runs to the next line that starts with "[".
            stop = end
            while stop < len(text):
                following = text.find("\n", stop + 1)
                following = len(text) if following < 0 else following
                if text[stop + 1 : following].lstrip(" \t")[:1] == "[":
                    break
                stop = following
            parts.append(text[start:stop])
            end = stop
        elif not _in_a_value(line):
            return None
        found = text.find("urandom-shim", end)
    return "\n".join(parts)


def _may_hide_a_name(text: str) -> bool:
    """Whether the text holds what could hide a name from a search line by line: a multi-line string (whose lines
    could look like a header or a key), an escape that could spell one in a quoted key, or a byte-order mark."""
    return (
        '"""' in text
        or "'''" in text
        or "\\u" in text
        or "\\U" in text
        or "\\x" in text
        or "\\X" in text
        or text[:1] == "\ufeff"
    )


def _last_header(text: str, begin: int, start: int) -> int:
    """Where the last line in ``text[begin:start]`` that opens a plain header (``[``, ``[[``, then a letter) starts,
    or ``begin``. An array or inline table left open above it makes ``tomllib`` fail there, in another table (its
    first word is no value unless it starts like ``true``, ``false``, ``inf`` or ``nan``), so only the few lines
    below it need counting (:func:`_left_open`)."""
    found = text.rfind("\n[", begin, start)
    while found >= 0:
        name = text[found + 2 : found + 8].lstrip("[")
        if name[:1].isalpha() and name[:1].isascii() and not name.startswith(("true", "false", "inf", "nan")):
            return found + 1
        found = text.rfind("\n[", begin, found)
    return begin


def _left_open(text: str, begin: int, end: int) -> bool:
    """Whether an array, inline table or multi-line string is still open at ``end`` (where our header starts), in
    ``text[begin:end]``. Brackets are counted at C speed on the lines without a quote or ``#``; a line with one is
    read as TOML reads it, so that ``"a]"`` or ``# ]`` can't close an array left open (hostile review)."""
    if text.count("[", begin, end) == text.count("]", begin, end) and text.count("{", begin, end) == text.count(
        "}", begin, end
    ):
        if text.find('"', begin, end) < 0 and text.find("'", begin, end) < 0 and text.find("#", begin, end) < 0:
            return False
    else:
        return True  # unbalanced as counted: open, or a stray bracket in a string: tomllib decides either way
    depth = 0
    index = begin
    while index < end:
        stop = text.find("\n", index, end)
        stop = end if stop < 0 else stop
        if text.find('"', index, stop) < 0 and text.find("'", index, stop) < 0 and text.find("#", index, stop) < 0:
            depth += text.count("[", index, stop) + text.count("{", index, stop)
            depth -= text.count("]", index, stop) + text.count("}", index, stop)
            index = stop + 1
            continue
        while index < stop:
            char = text[index]
            if char == "#":
                break
            if char == '"' or char == "'":
                if text.startswith(char * 3, index):  # a multi-line string: to its closing quotes, lines and all
                    close = index + 3
                    while True:
                        close = text.find(char * 3, close, end)
                        if close < 0:
                            return True
                        if char == "'" or not _escaped(text, close):
                            break
                        close += 1
                    while close + 3 < end and text[close + 3] == char:  # up to two quotes end the content
                        close += 1
                    index = close + 3
                    stop = text.find("\n", index, end)
                    stop = end if stop < 0 else stop
                    continue
                close = index + 1
                while True:
                    close = text.find(char, close, stop)
                    if close < 0 or char == "'" or not _escaped(text, close):
                        break
                    close += 1
                if close < 0:
                    if char == '"' and stop < end and _escaped(text, stop):
                        return True  # its backslash takes the newline in: tomllib fails at the next line, maybe ours
                    break  # a string left open on its line: that line is invalid, and it is another table's
                index = close + 1
                continue
            if char == "[" or char == "{":
                depth += 1
            elif char == "]" or char == "}":
                depth -= 1
            index += 1
        index = stop + 1
    return depth > 0


def _escaped(text: str, index: int) -> bool:
    """Whether the character at ``index`` follows an odd run of backslashes."""
    run = index
    while run > 0 and text[run - 1] == "\\":
        run -= 1
    return (index - run) % 2 == 1


def _line_around(text: str, index: int) -> "tuple[int, int]":
    """Where the line holding ``index`` starts, and where it ends (its newline, or the end of the text)."""
    end = text.find("\n", index)
    return text.rfind("\n", 0, index) + 1, len(text) if end < 0 else end


def _defines_tool(text: str) -> bool:
    """Whether a line starts with the key ``tool`` (bare or quoted, alone or dotted): ``tool = 1`` would make our
    table's header go through a value, and ``tool.urandom-shim.policy = ...`` would hold our table elsewhere."""
    found = text.find("tool")
    while found >= 0:
        if found and text[found - 1] not in " \t\n\"'":  # "[tool." or another word: not a line's first key
            found = text.find("tool", found + 4)
            continue
        start, end = _line_around(text, found)
        after = text[found + 4 : end].lstrip(" \t\"'")
        if text[start:found].strip(" \t") in ("", '"', "'") and after[:1] in ("=", "."):
            return True
        found = text.find("tool", end)
    return False


def no_table_of_ours(text: str) -> bool:
    """Whether the document certainly holds no table of ours and no near miss of its name (``[tool.urandom_shim]``,
    another case): every ``urandom``, in any case, is in a comment, a string value, or the value of a key that does
    not hold it. A project that only depends on us (``"urandom-shim>=1.0"``) is then not read at all, and another
    tool's broken table is not reported as if it were ours."""
    if _may_hide_a_name(text):
        return False
    lowered = text.lower()
    found = lowered.find("urandom")
    while found >= 0:
        start, end = _line_around(lowered, found)
        if not _in_a_value(lowered[start:end].strip(" \t"), "urandom"):
            return False
        found = lowered.find("urandom", end)
    return True


def _in_a_value(line: str, name: str = "urandom-shim") -> bool:
    """Whether no ``name`` on ``line`` can name a table: the line is a comment, a line of plain string array items,
    or ``key = ...`` with one key that is not ``tool`` and does not hold ``name`` (bare, or quoted; for our exact
    name, a quoted key other than ``"urandom-shim"`` itself, as in hatch's ``"src/urandom-shim.toml" = ...``)."""
    first = line[:1]
    if first == "#":
        return True
    if first == '"' or first == "'":
        close = line.find(first, 1)
        if close > 0 and line[close + 1 :].lstrip(" \t")[:1] == "=":
            key = line[1:close]  # one quoted key, then its value
            return key != "tool" and (key != name if name == "urandom-shim" else name not in key)
        return first == '"' and plain_strings(line.rstrip(" \t]")) is not None
    key, equals, _value = line.partition("=")
    key = key.rstrip(" \t")
    return bool(equals) and key != "tool" and name not in key and bare(key)


def plain_strings(inner: str) -> "list[str] | None":
    """The items of an array whose inside (between its brackets, over one line or several joined by newlines) is
    only basic strings without escapes, each followed by a comma but the last, and spaces and line ends; None for any
    other array, which the general path reads. Splitting at the quotes is exact: without escapes, a ``"`` always
    opens or closes a string."""
    if "\\" in inner:
        return None
    parts = inner.split('"')
    if len(parts) % 2 == 0 or parts[0].strip(" \t\n"):
        return None
    if len(parts) == 1:
        return []
    items = parts[1::2]
    if set(map(str.strip, parts[2:-1:2], [" \t\n"] * (len(parts) // 2 - 1))) - {","}:
        return None  # two strings without one comma between them, or anything else between them
    if parts[-1].strip(" \t\n") not in ("", ","):
        return None
    if "\n" in "".join(items):
        return None  # a string would span lines: TOML does not allow that
    return items


def bare(key: str) -> bool:
    """Whether ``key`` is a bare key: one or more of A-Z, a-z, 0-9, ``_`` and ``-``. (``str.strip`` with those 64
    characters would say it in one call, but costs ten times as much.)"""
    return key != "" and key.isascii() and (key.replace("-", "").replace("_", "") or "a").isalnum()


def scalar(token: str) -> "bool | int | float":
    """``true``, ``false``, a decimal integer or a plain decimal fraction; :class:`Decline` for anything else."""
    if token == "true":
        return True
    if token == "false":
        return False
    if len(token) > 18:
        raise Decline
    body = token[1:] if token[:1] in ("+", "-") else token
    whole, dot, fraction = body.partition(".")
    if not (whole.isascii() and whole.isdigit()) or (whole[0] == "0" and whole != "0"):
        raise Decline
    if dot:
        if not (fraction.isascii() and fraction.isdigit()):
            raise Decline
        return float(token)
    return int(token)
