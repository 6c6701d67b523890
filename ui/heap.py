"""The server's heaps: C's (glibc's malloc) bounded at start, read and trimmed every minute, and
Python's collector's pauses timed.

glibc gives each thread that allocates while another holds its arena a new arena, up to 8 per
core, and serves blocks below a moving threshold from them; a server whose requests run in
dozens of pool threads spreads its tensors over 16 arenas whose freed pages stay resident
(docs/security.md, the soak). Elsewhere (macOS, musl) there is no glibc and nothing to do.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import os
import sys
import threading
import time

# mallopt's parameters (glibc's malloc.h) and the environment variables that set them at start.
M_MMAP_THRESHOLD, M_ARENA_MAX = -3, -8
ENV = {M_ARENA_MAX: "MALLOC_ARENA_MAX", M_MMAP_THRESHOLD: "MALLOC_MMAP_THRESHOLD_"}
# One arena per core of the 2-core machines the app is budgeted for: requests share them (a
# lock per allocation) instead of each pool thread keeping an arena of its own.
ARENAS = 2
# Blocks of 4 MiB and more (a photo's pixels, a ViT-L layer's attention, a batch's tensors) are
# mapped apiece and unmapped when freed. glibc's default starts at 128 KiB but raises itself to
# the largest block freed so far (up to 32 MiB), after which such blocks come from the arenas
# and leave holes there; fixing it keeps them out. Not lower: at 1 MiB a ViT-S/16 forward pass's
# MLP activations (1.2 MB a layer) were mapped and faulted in afresh every time, 10 ms of system
# CPU per analysis (docs/benchmarks-app.md, issue 41); at 4 MiB a class period's memory stays flat
# (docs/security.md, the soak).
MMAP_THRESHOLD = 4 * 2**20


class _MallInfo2(ctypes.Structure):
    """glibc's `struct mallinfo2` (glibc 2.33 and later): byte counts over every arena."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The C library, once, where it is glibc (whose heap the functions below bound, read and
    trim), with the signatures ctypes cannot guess declared once."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    libc.open_memstream.restype = ctypes.c_void_p
    libc.open_memstream.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)]
    libc.malloc_info.argtypes, libc.fclose.argtypes = [ctypes.c_int, ctypes.c_void_p], [ctypes.c_void_p]
    if hasattr(libc, "mallinfo2"):  # glibc 2.33 and later
        libc.mallinfo2.restype = _MallInfo2
    return libc


def bound_the_heap(arenas: int = ARENAS, mmap_threshold: int = MMAP_THRESHOLD) -> str | None:
    """Limit glibc to `arenas` arenas and map blocks of `mmap_threshold` bytes and more apiece;
    call before the server starts its threads (an arena limit only stops arenas being made).
    A value the operator set in the environment (MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_) is
    kept. Returns what was set, for the log, or None where there is no glibc."""
    assert arenas >= 1 and mmap_threshold > 0, (arenas, mmap_threshold)
    mallopt = getattr(_glibc(), "mallopt", None)
    if mallopt is None:
        return None
    said = []
    for param, value, words in (
        (M_ARENA_MAX, arenas, f"at most {arenas} arenas"),
        (M_MMAP_THRESHOLD, mmap_threshold, f"blocks of {mmap_threshold / 2**20:g} MiB and more mapped apiece"),
    ):
        if ENV[param] in os.environ:
            said.append(f"{ENV[param]}={os.environ[ENV[param]]} (from the environment)")
        else:  # mallopt answers 1 on success
            said.append(words if mallopt(param, value) == 1 else f"not {words} (mallopt refused)")
    return "heap: " + ", ".join(said)


def arena_count() -> int:
    """How many arenas glibc has made so far (`malloc_info`'s XML has a <heap> per arena); 0
    where there is no glibc."""
    libc = _glibc()
    if libc is None:
        return 0
    text, size = ctypes.c_void_p(), ctypes.c_size_t()
    stream = libc.open_memstream(ctypes.byref(text), ctypes.byref(size))
    libc.malloc_info(0, stream)
    libc.fclose(stream)  # writes the text and its size
    xml = ctypes.string_at(text, size.value)
    libc.free(text)  # open_memstream's buffer is the caller's to free
    return xml.count(b"<heap nr=")


def heap_use() -> str | None:
    """One line for the operator's log, to tell a leak from memory the allocator keeps: the heap
    in use (glibc: allocated blocks and mapped chunks), the free bytes glibc holds in its arenas,
    and Python's allocated blocks; None where glibc's `mallinfo2` is not there."""
    mallinfo2 = getattr(_glibc(), "mallinfo2", None)
    if mallinfo2 is None:
        return None
    info, mib, n = mallinfo2(), 2**20, arena_count()
    return (
        f"heap: {(info.uordblks + info.hblkhd) / mib:.0f} MiB in use, {info.fordblks / mib:.0f} MiB free in the "
        f"allocator ({n} arena{'s' * (n != 1)}), {sys.getallocatedblocks()} Python blocks"
    )


def give_back_freed_memory() -> None:
    """Return freed heap pages to the system. glibc keeps what a finished request's tensors
    freed in the arena of the thread that ran it, so resident memory only climbs;
    malloc_trim(0) gives the whole free pages among them back."""
    if _glibc() is not None:
        _glibc().malloc_trim(0)


# Young collections every 50,000 container allocations instead of CPython's 700. A request's
# objects live a fraction of a second; collected young, they were promoted towards the oldest
# generation, which CPython collects in full (stopping every request for 0.6 to 0.8 s with a
# class's 500 sessions) once the objects promoted since the last reach a quarter of those it
# holds: 3 full collections a minute in a class period (docs/security.md).
YOUNG_THRESHOLD = 50_000


def ready_the_collector() -> str:
    """Put every object made so far (modules, the page, the models opened at start) out of the
    collector's sight, garbage collected first so that none is kept for good, and collect young
    objects less often: a full collection then walks only what visitors made since (half of a
    class period's objects were the start's), a ZeroGPU worker forked later keeps sharing those
    pages (`gc.freeze`), and fewer of a request's objects live to be collected in full. Returns
    what was done, for the log."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    return (
        f"collector: {gc.get_freeze_count()} objects of the start frozen, young collections every "
        f"{YOUNG_THRESHOLD:,} allocations"
    )


class CollectorPauses:
    """The full collections of Python's cyclic garbage collector (generation 2), each of which
    stops every request's thread while it walks every tracked object: how many, and the longest,
    since the last `said()`. Installed in `gc.callbacks` by `watch`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._began: float | None = None
        self._count, self._longest = 0, 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._began = time.perf_counter()
        elif self._began is not None:  # "stop" of the collection that started
            with self._lock:
                self._count += 1
                self._longest = max(self._longest, time.perf_counter() - self._began)
            self._began = None

    def said(self) -> str:
        """One line for the operator's log; counting starts again."""
        with self._lock:
            count, longest = self._count, self._longest
            self._count, self._longest = 0, 0.0
        plural = "s" * (count != 1)
        return f"collector: {count} full collection{plural} since the last line, longest {longest * 1000:.0f} ms"

    @classmethod
    def watch(cls) -> CollectorPauses:
        pauses = cls()
        gc.callbacks.append(pauses)
        return pauses
