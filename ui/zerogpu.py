"""ZeroGPU: the model's arithmetic in the platform's GPU worker, and plain words when it cannot be.

On a ZeroGPU Space (`SPACES_ZERO_GPU=true`) a GPU exists only inside a call to a function
decorated with `spaces.GPU`, which the `spaces` package runs in a forked worker: arguments and
results are pickled, a `gr.Error` comes back intact, anything else as its class name, and
each call asks for a duration that is charged to the visitor's daily quota (docs/space.md).

`GpuTask` wraps one task of `explorer.compute` (a model's arithmetic, CPU tensors in and out):
- on ZeroGPU it is a decorated function of its own, asking for the seconds `cost` estimates
  from its work; the model crosses by reference (`ModelRef`), the worker uses the copy this
  process put on the GPU at start (`preload`) or moves its own once;
- when the platform refuses (quota used up, no GPU free, the worker failed) a small model
  runs on this process's CPU instead, and anything else is refused in a person's words: how
  many GPU seconds it needed, how many are left, what to do;
- everywhere else (a CPU machine, a paid CPU Space, a local GPU) the decorator does nothing
  and the task runs in this process, exactly as before.

A Train run on ZeroGPU goes in chunks (`gpu_chunks`), each one such call (docs/training.md).
"""

from __future__ import annotations

import logging
import os
import re
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar

import gradio as gr
import spaces  # before torch touches CUDA (app.py imports this module first)
from gradio.context import LocalContext
from spaces.config import Config as SpacesConfig
from starlette.requests import Request

from explorer import compute, explain, gallery, lessons, prompts, video
from explorer.catalog import ModelCatalog, ModelUnavailable, from_ref, ref_of
from explorer.loaded import LoadedModel
from training.chunks import ChunkRefused, ChunkReport, train_chunk
from training.job import ChunkPlan

from .checks import visitor_error
from .settings import for_visitors

T = TypeVar("T")
LOG = logging.getLogger(__name__)

ON_ZEROGPU = SpacesConfig.zero_gpu
# For benches (bench/class_mode.py: a teacher's new image is one model call, a following page's none):
# with this variable set, every call of a GpuTask (a GPU call on ZeroGPU, a pass here) writes a line
# to the log, CALL_LINE, which the bench counts. Off by default: a line per analysis is noise.
COUNT_CALLS = "VIT_EXPLORER_COUNT_CALLS"
CALL_LINE = "model call: "
# Models up to this many parameters run on the CPU when no GPU time is left (ViT-S/16: 22 M,
# ~0.1 s a forward pass on a CPU); larger ones would keep a shared CPU busy for seconds.
CPU_FALLBACK_PARAMS = 30_000_000
# The `spaces` package's error titles (spaces/zero/client.py, wrappers.py; 0.51.3).
_PLATFORM_TITLES = re.compile(r"^ZeroGPU ")
# What GpuTask and the Train tab's chunks decorate their worker functions with: inert off
# ZeroGPU. Tests put the contract's stand-in here (tests/zerogpu_fake.py) and rebuild the tasks.
gpu_decorator: Callable[..., Any] = spaces.GPU
# A call's duration when a Space names none (spaces.GPU's docs: 60 s): any account may ask for it.
DEFAULT_CALL_S = 60
_QUOTA = re.compile(r"\((?P<requested>\d+)s requested vs\. (?P<left>\d+)s left\)\. Try again in (?P<wait>[^.]+)\.")
# The package names the visitor's account in its quota message: "your free ZeroGPU quota" (logged
# in), "your Pro ZeroGPU quota", "your ZeroGPU quota" (not logged in); what each can do for more.
_ACCOUNT = re.compile(r"your (?P<account>free |Pro )?ZeroGPU quota")
_MORE_TIME = {
    "": ", or log in to Hugging Face: a free account gets 5 minutes a day, PRO 40 minutes.",
    "free": ", or subscribe to Hugging Face PRO for 40 minutes a day.",
    "Pro": ".",
}


@dataclass(frozen=True)
class _Raised:
    """An exception the task raised in the worker, carried back as a result so that its type
    (ImageError, LessonError, ...) reaches the handler as on the CPU, not as a class name."""

    error: BaseException


def _function_entry(task: Callable[..., T]) -> Callable[..., T | _Raised]:
    """The function the worker runs: the model from its reference, on the worker's device (in
    the fork the `spaces` package has restored the real CUDA), then the task. `seconds` is
    the decorator's duration (`_requested`); the task does not need it."""

    def in_worker(seconds: int, ref: Any, args: tuple) -> T | _Raised:
        try:
            return task(compute.placed_loaded(from_ref(ref), compute.local_device()), *args)
        except Exception as e:  # noqa: BLE001 - carried back whole, re-raised in the handler
            return _Raised(e)

    return in_worker


def _generator_entry(task: Callable[..., Iterator[T]]) -> Callable[..., Iterator[T | _Raised]]:
    """As `_function_entry`, a generator function of its own: the package streams the items of
    a function it sees is a generator function (inspect.isgeneratorfunction), and would try to
    pickle the generator object a plain function returns, which fails in the worker."""

    def in_worker(seconds: int, ref: Any, args: tuple) -> Iterator[T | _Raised]:
        try:
            yield from task(compute.placed_loaded(from_ref(ref), compute.local_device()), *args)
        except Exception as e:  # noqa: BLE001 - carried back whole, re-raised in the handler
            yield _Raised(e)

    return in_worker


def _requested(seconds: int, ref: Any, args: tuple) -> int:
    """The decorator's duration: the seconds `GpuTask` estimated, passed as the first argument."""
    return seconds


def _unwrap(result: T | _Raised) -> T:
    if isinstance(result, _Raised):
        raise result.error
    return result


@dataclass(frozen=True)
class GpuShortage:
    """Why the platform gave no GPU: its own message, parsed where it says the numbers."""

    message: str
    requested: int | None = None
    left: int | None = None
    wait: str | None = None
    account: str = ""  # "free", "Pro" or "" (not logged in), as the message says

    @classmethod
    def of(cls, error: gr.Error) -> GpuShortage:
        found = _QUOTA.search(str(error.message))
        if found is None:
            return cls(str(error.message))
        account = _ACCOUNT.search(str(error.message))
        named = (account["account"] or "").strip() if account else ""
        return cls(str(error.message), int(found["requested"]), int(found["left"]), found["wait"].strip(), named)

    def reason(self) -> tuple[str, str]:
        """(why there was no GPU, what the visitor can do) in a few words, from the platform's own
        reason: the CPU fallback's note and the Train tab's waiting run say these, `words` the same
        cases at length. An anonymous visitor's spent quota was "No GPU free for this just now"."""
        if self.left is not None:  # this visitor's quota: the package names their account
            return "no GPU time left for you today", f"try again in {self.wait}{_MORE_TIME.get(self.account, '.')[:-1]}"
        if "runs limit" in self.message:
            return "no GPU runs left for you for now", "try again later"
        if "reached its GPU limit" in self.message:  # no visitor's token: the Space's own quota
            return (
                "this Space has used its GPU time for now",
                "log in to Hugging Face to use your own daily GPU time, or try again later",
            )
        if "larger than the maximum allowed" in self.message:  # the account's longest call, not the task's size
            return "a longer GPU call than ZeroGPU allows your account", "Hugging Face PRO allows longer calls"
        if "No GPU was available" in self.message:
            return "every GPU of this Space is busy right now", "try again in a minute"
        return "the GPU could not run it this time", "try again in a minute"

    def why(self) -> str:
        """Why there was no GPU, in a few words, capitalised (the CPU fallback's note)."""
        said = self.reason()[0]
        return said[0].upper() + said[1:]

    def words(self, what: str, seconds: int) -> str:
        """The visitor's message: what could not run, the seconds asked and left, what to do."""
        if self.left is not None:
            return (
                f"{what} needs about {seconds} s of GPU time and your daily GPU time has {self.left} s left. "
                f"Try again in {self.wait}{_MORE_TIME.get(self.account, '.')}"
            )
        if "larger than the maximum allowed" in self.message:
            # The platform's limit is the visitor's account's; a smaller model helps only a call
            # longer than the package's default one (an 8 s call was told to pick a smaller model).
            smaller = ", or pick a smaller model or a smaller image" if seconds > DEFAULT_CALL_S else ""
            return (
                f"{what} asks for {seconds} s of GPU time in one call, more than ZeroGPU allows your account: "
                f"Hugging Face PRO allows longer calls{smaller}."
            )
        if "No GPU was available" in self.message:
            return f"{what} needs a GPU and every GPU of this Space is busy right now: try again in a minute."
        if "reached its GPU limit" in self.message:
            return (
                f"{what} needs about {seconds} s of GPU time and this Space has used its GPU time for now: "
                "log in to Hugging Face to use your own daily GPU time, or try again later."
            )
        return f"{what} needs a GPU and the GPU could not run it this time: try again in a minute."


@contextmanager
def charged_to(request: Request) -> Iterator[None]:
    """The GPU calls made in this block, in this thread, charged to the visitor who sent `request`.

    The `spaces` package reads the visitor from the Gradio request of the event it runs in
    (`gradio.context.LocalContext.request`; spaces/zero/client.py sends its X-IP-Token header to the
    platform, which charges that visitor's quota, or the Space's without one). Class mode's routes
    are the app's own, outside any Gradio event (ui/class_route.py), so there is none: this sets one
    around the request of the app's route, whose headers are all the package reads, and resets it
    after. The caller passes only a request whose sender may be charged (the class's teacher)."""
    was = LocalContext.request.set(gr.Request(request=request))
    try:
        yield
    finally:
        LocalContext.request.reset(was)


def is_platform_error(error: BaseException) -> bool:
    """A refusal or failure of the ZeroGPU platform (quota, queue, worker), not of the task."""
    return isinstance(error, gr.Error) and bool(_PLATFORM_TITLES.match(str(getattr(error, "title", ""))))


def small_enough_for_cpu(loaded: LoadedModel) -> bool:
    return loaded.parameters <= CPU_FALLBACK_PARAMS


# Every GpuTask made, wherever it is held (here, or a view's record in ui/explore_views.py), so
# that tests/zerogpu_fake.py can decorate each with the platform's stand-in; weak: a test's own
# tasks go with the test.
TASKS: weakref.WeakSet[GpuTask] = weakref.WeakSet()


class GpuTask(Generic[T]):
    """One task of explorer.compute, run on the GPU where the platform lends one per call."""

    def __init__(
        self,
        task: Callable[..., T],
        cost: Callable[..., float],
        what: str,
        iterate: bool = False,
        backward: bool = False,
    ):
        # `backward`: the task runs autograd's backward pass, so it never falls back to this
        # process's CPU on ZeroGPU: after one backward pass here, PyTorch refuses autograd in every
        # process forked later (each GPU call's worker, the Train tab's chunks; docs/space.md).
        self.task, self.cost, self.what, self.iterate, self.backward = task, cost, what, iterate, backward
        self._decorated = self.decorated(gpu_decorator)
        TASKS.add(self)

    def decorated(self, decorator: Callable[..., Any]) -> Callable[..., Any]:
        """The function run in the GPU worker, decorated by `decorator` (`spaces.GPU`)."""
        in_worker = _generator_entry(self.task) if self.iterate else _function_entry(self.task)
        in_worker.__name__ = in_worker.__qualname__ = f"gpu_{self.task.__name__}"  # the name ZeroGPU's logs show
        return decorator(in_worker, duration=_requested)

    def seconds(self, loaded: LoadedModel, *args: Any) -> int:
        """The GPU seconds this call asks for (docs/space.md: work estimate plus fixed cost)."""
        return compute.gpu_seconds(self.cost(loaded, *args))

    def __call__(self, loaded: LoadedModel, *args: Any) -> T:
        """Run the task on `loaded` with `args`: in the GPU worker on ZeroGPU, else here."""
        if os.environ.get(COUNT_CALLS):
            print(f"{CALL_LINE}{self.task.__name__}", flush=True)
        if not ON_ZEROGPU:
            return compute.run_here(self.task, loaded, *args)
        seconds = self.seconds(loaded, *args)
        if self.iterate:
            return self._iterate(loaded, seconds, args)  # type: ignore[return-value]
        try:
            return _unwrap(self._decorated(seconds, ref_of(loaded), args))
        except gr.Error as e:
            if not is_platform_error(e):
                raise
            return self._without_gpu(GpuShortage.of(e), loaded, seconds, args)

    def _iterate(self, loaded: LoadedModel, seconds: int, args: tuple) -> Iterator[Any]:
        """A generator task's items. The package asks for the GPU at the first item, not at the
        call, so a refusal is met here; one after items were shown ends it in plain words."""
        started, items = False, self._decorated(seconds, ref_of(loaded), args)
        try:
            for item in items:
                started = True
                yield _unwrap(item)
        except gr.Error as e:
            if not is_platform_error(e):
                raise
            if started:
                raise _refused(GpuShortage.of(e), self.what, seconds) from e
            yield from self._without_gpu(GpuShortage.of(e), loaded, seconds, args)  # type: ignore[misc]
        finally:
            items.close()  # a visitor who stops the ranking stops the worker (the package's stop event)

    def _without_gpu(self, shortage: GpuShortage, loaded: LoadedModel, seconds: int, args: tuple) -> T:
        if small_enough_for_cpu(loaded) and not self.backward:
            # a toast shows HTML: the label may be an uploaded checkpoint's file name
            gr.Warning(
                for_visitors(f"{shortage.why()}: {loaded.label} ran on the server's CPU instead (slower, same result).")
            )
            return compute.run_here(self.task, loaded, *args, device="cpu")
        raise _refused(shortage, self.what, seconds)


def _refused(shortage: GpuShortage, what: str, seconds: int) -> gr.Error:
    """The visitor's error, and one line in the log: a refusal is the platform's answer, not a
    fault of this server, so no traceback (Gradio prints one for every gr.Error by default)."""
    LOG.warning("no GPU for %r (%d s): %s", what, seconds, shortage.message)
    return visitor_error(shortage.words(what, seconds), title="No GPU time left", print_exception=False)


# Live on ZeroGPU (docs/space.md): a webcam stream of up to 25 frames/s would be hundreds of GPU calls a
# minute, each asking for at least FIXED_GPU_S: more in one minute than a visitor's whole day (2 to 5 min).
# The stream runs on the server's CPU instead, with models small enough for it.
LIVE_NOTE = (
    "**On this Space the live view runs on the server's CPU**, not the GPU: each frame would be a GPU call, and "
    "a minute of streaming would ask for more GPU time than a visitor gets in a day. So it streams models of up "
    f"to {CPU_FALLBACK_PARAMS // 1_000_000} M parameters (the bundled model, ViT-S/16 and smaller). "
    "The attention video below does use the GPU."
)


def live_refusal(loaded: LoadedModel) -> str | None:
    """Why the webcam stream cannot draw `loaded` here (ZeroGPU: too large for the CPU), or None."""
    if not ON_ZEROGPU or small_enough_for_cpu(loaded):
        return None
    return (
        f"{loaded.label} has {loaded.parameters / 1e6:.0f} M parameters: on this Space the live view runs on the "
        f"CPU, which streams models of up to {CPU_FALLBACK_PARAMS // 1_000_000} M. Pick a smaller model, or make "
        "an attention video of a clip (it uses the GPU)."
    )


def start_models(catalog: ModelCatalog) -> list[str]:
    """The models a Space opens on: those loaded now (Explore's, the lessons' that size their
    controls) and every other model a lesson opens on, lesson 1's pair and lesson 4's CLIP among
    them (issue 44: they were loaded at their first use, so each worker copied them itself)."""
    return list(
        dict.fromkeys([*catalog.loaded_keys(), *lessons.opening_keys(lessons.opening_models(catalog.available))])
    )


def preload(catalog: ModelCatalog, keys: list[str]) -> list[str]:
    """Put the models of `keys` on the GPU at start, in the main thread, where ZeroGPU emulates
    CUDA and moves them to the real GPU in every worker it forks (docs/space.md), and keep them
    loaded (pinned: one dropped would be loaded again by each worker). The catalogue keeps its
    CPU models for the CPU fallback. Returns the keys placed; a model that cannot be had is
    left out (the catalogue logged why)."""
    if not ON_ZEROGPU:
        return []
    placed = []
    for key in dict.fromkeys(keys):
        try:
            loaded = catalog.get(key)
        except ModelUnavailable:
            continue
        for model in (loaded.model, *([loaded.text.model] if loaded.text is not None else [])):  # CLIP: both towers
            compute.place(model, "cuda")
        catalog.pinned.add(key)
        placed.append(key)
    return placed


# The GPU work of every tab, one decorated function each (the names ZeroGPU's logs show); the
# Explore tab's "More views" hold their own (ui/explore_views.py).
FORWARD = GpuTask(explain.forward_maps, explain.forward_cost, "This analysis")
CLS_HEADS = GpuTask(lessons.cls_heads, lessons.one_pass_cost, "This comparison")
NORMS = GpuTask(lessons.norm_report, lessons.two_pass_cost, "This lesson")
HEADS_OFF = GpuTask(lessons.predictions_with_heads_off, lessons.two_pass_cost, "Switching heads off")
RANKING = GpuTask(lessons.head_ranking_steps, lessons.ranking_cost, "The head ranking", iterate=True)
CLIP = GpuTask(video.layer_maps, video.layer_maps_cost, "The attention video")
PROMPTS = GpuTask(prompts.prompt_relevance, prompts.prompt_cost, "Drawing a map per word", backward=True)
GALLERY = GpuTask(gallery.gallery_maps, gallery.gallery_cost, "Showing the class's gallery")


# -- ZeroGPU: training in chunks, each one GPU call charged to the visitor's daily quota -------

# What each chunk asks the platform for, and the platform runs a call only if that much is left of
# the visitor's day: a free account's 5 minutes are 5 chunks, an anonymous visitor's 2 minutes 2,
# PRO's 40 minutes 45. Longer chunks waste less on each chunk's start (loading data and model, a
# few seconds) but strand more of the quota's rest.
CHUNK_REQUEST_S = 53
# The chunk's training budget (`train_chunk` keeps it, its saves included) is what the request
# leaves after a worker's first call, which the budget does not count: FIXED_GPU_S, the measured
# 4.9 s x the stated 1.5 margin (issue 60: the margin was stated of the whole call, 1.06 there).
CHUNK_S = int(CHUNK_REQUEST_S - compute.FIXED_GPU_S)


def chunk_seconds(out_dir: str, seconds: float) -> int:
    """The GPU seconds a chunk asks for (the decorator's duration): its budget and a call's fixed cost."""
    return compute.gpu_seconds(seconds)


def run_chunk(on_gpu: Callable[[str, float], ChunkReport], out_dir: str, seconds: float) -> ChunkReport:
    """One chunk through the decorated function. A refusal before any worker ran (no GPU time,
    every GPU busy, the platform's queue timed out, a call too long for the account) becomes
    ChunkRefused: the run waits, saved, and asks again (issue 60: three "no GPU free" in a minute
    failed a run). A failed worker is a chunk cut short. Either is said in ui.zerogpu's words
    (`GpuShortage.reason`), never the platform's text, which the log keeps."""
    try:
        return on_gpu(out_dir, seconds)
    except gr.Error as e:
        if not is_platform_error(e):
            raise RuntimeError(e.message) from e
        LOG.warning("no GPU for a training chunk: %s: %s", e.title, e.message)
        reason, advice = GpuShortage.of(e).reason()
        if not str(e.title).startswith("ZeroGPU worker"):
            raise ChunkRefused(reason, advice) from e
        raise RuntimeError(reason) from e


def gpu_chunks() -> ChunkPlan | None:
    """On ZeroGPU, how runs train: CHUNK_S-second chunks in the platform's GPU worker (only
    the run folder and the budget cross the fork, the report comes back); None elsewhere."""
    if not ON_ZEROGPU:
        return None
    return ChunkPlan(partial(run_chunk, gpu_decorator(train_chunk, duration=chunk_seconds)), CHUNK_S)
