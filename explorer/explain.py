"""One forward pass per image: everything the app's views need, computed once and cached.

`explain()` preprocesses an image exactly as the model's metadata says (or, in "whole
image" mode, keeps its aspect ratio), runs the model once with attention maps, and
returns an `Explanation`. The views (per-head maps for any query, rollout, attention
distance) are cheap tensor reads of that result, so moving a slider never reruns the model.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Literal

import numpy as np
import torch
from PIL import Image
from torch import Tensor

from vit import AttentionMaps, Preprocessing, VisionTransformer
from vit.analysis import (
    HeadFusion,
    Query,
    mean_attention_distance,
    query_attention,
    query_prefix_attention,
    rollout,
    rollout_prefix_attention,
)

from .compute import pass_seconds, to_model
from .images import ImageError, load_image
from .priority import FORWARD_PASSES

if TYPE_CHECKING:
    from .loaded import LoadedModel

Mode = Literal["crop", "whole"]
MAX_ASPECT = 4  # "whole image" mode: longer side at most 4x the shorter, so token counts stay sane
# The largest image either mode's resize may produce (8 Mpx: 96 MiB as the floats torchvision's
# antialiased resize works in). Crop mode resizes the shorter side to resize_size before it
# crops, so an elongated image or a model with a large resize_size could ask for gigabytes.
MAX_RESIZED_PIXELS = 8 * 2**20


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


def resized_size(size: tuple[int, int], pre: Preprocessing, patch_size: int, mode: Mode) -> tuple[int, int]:
    """(H, W) of the image after `mode`'s resize, before crop mode's crop: what the resize allocates."""
    if mode == "whole":
        return whole_image_size(size, pre.crop_size, patch_size)
    h, w = size
    long_side = int(pre.resize_size * max(h, w) / min(h, w))  # torchvision's rule for Resize(int)
    return (pre.resize_size, long_side) if h <= w else (long_side, pre.resize_size)


class InputTooLarge(ImageError):
    """The resize this image needs for this model and mode is over MAX_RESIZED_PIXELS."""


def model_input(image: Image.Image, pre: Preprocessing, patch_size: int, mode: Mode = "crop") -> ModelInput:
    """Resize (and in "crop" mode centre-crop) an RGB image, then normalise it.

    "crop" mode uses the model's own `Preprocessing.geometry()` on the uint8 image, so the
    model gets bit-for-bit the input its own transform would give."""
    from torchvision.transforms import InterpolationMode, v2  # imported on first use: it costs seconds

    interp = InterpolationMode(pre.interpolation)
    h, w = image.height, image.width
    rh, rw = resized_size((h, w), pre, patch_size, mode) if mode in ("crop", "whole") else (0, 0)
    if rh * rw > MAX_RESIZED_PIXELS:
        raise InputTooLarge(
            f"this {w} × {h} px image (width × height) would be resized to {rw:,} × {rh:,} px for this model in "
            f"{mode} mode, "
            f"more than this server's {MAX_RESIZED_PIXELS:,} pixels: crop it closer to a square first"
        )
    if mode == "crop":
        geometry = pre.geometry()
        policy = (
            f"Crop mode: the shorter side is resized to {pre.resize_size} px ({pre.interpolation}), "
            f"then the centre {pre.crop_size} × {pre.crop_size} px square is kept"
            + (" (the edges of this non-square image are cut off)." if h != w else ".")
        )
    elif mode == "whole":
        size = whole_image_size((h, w), pre.crop_size, patch_size)
        geometry = v2.Resize(list(size), interp, antialias=True)
        policy = (
            f"Whole-image mode: resized to {size[1]} × {size[0]} px (width × height, {pre.interpolation}), keeping "
            f"the aspect ratio up to {MAX_ASPECT}:1 and rounding each side to a multiple of the {patch_size}-px patch; "
            "the model fits its positions to this grid (learned position embeddings are interpolated; "
            "rotary ones, DINOv3's, are computed for any grid)."
            + (
                f" This image is more elongated than {MAX_ASPECT}:1, so its longer side is capped at {MAX_ASPECT} × "
                "the shorter one and the picture is squashed."
                if max(h, w) > MAX_ASPECT * min(h, w)
                else ""
            )
        )
    else:
        raise ValueError(f"mode must be 'crop' or 'whole', got {mode!r}")
    pixels = geometry(v2.functional.pil_to_tensor(image))  # (3, H, W) uint8
    # A copy: the centre crop is a view, which kept the whole resized image alive with the input
    # (a 1080p video frame at 1,024 px: 5.3 MiB a frame, not 3; explorer.video.frame_bytes).
    kept = np.ascontiguousarray(pixels.permute(1, 2, 0).numpy())
    return ModelInput(kept, pre.normalize(pixels).unsqueeze(0), policy)


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
    def nbytes(self) -> int:
        """Memory held: the attention maps, the model input and its pixels."""
        return sum(a.nbytes for a in self.attention) + self.input.tensor.nbytes + self.input.pixels.nbytes

    @property
    def has_prefix(self) -> bool:
        """Any prefix token (CLS, distillation, registers): the patch maps leave something out."""
        return self.attention.prefix_tokens > 0

    @property
    def has_cls(self) -> bool:
        """A CLS token, the default query; without one the default is the mean patch query."""
        return "cls" in self.attention.prefix_names

    @property
    def prefix_names(self) -> tuple[str, ...]:
        """The prefix tokens in sequence order: 'cls', 'dist', 'reg1', ... (AttentionMaps)."""
        return self.attention.prefix_names

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

    def prefix_attention(self, query: Query = None) -> np.ndarray:
        """(layers, heads, prefix_tokens): the query's attention to the prefix tokens (CLS),
        which `query_maps` leaves out."""
        return query_prefix_attention(self.attention, query)[0].numpy()

    def rollout_prefix(
        self, head_fusion: HeadFusion = "mean", discard_ratio: float = 0.0, query: Query = None
    ) -> np.ndarray:
        """(prefix_tokens,): the rollout's share on the prefix tokens, which `rollout` leaves out."""
        return rollout_prefix_attention(self.attention, head_fusion, discard_ratio, query)[0].numpy()

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


Forward = Callable[[Tensor], tuple[Tensor, AttentionMaps]]  # (1, 3, H, W) -> (logits, maps), on the CPU


def model_maps(model: VisionTransformer, tensor: Tensor) -> tuple[Tensor, AttentionMaps]:
    """One forward pass with attention over `tensor` (B, 3, H, W) on the model's device:
    (logits (B, classes), the attention maps), float32 on the CPU."""
    with torch.inference_mode():
        logits, attention = model(to_model(model, tensor), need_weights=True)
    return logits.float().cpu(), attention.apply(lambda a: a.float().cpu())


def forward_maps(loaded: LoadedModel, tensor: Tensor) -> tuple[Tensor, AttentionMaps]:
    """Task (explorer/compute.py): `model_maps` of the loaded model."""
    return model_maps(loaded.model, tensor)


def forward_cost(loaded: LoadedModel, tensor: Tensor) -> float:
    """GPU seconds of `forward_maps` (explorer/compute.py's estimate)."""
    return pass_seconds(loaded.model, tensor.shape[-2:], tensor.shape[0])


def explain(
    model: VisionTransformer,
    class_names: list[str],
    pre: Preprocessing,
    image: Image.Image,
    mode: Mode = "crop",
    top_k: int = 5,
    max_bytes: int | None = None,
    forward: Forward | None = None,
) -> Explanation:
    """Run `model` once on `image` and keep everything the views need. With `max_bytes`, an
    input whose attention maps would take more is refused (ExplanationTooLarge) before the
    forward pass. `forward` runs the pass elsewhere (a ZeroGPU worker: ui/zerogpu.py); by
    default `model` runs here."""
    inp = model_input(image, pre, model.config.patch_size, mode)
    needed = attention_bytes(model, tuple(inp.tensor.shape[-2:]))
    if max_bytes is not None and needed > max_bytes:
        raise ExplanationTooLarge(
            f"this image's attention maps would take {needed / 2**20:,.0f} MiB, more than this server's "
            f"{max_bytes / 2**20:,.0f} MiB budget: use the centre-crop mode or a smaller model"
        )
    logits, attention = (forward or partial(model_maps, model))(inp.tensor)
    # a model without a classifier (DINO, DINOv2, DINOv3) returns features: no predictions
    probabilities = top_classes(logits[0], class_names, top_k) if model.config.num_classes > 0 else {}
    return Explanation(inp, (image.height, image.width), model.config.patch_size, probabilities, attention)


def top_classes(logits: Tensor, class_names: list[str], k: int) -> dict[str, float]:
    """The `k` most probable classes of one image's logits (classes,), as name -> probability."""
    probs = logits.float().softmax(-1)
    top = probs.topk(min(k, probs.numel()))
    return {class_names[i]: float(p) for p, i in zip(top.values, top.indices, strict=True)}


# Peak memory of one request / its attention maps, measured (RSS, 8 layers x 32 heads, 577
# tokens, 325 MiB of maps): the forward pass 1.1, /analyze's views 3.1, relevance 3.3 (its
# backward pass keeps every map's gradient), the GIF 3.2. Rounded up: a request on an input
# whose maps take M bytes may compute about REQUEST_FACTOR x M.
REQUEST_FACTOR = 4


def attention_bytes(model: VisionTransformer, input_size: tuple[int, int]) -> int:
    """Bytes the float32 attention maps of one (H, W) input take: layers x heads x tokens²
    x 4. Known before the forward pass, so a too-large request is refused before allocating."""
    gh, gw = model.patch_grid(*input_size)
    tokens = model.prefix_tokens + gh * gw
    return model.config.depth * model.config.heads * tokens * tokens * 4


class ExplanationTooLarge(ValueError):
    """One explanation would exceed the server's memory budget; the message says what to do."""


class ExplanationStore:
    """Every session's explanations in one cache bounded in bytes, kept by the whole server.

    Keys are `ExplanationKey`s (image content, model, mode, and who may share the entry), so
    visitors of one network looking at the same picture share one forward pass, whatever its file
    is called; a key lives in its session's state on the server, so a visitor can only name an
    entry whose image they hold. Least recently used entries go first; a session whose entry was
    evicted recomputes it from its upload on its next request.

    Shared across networks are only the pictures in `public` (sha256 of their bytes: the app's
    own examples, which anyone may fetch): an answer from the store comes in a fraction of a
    fresh pass's time, so a store shared by all would tell any visitor whether anyone anywhere
    had analysed a given photo (issue 56). Within one network (a class behind its school's
    router) the pass is shared, which is what a class needs: one forward pass for the room.
    """

    def __init__(
        self, max_bytes: int = 2 * 1024**3, max_request_bytes: int | None = None, public: Collection[str] = ()
    ):
        self.max_bytes = max_bytes
        self.max_request_bytes = max_request_bytes  # what one request may compute (REQUEST_FACTOR x its maps)
        self.public = frozenset(public)  # contents every network shares (`sharing`)
        self._items: OrderedDict[Hashable, Explanation] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._computing: dict[Hashable, threading.Lock] = {}

    @property
    def nbytes(self) -> int:
        return self._bytes

    @property
    def maps_budget(self) -> int:
        """Bytes the attention maps of one explanation may take: what the store can hold, and
        what one request may compute (whole mode can hold 16 x crop's maps)."""
        if self.max_request_bytes is None:
            return self.max_bytes
        return min(self.max_bytes, self.max_request_bytes // REQUEST_FACTOR)

    def sharing(self, content: str, network: str | None) -> str:
        """Who may share the entry of a picture with sha256 `content` asked for from `network`:
        "" (everyone) for a public picture or a caller that names no network (a benchmark, a
        script in this process), else that network."""
        return "" if network is None or content in self.public else network

    def peek(self, key: Hashable) -> Explanation | None:
        """The entry for `key` if it is still held (marking it recently used), else None."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
            return self._items.get(key)

    def get(self, key: Hashable, compute: Callable[[], Explanation]) -> Explanation:
        """The entry for `key`, computed once (other sessions asking meanwhile wait for it)."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            key_lock = self._computing.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._items:
                    return self._items[key]
            ex = compute()
            with self._lock:
                self._computing.pop(key, None)
                self._put(key, ex)
            return ex

    def _put(self, key: Hashable, ex: Explanation) -> None:
        size = ex.nbytes
        if size > self.max_bytes:
            return  # served once, never kept: explain() refuses what cannot fit at all
        while self._items and self._bytes + size > self.max_bytes:
            _, old = self._items.popitem(last=False)
            self._bytes -= old.nbytes
        self._items[key] = ex
        self._bytes += size


@dataclass(frozen=True)
class ExplanationKey:
    """Which analysis a session shows, its key in the server's `ExplanationStore`: the image by
    its content (two visitors' copies of the same picture under different names share one
    forward pass), and the model object's id (not just its key) to tell apart two catalogues'
    "bundled" models in one process. The session's own file goes along, outside the key's
    identity: the upload box shows it again after a refused upload. `within`: the network whose
    sessions share the entry, "" for all (`ExplanationStore.sharing`)."""

    path: str = field(compare=False)
    model_key: str
    model_id: int
    mode: str
    content: str  # sha256 of the file's bytes
    within: str = ""


def content_digest(path: str) -> str:
    """sha256 of a file's bytes, read in 1 MiB pieces (uploads are bounded: docs/security.md)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for piece in iter(partial(f.read, 2**20), b""):
            digest.update(piece)
    return digest.hexdigest()


def explain_file(
    loaded: LoadedModel,
    path: str,
    mode: Mode,
    store: ExplanationStore | None = None,
    forward: Forward | None = None,
    network: str | None = None,
) -> tuple[ExplanationKey, Explanation]:
    """The analysis of an image file by a loaded model, its key beside it: decoded, refused past
    the store's `maps_budget` before the forward pass, and run once for every session of
    `network` asking for the same (image content, model, mode) while the store keeps it (for
    every session, a public picture's: `ExplanationStore.sharing`; None: no caching, no budget,
    as the benchmarks measure). `forward` runs the pass elsewhere (a ZeroGPU worker)."""
    content = content_digest(path)
    within = store.sharing(content, network) if store else ""
    key = ExplanationKey(path, loaded.key, id(loaded.model), mode, content, within)

    def forward_pass() -> Explanation:
        budget = store.maps_budget if store else None
        image, names = load_image(path), loaded.meta.class_names
        return explain(loaded.model, names, loaded.preprocessing, image, mode, max_bytes=budget, forward=forward)

    below_the_clicks = partial(FORWARD_PASSES.run, forward_pass)  # decoding and the pass (explorer/priority.py)
    return key, store.get(key, below_the_clicks) if store else below_the_clicks()
