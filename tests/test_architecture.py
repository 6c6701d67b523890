"""The layers of docs/architecture.md hold: vit -> explorer and training -> ui -> app.

Each check imports a layer in a fresh interpreter and lists what it pulled in, so an import
added anywhere below (even a lazy one at module level) shows up here."""

import ast
import importlib
import inspect
import json
import re
import subprocess
import sys
import types
from collections.abc import Callable

import numpy as np
from conftest import REPO
from PIL import Image

MAX_FUNCTION_LINES = 80
MAX_PARAMETERS = 8


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
        "video",
    )
    modules = ["explorer." + m for m in ("catalog", "explain", "images", *pictures)]
    assert loaded_by(*modules).isdisjoint({"gradio", "ui", "training"})


def top_level_imports(path) -> set[str]:
    """The top-level packages `path` imports anywhere in it (a relative import as ".")."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add("." if node.level else node.module.partition(".")[0])
    return found


def test_uis_server_policies_of_uploads_streams_and_the_gate_are_gradio_free():
    """ui/uploads.py, ui/streams.py, ui/gate.py and ui/classroom.py sit on ui/'s last floor
    (docs/architecture.md) but hold no Gradio, no model and no picture: the standard library only.
    (Importing them loads ui/__init__.py, and with it Gradio, so this reads their imports rather
    than importing them.)"""
    for name in ("uploads", "streams", "gate", "classroom"):
        imports = top_level_imports(REPO / "ui" / f"{name}.py")
        assert imports <= set(sys.stdlib_module_names) | {"__future__"}, (name, imports)


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


def test_no_function_of_ui_takes_more_than_8_parameters():
    """Issue 57: a handler or helper of ui/ with more parameters than a reader holds at once takes a
    record of them instead (`self` and `cls` not counted)."""
    too_many = []
    for path in sorted((REPO / "ui").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = node.args
                named = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
                count = sum(a is not None and a.arg not in ("self", "cls") for a in named)
                if count > MAX_PARAMETERS:
                    too_many.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({count})")
    assert not too_many


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


def loaded_model_through_the_catalogue(path, name: str) -> list[int]:
    """Lines of `path` (module `name`) that take `LoadedModel` from explorer.catalog: imported from it
    (`from explorer.catalog import LoadedModel`, `from .catalog import ...` inside explorer/) or read
    off it (`catalog.LoadedModel`)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            source = ".".join([*base, node.module] if node.module else base)
            if source == "explorer.catalog" and "LoadedModel" in {alias.name for alias in node.names}:
                found.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr == "LoadedModel":
            owner = node.value
            if getattr(owner, "id", None) == "catalog" or getattr(owner, "attr", None) == "catalog":
                found.append(node.lineno)
    return found


def test_loaded_model_has_one_door():
    """`LoadedModel` lives in explorer/loaded.py, so that the catalogue and the modules that work with a
    loaded model need not import each other (docs/architecture.md). explorer/catalog.py imports it
    too, so `from explorer.catalog import LoadedModel` works, and would tie a module that only
    handles a loaded model to the catalogue again: nothing but the catalogue itself takes it there."""
    paths = sorted(p for p in REPO.rglob("*.py") if ".venv" not in p.parts)
    through = [
        f"{path.relative_to(REPO)}:{line}"
        for path in paths
        if path != REPO / "explorer" / "catalog.py"
        for line in loaded_model_through_the_catalogue(path, module_name(path))
    ]
    assert not through


def more_view_names() -> set[str]:
    """The views of the Explore tab's "More views", as the registry names them (explorer.more_views)."""
    from explorer.more_views import REGISTRY

    return set(REGISTRY)


def listed_view_names(tree: ast.AST, names: set[str]) -> list[tuple[int, set[str]]]:
    """(line, names) of each tuple, list, set, dict's keys or call's arguments written with two
    view names or more as strings: a list of views written by hand."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            items = node.elts
        elif isinstance(node, ast.Dict):
            items = [key for key in node.keys if key is not None]
        elif isinstance(node, ast.Call):
            items = node.args
        else:
            continue
        listed = {item.value for item in items if isinstance(item, ast.Constant) and item.value in names}
        if len(listed) > 1:
            found.append((node.lineno, listed))
    return found


def test_a_view_is_named_only_in_its_record():
    """Issue 45: a "More views" view is one module (explorer.more_views), and the lists of views
    (which are drawn, which follow the image or the style, their widths) are derived from the
    records. A tuple of view names written by hand anywhere in ui/ or explorer/ is one more place a
    new view must be added to (issue 57: explorer/views.py's table of widths was one)."""
    names = more_view_names()
    assert {"overview", "rollout", "logit_lens"} <= names  # the records are where the check looks
    listed = [
        f"{path.relative_to(REPO)}:{line} {sorted(found)}"
        for path in sorted([*(REPO / "ui").glob("*.py"), *(REPO / "explorer").rglob("*.py")])
        for line, found in listed_view_names(ast.parse(path.read_text()), names)
    ]
    assert not listed


JS_MODULES = sorted((REPO / "ui" / "js").glob("*.js"))
MAX_JS_LINES, MAX_LINE_CHARS = 200, 120  # a module of one idea, read without scrolling sideways


def test_the_page_is_sent_the_pictures_that_follow_the_style():
    """Issue 57: the page's selector of the pictures the server redraws in a new style was written
    in the page's JS (`#overview img, #rollout img, ...`), so a new view that follows the style
    did not redraw unless the JS was edited too. The page reads it from what the server sends in
    its head (ui/explore.py's JSON, from the records); no module of ui/js/ names a view's element."""
    from ui import explore, explore_views

    ids = {more.elem_id for more in explore_views.MORE.values()}
    named = [(p.name, i) for p in JS_MODULES for i in ids if re.search(rf"#{re.escape(i)}\b", p.read_text())]
    assert JS_MODULES and not named
    config = rf'<script type="application/json" id="{explore.PAGE_CONFIG_ID}">(.*?)</script>'
    sent = re.search(config, explore.HEAD_JS)
    assert sent is not None  # the head holds what the server decided, as JSON
    expected = {f"#{more.elem_id} img" for more in explore_views.MORE.values() if more.style}
    assert expected and expected <= set(json.loads(sent.group(1))["follow_style"].split(", "))


def test_each_page_module_is_one_short_idea_in_lines_one_reads_whole():
    """Issue 57: the page's JS was one 758-line function. Each module of ui/js/ is at most 200
    lines, and no line of it, or of its tests in tests/js/, is over 120 characters (the lint says
    so too, eslint.config.js; this holds where Node is missing)."""
    too_long = [f"{p.name} ({n} lines)" for p in JS_MODULES if (n := len(p.read_text().splitlines())) > MAX_JS_LINES]
    wide = [
        f"{p.relative_to(REPO)}:{i}"
        for p in [*JS_MODULES, *sorted((REPO / "tests" / "js").glob("*.mjs"))]
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if len(line) > MAX_LINE_CHARS
    ]
    assert len(JS_MODULES) >= 5 and not too_long and not wide


def js_imports(path) -> set[str]:
    """The modules of ui/js/ that the module `path` imports (`import ... from "./name.js"`), by name."""
    return set(re.findall(r'^import [^;]*? from "\./([\w-]+)\.js";', path.read_text(), re.M | re.S))


def test_the_page_modules_import_no_circle_and_only_each_other():
    """The page's modules are layered as the Python is (docs/architecture.md): no circle of imports,
    and nothing from outside ui/js/ (no CDN, no package: the browser loads them as they are)."""
    graph = {p.stem: js_imports(p) for p in JS_MODULES}
    assert graph["main"] >= {"explore", "live"} and "decode" in graph["rows"]  # the graph sees imports
    assert all(found <= set(graph) for found in graph.values())
    assert import_circles(graph) == []
    outside = [p.name for p in JS_MODULES if re.search(r'from "(?!\./)|import\("(?!\./)', p.read_text())]
    assert not outside


TAB_MODULES = ("explore", "lessons", "train", "live")  # each tab's layout and wiring


def _project_function(node: ast.AST | None, module: types.ModuleType) -> bool:
    """`h.check_new_image`, `common.keep_model`, `keep_model`: a name, or attributes of one, that
    `module` reads as a function of the project's (not a component, not Gradio's `gr.on`)."""
    attributes = []
    while isinstance(node, ast.Attribute):
        attributes.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in vars(module):
        return False
    found = vars(module)[node.id]
    for attribute in reversed(attributes):
        found = getattr(found, attribute, None)
    return inspect.isfunction(found) and found.__module__.partition(".")[0] in LAYERS


def _handler(node: ast.AST | None, module: types.ModuleType, made: set[str]) -> bool:
    """An event's function: `tab.bind(fn, ...)` or `bound(fn, ...)` (a handler whose inputs its
    signature names), a name given one (`made`), a tab.event's "fn", or a plain function."""
    if isinstance(node, ast.Call):
        return getattr(node.func, "attr", None) == "bind" or getattr(node.func, "id", None) == "bound"
    if isinstance(node, ast.Subscript):
        return getattr(node.slice, "value", None) == "fn"
    return (isinstance(node, ast.Name) and node.id in made) or _project_function(node, module)


def _read_from_handler(node: ast.AST | None, read: set[str]) -> bool:
    """Inputs read from the handler's signature: `tab.inputs(...)`, a tab.event's "inputs", a name
    given one (`read`), or none at all. Anything else (`tab.pick(...)`, a list, one component) is
    written by hand."""
    if node is None or (isinstance(node, ast.Constant) and node.value is None):
        return True
    if isinstance(node, ast.Call):
        return getattr(node.func, "attr", None) == "inputs"
    if isinstance(node, ast.Subscript):
        return getattr(node.slice, "value", None) == "inputs"
    return isinstance(node, ast.Name) and node.id in read


def _names_given(function: ast.FunctionDef, given: Callable[[ast.AST], bool]) -> set[str]:
    """The names `function` assigns a value that `given` accepts."""
    return {
        target.id
        for node in ast.walk(function)
        if isinstance(node, ast.Assign) and given(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _events(node: ast.AST, is_handler: Callable[[ast.AST | None], bool]) -> list[ast.AST | None]:
    """The inputs of each event `node` wires to a function: positionally after it, as `inputs=`
    beside `fn=`, or as a dict's "inputs" beside its "fn". The binding's own calls (`tab.event(fn,
    server)`, `bound(fn, server)`) are no events: what follows their function is its context."""
    binding = {"event", "bind", "inputs", "bound"}
    if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) not in binding:
        keywords = {k.arg: k.value for k in node.keywords}
        after = [node.args[i + 1] for i, arg in enumerate(node.args[:-1]) if is_handler(arg)]
        if node.args and is_handler(node.args[-1]):
            after.append(keywords.get("inputs"))
        return after + ([keywords.get("inputs")] if is_handler(keywords.get("fn")) else [])
    if isinstance(node, ast.Dict):
        entries = {getattr(k, "value", None): v for k, v in zip(node.keys, node.values, strict=True)}
        return [entries.get("inputs")] if is_handler(entries.get("fn")) else []
    return []


def hand_written_inputs(tree: ast.AST, module: types.ModuleType) -> list[int]:
    """Lines of the events whose function is a handler (bound or plain) and whose inputs are
    listed by hand rather than read from its signature."""
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef):
            continue
        made = _names_given(function, lambda value: _handler(value, module, set()))  # keep_image = bound(...)
        read = _names_given(function, lambda value: _read_from_handler(value, set()) and value is not None)

        def is_handler(node: ast.AST | None, made: set[str] = made) -> bool:
            return _handler(node, module, made)

        for node in ast.walk(function):
            if any(not _read_from_handler(inputs, read) for inputs in _events(node, is_handler)):
                found.append(node.lineno)
    return sorted(set(found))


def test_every_tabs_events_read_their_inputs_from_their_handlers():
    """Issue 45: an event's inputs are the components its handler's parameters name
    (`TabComponents.event`, `TabComponents.inputs`), never a list written again by hand beside it,
    which nothing checked against the handler (`col` in the list, `column` in the handler). So on
    every tab, for bound handlers and plain functions alike (a failed switch's `keep_model`)."""
    hand_written = {
        name: lines
        for name in TAB_MODULES
        if (
            lines := hand_written_inputs(
                ast.parse((REPO / "ui" / f"{name}.py").read_text()), importlib.import_module(f"ui.{name}")
            )
        )
    }
    assert not hand_written


# What the worked example's view must get from the registry alone, checked in the process that
# registered it (argv: the model checkpoint, a runs folder, an image).
WORKED_EXAMPLE_CHECK = """
import sys
from pathlib import Path

import gradio as gr

from explorer.canvas import MapStyle
from explorer.catalog import BUNDLED, ModelCatalog
from ui import common, explore, explore_handlers as h, explore_views as ev
from ui.common import Server

server = Server(ModelCatalog(Path(sys.argv[1]), Path(sys.argv[2])))
with gr.Blocks() as demo:
    tab = explore.build_explore_tab(server)
more = ev.MORE[VIEW.name]
assert list(ev.MORE)[-1] == more.name and tab.more_tabs[more.name].label == more.tab  # its tab, the last
assert getattr(tab, more.name).elem_id == more.elem_id and f" {more.listed}" in ev.MORE_LABEL
endpoints = demo.get_api_info()["named_endpoints"]
assert [p["parameter_name"] for p in endpoints[f"/{more.api_name}"]["parameters"]] == list(common.STYLE.names)
assert (more.name in ev.STYLE_VIEWS) is more.style and (f"#{more.elem_id} img" in explore.PAGE_MAPS_JS) is more.style
opened = [fn for fn in demo.fns.values() if fn.api_name == more.api_name]  # its tab's opening draws it
assert len(opened) == 1 and opened[0].outputs[-1]._id == getattr(tab, more.name)._id
loaded = server.catalog.get(BUNDLED)
key = h.full_analysis(loaded, sys.argv[3], "crop", 1, server.text_px, MapStyle(), server.store)["explanation_key"]
shown = h.show_more(server, more.name, key, BUNDLED, MapStyle())[more.name]
assert shown.alt_text.startswith("Attention of the CLS token averaged"), shown.alt_text
print("the worked example's view is a tab, wired, with its endpoint")
"""


def worked_example() -> str:
    """The Python block docs/architecture.md marks as its worked example of a new "More views" view."""
    doc = (REPO / "docs" / "architecture.md").read_text()
    block = re.search(r"<!-- worked example: [^>]*-->\n```python\n(.*?)```", doc, re.S)
    assert block is not None, "docs/architecture.md lost its worked example"
    return block.group(1)


def test_the_worked_example_of_a_new_view_is_one_module(tiny_checkpoint, tmp_path):
    """Issue 57: adding a "More views" view is one module (and its test and API record). The docs'
    example, run as a module registered before ui/ is imported, gets a tab, its endpoint with the
    style's controls only, its picture when its tab opens, and a place among the pictures the page
    redraws in a new style, with no other file changed."""
    image = tmp_path / "photo.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (40, 56, 3), np.uint8)).save(image)
    code = worked_example() + WORKED_EXAMPLE_CHECK
    args = [str(tiny_checkpoint), str(tmp_path / "runs"), str(image)]
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "is a tab, wired, with its endpoint" in done.stdout
