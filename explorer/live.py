"""One webcam frame in, the pictures of the Live view out. No Gradio: ui/live.py calls these.

A frame arrives as the browser sends it, a `data:image/jpeg;base64,...` URL (Gradio's
webcam stream), and is decoded here, in memory: frames are never written to disk. Its size is
checked from the image header before the pixels are decoded, as explorer/images.py does for
uploads. What goes back is numbers, not pictures (issue 41): the model input, the chosen
layer's row of the query in every head, and the rollout, which the page draws as the Explore
tab's own views (ui/js/live.js, LiveMaps, step for step as explorer/render.py), so a live frame
and an uploaded photo of the same scene look alike. Drawing them on the server took 16 to 25 ms
of a ViT-S/16 frame's CPU; the numbers take 6.5, and the page draws more frames a second
(docs/benchmarks-app.md, "Live view").
"""

from __future__ import annotations

import base64
import binascii
import io
import re
import time
import warnings
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError

from vit.analysis import Query

from . import page_maps, render, texts, views
from .canvas import TEXT_PX, MapStyle, bar_text
from .explain import Explanation, explain
from .images import to_rgb
from .loaded import LoadedModel

MAX_FRAME_PIXELS = 3840 * 2160  # a 4K webcam; a frame's side must also fit MAX_FRAME_SIDE
MAX_FRAME_SIDE = 4096
MAX_URL_CHARS = 16 * 2**20  # base64 text of one frame, checked before decoding it
_DATA_URL = re.compile(r"data:image/(jpeg|png|webp);base64")
FORMATS = {"JPEG", "PNG", "WEBP"}
ROLLOUT_FUSION, ROLLOUT_DISCARD = "mean", 0.0  # rollout as Abnar & Zuidema define it, no options live
# The rollout is drawn relative to uniform (a diverging map centred on 1/N: render.relative_picture):
# a rollout spans a narrow band around uniform, so coloured from 0 every patch looked alike and the
# object held up to the camera vanished (what issue 19 found in Explore, whose default stays
# "weights" beside the choice).


class FrameError(ValueError):
    """A frame that cannot be used; the message says why."""


def decode_frame(data_url: object) -> Image.Image:
    """An RGB image from a JPEG, PNG or WebP `data:` URL, its size checked before decoding."""
    if not isinstance(data_url, str):
        raise FrameError("a webcam frame must be a data:image/...;base64 URL")
    header, comma, body = data_url.partition(",")
    if not comma or not _DATA_URL.fullmatch(header):
        raise FrameError("a webcam frame must be a data:image/jpeg, png or webp URL in base64")
    if len(body) > MAX_URL_CHARS:
        raise FrameError(f"the frame is too large: at most {MAX_URL_CHARS // 2**20} MiB of base64 text")
    try:
        raw = base64.b64decode(body, validate=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(raw), formats=sorted(FORMATS)) as im:
                w, h = im.size  # from the header: nothing decoded yet
                if w * h > MAX_FRAME_PIXELS or max(w, h) > MAX_FRAME_SIDE:
                    raise FrameError(f"the frame is {w} × {h} px; at most {MAX_FRAME_PIXELS:,} pixels are accepted")
                im.load()
                return to_rgb(im)
    except (binascii.Error, UnidentifiedImageError) as e:
        raise FrameError("the frame is not a JPEG, PNG or WebP image") from e
    except (Image.DecompressionBombError, Image.DecompressionBombWarning, OSError, SyntaxError, EOFError) as e:
        raise FrameError(f"the frame is truncated or corrupt: {e}") from e


@dataclass(frozen=True)
class LiveFrame:
    """What the Live view shows for one frame, and what it cost."""

    numbers: dict[str, Any]  # what the page draws the frame's pictures from (`frame_numbers`)
    predictions: dict[str, float]  # top classes (empty for a model without a classifier)
    model_ms: float  # preprocessing and the forward pass
    numbers_ms: float  # the numbers made and encoded


def live_frame(
    loaded: LoadedModel,
    frame: Image.Image,
    query: Query,
    layer: int,
    style: MapStyle,
    max_bytes: int | None = None,
    text_px: int = TEXT_PX,
    model: str = "",
) -> LiveFrame:
    """The Live view of one frame: one forward pass, then the numbers of its pictures for
    `layer` (0-based) and `query`, both checked by the caller against the model. A model whose
    attention maps would take more than `max_bytes` is refused (ExplanationTooLarge). Their
    text is `text_px` high; `model` names the model in their descriptions."""
    started = time.perf_counter()
    pre = loaded.preprocessing
    ex = explain(loaded.model, loaded.meta.class_names, pre, frame, "crop", top_k=3, max_bytes=max_bytes)
    computed = time.perf_counter()
    numbers = frame_numbers(ex, query, layer, style, text_px, model)
    done = time.perf_counter()
    return LiveFrame(numbers, ex.probabilities, 1000 * (computed - started), 1000 * (done - computed))


def frame_numbers(ex: Explanation, query: Query, layer: int, style: MapStyle, text_px: int, model: str) -> dict:
    """What the page draws one frame from (ui/js/live.js, LiveMaps): the Explore tab's numbers
    (explorer/page_maps.py) cut to one layer (0-based) and one query, with the model input as raw
    RGB (the tiles' images are resized from it in the page: a frame is 9 kB for the bundled model,
    210 kB for ViT-S/16, where its three JPEG pictures took 190 kB) and the rollout's values, drawn
    relative to uniform (its colour bar's words decided here, as the Explore tab's are)."""
    gh, gw = ex.grid
    maps, shares = ex.query_maps(query)[layer], ex.prefix_attention(query)[layer]  # (H, gh, gw), (H, P)
    row = np.concatenate([shares, maps.reshape(ex.heads, gh * gw)], axis=-1)[None]  # (1, H, T)
    rollout = ex.rollout(ROLLOUT_FUSION, ROLLOUT_DISCARD).astype(np.float32)  # (gh, gw)
    uniform = views.uniform_value(rollout)
    ratio, top = render.relative_values(rollout, uniform)  # what the page colours, and the scale's top
    note = texts.describe_rollout(ex, ROLLOUT_FUSION, ROLLOUT_DISCARD)
    return {
        "grid": [gh, gw],
        "patch": ex.patch_size,
        "heads": ex.heads,
        "prefix": list(ex.prefix_names),
        "has_cls": ex.has_cls,
        "text_px": text_px,
        "input": {**page_maps.rgb(ex.input.pixels), "scale": views.input_scale(ex)},
        "layouts": page_maps.tile_layouts(ex, text_px),
        "text": page_maps.text(ex, model),
        "query": page_query(ex, query),
        "layer": layer + 1,
        "style": asdict(style),
        # not deflated: a frame is drawn as it comes, many a second, and inflating is asynchronous;
        # every part, as the page restyles the last frame without asking (ui/js/live.js, LiveMaps)
        "rows": {
            "bytes": base64.b64encode(page_maps.rows_bytes(row, ex.prefix_names)).decode(),
            "parts": list(page_maps.PARTS),
        },
        "rollout": {
            "values": page_maps.b64(ratio.astype(np.float32)),  # multiples of uniform, as render.relative_picture
            "top": top,
            "bar": bar_text(0.0, top, render.RELATIVE_CENTRE),
            "centre": render.RELATIVE_CENTRE,
            "side": views.ROLLOUT_PX,
            "title": views.rollout_title(ex),
            "note": f"{note} {views.uniform_note(uniform, rollout.size)}.",
            "label": render.relative_label(uniform, rollout.size),
            "alt": f"Attention rollout through all layers, query: {texts.query_label(ex, None)}, each patch relative "
            "to uniform (red above an even share, blue below), with its colour bar",
            "cmap": render.RELATIVE_CMAP,
        },
    }


def page_query(ex: Explanation, query: Query) -> dict[str, int] | None:
    """The query as the page names it: None for the default (CLS, or the mean patch of a model
    without CLS), {"token": i} for the i-th of page_maps.query_tokens, {"row", "col"} (0-based)."""
    if isinstance(query, tuple):
        return {"row": query[0], "col": query[1]}
    return None if query is None else {"token": page_maps.query_tokens(ex).index(query)}


def data_url(image: Image.Image) -> str:
    """`image` as a JPEG `data:` URL, as the browser sends a webcam frame (the benchmark's frames)."""
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, "JPEG", quality=90)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
