"""The layers of docs/architecture.md hold: vit -> explorer and training -> ui -> app.

Each check imports a layer in a fresh interpreter and lists what it pulled in, so an import
added anywhere below (even a lazy one at module level) shows up here."""

import ast
import json
import subprocess
import sys

from conftest import REPO

MAX_FUNCTION_LINES = 80


def loaded_by(*modules: str) -> set[str]:
    """Top-level packages in sys.modules after importing `modules` in a new interpreter."""
    code = (
        f"import json, sys\nfor m in {list(modules)!r}: __import__(m)\n"
        "print(json.dumps(sorted({name.partition('.')[0] for name in sys.modules})))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return set(json.loads(out))


def test_import_vit_loads_no_plotting_ui_or_upper_layer():
    assert loaded_by("vit").isdisjoint({"matplotlib", "gradio", "explorer", "training", "ui"})


def test_vit_needs_neither_timm_nor_transformers_at_run_time():
    # transformers is in requirements-dev.txt only, timm comes with open_clip (CLIP's text side, imported
    # lazily by vit/clip.py): importing the zoo must load neither (timm's import costs seconds).
    assert loaded_by("vit", "vit.pretrained", "vit.download").isdisjoint({"timm", "transformers"})


def test_the_picture_layer_is_gradio_free():
    pictures = (
        "canvas",
        "render",
        "charts",
        "probe_strip",
        "views",
        "texts",
        "controls",
        "view_tasks",
        "run_views",
        "live",
        "streams",
        "video",
    )
    modules = ["explorer." + m for m in ("catalog", "explain", "images", *pictures)]
    assert loaded_by(*modules).isdisjoint({"gradio", "ui", "training"})


def test_training_imports_neither_the_picture_layer_nor_the_ui():
    modules = ["training." + m for m in ("cli", "data", "engine", "evaluate", "job")]
    assert loaded_by(*modules).isdisjoint({"gradio", "ui", "explorer"})


def test_no_function_is_longer_than_80_lines():
    too_long = []
    for path in sorted(REPO.rglob("*.py")):
        if ".venv" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            lines = getattr(node, "end_lineno", 0) - getattr(node, "lineno", 0) + 1
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and lines > MAX_FUNCTION_LINES:
                too_long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({lines} lines)")
    assert not too_long


LAYERS = ("vit", "explorer", "training", "ui", "bench")


def module_name(path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path, name: str, modules: set[str]) -> set[str]:
    """The project modules `path` (module `name`) imports, type-only imports included: a circle
    drawn through `if TYPE_CHECKING:` is still two modules that cannot be read one without the other."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            source = ".".join([*base, node.module] if node.module else base)
            submodules = {f"{source}.{alias.name}" for alias in node.names} & modules
            # `from . import zerogpu` names the submodule, not the package's __init__.
            found |= submodules or {source}
    return (found & modules) - {name}


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan 1972)."""
    index, low, stack, circles = {}, {}, [], []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = stack[stack.index(v) :]
            del stack[stack.index(v) :]
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return circles


def test_no_import_circle_anywhere_in_the_house():
    paths = {module_name(p): p for layer in LAYERS for p in (REPO / layer).rglob("*.py")}
    graph = {name: imported_modules(path, name, set(paths)) for name, path in paths.items()}
    assert "explorer.catalog" in graph["explorer.views"] | graph["explorer.lessons"]  # the graph sees imports
    assert import_circles(graph) == []
