"""The package's folders import one way: core <- policy <- stores <- Scrapy side <- commands.

Read from the source (every ``import`` statement, those under ``TYPE_CHECKING``
and inside functions included), so a forbidden import fails here with the
file, the line and the rule it breaks, before anyone runs the code. The
example project is checked for import circles too.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "scrapy_googlerobots"

# Folder -> floor. A module may import modules on lower floors, and modules of
# its own folder; nothing on its own floor in another folder, nothing above.
CORE = 0
FLOORS: dict[str, int] = {
    # The core: standard library only (and other core packages), no Scrapy.
    "usagerules": CORE,
    "robotstxt": CORE,
    "htmlmeta": CORE,
    "pagedirectives": CORE,
    "tdmrep": CORE,
    # Pure rules around the core: origins, canonical URLs, status -> outcome.
    "policy": 1,
    # Where records live.
    "stores": 2,
    # The Scrapy side, bottom to top.
    "runtime": 3,
    # Evidence of what the crawl obeyed (WARC, decision records); read back by the commands.
    "evidence": 3,
    "fetching": 4,
    "reporting": 5,
    "waiting": 6,
    "pacing": 6,
    "optouts": 6,
    "crawl": 7,
    # The commands.
    "commands": 8,
}
# The public surface (``__init__``, ``__main__``) may import anything.
TOP = 99
# Inside the core, which core packages each may use (a DAG, checked below too).
CORE_USES: dict[str, set[str]] = {
    "usagerules": set(),
    "htmlmeta": set(),
    "robotstxt": {"usagerules"},
    "pagedirectives": {"htmlmeta"},
    "tdmrep": {"robotstxt", "usagerules", "htmlmeta"},
}
THIRD_PARTY_FREE = set(sys.stdlib_module_names) | {"__future__"}


def _module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, module: str) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every import in ``path``, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            yield node.lineno, target
            # ``from pkg import module`` imports the module too.
            for alias in node.names:
                yield node.lineno, f"{target}.{alias.name}"


def _graph(base: Path, prefix: str) -> dict[str, list[tuple[int, str]]]:
    modules = {
        _module_name(path, base): path
        for path in sorted((base / prefix).rglob("*.py"))
        if "__pycache__" not in path.parts
    }
    graph: dict[str, list[tuple[int, str]]] = {}
    for name, path in modules.items():
        edges = []
        sibling_of = name.rpartition(".")[0]
        for line, target in _imports(path, name):
            # A script's folder is on sys.path: ``import chaos`` beside it is a sibling.
            sibling = f"{sibling_of}.{target}" if sibling_of else target
            for candidate in (target, sibling):
                if candidate in modules and candidate != name:
                    edges.append((line, candidate))
                    break
        graph[name] = edges
    return graph


def _folder(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in FLOORS) else None


def _floor(module: str) -> int:
    folder = _folder(module)
    if folder is None:
        return TOP
    if folder not in FLOORS:
        pytest.fail(f"{module}: folder {folder!r} has no floor in tests/test_layering.py FLOORS")
    return FLOORS[folder]


def layering_violations(graph: dict[str, list[tuple[int, str]]]) -> list[str]:
    """Each import that goes sideways or up, as 'module:line imports target (why)'."""
    found = []
    for module, edges in graph.items():
        here, folder = _floor(module), _folder(module)
        for line, target in edges:
            there, target_folder = _floor(target), _folder(target)
            # The root package is the public surface, loaded lazily: importing it
            # (for ``__version__``) pulls in nothing else.
            if folder is None or target_folder == folder or target == PACKAGE:
                continue
            if here == CORE and there == CORE:
                if target_folder not in CORE_USES[folder or ""]:
                    found.append(
                        f"{module}:{line} imports {target} "
                        f"(core package {folder} may use only {sorted(CORE_USES[folder or ''])})"
                    )
            elif there >= here:
                found.append(
                    f"{module}:{line} imports {target} "
                    f"({folder} is on floor {here}, {target_folder} on floor {there}: "
                    "imports go down only)"
                )
    return found


def import_circles(graph: dict[str, list[tuple[int, str]]]) -> list[list[str]]:
    """Every strongly connected group of modules larger than one (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for _, target in graph.get(node, []):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for node in graph:
        if node not in index:
            visit(node)
    return circles


def test_every_folder_has_a_floor_and_a_docstring() -> None:
    folders = sorted(
        path.name
        for path in (ROOT / PACKAGE).iterdir()
        if path.is_dir() and (path / "__init__.py").exists()
    )
    assert folders == sorted(name for name in FLOORS if (ROOT / PACKAGE / name).exists())
    for name in folders:
        tree = ast.parse((ROOT / PACKAGE / name / "__init__.py").read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"{PACKAGE}/{name}/__init__.py says nothing of its folder"
        modules = [p for p in (ROOT / PACKAGE / name).glob("*.py") if p.name != "__init__.py"]
        assert len(modules) <= 10, f"{PACKAGE}/{name} holds {len(modules)} modules: split it"


def test_imports_go_down_the_floors_only() -> None:
    violations = layering_violations(_graph(ROOT, PACKAGE))
    assert not violations, "\n".join(violations)


def test_the_core_imports_only_the_standard_library() -> None:
    bad = []
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        module = _module_name(path, ROOT)
        if _folder(module) is None or _floor(module) != CORE:
            continue
        for line, target in _imports(path, module):
            top = target.split(".")[0]
            if top != PACKAGE and top not in THIRD_PARTY_FREE:
                bad.append(f"{module}:{line} imports {target} (the core is stdlib only)")
    assert not bad, "\n".join(bad)


def test_no_import_circle_in_the_package() -> None:
    circles = import_circles(_graph(ROOT, PACKAGE))
    assert not circles, "import circles: " + "; ".join(" <-> ".join(c) for c in circles)


def test_no_import_circle_in_the_example_project() -> None:
    base = ROOT / "example_project"
    circles = []
    for top in sorted(p.name for p in base.iterdir() if p.is_dir()):
        circles += import_circles(_graph(base, top))
    assert not circles, "import circles: " + "; ".join(" <-> ".join(c) for c in circles)


# The checker itself, on made-up graphs: it must catch what it claims to.
def test_checker_names_an_upward_import() -> None:
    graph = {
        f"{PACKAGE}.policy.origin": [(7, f"{PACKAGE}.crawl.middleware")],
        f"{PACKAGE}.crawl.middleware": [],
    }
    (violation,) = layering_violations(graph)
    assert violation.startswith(f"{PACKAGE}.policy.origin:7 imports {PACKAGE}.crawl.middleware")


def test_checker_names_a_sideways_import_and_a_core_misuse() -> None:
    graph = {
        f"{PACKAGE}.waiting.waiting_room": [(3, f"{PACKAGE}.pacing.crawl_delay")],
        f"{PACKAGE}.usagerules._usage": [(9, f"{PACKAGE}.robotstxt._lines")],
        f"{PACKAGE}.pacing.crawl_delay": [],
        f"{PACKAGE}.robotstxt._lines": [],
    }
    assert len(layering_violations(graph)) == 2


def test_checker_finds_a_circle() -> None:
    graph = {"a": [(1, "b")], "b": [(1, "c")], "c": [(1, "a")], "d": [(1, "a")]}
    assert import_circles(graph) == [["a", "b", "c"]]


# The picture of the house in docs/internals.rst is drawn from the code: this
# test fails when a folder or an arrow changes and the picture did not follow.
# ``python tests/test_layering.py`` prints the picture to paste.
def house_picture() -> str:
    """One line per folder, top floor first: the folder and the folders it imports."""
    graph = _graph(ROOT, PACKAGE)
    arrows: dict[str, set[str]] = {}
    for module, edges in graph.items():
        folder = _folder(module)
        if folder is None:
            continue
        arrows.setdefault(folder, set())
        for _, target in edges:
            target_folder = _folder(target)
            if target_folder is not None and target_folder != folder:
                arrows[folder].add(target_folder)
    order = sorted(arrows, key=lambda name: (-FLOORS[name], name))
    lines = []
    for name in order:
        floor = "core" if FLOORS[name] == CORE else str(FLOORS[name])
        uses = sorted(arrows[name], key=lambda other: (-FLOORS[other], other))
        target = " ".join(uses) if uses else "(the standard library only)"
        lines.append(f"{floor:>4}  {name + '/':<16} ──▶ {target}")
    return "\n".join(lines)


def test_the_picture_in_internals_is_the_code() -> None:
    text = (ROOT / "docs" / "internals.rst").read_text(encoding="utf-8")
    start = text.index(".. house-picture-start")
    end = text.index(".. house-picture-end")
    block = "\n".join(line[4:] for line in text[start:end].splitlines() if line.startswith("    "))
    assert block == house_picture(), (
        "docs/internals.rst's picture is out of date; paste `python tests/test_layering.py`:\n"
        + house_picture()
    )


if __name__ == "__main__":
    print(house_picture())
