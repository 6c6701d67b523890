"""A tiny CLIP for tests of the app's prompt views: open_clip's own architecture (QuickGELU, ln_pre,
projection) at 32 px with 2 layers, registered with open_clip under TINY_NAME, random weights."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import open_clip
import torch

import vit
from explorer.loaded import LoadedModel
from vit.clip import from_open_clip, text_tower
from vit.preprocessing import CIFAR10

TINY_NAME = "tiny-clip-test"
CLIP_KEY = "pretrained:vit_base_patch16_clip_224.openai"  # the zoo's CLIP, whose loader tests replace
_TINY = {
    "embed_dim": 32,
    "quick_gelu": True,
    "vision_cfg": {"image_size": 32, "layers": 2, "width": 64, "patch_size": 8, "head_width": 32},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2},
}
TINY_CONFIG = vit.ViTConfig(
    image_size=32,
    patch_size=8,
    num_classes=0,
    dim=64,
    depth=2,
    heads=2,
    mlp_dim=256,
    norm_eps=1e-5,
    pre_norm=True,
    act="quick_gelu",
    patch_bias=False,
    embed_dim=32,
)


def tiny_clip(seed: int = 0) -> tuple[vit.VisionTransformer, vit.ModelMeta, vit.clip.ClipText]:
    """(image tower, metadata, text tower) of a random tiny CLIP, as vit.pretrained.load_pretrained_clip returns."""
    if TINY_NAME not in open_clip.list_models():
        path = Path(tempfile.mkdtemp()) / f"{TINY_NAME}.json"
        path.write_text(json.dumps(_TINY))
        open_clip.add_model_config(path)
    torch.manual_seed(seed)
    foreign = open_clip.create_model(TINY_NAME, pretrained=None).eval()
    with torch.no_grad():
        for p in foreign.parameters():
            p.add_(torch.randn_like(p) * 0.02)
    model = from_open_clip(foreign, config=TINY_CONFIG)
    meta = vit.ModelMeta([], CIFAR10, {"prompt_template": vit.clip.TEMPLATE})
    return model, meta, text_tower(foreign.state_dict(), TINY_NAME)


def tiny_loaded(key: str = CLIP_KEY) -> LoadedModel:
    model, meta, text = tiny_clip()
    return LoadedModel(key, key.partition(":")[2], model, meta, text=text)


# python -c this: the real app (app.main) whose CLIP B/16 is the tiny random CLIP (no download)
_CLIP_APP = (
    "import sys; sys.path.insert(0, 'tests'); import clip_helpers, vit; "
    "vit.pretrained.load_pretrained_clip = lambda name, progress=None: clip_helpers.tiny_clip(); "
    "import app; app.main(sys.argv[1:])"
)


@contextmanager
def clip_app(checkpoint: Path, tmp_path_factory, *options: str) -> Iterator[str]:
    """`python app.py --model vit_base_patch16_clip_224.openai` (and `options`, e.g. "--present") in
    a subprocess (conftest.app_server) whose CLIP loader gives the tiny random CLIP; yields its URL."""
    from conftest import app_server

    name = CLIP_KEY.partition(":")[2]
    with app_server(checkpoint, tmp_path_factory, "--model", name, *options, program=("-c", _CLIP_APP)) as url:
        yield url
