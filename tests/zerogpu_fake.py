"""A stand-in of the `spaces.GPU` decorator for in-process tests: ZeroGPU's contract, enforced
on the CPU, so the app's GPU tasks meet its rules in CI (docs/space.md, ui/zerogpu.py).

What the platform does to a decorated call (spaces 0.51.3, zero/wrappers.py and client.py), and
what `FakeZeroGpu` does in its place:
- asks for `duration` seconds (a number, or a function of the call's arguments), charged to the
  visitor's daily quota, and refuses a call the quota cannot pay with a `gr.Error` titled
  "ZeroGPU quota exceeded" in the platform's words (requested, left, when to try again);
- runs the function in a forked process: the arguments and the result cross pickled (so the
  caller's objects never change, and what cannot be pickled fails), a generator function's
  items one by one;
- kills the worker when the duration is up ("ZeroGPU worker error", "GPU task aborted"), here
  `grace_s` later: the platform's GPU is fast and this CPU is shared and slow, and a test must
  not fail because the machine was busy (a test of the kill itself sets `grace_s=0`);
- brings a `gr.Error` back intact and any other exception as a `gr.Error` titled "ZeroGPU
  worker error" whose message is the exception's class name.

A visitor is their Gradio session (the platform: their token, or the Space's IP-based quota);
outside a Gradio request, everyone is one visitor. The `zerogpu_fake` fixture puts the stand-in
into `ui.zerogpu` (ON_ZEROGPU, the decorator, every GpuTask, `zerogpu.TASKS`, decorated with it).
"""

from __future__ import annotations

import inspect
import multiprocessing
import pickle
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import gradio as gr
import pytest
import torch

DEFAULT_DURATION_S = 60  # the package's default when a function names none
FREE_QUOTA_S = 300
WAIT_S = 3600


@dataclass
class Call:
    """One decorated call as the platform saw it."""

    name: str
    visitor: str
    requested: int
    result_bytes: int = 0  # the pickled results that came back from the worker
    pid: int | None = None  # the worker's process
    outcome: str = "refused"  # refused, running, ok, error, aborted


@dataclass
class FakeZeroGpu:
    quota_s: int = FREE_QUOTA_S
    exceeded: bool = False  # refuse everyone, whatever they have left
    grace_s: float = 120.0  # how long after its duration a worker is killed
    account: str = "free"  # how the platform names the visitor's quota: "free", "Pro" or "" (not logged in)
    kill_after_s: float | None = None  # kill the next workers this soon, whatever they asked (a lost worker)
    busy: bool = False  # every GPU taken: the platform's queue times out (spaces/zero/client.py's words)
    longest_s: int | None = None  # the longest call the visitor's account may ask for ("illegal duration")
    # "fork" (the platform's: the worker holds the app's models), or "forkserver" for a worker that
    # trains: this process has run backward passes in other tests, and autograd may refuse to
    # run in a fork of such a process (the app's own process never runs one on ZeroGPU).
    context: str = "fork"
    used: dict[str, int] = field(default_factory=dict)  # visitor -> seconds charged
    calls: list[Call] = field(default_factory=list)

    def __call__(self, fn: Callable[..., Any], duration: Any = None) -> Callable[..., Any]:
        """The decorator: `spaces.GPU(fn, duration=...)`'s contract on the CPU."""
        if inspect.isgeneratorfunction(fn):  # asks for the GPU at the first item, as the package does

            def decorated(*args: Any, **kwargs: Any) -> Any:
                yield from self._run(fn, duration, args, kwargs, generator=True)

        else:

            def decorated(*args: Any, **kwargs: Any) -> Any:
                (result,) = list(self._run(fn, duration, args, kwargs, generator=False))
                return result

        decorated.__name__ = fn.__name__
        return decorated

    def _run(self, fn: Callable[..., Any], duration: Any, args: tuple, kwargs: dict, generator: bool) -> Iterator[Any]:
        call = self._schedule(fn.__name__, _seconds(duration, args, kwargs))
        payload = pickle.dumps((args, kwargs))  # the package pickles them for the worker too
        limit_s = self.kill_after_s if self.kill_after_s is not None else call.requested + self.grace_s
        return _run_forked(multiprocessing.get_context(self.context), (fn, payload, generator), call, limit_s)

    @property
    def pids(self) -> list[int]:
        """The workers started so far."""
        return [call.pid for call in self.calls if call.pid is not None]

    def left(self, visitor: str = "") -> int:
        return max(0, self.quota_s - self.used.get(visitor, 0))

    def _schedule(self, name: str, requested: int) -> Call:
        visitor = _visitor()
        call = Call(name, visitor, requested)
        self.calls.append(call)
        if self.busy:
            raise gr.Error("No GPU was available after 60s. Retry later", title="ZeroGPU queue timeout")
        if self.longest_s is not None and requested > self.longest_s:
            raise gr.Error(  # as the package writes it for an API call: no space before "Subscribe"
                f"The requested GPU duration ({requested}s) is larger than the maximum allowedSubscribe to Hugging "
                "Face PRO to allow GPU tasks up to 25 min - https://huggingface.co/subscribe/pro",
                title="ZeroGPU illegal duration",
            )
        if self.exceeded or requested > self.left(visitor):
            left = 0 if self.exceeded else self.left(visitor)
            raise gr.Error(
                f"You have exceeded your {self.account + ' ' if self.account else ''}ZeroGPU quota "
                f"({requested}s requested vs. {left}s left). "
                f"Try again in {timedelta(seconds=WAIT_S)}.",
                title="ZeroGPU quota exceeded",
            )
        self.used[visitor] = self.used.get(visitor, 0) + requested
        call.outcome = "running"
        return call


def _seconds(duration: Any, args: tuple, kwargs: dict) -> int:
    if callable(duration):
        duration = duration(*args, **kwargs)
    if duration is None:
        return DEFAULT_DURATION_S
    return round(duration.total_seconds() if isinstance(duration, timedelta) else duration)


def _visitor() -> str:
    from gradio.context import LocalContext

    request = LocalContext.request.get(None)
    return str(getattr(request, "session_hash", None) or "")


def _worker(fn: Callable[..., Any], payload: bytes, generator: bool, conn: Any) -> None:
    """The forked worker: unpickle the arguments, run, send each result pickled, then 'end'.
    One torch thread: an OpenMP thread pool the tests' process started does not survive a fork
    (the child hangs at its first parallel operation); the app runs one thread per request
    (app.py --torch-threads) and the platform's worker computes on its GPU."""
    torch.set_num_threads(1)
    args, kwargs = pickle.loads(payload)
    try:
        results = fn(*args, **kwargs) if generator else iter([fn(*args, **kwargs)])
        for result in results:
            conn.send_bytes(_pickled(result))
    except Exception as e:  # noqa: BLE001 - reported to the caller as the platform does
        traceback.print_exc()
        error = e if isinstance(e, gr.Error) else type(e).__name__
        try:
            conn.send_bytes(pickle.dumps(("error", error)))
        except Exception:  # noqa: BLE001 - a gr.Error that does not pickle
            conn.send_bytes(pickle.dumps(("error", type(e).__name__)))
    conn.send_bytes(pickle.dumps(("end", None)))
    conn.close()


def _pickled(result: Any) -> bytes:
    """A result as the worker sends it; what cannot be pickled is a PicklingError, as the
    package's queue words it (spaces/utils.py: SimpleQueue.put)."""
    try:
        return pickle.dumps(("ok", result))
    except pickle.PicklingError:
        raise
    except Exception as e:
        if "pickle" not in str(e):
            raise
        raise pickle.PicklingError(str(e)) from e


def _run_forked(context: Any, work: tuple, call: Call, limit_s: float) -> Iterator[Any]:
    """Start the worker doing `work` (fn, payload, generator) now; yield its results as they
    come, until it ends or `limit_s` is up."""
    receive, send = context.Pipe(duplex=False)
    worker = context.Process(target=_worker, args=(*work, send), daemon=True)
    worker.start()
    call.pid = worker.pid
    send.close()
    deadline = time.monotonic() + limit_s
    return _results(worker, receive, call, deadline)


def _results(worker: Any, receive: Any, call: Call, deadline: float) -> Iterator[Any]:
    try:
        while True:
            if not receive.poll(max(0.0, deadline - time.monotonic())):
                call.outcome = "aborted"
                raise gr.Error("GPU task aborted", title="ZeroGPU worker error")
            try:
                data = receive.recv_bytes()
            except EOFError:  # the worker died without a word
                call.outcome = "aborted"
                raise gr.Error("GPU task aborted", title="ZeroGPU worker error") from None
            kind, value = pickle.loads(data)
            if kind == "end":
                call.outcome = "ok"
                return
            if kind == "error":
                call.outcome = "error"
                raise value if isinstance(value, gr.Error) else gr.Error(value, title="ZeroGPU worker error")
            call.result_bytes += len(data)
            yield value
    finally:
        receive.close()
        worker.kill()
        worker.join()


def install(monkeypatch: pytest.MonkeyPatch) -> FakeZeroGpu:
    """`ui.zerogpu` as on a ZeroGPU Space, with a new FakeZeroGpu in place of the platform
    (undone with `monkeypatch`)."""
    from ui import zerogpu

    fake = FakeZeroGpu()
    monkeypatch.setattr(zerogpu, "ON_ZEROGPU", True)
    monkeypatch.setattr(zerogpu, "gpu_decorator", fake)
    for task in list(zerogpu.TASKS):
        monkeypatch.setattr(task, "_decorated", task.decorated(fake))
    return fake


@pytest.fixture
def zerogpu_fake(monkeypatch) -> FakeZeroGpu:
    """`install`ed for one test."""
    return install(monkeypatch)
