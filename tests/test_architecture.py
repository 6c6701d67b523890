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
    pictures = ("canvas", "render", "charts", "probe_strip", "views", "run_views", "live", "streams", "video")
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
