"""Glob matching for ``[[program]]`` rules, as ``fnmatch.fnmatchcase`` does it but without backtracking.

Loaded only for a rule whose pattern has ``?`` or ``[`` (``_config.glob_matches`` matches the rest). ``fnmatch``
is not used: Python 3.8's backtracks, so that ``'*a*a*a*a*a*a*a*a*a*ab'`` against a long name took 20 s at every
start, and it imports ``re``.
"""

import sys


def matches(pattern: str, name: str) -> bool:
    """``fnmatch.fnmatchcase(name, pattern)``, in at most about ``len(name) * len(pattern)`` steps. The segments
    between stars are found leftmost, in order, and the last one is anchored at the end, which is enough for globs:
    no star ever needs to give back what it took."""
    segments: list[list[tuple[str, str]]] = [[]]
    index, end = 0, len(pattern)
    while index < end:
        char = pattern[index]
        index += 1
        if char == "*":
            if segments[-1] or len(segments) == 1:
                segments.append([])
            continue
        if char == "?":
            segments[-1].append(("?", ""))
            continue
        if char == "[":
            close = index + (1 if pattern[index : index + 1] == "!" else 0)
            close += 1 if pattern[close : close + 1] == "]" else 0
            close = pattern.find("]", close)
            if close >= 0:
                segments[-1].append(_set(pattern[index:close]))
                index = close + 1
                continue
        segments[-1].append(("=", char))
    if len(segments) == 1:
        return len(segments[0]) == len(name) and _segment_at(segments[0], name, 0)
    first, last = segments[0], segments[-1]
    if len(first) + len(last) > len(name) or not _segment_at(first, name, 0):
        return False
    position, limit = len(first), len(name) - len(last)
    for segment in segments[1:-1]:
        found = _find_segment(segment, name, position, limit)
        if found < 0:
            return False
        position = found + len(segment)
    return _segment_at(last, name, limit)


def _set(body: str) -> "tuple[str, str]":
    """The token of ``[body]``, as ``fnmatch.translate`` reads it: split on the hyphens that can make ranges, empty
    (reversed) ranges taken out by joining their neighbours, as Python 3.10+ does (before, ``re`` refused them:
    such a set matches nothing here), and a lone ``!`` left over matching any character. The token's body is
    a run of (low, high) pairs, two characters each: a single character is a pair of itself."""
    start = 2 if body[:1] == "!" else 1
    chunks = []
    index, hyphen = 0, start
    while True:
        hyphen = body.find("-", hyphen)
        if hyphen < 0:
            break
        chunks.append(body[index:hyphen])
        index, hyphen = hyphen + 1, hyphen + 3
    if body[index:]:
        chunks.append(body[index:])
    else:
        chunks[-1] += "-"
    for k in range(len(chunks) - 1, 0, -1):  # chunks never empty: each hyphen is 2 past the last
        if chunks[k - 1][-1] > chunks[k][0]:
            if sys.version_info < (3, 10):
                return ("[", "")
            chunks[k - 1] = chunks[k - 1][:-1] + chunks[k][1:]
            del chunks[k]
    items: list[str | None] = []  # the characters, and None for a hyphen that makes a range
    for chunk in chunks:
        if items:
            items.append(None)
        items.extend(chunk)
    if items == ["!"]:
        return ("?", "")
    kind = "["
    if items[:1] == ["!"]:
        kind, items = "^", items[1:]
    pairs = []
    index = 0
    while index < len(items):
        low = items[index]
        high = items[index + 2] if index + 2 < len(items) and items[index + 1] is None else None
        if low is not None and high is not None:
            pairs.append(low + high)
            index += 3
            continue
        if low is not None:
            pairs.append(low * 2)
        index += 1  # a hyphen next to a range end already taken is no range
    return (kind, "".join(pairs))


def _char_matches(token: "tuple[str, str]", char: str) -> bool:
    kind, body = token
    if kind == "=":
        return char == body
    if kind == "?":
        return True
    inside = False
    for index in range(0, len(body), 2):
        if body[index] <= char <= body[index + 1]:
            inside = True
            break
    return inside != (kind == "^")


def _segment_at(segment: "list[tuple[str, str]]", name: str, position: int) -> bool:
    return all(_char_matches(token, name[position + i]) for i, token in enumerate(segment))


def _find_segment(segment: "list[tuple[str, str]]", name: str, start: int, limit: int) -> int:
    """The leftmost position from ``start`` where ``segment`` matches and ends by ``limit``, or -1."""
    if all(kind == "=" for kind, _ in segment):
        return name.find("".join(body for _, body in segment), start, limit)
    for position in range(start, limit - len(segment) + 1):
        if _segment_at(segment, name, position):
            return position
    return -1
