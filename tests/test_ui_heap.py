"""The server's heaps (ui/heap.py). C's is bounded at start, so that a class period's requests,
run in dozens of pool threads, cannot spread freed memory over 16 arenas that stay resident (the
soak in docs/security.md): those cases run in a fresh interpreter that imports the app as `python
app.py` does, since an arena limit only acts on arenas not yet made. Python's collector is made
ready for serving and its full collections timed, and Gradio's components are described without
leaving cycles for it (ui.app.describe_components_once)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ui.heap import CollectorPauses, heap_use

ROOT = Path(__file__).resolve().parent.parent

# In a fresh interpreter: the app's imports, then (argv[1] == "bound") the app's first step; then
# 8 threads allocating at once, and an 8 MiB block taken after a 16 MiB one was freed.
HEAP_AFTER = """
import ctypes, json, sys, threading
import app  # noqa: F401  (what `python app.py` has imported before main)
from ui.heap import _glibc, _MallInfo2, arena_count, bound_the_heap
said = bound_the_heap() if sys.argv[1] == "bound" else None
libc = _glibc()
libc.malloc.restype, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
libc.mallinfo2.restype = _MallInfo2
together = threading.Barrier(8)
def allocate():
    block = libc.malloc(1000)
    together.wait()  # all 8 threads hold a block at once: none can borrow another's arena
    libc.free(block)
threads = [threading.Thread(target=allocate) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
libc.free(libc.malloc(16 << 20))  # glibc's own threshold rises to 16 MiB after this free...
mapped = libc.mallinfo2().hblkhd
block = libc.malloc(8 << 20)  # ... so this block comes from an arena, unless the threshold is fixed
mapped_8mib = libc.mallinfo2().hblkhd - mapped >= 8 << 20
libc.free(block)
print(json.dumps({"said": said, "arenas": arena_count(), "mapped_8mib": mapped_8mib}))
"""


def fresh_interpreter(script: str, *args: str, **env: str) -> dict:
    """What `script` prints last (JSON), run in a fresh interpreter with `env` and none of our MALLOC_ variables."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")} | env
    done = subprocess.run(
        [sys.executable, "-c", script, *args], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def heap_after(step: str, **env: str) -> dict:
    return fresh_interpreter(HEAP_AFTER, step, **env)


@pytest.fixture(scope="module")
def glibc():
    if heap_use() is None:
        pytest.skip("not glibc: there is no heap to bound (macOS and musl return memory by themselves)")


def test_the_app_bounds_its_arenas_and_maps_large_blocks_apiece(glibc):
    left = heap_after("left")  # glibc's defaults, for contrast: the test shows the bound is what acts
    assert left["arenas"] > 2 and not left["mapped_8mib"], left
    bound = heap_after("bound")
    assert bound["said"] == "heap: at most 2 arenas, blocks of 4 MiB and more mapped apiece", bound
    assert bound["arenas"] <= 2 and bound["mapped_8mib"], bound


def test_what_the_operator_set_in_the_environment_is_kept(glibc):
    kept = heap_after("bound", MALLOC_ARENA_MAX="3", MALLOC_MMAP_THRESHOLD_="33554432")
    assert kept["said"] == (
        "heap: MALLOC_ARENA_MAX=3 (from the environment), MALLOC_MMAP_THRESHOLD_=33554432 (from the environment)"
    )
    assert kept["arenas"] == 3 and not kept["mapped_8mib"], kept


# In a fresh interpreter with the app's bound heap: ViT-S/16 analyses kept one after another, as the
# store of analyses fills during a class; the page faults per analysis and the pages its maps keep.
FAULTS_PER_ANALYSIS = """
import json, resource, numpy as np, torch
from PIL import Image
import app  # noqa: F401
from ui.heap import bound_the_heap
import vit
from explorer.explain import explain
from vit.preprocessing import Preprocessing
bound_the_heap()
torch.manual_seed(0)
torch.set_num_threads(1)
model, pre = vit.create_model("vit_small_patch16_224").eval(), Preprocessing(resize_size=256, crop_size=224)
names, rng = [str(i) for i in range(1000)], np.random.default_rng(0)
analysis = lambda: explain(model, names, pre, Image.fromarray(rng.integers(0, 256, (256, 256, 3), np.uint8)))
kept = [analysis() for _ in range(3)]
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
kept += [analysis() for _ in range(8)]
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 8
print(json.dumps({"faults": faults, "kept_pages": kept[-1].nbytes / 4096}))
"""


def test_a_forward_pass_s_activations_are_not_mapped_afresh_each_analysis(glibc):
    """Issue 41: with blocks of 1 MiB and more mapped apiece, a ViT-S/16 analysis's MLP activations
    (1.2 MB a layer) were mapped and faulted in anew every time: 3.4 times the pages its maps keep
    (9,843 faults), 10 ms of system CPU served; with blocks of 4 MiB and more, 1.1 times (3,327)."""
    bound = fresh_interpreter(FAULTS_PER_ANALYSIS)
    assert bound["faults"] < 2.5 * bound["kept_pages"], bound  # the kept maps' own first touch, and little more
    one_mib = fresh_interpreter(
        FAULTS_PER_ANALYSIS, MALLOC_MMAP_THRESHOLD_=str(2**20)
    )  # for contrast: the bound is what acts
    assert one_mib["faults"] > 1.5 * bound["faults"], (one_mib, bound)


def test_the_heap_line_tells_memory_in_use_from_memory_the_allocator_keeps(glibc):
    line = heap_use()
    said = re.fullmatch(
        r"heap: (\d+) MiB in use, (\d+) MiB free in the allocator \((\d+) arenas?\), (\d+) Python blocks", line
    )
    used, free, arenas, blocks = (int(x) for x in said.groups())
    kept = bytearray(64 * 2**20)  # 64 MiB more in use
    grown = int(re.match(r"heap: (\d+)", heap_use())[1])
    assert grown >= used + 60 and blocks > 1000 and free >= 0 and arenas >= 1
    del kept


def test_the_collectors_full_collections_are_counted_and_timed_then_counting_starts_again():
    import gc

    pauses = CollectorPauses.watch()
    try:
        gc.collect(1)  # a younger generation's collection is not a full one
        assert pauses.said() == "collector: 0 full collections since the last line, longest 0 ms"
        gc.collect()
        gc.collect()
        said = re.fullmatch(r"collector: 2 full collections since the last line, longest (\d+) ms", pauses.said())
        assert said is not None and int(said[1]) >= 0
        assert pauses.said().startswith("collector: 0 full collections")
    finally:
        gc.callbacks.remove(pauses)


# In a fresh interpreter: an object the start keeps, a garbage cycle the start left, the collector
# made ready, then a garbage cycle a visitor leaves.
FREEZE = """
import gc, json, weakref
from ui.heap import YOUNG_THRESHOLD, ready_the_collector
class Node: pass
def cycle():
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)
kept, dropped = Node(), cycle()
said = ready_the_collector()
frozen = gc.get_freeze_count()
later = cycle()
seen = len(gc.get_objects())
gc.collect()
print(json.dumps({
    "said": said, "young": gc.get_threshold()[0] == YOUNG_THRESHOLD, "frozen": frozen, "seen": seen,
    "start_garbage_kept": dropped() is not None, "later_garbage_kept": later() is not None,
    "kept_seen": any(o is kept for o in gc.get_objects()),
}))
"""


def test_the_start_is_frozen_after_its_garbage_is_collected_and_later_garbage_still_is():
    """The collector made ready for serving (ui.heap.ready_the_collector): the start out of its
    sight, young objects collected less often, and garbage still collected before and after."""
    done = subprocess.run([sys.executable, "-c", FREEZE], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["frozen"] > 10_000 and said["seen"] < said["frozen"] / 10, said  # the collector walks few
    assert said["young"] and said["said"].startswith(f"collector: {said['frozen']} objects of the start frozen")
    assert not said["start_garbage_kept"] and not said["later_garbage_kept"] and not said["kept_seen"], said


def test_each_data_models_api_description_is_made_once_and_leaves_no_cycle():
    """Gradio builds a component per session for every property update (a picture's alt text,
    a gr.skip()) and described each anew, leaving a cycle of pydantic's schema generator for the
    full collection. Described once, each rebuilt component gets the same description, a copy."""
    import gc

    import gradio as gr
    from gradio.components.base import Component
    from gradio.state_holder import SessionState
    from pydantic.json_schema import GenerateJsonSchema

    from ui.app import describe_components_once

    describe_components_once()
    describe = getattr(Component.api_info, "__wrapped__", Component.api_info)  # Gradio's own
    with gr.Blocks() as demo:
        outputs = [gr.Image(label="heads", alt_text="maps"), gr.File(label="export"), gr.Label(label="top")]
        gr.Button("go").click(lambda: None, None, outputs)
    state = SessionState(demo)

    def rebuilt(component: Component) -> Component:
        return component.__class__(**(component.constructor_args | {"render": False}))

    for component in outputs:
        expected = describe(rebuilt(component))
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)  # keep what a collection finds, to see what it is
        try:
            for _ in range(20):  # what Gradio does for an update of the component (Blocks.postprocess_data)
                state[component._id] = rebuilt(component)
                state._update_config(component._id)
            without = [describe(rebuilt(component)) for _ in range(3)]  # Gradio's way, for comparison
            gc.collect()
            left = sum(isinstance(o, GenerateJsonSchema) for o in gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
        assert left == 3, (component, left)  # the 3 described Gradio's way only, not the 20 updates
        assert state.config_values[component._id]["api_info"] == expected == without[0]
        assert state[component._id].api_info() is not rebuilt(component).api_info()  # copies, none shared
