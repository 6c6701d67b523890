"""One forward pass per image: everything the app's views need, computed once and cached.

`explain()` preprocesses an image exactly as the model's metadata says (or, in "whole
image" mode, keeps its aspect ratio), runs the model once with attention maps, and
returns an `Explanation`. The views (per-head maps for any query, rollout, attention
distance) are cheap tensor reads of that result, so moving a slider never reruns the model.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from PIL import Image
from torch import Tensor

from vit import AttentionMaps, Preprocessing, VisionTransformer
from vit.analysis import HeadFusion, Query, mean_attention_distance, query_attention, rollout

Mode = Literal["crop", "whole"]
MAX_ASPECT = 4  # "whole image" mode: longer side at most 4x the shorter, so token counts stay sane


@dataclass(frozen=True)
class ModelInput:
    """The image as the model sees it: uint8 `pixels` (H, W, 3), the normalised `tensor`
    (1, 3, H, W), and a sentence describing the resize/crop policy that produced it."""

    pixels: np.ndarray
    tensor: Tensor
    policy: str


def whole_image_size(size: tuple[int, int], short_side: int, patch_size: int) -> tuple[int, int]:
    """(H, W) for "whole image" mode: scale so the shorter side is `short_side`, keep the
    aspect ratio (capped at MAX_ASPECT), and round both sides to multiples of the patch."""
    h, w = size
    scale = short_side / min(h, w)
    limit = short_side * MAX_ASPECT

    def side(n: int) -> int:
        return max(patch_size, round(min(n * scale, limit) / patch_size) * patch_size)

    return side(h), side(w)


def model_input(image: Image.Image, pre: Preprocessing, patch_size: int, mode: Mode = "crop") -> ModelInput:
    """Resize (and in "crop" mode centre-crop) an RGB image, then normalise it.

    "crop" mode uses the model's own `Preprocessing.geometry()` on the uint8 image, so the
    model gets bit-for-bit the input its own transform would give."""
    from torchvision.transforms import InterpolationMode, v2  # imported on first use: it costs seconds

    interp = InterpolationMode(pre.interpolation)
    h, w = image.height, image.width
    if mode == "crop":
        geometry = pre.geometry()
        policy = (
            f"Crop mode: the shorter side is resized to {pre.resize_size} px ({pre.interpolation}), "
            f"then the centre {pre.crop_size}x{pre.crop_size} square is kept"
            + (" (the edges of this non-square image are cut off)." if h != w else ".")
        )
    elif mode == "whole":
        size = whole_image_size((h, w), pre.crop_size, patch_size)
        geometry = v2.Resize(list(size), interp, antialias=True)
        policy = (
            f"Whole-image mode: resized to {size[0]}x{size[1]} (H x W) px ({pre.interpolation}), keeping the aspect "
            f"ratio and rounding each side to a multiple of the {patch_size}-px patch; the model interpolates its "
            "position embeddings to this grid."
        )
    else:
        raise ValueError(f"mode must be 'crop' or 'whole', got {mode!r}")
    pixels = geometry(v2.functional.pil_to_tensor(image))  # (3, H, W) uint8
    tensor = v2.functional.normalize(pixels.float() / 255.0, list(pre.mean), list(pre.std))
    return ModelInput(pixels.permute(1, 2, 0).numpy(), tensor.unsqueeze(0), policy)


@dataclass
class Explanation:
    """The result of one forward pass over one image, and the cheap reads every view makes."""

    input: ModelInput
    original_size: tuple[int, int]  # (H, W) of the upright uploaded image
    patch_size: int
    probabilities: dict[str, float]  # class name -> probability, top classes first
    attention: AttentionMaps  # batch of one, on the CPU

    @property
    def grid(self) -> tuple[int, int]:
        return self.attention.grid

    @property
    def has_cls(self) -> bool:
        return self.attention.prefix_tokens > 0

    @property
    def depth(self) -> int:
        return len(self.attention)

    @property
    def heads(self) -> int:
        return self.attention[0].shape[1]

    @property
    def tokens(self) -> int:
        return self.attention[0].shape[-1]

    def query_maps(self, query: Query = None) -> np.ndarray:
        """(layers, heads, gh, gw): where the query token looks (None = the CLS token)."""
        return query_attention(self.attention, query)[0].numpy()

    def rollout(self, head_fusion: HeadFusion = "mean", discard_ratio: float = 0.0, query: Query = None) -> np.ndarray:
        """(gh, gw) attention rollout through all layers."""
        return rollout(self.attention, head_fusion, discard_ratio, query)[0].numpy()

    def attention_distance(self) -> np.ndarray:
        """(layers, heads) mean attention distance in pixels of the model input."""
        return mean_attention_distance(self.attention, self.patch_size).numpy()

    def patch_at(self, x: float, y: float, scale: int) -> tuple[int, int]:
        """Grid position (row, col) of pixel (x, y) in the model input enlarged by `scale`."""
        gh, gw = self.grid
        step = self.patch_size * scale
        return min(max(int(y // step), 0), gh - 1), min(max(int(x // step), 0), gw - 1)


def explain(
    model: VisionTransformer,
    class_names: list[str],
    pre: Preprocessing,
    image: Image.Image,
    mode: Mode = "crop",
    top_k: int = 5,
) -> Explanation:
    """Run `model` once on `image` and keep everything the views need."""
    inp = model_input(image, pre, model.config.patch_size, mode)
    with torch.inference_mode():
        logits, attention = model(inp.tensor, need_weights=True)
    probs = logits[0].float().softmax(-1)
    top = probs.topk(min(top_k, probs.numel()))
    probabilities = {class_names[i]: float(p) for p, i in zip(top.values, top.indices, strict=True)}
    cpu = attention.apply(lambda a: a.float().cpu())
    return Explanation(inp, (image.height, image.width), model.config.patch_size, probabilities, cpu)


class RecentExplanations:
    """The last few explanations of one browser session, by (image file, model, mode), so
    switching back to a model or resize policy already seen for this image reuses its
    forward pass: one forward pass per image per model (and mode)."""

    def __init__(self, size: int = 4):
        self.size = size
        self._items: OrderedDict[Hashable, Explanation] = OrderedDict()

    def get(self, key: Hashable, compute: Callable[[], Explanation]) -> Explanation:
        if key in self._items:
            self._items.move_to_end(key)
        else:
            self._items[key] = compute()
            if len(self._items) > self.size:
                self._items.popitem(last=False)
        return self._items[key]
