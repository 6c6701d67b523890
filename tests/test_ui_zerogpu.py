"""ui/zerogpu.py: the platform's refusals in a person's words, the CPU fallback's bound, the
Live tab's rule, and the GPU tasks' estimates (docs/space.md). The forked worker itself is
rehearsed in tests/test_zerogpu_space.py."""

import functools
import math

import gradio as gr
import pytest
import torch
from zerogpu_standin import visitor_token

import vit
from explorer import compute, explain
from explorer.loaded import LoadedModel
from explorer.more_views import relevance
from training.chunks import ChunkRefused
from ui import explore_views, zerogpu
from vit.preprocessing import CIFAR10

# The `spaces` package's own messages (spaces/zero/client.py, 0.51.3), as its schedule() raises them.
QUOTA = (
    "You have exceeded your free ZeroGPU quota (12s requested vs. 7s left). Try again in 3:04:05. ",
    "ZeroGPU quota exceeded",
)
NO_GPU = ("No GPU was available", "ZeroGPU client error")
SPACE_LIMIT = ("Space app has reached its GPU limit. Try re-running outside of examples", "ZeroGPU quota exceeded")
WORKER = ("RuntimeError", "ZeroGPU worker error")


@functools.cache  # ViT-L takes seconds to initialise; the tests only read these
def loaded(name: str = "vit_cifar_nano", **overrides) -> LoadedModel:
    model = vit.create_model(name, **overrides).eval()
    return LoadedModel(name, name, model, vit.ModelMeta([f"c{i}" for i in range(10)], CIFAR10))


@pytest.mark.parametrize("message, title", [QUOTA, NO_GPU, SPACE_LIMIT, WORKER])
def test_every_platform_refusal_is_said_in_plain_words(message, title):
    error = gr.Error(message, title=title)
    assert zerogpu.is_platform_error(error)
    words = zerogpu.GpuShortage.of(error).words("This analysis", 12)
    assert words.startswith("This analysis needs")
    assert "ZeroGPU" not in words and "Error" not in words and "RuntimeError" not in words


def test_a_quota_refusal_says_the_seconds_needed_and_left_and_when_to_come_back():
    shortage = zerogpu.GpuShortage.of(gr.Error(QUOTA[0], title=QUOTA[1]))
    assert (shortage.requested, shortage.left, shortage.wait) == (12, 7, "3:04:05")
    words = shortage.words("This analysis", 12)
    assert "12 s of GPU time" in words and "7 s left" in words and "Try again in 3:04:05" in words
    assert "PRO" in words  # "your free ZeroGPU quota": a logged-in free account; logging in again would not help
    anonymous = QUOTA[0].replace("your free ZeroGPU", "your ZeroGPU")  # the package's wording without an account
    assert "log in to Hugging Face" in zerogpu.GpuShortage.of(gr.Error(anonymous, title=QUOTA[1])).words("It", 12)


def test_the_cpu_fallback_says_whether_the_quota_or_the_platform_gave_no_gpu():
    def why(message: str, title: str) -> str:
        return zerogpu.GpuShortage.of(gr.Error(message, title=title)).why()

    assert why(*QUOTA) == "No GPU time left for you today"
    assert why(QUOTA[0].replace("your free ZeroGPU", "your ZeroGPU"), QUOTA[1]) == "No GPU time left for you today"
    # A visitor without a token spends the Space's quota: it was "No GPU free for this just now" (issue 44).
    assert why(*SPACE_LIMIT) == "This Space has used its GPU time for now"
    assert why(*NO_GPU) == "Every GPU of this Space is busy right now"
    assert why(*WORKER) == "The GPU could not run it this time"  # quota untouched


@pytest.mark.parametrize(
    ("message", "reason", "advice"),
    [
        (QUOTA[0], "no GPU time left for you today", "try again in 3:04:05, or subscribe to Hugging Face PRO"),
        (QUOTA[0].replace("your free ZeroGPU", "your ZeroGPU"), "no GPU time left", "try again in 3:04:05, or log in"),
        (SPACE_LIMIT[0], "this Space has used its GPU time for now", "log in to Hugging Face to use your own"),
    ],
)
def test_the_train_tab_waits_with_the_platforms_reason_and_when_to_come_back(message, reason, advice):
    """The Train tab said "GPU time used up for today … log in" whoever the visitor was, and
    dropped the platform's "try again in 13:20:00" (issue 44)."""

    def refused(out_dir: str, seconds: float):
        raise gr.Error(message, title="ZeroGPU quota exceeded")

    with pytest.raises(ChunkRefused) as raised:
        zerogpu.run_chunk(refused, "run", 45)
    assert raised.value.reason.startswith(reason) and raised.value.advice.startswith(advice)


def test_errors_of_the_task_itself_are_not_the_platform():
    assert not zerogpu.is_platform_error(gr.Error("layer must be from 1 to 6", title="Error"))
    assert not zerogpu.is_platform_error(ValueError("ZeroGPU quota exceeded"))


def test_only_small_models_fall_back_to_the_cpu_and_stream_live(monkeypatch):
    nano, base = loaded(), loaded("vit_b_16", num_classes=10)
    assert zerogpu.small_enough_for_cpu(nano) and not zerogpu.small_enough_for_cpu(base)
    assert zerogpu.live_refusal(base) is None  # off ZeroGPU the webcam streams any model, as before
    monkeypatch.setattr(zerogpu, "ON_ZEROGPU", True)
    assert zerogpu.live_refusal(nano) is None
    refusal = zerogpu.live_refusal(base)
    assert "86 M parameters" in refusal and "runs on the CPU" in refusal


def test_a_routes_request_is_the_spaces_packages_visitor_within_charged_to_and_never_after():
    """Class mode's routes run outside Gradio's events (ui/class_route.py): within `charged_to` the
    package reads the route's request's X-IP-Token, as it reads an event's; after it, no request."""
    from gradio.context import LocalContext
    from spaces.zero.client import _get_headers, _get_token_and_payload  # what schedule() reads
    from starlette.requests import Request

    token = visitor_token("teacher")
    request = Request({"type": "http", "method": "POST", "headers": [(b"x-ip-token", token.encode())]})
    assert LocalContext.request.get(None) is None
    with pytest.raises(RuntimeError), zerogpu.charged_to(request):
        assert _get_token_and_payload(_get_headers(LocalContext.request.get())) == (token, {"user": "teacher"})
        raise RuntimeError("the task failed")  # the request is taken back all the same
    assert LocalContext.request.get(None) is None


def test_off_zerogpu_a_task_runs_here_exactly_as_the_model_does():
    model = loaded()
    x = torch.randn(1, 3, 32, 32)
    logits, maps = zerogpu.FORWARD(model, x)
    with torch.inference_mode():
        want_logits, want_maps = model.model(x, need_weights=True)
    assert torch.equal(logits, want_logits) and all(torch.equal(a, b) for a, b in zip(maps, want_maps, strict=True))


def test_each_model_call_writes_a_line_for_the_benches_only_when_asked(monkeypatch, capsys):
    """bench/class_mode.py counts these lines: one forward pass per teacher's image, none per student."""
    x = torch.randn(1, 3, 32, 32)
    monkeypatch.delenv(zerogpu.COUNT_CALLS, raising=False)
    zerogpu.FORWARD(loaded(), x)
    assert zerogpu.CALL_LINE not in capsys.readouterr().out
    monkeypatch.setenv(zerogpu.COUNT_CALLS, "1")
    zerogpu.FORWARD(loaded(), x)
    zerogpu.FORWARD(loaded(), x)
    assert capsys.readouterr().out.splitlines() == [zerogpu.CALL_LINE + "forward_maps"] * 2


def test_a_gpu_call_asks_for_its_work_plus_the_fixed_cost_and_grows_with_the_model():
    x = torch.zeros(1, 3, 224, 224)
    small = zerogpu.FORWARD.seconds(loaded("vit_small_patch16_224", num_classes=10), x)
    large = zerogpu.FORWARD.seconds(loaded("vit_l_16", num_classes=10), x)
    assert small == int(compute.FIXED_GPU_S) + 1  # ViT-S/16: 9.2 GFLOP, a few ms: the fixed cost dominates
    assert small <= large
    flops = compute.forward_flops(loaded("vit_l_16", num_classes=10).model.config, 197)
    assert large == compute.gpu_seconds(flops / compute.GPU_FLOPS)
    assert explain.forward_cost(loaded("vit_l_16", num_classes=10), x) == pytest.approx(flops / compute.GPU_FLOPS)


def platform(behaviour):
    """A stand-in of `spaces.GPU` for one GpuTask: `behaviour(fn, duration, *args)` decides."""

    def decorate(fn, duration):
        return lambda *args: behaviour(fn, duration, *args)

    return decorate


def refuse(fn, duration, *args):
    raise gr.Error(QUOTA[0], title=QUOTA[1])


def refuse_steps(fn, duration, *args):  # the platform schedules a generator on its first step
    raise gr.Error(QUOTA[0], title=QUOTA[1])
    yield


@pytest.fixture
def on_zerogpu(monkeypatch):
    monkeypatch.setattr(zerogpu, "ON_ZEROGPU", True)
    return monkeypatch


@pytest.fixture
def catalog(tmp_path):
    """The server's catalogue: a model crosses into the GPU worker as a reference into it."""
    from explorer.catalog import ModelCatalog

    return ModelCatalog(runs_dir=tmp_path, scan_runs=False)


def test_a_granted_call_resolves_the_model_by_reference_and_returns_the_tasks_result(on_zerogpu, catalog):
    seen = []

    def grant(fn, duration, *args):
        seen.append((duration(*args), args[1]))  # what the platform is asked for, and the model's reference
        return fn(*args)

    on_zerogpu.setattr(zerogpu, "gpu_decorator", platform(grant))
    task = zerogpu.GpuTask(explain.forward_maps, explain.forward_cost, "This analysis")
    model = catalog.get("bundled")
    x = torch.randn(1, 3, 32, 32)
    logits, _ = task(model, x)
    assert torch.equal(logits, compute.run_here(explain.forward_maps, model, x)[0])
    ((seconds, ref),) = seen
    assert seconds == task.seconds(model, x) and ref.key == "bundled"  # a key crosses the fork, not the model


def test_without_gpu_time_a_small_model_runs_on_the_cpu_and_a_large_one_is_refused_in_words(on_zerogpu, catalog):
    on_zerogpu.setattr(zerogpu, "gpu_decorator", platform(refuse))
    task = zerogpu.GpuTask(explain.forward_maps, explain.forward_cost, "This analysis")
    small, x = catalog.get("bundled"), torch.randn(1, 3, 32, 32)
    with pytest.warns(UserWarning, match="No GPU time left for you today: .* ran on the server's CPU instead"):
        logits, _ = task(small, x)
    assert torch.equal(logits, compute.run_here(explain.forward_maps, small, x, device="cpu")[0])
    on_zerogpu.setattr(zerogpu, "CPU_FALLBACK_PARAMS", 0)
    asked = task.seconds(small, x)  # the bundled model's few FLOPs: the fixed cost, rounded up
    assert asked == math.ceil(compute.FIXED_GPU_S)
    with pytest.raises(gr.Error, match=f"This analysis needs about {asked} s of GPU time .* 7 s left"):
        task(small, x)


def test_a_generator_task_refused_on_its_first_step_falls_back_too(on_zerogpu, catalog):
    on_zerogpu.setattr(zerogpu, "gpu_decorator", platform(refuse_steps))

    def count(loaded, n):
        yield from range(n)

    task = zerogpu.GpuTask(count, lambda *_: 0.0, "The head ranking", iterate=True)
    with pytest.warns(UserWarning):
        assert list(task(catalog.get("bundled"), 3)) == [0, 1, 2]
    on_zerogpu.setattr(zerogpu, "CPU_FALLBACK_PARAMS", 0)
    with pytest.raises(gr.Error, match="The head ranking needs about"):
        list(task(catalog.get("bundled"), 3))


def test_a_task_with_a_backward_pass_never_falls_back_to_the_apps_cpu(on_zerogpu, catalog):
    """After one backward pass in the app's process, autograd fails in every process forked from
    it later (the GPU workers, the Train tab's chunks): relevance is refused in words instead."""
    on_zerogpu.setattr(zerogpu, "gpu_decorator", platform(refuse))
    task = zerogpu.GpuTask(lambda *_: pytest.fail("ran here"), lambda *_: 0.0, "The relevance map", backward=True)
    with pytest.raises(gr.Error, match="The relevance map needs about"):
        task(catalog.get("bundled"), torch.zeros(1, 3, 32, 32), None)
    assert explore_views.GPU_TASKS[relevance.TASK].backward and not zerogpu.FORWARD.backward
