"""Forward passes below the clicks' CPU priority, and the same picture analysed once whatever
its file is called (issue 30)."""

from __future__ import annotations

import contextvars
import os
import sys
import threading

import pytest
import torch
from PIL import Image

import vit
from explorer import explain as explain_module
from explorer.explain import ExplanationStore, explain_file
from explorer.loaded import LoadedModel
from explorer.priority import LOW_NICE, LowPriority
from vit.preprocessing import CIFAR10_CLASSES

ASKED = contextvars.ContextVar("asked", default=None)


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's own nice value is Linux's")
def test_work_runs_at_a_lower_priority_than_its_caller_which_keeps_its_own():
    pool = LowPriority(workers=1)
    before = _nice()
    assert pool.run(_nice) == min(before + LOW_NICE, 19)
    assert _nice() == before  # the caller (a Gradio worker serving clicks next) is untouched


def test_the_callers_context_and_exceptions_go_through():
    pool = LowPriority(workers=1)
    ASKED.set("visitor 7")  # as Gradio's request context, which ZeroGPU's quota reads
    assert pool.run(ASKED.get) == "visitor 7"
    with pytest.raises(ZeroDivisionError):
        pool.run(lambda: 1 / 0)


def test_the_same_picture_under_two_names_is_one_forward_pass(tmp_path, monkeypatch):
    torch.manual_seed(0)
    loaded = LoadedModel(
        "nano", "nano", vit.create_model("vit_cifar_nano").eval(), vit.ModelMeta(list(CIFAR10_CLASSES))
    )
    for name in ("cat.png", "my photo.png"):
        Image.new("RGB", (32, 32), (200, 30, 30)).save(tmp_path / name)
    Image.new("RGB", (32, 32), (30, 30, 200)).save(tmp_path / "other.png")
    passes = []
    real = explain_module.explain
    monkeypatch.setattr(explain_module, "explain", lambda *a, **k: passes.append(1) or real(*a, **k))
    store = ExplanationStore()
    first, ex = explain_file(loaded, str(tmp_path / "cat.png"), "crop", store)
    second, again = explain_file(loaded, str(tmp_path / "my photo.png"), "crop", store)
    assert len(passes) == 1 and again is ex and first == second
    assert second.path.endswith("my photo.png")  # each session keeps its own file
    other, _ = explain_file(loaded, str(tmp_path / "other.png"), "crop", store)
    assert len(passes) == 2 and other != first
