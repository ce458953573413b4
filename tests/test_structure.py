"""The package's shape: no import circle among its modules, at run time or for type checking (issue 17).

Every import counts: at module level, inside a function (a lazy import is still a dependency) and under
``TYPE_CHECKING``. A circle makes the order modules load in matter, and it is how a "small" module ends up needing
the whole package; this test keeps one from growing back.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "urandom_shim"


def module_name(path: Path) -> str:
    """A module's name inside the package: ``_config``, ``cli.main``; a package is its ``__init__`` (the package
    itself is ``__init__``, a subpackage its own name, ``cli``)."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, modules: set[str], name: str | None = None) -> set[str]:
    """The package's modules that ``path`` (the module ``name``, by default a top-level one) imports, anywhere in it:
    relative imports of every level and absolute ones, resolved to the most specific module (``from ..report import
    gather`` is ``report.gather``; a name that is no module is its module, ``__init__`` for the package itself)."""
    name = path.stem if name is None else name
    is_package = path.name == "__init__.py" and name != "__init__"
    here = [] if name == "__init__" else name.split(".") if is_package else name.split(".")[:-1]

    def resolve(base: list[str], names: list[str]) -> set[str]:
        module = ".".join(base) or "__init__"
        found = {f"{module}.{n}" if base else n for n in names}
        return {m for m in found if m in modules} | ({module} if not found <= modules else set())

    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)] if node.level > 1 else list(here)
            elif node.module and node.module.split(".")[0] == "urandom_shim":
                base = []
            else:
                continue
            target = base + [part for part in (node.module or "").split(".") if part][(0 if node.level else 1) :]
            found |= resolve(target, [alias.name for alias in node.names])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "urandom_shim":
                    found.add(".".join(parts[1:]) or "__init__")
    return found - {name}


def graph() -> dict[str, set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(path) for path in paths}
    return {module_name(path): imports_of(path, modules, module_name(path)) for path in paths}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every module that can reach itself, with one path that does."""
    found = []
    for start in sorted(edges):
        circle = _path_back(edges, start, [start], {start})
        if circle:
            found.append(circle)
    return found


def _path_back(edges: dict[str, set[str]], start: str, path: list[str], seen: set[str]) -> list[str] | None:
    for nxt in sorted(edges.get(path[-1], ())):
        if nxt == start:
            return [*path, start]
        if nxt not in seen:
            seen.add(nxt)
            found = _path_back(edges, start, [*path, nxt], seen)
            if found:
                return found
    return None


def test_no_module_of_the_package_imports_itself_through_others() -> None:
    edges = graph()
    assert len(edges) >= 30 and all(edges[name] for name in ("_activation", "cli.main", "report.gather", "_runtime")), (
        edges
    )
    assert {"cli.parser", "cli.status", "cli.report"} <= edges["cli.main"], edges["cli.main"]
    assert {"report.fleet", "report.verdict", "_events"} <= edges["report.gather"], edges["report.gather"]
    found = circles(edges)
    assert not found, "import circles:\n" + "\n".join(" -> ".join(circle) for circle in found)


def test_the_circle_finder_finds_a_circle_and_the_import_reader_sees_every_kind_of_import(tmp_path: Path) -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"], ["b", "c", "a", "b"],
                                                                          ["c", "a", "b", "c"]]  # fmt: skip
    assert circles({"a": {"b"}, "b": set()}) == []
    module = tmp_path / "x.py"
    module.write_text(
        "from . import _a, __version__\nimport urandom_shim._b\nTYPE_CHECKING = False\nif TYPE_CHECKING:\n"
        "    from ._c import C\ndef f():\n    from urandom_shim import _d\n    import urandom_shim\n"
    )
    assert imports_of(module, {"_a", "_b", "_c", "_d"}) == {"_a", "__init__", "_b", "_c", "_d"}
    inner = tmp_path / "y.py"
    inner.write_text(
        "from .. import _a\nfrom . import b, B\nfrom ..s import c\nfrom .b import x\nimport urandom_shim.s.b\n"
    )
    assert imports_of(inner, {"_a", "s.b", "s.c", "s"}, "s.y") == {"_a", "s.b", "s", "s.c"}


# -- one source for each fact, and the copies that can't import it -------------------------------------------------

ROOT = PACKAGE.parent


def _assigned(path: Path, name: str) -> object:
    """The literal value ``name`` is assigned at the top level of ``path``, read without running the file (the
    start-up files do their work when imported)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{path.name} assigns no {name}")


def test_the_start_up_modules_variables_are_the_configurations() -> None:
    from urandom_shim import _config

    # Start-up looks for every variable a user sets, except the three it never reads on the ready path: the
    # machine file's location, the debug switch, and the bound on simulated waits (which means something only
    # with URANDOM_SHIM_SIMULATE, which start-up does look for); and one the shim sets, for subinterpreters, which
    # start-up takes out of a child's environment.
    names = _assigned(ROOT / "_urandom_shim_boot.py", "_OURS")
    assert isinstance(names, tuple)
    startup = {name.decode() for name in names}
    never = {_config.ENV_MACHINE, _config.ENV_DEBUG, _config.ENV_WAIT_BOUND}
    assert startup == set(_config.VARIABLES) - never | {_config.ENV_SHARED}
    assert set(_config.KEY_VARIABLES) < startup


def test_the_bootstrap_directories_are_the_same_in_every_file_that_names_them() -> None:
    from urandom_shim.cli import launch

    in_package, beside_pth = launch.BOOTSTRAP_DIRS
    assert _assigned(ROOT / "sitecustomize.py", "_BOOTSTRAP_DIRS") == launch.BOOTSTRAP_DIRS
    assert f'"sitecustomize.py" = "urandom_shim/{in_package}/sitecustomize.py"' in (ROOT / "pyproject.toml").read_text()
    assert f'"sitecustomize.py": "{beside_pth}/sitecustomize.py"' in (ROOT / "hatch_build.py").read_text()


def test_the_package_cites_its_docs_not_a_document_it_does_not_have() -> None:
    citing = [path.name for path in PACKAGE.glob("*.py") if "SPEC" in path.read_text(encoding="utf-8")]
    assert not citing, citing


# -- the message catalogue and its call sites ------------------------------------------------------------------------


def format_calls(path: Path) -> list[tuple[int, str, set[str] | None]]:
    """(line, template name, keyword names) of every ``_messages.NAME.format(...)`` in ``path``; None for the names
    when the call passes ``**`` or positional arguments, which this check can't read."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        func = node.func if isinstance(node, ast.Call) else None
        if not (isinstance(func, ast.Attribute) and func.attr == "format"):
            continue
        target = func.value
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            if target.value.id != "_messages":
                continue
            name = target.attr
        elif isinstance(target, ast.Name) and target.id.isupper() and path.name == "_messages.py":
            name = target.id
        else:
            continue
        assert isinstance(node, ast.Call)
        plain = not node.args and all(keyword.arg is not None for keyword in node.keywords)
        found.append((node.lineno, name, {str(k.arg) for k in node.keywords} if plain else None))
    return found


def test_every_message_is_filled_in_with_exactly_its_templates_fields() -> None:
    import string

    from urandom_shim import _messages

    mismatched = []
    calls = [(path, *call) for path in sorted(PACKAGE.glob("*.py")) for call in format_calls(path)]
    assert len(calls) >= 60, calls  # the scan finds the calls
    for path, line, name, given in calls:
        template = getattr(_messages, name, None)
        assert isinstance(template, str), f"{path.name}:{line}: _messages has no template {name}"
        fields = {field.split(".")[0].split("[")[0] for _text, field, _spec, _conv in string.Formatter().parse(template)
                  if field is not None}  # fmt: skip
        if given is None or given != fields:
            mismatched.append(f"{path.name}:{line}: {name} takes {sorted(fields)}, is given {given}")
    assert not mismatched, "\n".join(mismatched)


def test_the_field_check_reads_a_call_as_written(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("_messages.A.format(x=1, y=2)\n_messages.B.format(*args)\nother.C.format(z=3)\n")
    assert format_calls(module) == [(1, "A", {"x", "y"}), (2, "B", None)]


# -- the map of CONTRIBUTING.md ("Where things are") -----------------------------------------------------------------

CONTRIBUTING = ROOT / "CONTRIBUTING.md"
#: The top-level files that run outside the package: start-up, and the bootstrap of `run`.
TOP_LEVEL = ("_urandom_shim_boot.py", "sitecustomize.py")
#: What the map's third column may say.
AT_START = {"every start", "ready path", "unready path", "under `run`", "no"}


def map_rows(text: str) -> list[list[str]]:
    """The rows of the tables in ``text``'s "Where things are" section, each as its cells (header rows left out)."""
    section = text.split("\n## Where things are\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if line.startswith("| `"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows


def named(cell: str) -> list[str]:
    """The file names written as code in a cell: ``test_a.py``, ``urandom_shim/cli/main.py``."""
    import re

    return [name for name in re.findall(r"`([^`]+)`", cell) if name.endswith((".py", "/"))]


def test_the_map_names_every_module_and_only_modules_that_exist() -> None:
    rows = map_rows(CONTRIBUTING.read_text(encoding="utf-8"))
    modules = [row[0].strip("`") for row in rows if len(row) == 4]
    files = {path.relative_to(ROOT).as_posix() for path in PACKAGE.rglob("*.py")} | set(TOP_LEVEL)
    assert len(modules) == len(set(modules)), "a module is in the map twice"
    assert not set(modules) - files, f"in the map, but no such file: {sorted(set(modules) - files)}"
    assert not files - set(modules), f"not in CONTRIBUTING.md's map: {sorted(files - set(modules))}"


def test_the_map_says_when_each_module_runs_and_names_its_tests_which_exist() -> None:
    rows = map_rows(CONTRIBUTING.read_text(encoding="utf-8"))
    module_rows = [row for row in rows if len(row) == 4]
    other_rows = [row for row in rows if len(row) == 2]
    assert module_rows and other_rows and len(module_rows) + len(other_rows) == len(rows), rows
    tests = ROOT / "tests"
    named_tests: set[str] = set()
    for module, job, at_start, its_tests in module_rows:
        assert job and at_start.split(",")[0] in AT_START, (module, at_start)
        assert named(its_tests), f"{module}: the map names none of its tests"
        named_tests.update(named(its_tests))
    for files, what in other_rows:
        assert what, files
        named_tests.update(named(files))
    missing = sorted(name for name in named_tests if not (ROOT / name if "/" in name else tests / name).exists())
    assert not missing, f"the map names tests that don't exist: {missing}"
    unmapped = sorted(path.name for path in tests.glob("test_*.py") if path.name not in named_tests)
    assert not unmapped, f"tests the map does not name: {unmapped}"


def test_the_map_says_which_modules_run_at_interpreter_start_and_the_subpackages_never_do() -> None:
    rows = {row[0].strip("`"): row[2] for row in map_rows(CONTRIBUTING.read_text(encoding="utf-8")) if len(row) == 4}
    assert rows["_urandom_shim_boot.py"] == "every start"
    for module, at_start in rows.items():
        if module.startswith(("urandom_shim/cli/", "urandom_shim/report/", "urandom_shim/pytest_plugin/")):
            assert at_start == "no", (module, at_start)
    # What start-up imports is the map's "at start" set: nothing outside it is imported by a module in it.
    edges = graph()
    starting = {
        module_name(ROOT / name) for name, at in rows.items() if at != "no" and name.startswith("urandom_shim/")
    }
    for name in starting:
        assert edges[name] <= starting, f"{name} runs at start and imports {sorted(edges[name] - starting)}"


#: What a module over the size limit says, in its docstring, about why it is one piece (issue 29).
ONE_PIECE = "One piece, though over 500 lines:"


def test_no_module_is_over_500_lines_unless_it_says_why_it_is_one_piece() -> None:
    over = []
    for path in sorted([*ROOT.joinpath("urandom_shim").rglob("*.py"), ROOT / "_urandom_shim_boot.py"]):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > 500 and ONE_PIECE not in (ast.get_docstring(ast.parse(text)) or ""):
            over.append(f"{path.relative_to(ROOT)}: {text.count(chr(10))} lines")
    assert not over, "over 500 lines, without a docstring line saying why it is one piece:\n" + "\n".join(over)


DEBIAN = ROOT / "debian"


def test_every_sdist_include_pattern_is_anchored_at_the_top() -> None:
    # hatchling's patterns are gitignore-style: a bare "tests" also matched debian/tests, and the orig tarball
    # carried part of the packaging; a bare "docs" would take a debian/docs. tests/run checks the built sdist itself.
    import re

    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    table = text.split("[tool.hatch.build.targets.sdist]", 1)[1].split("\n[", 1)[0]
    line = next(line for line in table.splitlines() if line.startswith("include"))
    patterns = re.findall(r'"([^"]+)"', line)
    assert "/tests" in patterns and "/urandom_shim" in patterns, line
    loose = [p for p in patterns if not p.startswith("/")]
    assert not loose, f"sdist include patterns that match at any depth (anchor them with '/'): {loose}"


def test_the_debian_package_is_this_version_and_every_lintian_override_says_why() -> None:
    # debian/ is in a checkout, not in the sdist (the orig tarball), nor in a package build's source tree's tests.
    if not (DEBIAN / "changelog").is_file():
        import pytest

        pytest.skip("no debian/ here: the sdist carries none")
    from urandom_shim import __version__

    first = (DEBIAN / "changelog").read_text(encoding="utf-8").splitlines()[0]
    # [EPOCH:]UPSTREAM-REVISION, as debian/orig-tarball reads it.
    packaged = first.split("(", 1)[1].split(")", 1)[0] if first.startswith("urandom-shim (") else ""
    upstream = packaged.split(":", 1)[-1].rpartition("-")[0]
    assert upstream == __version__, f"debian/changelog packages {first!r}, not {__version__}"
    assert (DEBIAN / "source" / "format").read_text().strip() == "3.0 (quilt)"
    for overrides in DEBIAN.glob("*lintian-overrides"):
        lines = overrides.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines):
            if line.strip() and not line.startswith("#"):
                assert number > 0 and lines[number - 1].startswith("#"), f"{overrides.name}:{number + 1}: no reason"
