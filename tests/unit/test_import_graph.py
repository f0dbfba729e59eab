"""The packages' import graph, measured from their source: no import circles, no import that runs
upward through the layers, no two sibling rooms leaning on each other, and no module importing
another module's ``_private`` names.

Every import counts: at module level, inside functions (the lazy imports kept for cold starts) and
under ``TYPE_CHECKING``, because each is a dependency a reader has to follow.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "knowledge": ROOT / "layers" / "knowledge" / "knowledge",
    "knowledge_local": ROOT / "local" / "knowledge_local",
}

# Longest prefix wins. A module may import its own layer and any layer below it.
LAYERS: tuple[tuple[str, int], ...] = (
    ("knowledge.errors", 0),
    ("knowledge.vocab", 0),
    ("knowledge.settings", 0),
    ("knowledge.observability", 1),
    ("knowledge.domain", 2),
    ("knowledge.contract", 3),
    ("knowledge.ports", 4),
    ("knowledge.services", 5),
    ("knowledge.adapters", 5),
    ("knowledge.conversion", 5),
    ("knowledge.bootstrap", 6),
    ("knowledge.snapstart", 7),
    ("knowledge.api", 7),
    ("knowledge", 0),
    ("knowledge_local.account", 8),
    ("knowledge_local.state", 8),
    ("knowledge_local.emulator", 9),
    ("knowledge_local.cli", 9),
    ("knowledge_local", 10),
)

# Rooms of one layer that never import each other.
APART: tuple[tuple[str, str], ...] = (
    ("knowledge.services", "knowledge.adapters"),
    ("knowledge.services", "knowledge.conversion"),
    ("knowledge_local.emulator", "knowledge_local.cli"),
)


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    names: tuple[str, ...]
    line: int


def _module_name(package: str, root: Path, path: Path) -> str:
    parts = [package, *path.relative_to(root).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for package, root in PACKAGES.items():
        for path in sorted(root.rglob("*.py")):
            modules[_module_name(package, root, path)] = path
    return modules


def _is_internal(name: str) -> bool:
    return name.split(".", 1)[0] in PACKAGES


def _base_of(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a ``from … import`` names, relative imports resolved."""
    if not node.level:
        return node.module or ""
    anchor = importer.split(".") if is_package else importer.split(".")[:-1]
    anchor = anchor[: len(anchor) - (node.level - 1)]
    return ".".join([*anchor, node.module] if node.module else anchor)


def _from_imports(
    importer: str, base: str, node: ast.ImportFrom, modules: dict[str, Path]
) -> Iterator[Import]:
    """One import per submodule named, and one of ``base`` for the names it defines."""
    attributes = []
    for alias in node.names:
        if f"{base}.{alias.name}" in modules:
            yield Import(importer, f"{base}.{alias.name}", (), node.lineno)
        else:
            attributes.append(alias.name)
    if attributes:
        yield Import(importer, base, tuple(attributes), node.lineno)


def _imports(modules: dict[str, Path]) -> Iterator[Import]:
    for importer, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                yield from (
                    Import(importer, alias.name, (), node.lineno)
                    for alias in node.names
                    if _is_internal(alias.name)
                )
            elif isinstance(node, ast.ImportFrom):
                base = _base_of(importer, path.name == "__init__.py", node)
                if _is_internal(base):
                    yield from _from_imports(importer, base, node, modules)


def _layer(module: str) -> tuple[str, int]:
    for prefix, layer in LAYERS:
        if module == prefix or module.startswith(prefix + "."):
            return prefix, layer
    raise AssertionError(f"{module} has no layer in LAYERS")


def _room(module: str) -> str | None:
    for pair in APART:
        for room in pair:
            if module == room or module.startswith(room + "."):
                return room
    return None


def _graph() -> tuple[dict[str, Path], list[Import]]:
    modules = _modules()
    return modules, [each for each in _imports(modules) if each.imported != each.importer]


def _modules_on_a_circle(edges: dict[str, set[str]]) -> list[str]:
    """The modules that reach themselves through their imports."""
    on_a_circle = []
    for start in sorted(edges):
        seen: set[str] = set()
        frontier = list(edges[start])
        while frontier:
            module = frontier.pop()
            if module not in seen:
                seen.add(module)
                frontier.extend(edges.get(module, ()))
        if start in seen:
            on_a_circle.append(start)
    return on_a_circle


def _package_of(module: str, modules: dict[str, Path]) -> str:
    """The package holding ``module``'s file (a package's ``__init__`` is its own package)."""
    if modules[module].name == "__init__.py":
        return module
    return module.rsplit(".", 1)[0]


def test_every_import_resolves_to_a_module_of_the_packages() -> None:
    modules, imports = _graph()
    unknown = sorted(
        {f"{each.importer}:{each.line} → {each.imported}" for each in imports if each.imported not in modules}
    )
    assert unknown == []


def test_no_import_circles() -> None:
    modules, imports = _graph()
    edges: dict[str, set[str]] = {}
    for each in imports:
        # A package's __init__ importing its own submodules re-exports them; the submodules
        # importing their package is where a circle would start, and it is counted from there.
        if modules[each.importer].name == "__init__.py" and each.imported.startswith(each.importer + "."):
            continue
        edges.setdefault(each.importer, set()).add(each.imported)
    assert _modules_on_a_circle(edges) == []


def test_no_import_runs_upward() -> None:
    _, imports = _graph()
    upward = sorted(
        f"{each.importer}:{each.line} (layer {low}) → {each.imported} (layer {high})"
        for each in imports
        if (high := _layer(each.imported)[1]) > (low := _layer(each.importer)[1])
    )
    assert upward == []


def test_sibling_rooms_never_import_each_other() -> None:
    _, imports = _graph()
    crossing = sorted(
        f"{each.importer}:{each.line} → {each.imported}"
        for each in imports
        if (rooms := (_room(each.importer), _room(each.imported)))[0] is not None
        and rooms[1] is not None
        and rooms[0] != rooms[1]
        and any(set(rooms) == set(pair) for pair in APART)
    )
    assert crossing == []


def test_no_private_names_imported_across_modules() -> None:
    modules, imports = _graph()
    private = sorted(
        f"{each.importer}:{each.line} → {each.imported}.{name}"
        for each in imports
        for name in each.names
        if name.startswith("_")
        and not name.startswith("__")
        # a package's __init__ may name its own modules' private parts; nothing else may
        and not (
            each.importer == _package_of(each.imported, modules)
            and modules[each.importer].name == "__init__.py"
        )
    )
    assert private == []


def test_the_graph_is_measured_from_real_imports() -> None:
    """The measure sees lazy imports and the layers it checks: the MCP function's SnapStart module
    imports the composition root, and the API imports the services it routes to."""
    _, imports = _graph()
    edges = {(each.importer, each.imported) for each in imports}
    assert ("knowledge.snapstart", "knowledge.bootstrap") in edges
    assert any(
        importer.startswith("knowledge.api.") and imported.startswith("knowledge.services.")
        for importer, imported in edges
    )
    assert any(
        importer.startswith("knowledge.bootstrap") and imported.startswith("knowledge.adapters.")
        for importer, imported in edges
    )
