"""Glob matching for ``[[program]]`` rules, as ``fnmatch.fnmatchcase`` does it but without backtracking.

Loaded only for a rule whose pattern has ``?`` or ``[`` (``_config.glob_matches`` matches the rest). ``fnmatch``
is not used: Python 3.8's backtracks, so that ``'*a*a*a*a*a*a*a*a*a*ab'`` against a long name took 20 s at every
start, and it imports ``re``.
"""


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
                body, index = pattern[index:close], close + 1
                negate = body[:1] == "!"
                segments[-1].append(("^" if negate else "[", body[1:] if negate else body))
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


def _char_matches(token: "tuple[str, str]", char: str) -> bool:
    kind, body = token
    if kind == "=":
        return char == body
    if kind == "?":
        return True
    inside = False
    index = 0
    while index < len(body):
        if index + 2 < len(body) and body[index + 1] == "-":
            inside = inside or body[index] <= char <= body[index + 2]
            index += 3
        else:
            inside = inside or body[index] == char
            index += 1
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
