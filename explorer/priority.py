"""Forward passes at a lower CPU priority than the clicks beside them (issue 30).

A click redraws from a cached forward pass in ~20 ms of CPU; a ViT-S forward pass takes
~130 ms, a ViT-B one ~460 ms. When thirty uploads arrive at once, the two cores are busy with
forward passes for seconds, and a click that needs 20 ms of one waits its turn with them.
Linux's scheduler gives each thread CPU in proportion to its weight, and a thread's nice value
is its own (`setpriority` on its thread id): at nice 10 a thread weighs 110 against 1,024 at 0,
so a click's thread sharing a core with a forward pass gets about 90 % of it.

An unprivileged process may raise a thread's nice value but never lower it again, so heavy work
never runs in Gradio's shared worker threads (which go on to serve clicks): it is handed to a
small pool of threads lowered once, when each starts, and the caller waits for the result. The
caller's context variables go along (Gradio's request context, which ZeroGPU's quota reads).
Elsewhere than Linux, or where lowering is refused, the pool runs at normal priority.
"""

from __future__ import annotations

import contextvars
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

LOW_NICE = 10  # added to the process's nice value: weight 110 against 1,024 (Linux CFS)


def lower_this_thread(by: int = LOW_NICE) -> bool:
    """Raise the calling thread's nice value by `by`; whether it was lowered. Linux only: there a
    thread id names one thread, where elsewhere `setpriority` would name a whole process."""
    if sys.platform != "linux":
        return False
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(os.getpriority(os.PRIO_PROCESS, tid) + by, 19))
    except OSError:
        return False
    return True


class LowPriority:
    """`run(fn, *args)`: fn's result (or exception), computed in one of `workers` threads whose
    nice value is `by` above the process's."""

    def __init__(self, workers: int, by: int = LOW_NICE):
        self._pool = ThreadPoolExecutor(
            workers, thread_name_prefix="low-priority", initializer=lower_this_thread, initargs=(by,)
        )

    def run(self, fn: Callable[..., T], *args: object) -> T:
        return self._pool.submit(contextvars.copy_context().run, fn, *args).result()


# As many as the server's heavy slots (ui/concurrency.py HEAVY_LIMIT): no forward pass waits
# for a thread, and no more run at once than before.
FORWARD_PASSES = LowPriority(workers=2)
