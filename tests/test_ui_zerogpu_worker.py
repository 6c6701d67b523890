"""ui/zerogpu.py under ZeroGPU's contract (tests/zerogpu_fake.py: forked worker, pickled
arguments and results, a quota, a time limit): every tab's GPU work gives what the CPU gives,
and a visitor without GPU time gets the CPU or plain words."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import threading
import warnings

import gradio as gr
import numpy as np
import pytest
import torch
from PIL import Image
from zerogpu_fake import FakeZeroGpu, install

from explorer import explain, gallery, lessons, view_tasks
from explorer.canvas import TEXT_PX, MapStyle
from explorer.catalog import BUNDLED, ModelCatalog
from explorer.more_views import logit_lens, pca, relevance
from ui import explore_handlers, explore_views, lessons_handlers, zerogpu
from ui.common import Server
from ui.outputs import cache_path

CAT = "examples/cifar10/cat.jpg"


@pytest.fixture(scope="module")
def catalog(tiny_checkpoint, tmp_path_factory) -> ModelCatalog:
    return ModelCatalog(tiny_checkpoint, tmp_path_factory.mktemp("runs"))


@pytest.fixture
def fake(monkeypatch) -> FakeZeroGpu:
    """ui.zerogpu on a ZeroGPU Space whose platform is the fake."""
    return install(monkeypatch)


@pytest.fixture
def loaded(catalog):
    return catalog.get(BUNDLED)


@pytest.fixture(scope="module")
def picture() -> Image.Image:
    return Image.open(CAT).convert("RGB")


def assert_same(a, b, path: str = "result") -> None:
    """Equal values, arrays and tensors equal to float tolerance, through tuples, lists, dicts
    and dataclasses (the results of explorer's tasks)."""
    if isinstance(a, torch.Tensor | np.ndarray):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6, err_msg=path)
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
    elif isinstance(a, dict):
        assert list(a) == list(b), path
        for k in a:
            assert_same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, list | tuple):
        assert type(a) is type(b) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{path}[{i}]")
        for name in ("grid", "prefix_tokens", "prefix_names"):  # AttentionMaps' reading aids
            assert getattr(a, name, None) == getattr(b, name, None), f"{path}.{name}"
    elif isinstance(a, float):
        assert a == pytest.approx(b, rel=1e-5, abs=1e-7), path
    else:
        assert a == b, path


# -- the fake itself: the contract it claims to enforce --


def _mutate(box: list) -> int:
    box.append("worker")
    return len(box)


def _fail() -> None:
    raise ValueError("inside")


def _refuse() -> None:
    raise gr.Error("a task's own message", title="Not a platform error")


def _generator_object() -> object:
    return (i for i in range(3))


def _wait_forever() -> None:
    threading.Event().wait()


def _die() -> None:
    os._exit(1)


def test_the_fake_runs_in_a_fork_with_pickled_arguments_and_reports_errors_as_the_platform_does():
    fake = FakeZeroGpu()
    box: list = ["caller"]
    assert fake(_mutate, duration=1)(box) == 2 and box == ["caller"]  # the worker had a copy
    with pytest.raises(gr.Error, match="ValueError") as raised:
        fake(_fail, duration=1)()
    assert raised.value.title == "ZeroGPU worker error"
    with pytest.raises(gr.Error, match="a task's own message") as raised:
        fake(_refuse, duration=1)()
    assert raised.value.title == "Not a platform error"
    with pytest.raises(gr.Error, match="PicklingError"):
        fake(_generator_object, duration=1)()  # what a plain function returning a generator meets
    with pytest.raises(gr.Error, match="GPU task aborted"):
        FakeZeroGpu(grace_s=0)(_wait_forever, duration=1)()  # killed when its second is up
    with pytest.raises(gr.Error, match="GPU task aborted"):
        fake(_die)()  # the worker gone without a word
    assert [c.outcome for c in fake.calls] == ["ok", "error", "error", "error", "aborted"]
    assert [c.requested for c in fake.calls] == [1, 1, 1, 1, 60]  # no duration: the package's 60 s


def test_the_fake_charges_each_call_and_refuses_in_the_platforms_words():
    fake = FakeZeroGpu(quota_s=250)
    task = fake(_mutate, duration=lambda box: 100)
    assert task([]) == 1 and task([]) == 1 and fake.left() == 50
    with pytest.raises(gr.Error) as raised:
        task([])
    assert raised.value.title == "ZeroGPU quota exceeded"
    assert raised.value.message == (
        "You have exceeded your free ZeroGPU quota (100s requested vs. 50s left). Try again in 1:00:00."
    )
    shortage = zerogpu.GpuShortage.of(raised.value)
    assert (shortage.requested, shortage.left, shortage.wait, shortage.account) == (100, 50, "1:00:00", "free")


# -- every tab's GPU task through the fake: the CPU's results --


def test_the_forward_pass_crosses_the_fork_with_the_cpus_maps_and_little_else(fake, loaded, picture):
    tensor = explain.model_input(picture, loaded.preprocessing, loaded.model.config.patch_size, "crop").tensor
    on_gpu = zerogpu.FORWARD(loaded, tensor)
    assert_same(on_gpu, explain.forward_maps(loaded, tensor))
    (call,) = fake.calls
    assert call.name == "gpu_forward_maps" and call.outcome == "ok"
    assert call.requested == zerogpu.FORWARD.seconds(loaded, tensor)
    maps = explain.attention_bytes(loaded.model, tuple(tensor.shape[-2:]))
    assert maps < call.result_bytes <= maps + 8 * 1024  # the maps, the logits, a little pickling


def test_the_explore_analysis_on_zerogpu_is_the_cpus(fake, loaded, picture):
    store = explain.ExplanationStore()
    out = explore_handlers.full_analysis(loaded, CAT, "crop", 6, TEXT_PX, MapStyle(), store=store)
    on_cpu = explain.explain(loaded.model, loaded.meta.class_names, loaded.preprocessing, picture)
    ex = store.peek(out["explanation_key"])
    assert_same(ex.attention, on_cpu.attention)
    assert_same(ex.probabilities, on_cpu.probabilities)
    assert out["label"] == on_cpu.probabilities
    assert [c.outcome for c in fake.calls] == ["ok"]


def test_relevance_and_the_lessons_tasks_on_zerogpu_are_the_cpus(fake, loaded, picture):
    tensor = explain.model_input(picture, loaded.preprocessing, loaded.model.config.patch_size, "crop").tensor
    assert_same(explore_views.GPU_TASKS[relevance.TASK](loaded, tensor, 3), view_tasks.relevance_map(loaded, tensor, 3))
    assert_same(zerogpu.CLS_HEADS(loaded, picture), lessons.cls_heads(loaded, picture))
    assert_same(zerogpu.NORMS(loaded, picture, 2, "with"), lessons.norm_report(loaded, picture, 2, "with"))
    off = [(0, 1), (3, 2)]
    assert_same(zerogpu.HEADS_OFF(loaded, picture, off), lessons.predictions_with_heads_off(loaded, picture, off))
    assert_same(list(zerogpu.RANKING(loaded, picture)), list(lessons.head_ranking_steps(loaded, picture)))
    assert [c.outcome for c in fake.calls] == ["ok"] * 5  # the ranking too: streamed, not pickled whole
    assert fake.calls[-1].name == "gpu_head_ranking_steps"


def test_the_patch_pca_and_the_logit_lens_on_zerogpu_are_the_cpus(fake, loaded, picture):
    tensor = explain.model_input(picture, loaded.preprocessing, loaded.model.config.patch_size, "crop").tensor
    other = torch.flip(tensor, dims=[-1])
    assert_same(
        explore_views.GPU_TASKS[pca.TASK](loaded, [tensor, other], 3, True),
        pca.patch_features(loaded, [tensor, other], 3, True),
    )
    assert_same(explore_views.GPU_TASKS[logit_lens.TASK](loaded, tensor), logit_lens.layer_predictions(loaded, tensor))
    assert [c.name for c in fake.calls] == ["gpu_patch_features", "gpu_layer_predictions"]
    assert [c.outcome for c in fake.calls] == ["ok", "ok"]
    assert fake.calls[0].requested == explore_views.GPU_TASKS[pca.TASK].seconds(loaded, [tensor, other], 3, True)


def test_the_class_gallery_is_one_gpu_call_for_all_its_pictures_and_the_cpus(fake, loaded, picture):
    """Class mode's "Show the gallery" (ui/class_gallery.py): every approved picture in one batched
    call, asking for the batch's seconds, with the CPU's maps and logits."""
    flipped = picture.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    tensor, _ = gallery.batch(loaded, [gallery.kept_picture(p) for p in (picture, flipped, picture)])
    assert_same(zerogpu.GALLERY(loaded, tensor, 2, 1), gallery.gallery_maps(loaded, tensor, 2, 1))
    assert [(c.name, c.outcome) for c in fake.calls] == [("gpu_gallery_maps", "ok")]
    assert fake.calls[0].requested == zerogpu.GALLERY.seconds(loaded, tensor, 2, 1)


@pytest.fixture
def lesson() -> dict:
    """An uploaded lesson image (the cat)."""
    path = cache_path("zerogpu-lesson.png")
    Image.open(CAT).save(path)
    return {"path": str(path), "meta": {"_type": "gradio.FileData"}}


def test_lesson_1_and_heads_off_on_zerogpu_show_what_the_cpu_shows(fake, catalog, lesson, monkeypatch):
    server, image = Server(catalog), lesson

    def run() -> tuple:
        compared = lessons_handlers.compare_models(server, image, [BUNDLED], lessons_handlers.colour_map("inferno"))
        heads = lessons_handlers.switch_heads_off(server, image, BUNDLED, "1.2, 4.3")
        return compared["compare_picture"], heads["top5"], heads["heads_note"]

    picture, top5, note = run()
    assert [c.outcome for c in fake.calls] == ["ok", "ok"]
    monkeypatch.setattr(zerogpu, "ON_ZEROGPU", False)
    cpu_picture, cpu_top5, cpu_note = run()
    assert_same(top5, cpu_top5)
    assert note == cpu_note and "Heads off: **1.2, 4.3**" in note
    assert picture.alt_text == cpu_picture.alt_text  # type: ignore[attr-defined]
    assert len(fake.calls) == 2  # the CPU run asked the platform for nothing


def test_a_tasks_own_error_crosses_the_fork_with_its_type(fake, loaded, picture):
    with pytest.raises(ValueError, match="head index must be from 0 to 3, got 99"):
        zerogpu.HEADS_OFF(loaded, picture, [(0, 99)])
    assert fake.calls[-1].outcome == "ok"  # carried back as a result, not a worker failure


# -- no GPU time left --


def test_without_gpu_time_a_small_model_runs_on_the_cpu_with_a_warning(fake, loaded, picture):
    fake.exceeded = True
    tensor = explain.model_input(picture, loaded.preprocessing, loaded.model.config.patch_size, "crop").tensor
    with pytest.warns(UserWarning, match="No GPU time left for you today: .* ran on the server's CPU instead"):
        maps = zerogpu.FORWARD(loaded, tensor)
    assert_same(maps, explain.forward_maps(loaded, tensor))
    with pytest.warns(UserWarning, match="No GPU time left for you today"):
        ranking = list(zerogpu.RANKING(loaded, picture))  # refused at its first item, not at the call
    assert_same(ranking, list(lessons.head_ranking_steps(loaded, picture)))
    assert [c.outcome for c in fake.calls] == ["refused", "refused"]


def test_without_gpu_time_a_large_model_gets_the_seconds_it_needs_and_has(fake, loaded, picture, monkeypatch):
    monkeypatch.setattr(zerogpu, "CPU_FALLBACK_PARAMS", 0)
    fake.quota_s = 2  # fewer than any call asks for (its fixed cost alone is 3 s)
    tensor = explain.model_input(picture, loaded.preprocessing, loaded.model.config.patch_size, "crop").tensor
    seconds = zerogpu.FORWARD.seconds(loaded, tensor)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning: nothing ran on the CPU
        with pytest.raises(gr.Error) as raised:
            zerogpu.FORWARD(loaded, tensor)
        assert raised.value.title == "No GPU time left"
        assert raised.value.message.startswith(
            f"This analysis needs about {seconds} s of GPU time and your daily GPU time has 2 s left. "
            "Try again in 1:00:00, or subscribe to Hugging Face PRO for 40 minutes a day."
        )
        with pytest.raises(gr.Error, match="The head ranking needs about .* has 2 s left"):
            list(zerogpu.RANKING(loaded, picture))


def test_a_ranking_cut_off_midway_ends_in_plain_words(fake, loaded, picture, monkeypatch):
    """The worker killed after the first rankings (its time was up): the visitor keeps what was
    shown and reads why the rest is missing, not "ZeroGPU worker error"."""

    def killed_after_one(loaded, image):
        yield lessons.Ranking("cat", [], 1, 2)
        if multiprocessing.parent_process() is not None:  # in the worker only, never in pytest
            os._exit(1)  # the platform's kill, without waiting for a clock

    monkeypatch.setattr(zerogpu, "RANKING", zerogpu.GpuTask(killed_after_one, lambda *a: 0.0, "The head ranking", True))
    shown = []
    with pytest.raises(gr.Error, match="The head ranking needs a GPU and the GPU could not run it this time"):
        for ranking in zerogpu.RANKING(loaded, picture):
            shown.append(ranking)
    assert shown == [lessons.Ranking("cat", [], 1, 2)]
    assert fake.calls[-1].outcome == "aborted"


def test_a_visitor_who_stops_the_ranking_stops_its_worker(fake, loaded, picture, monkeypatch):
    def endless(loaded, image):
        while True:
            yield lessons.Ranking("cat", [], 1, 2)

    monkeypatch.setattr(zerogpu, "RANKING", zerogpu.GpuTask(endless, lambda *a: 0.0, "The head ranking", True))
    rankings = zerogpu.RANKING(loaded, picture)
    assert next(rankings) == lessons.Ranking("cat", [], 1, 2)
    rankings.close()  # what Gradio does when the visitor cancels
    (call,) = fake.calls
    with pytest.raises(ProcessLookupError):
        os.kill(call.pid, 0)  # killed and reaped, not left computing
