"""What a lesson costs in ZeroGPU time: `python -m bench.zerogpu_quota` (docs/space.md).

Every GPU call asks the platform for a duration, charged to the visitor's daily quota, and the
platform refuses a call that asks for more than is left. This prints, for the Space's own
models at their real shapes (random weights: only shapes matter here), the seconds each action
asks for (`ui.zerogpu.GpuTask.seconds`: estimated work plus `explorer.compute.FIXED_GPU_S`),
then one student's 10-minute lesson and a class of 30 against the quotas. Arithmetic, not a
measurement on a GPU: the estimates' assumptions are `explorer.compute`'s constants.
"""

from __future__ import annotations

import argparse
import math
import pickle
import time

import torch
from PIL import Image

import vit
from explorer import explain
from explorer.explain import attention_bytes
from explorer.loaded import LoadedModel
from explorer.more_views import logit_lens, pca, relevance
from explorer.video import BATCH_BYTES, MAX_BATCH
from ui import explore_views, zerogpu
from ui.live import STREAM_EVERY_S

# Daily quotas (hub-docs spaces-zerogpu.md, 2026-11) in seconds; anonymous visitors are counted
# by IP address (the package falls back to "IP-based quotas"), so a class behind one school
# router shares one anonymous quota.
QUOTAS = {"anonymous (per IP address)": 120, "free account": 300, "PRO": 2400}
HARDWARE_FACTORS = (1.0, 1.5)  # spaces/zero/configs.json: H200 1.0, RTX PRO 6000 1.5
CLIP_FRAMES = 300  # a 10 s clip at 30 frames/s, the attention video's limit


def model(name: str, classes: int, crop: int = 224) -> LoadedModel:
    net = vit.create_model(name, num_classes=classes).eval()
    return LoadedModel(name, name, net, vit.ModelMeta([f"c{i}" for i in range(classes)], vit.Preprocessing(crop, crop)))


def action_seconds() -> dict[str, int]:
    """Seconds one call of each action asks for, on the Space's opening models."""
    deit = model("vit_small_patch16_224", 1000)  # DeiT-S's architecture
    large = model("vit_large_patch14_reg4_dinov2", 0)
    dinov2 = model("vit_small_patch14_dinov2", 0)
    x = torch.zeros(1, 3, 224, 224)  # the app's side for every one of them (DINOv2's too: vit.pretrained)
    photo = Image.new("RGB", (224, 224))
    frames = max(1, min(MAX_BATCH, BATCH_BYTES // attention_bytes(deit.model, (224, 224))))
    clip = torch.zeros(CLIP_FRAMES, 3, 224, 224)
    return {
        "Explore: an upload or a new model (DeiT-S)": zerogpu.FORWARD.seconds(deit, x),
        "Explore: a click, a slider, a style (drawn from the stored pass)": 0,
        "Explore: the logit lens open, each upload or model (a second call)": explore_views.GPU_TASKS[
            logit_lens.TASK
        ].seconds(deit, x),
        "Explore: the PCA's layer slider or its examples (DINOv2 S/14, a call each)": explore_views.GPU_TASKS[
            pca.TASK
        ].seconds(dinov2, [x], 11, False),
        "Explore: relevance": explore_views.GPU_TASKS[relevance.TASK].seconds(deit, x, None),
        "Lesson 1: three ViT-S side by side (3 calls)": 3 * zerogpu.CLS_HEADS.seconds(deit, photo),
        "Lesson 2: two ViT-L/14 (2 calls)": 2 * zerogpu.NORMS.seconds(large, photo, 23, ""),
        "Lesson 3: heads off": zerogpu.HEADS_OFF.seconds(deit, photo, []),
        "Lesson 3: rank every head (72 passes)": zerogpu.RANKING.seconds(deit, photo),
        f"Live: a minute of webcam ({60 / STREAM_EVERY_S:.0f} frames, on the CPU)": 0,
        f"Attention video: {CLIP_FRAMES} frames (one call)": zerogpu.CLIP.seconds(deit, clip, None, 12, frames),
        f"Train: one chunk of {zerogpu.CHUNK_S} s (the tab asks for them one after another)": zerogpu.chunk_seconds(
            "", zerogpu.CHUNK_S
        ),
    }


# One student's 10-minute lesson: how many times each action is done.
LESSON = {
    "Explore: an upload or a new model (DeiT-S)": 6,
    "Explore: a click, a slider, a style (drawn from the stored pass)": 40,
    "Explore: the logit lens open, each upload or model (a second call)": 2,
    "Explore: the PCA's layer slider or its examples (DINOv2 S/14, a call each)": 3,
    "Explore: relevance": 2,
    "Lesson 1: three ViT-S side by side (3 calls)": 1,
    "Lesson 2: two ViT-L/14 (2 calls)": 1,
    "Lesson 3: heads off": 3,
    "Lesson 3: rank every head (72 passes)": 1,
}


def crossing() -> str:
    """What the largest opening model's forward pass sends back across the fork: pickled bytes
    (ViT-L/14 at 224 px, every layer's maps) and the seconds to pickle and unpickle them here."""
    large = model("vit_large_patch14_reg4_dinov2", 0)
    result = explain.forward_maps(large, torch.zeros(1, 3, 224, 224))
    started = time.perf_counter()
    data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    pickle.loads(data)
    seconds = time.perf_counter() - started
    maps = attention_bytes(large.model, (224, 224))
    return (
        f"ViT-L/14 at 224 px: the forward pass sends back {len(data) / 2**20:.1f} MiB pickled "
        f"({maps / 2**20:.1f} MiB of maps), pickled and unpickled in {seconds:.2f} s on this machine."
    )


def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    seconds = action_seconds()
    print("| action | GPU seconds asked (× 1.0 / × 1.5 hardware factor) | times in a lesson | lesson total |")
    print("|---|---|---|---|")
    for action, s in seconds.items():
        n = LESSON.get(action, 0)
        print(f"| {action} | {s} / {math.ceil(1.5 * s)} | {n} | {n * s} / {n * math.ceil(1.5 * s)} |")
    for factor in HARDWARE_FACTORS:
        one = sum(n * math.ceil(factor * seconds[a]) for a, n in LESSON.items())
        print(f"\nHardware factor {factor:g}: one student's lesson asks for {one} s; a class of 30: {30 * one} s.")
        for who, quota in QUOTAS.items():
            shared = "the whole class" if "IP" in who else "each student"
            lessons = quota // (30 * one if "IP" in who else one)
            print(f"- {who}, {quota} s a day for {shared}: {lessons} such lesson(s)")
    print(f"\n{crossing()}")


if __name__ == "__main__":
    main()
