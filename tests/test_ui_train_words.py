"""No exception's class name reaches the Train tab (issue 42, item 5): a run offline showed
"error: NoInternet: cannot load …", and any other failure "KeyError: 'x'". Every message the
tab can show is written in the modules below (its toasts, its status and bar, a run's messages
and errors, the folder, budget, number and download refusals), or is a failing library's
message, which a run's failure says without the type's name."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import torch

import vit
from training.chunks import ChunkRefused, failure, plain_message
from training.data import DataError
from training.job import JobSnapshot
from ui import train_handlers as h

REPO = Path(__file__).resolve().parents[1]
# What the Train tab shows comes from these modules' words (and a library's message, below).
SOURCES = [
    "ui/train.py",
    "ui/train_handlers.py",
    "ui/checks.py",
    "ui/settings.py",
    *sorted(str(p.relative_to(REPO)) for p in (REPO / "training").glob("*.py")),
    "explorer/catalog.py",
    "vit/hub.py",
    "vit/pretrained.py",
    "vit/checkpoint.py",
]
CLASS_NAME = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b|\bNoInternet\b|\bPretrainedUnavailable\b|Traceback")
# A value written by its type's name: an exception's ("KeyError: 'x'"), the way it reached the page.
TYPE_NAME = ("__name__", "__class__", "type(")


def messages(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string a module writes, and of every f-string part that writes a
    type's name ("{type(e).__name__}"): docstrings, `__all__`, regular expressions and the
    server's log lines are not messages."""
    tree = ast.parse(path.read_text())
    skipped: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            skipped.add(id(body[0].value))  # a docstring
        called = ast.unparse(node.func) if isinstance(node, ast.Call) else ""
        named = isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets)
        if named or called == "re.compile" or called.startswith(("LOG.", "logging.", "print")):
            skipped |= {id(part) for part in ast.walk(node)}
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append((node.lineno, node.value))
        elif isinstance(node, ast.FormattedValue) and any(t in ast.unparse(node.value) for t in TYPE_NAME):
            found.append((node.lineno, "{" + ast.unparse(node.value) + "}"))
    return found


def test_no_message_the_train_tab_writes_holds_an_exception_class_name():
    said = [(source, line, text) for source in SOURCES for line, text in messages(REPO / source)]
    assert len(said) > 300  # the modules' words were read
    named = [(s, line, text) for s, line, text in said if CLASS_NAME.search(text) or text.startswith("{")]
    assert named == []


FAILURES = [
    vit.NoInternet("cannot load facebook/dinov2-small: huggingface.co cannot be reached from this machine"),
    KeyError("x"),
    RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"),
    torch.OutOfMemoryError("CUDA out of memory"),
    OSError("[Errno 28] No space left on device"),
    ValueError("NoInternet: cannot load deit_small_patch16_224.fb_in1k (URLError: timed out)"),
    RuntimeError(),
]


@pytest.mark.parametrize("error", FAILURES, ids=lambda e: type(e).__name__)
def test_a_failed_run_says_why_in_words_on_the_status_and_the_bar(error):
    shown = failure(error)
    snap = JobSnapshot(epochs=3, error=shown, message="training failed")
    page = [h.describe(snap), h.progress_html(*h.progress_text(snap), h.run_state(snap))]
    for text in (shown, *page):
        assert not CLASS_NAME.search(text) and type(error).__name__ not in text, text
    assert shown.startswith("the run stopped") and (str(error).split(":")[-1].strip() in shown)


def test_a_data_error_and_a_cut_chunk_say_their_own_words():
    assert failure(DataError("CIFAR-10 cannot be downloaded here")) == "CIFAR-10 cannot be downloaded here"
    assert plain_message(ChunkRefused("the GPU quota is used up", "try again tomorrow")) == (
        "the GPU quota is used up; try again tomorrow"
    )
    assert (
        plain_message(RuntimeError("ZeroGPU worker error: GPU task aborted"))
        == "ZeroGPU worker error: GPU task aborted"
    )
