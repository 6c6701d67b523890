"""One webcam frame in, the pictures of the Live view out. No Gradio: ui/live.py calls these.

A frame arrives as the browser sends it, a `data:image/jpeg;base64,...` URL (Gradio's
webcam stream), and is decoded here, in memory: frames are never written to disk. Its size is
checked from the image header before the pixels are decoded, as explorer/images.py does for
uploads. The pictures are the Explore tab's own views (explorer/views.py) of one forward pass,
so a live frame and an uploaded photo of the same scene look alike.
"""

from __future__ import annotations

import base64
import binascii
import io
import re
import time
import warnings
from dataclasses import dataclass

from PIL import Image, UnidentifiedImageError

from vit.analysis import Query

from . import controls, views
from .canvas import TEXT_PX, MapStyle
from .explain import explain
from .images import to_rgb
from .loaded import LoadedModel

MAX_FRAME_PIXELS = 3840 * 2160  # a 4K webcam; a frame's side must also fit MAX_FRAME_SIDE
MAX_FRAME_SIDE = 4096
MAX_URL_CHARS = 16 * 2**20  # base64 text of one frame, checked before decoding it
_DATA_URL = re.compile(r"data:image/(jpeg|png|webp);base64")
FORMATS = {"JPEG", "PNG", "WEBP"}
ROLLOUT_FUSION, ROLLOUT_DISCARD = "mean", 0.0  # rollout as Abnar & Zuidema define it, no options live
# Relative to uniform (a diverging map centred on 1/N): a rollout spans a narrow band around
# uniform, so coloured from 0 every patch looked alike and the object held up to the camera
# vanished (what issue 19 found in Explore, whose default stays "weights" beside the choice).
ROLLOUT_SHOW = "relative"
JPEG_QUALITY = 90  # the pictures sent back: JPEG encodes ~20x faster than PNG here, text stays legible


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

    input: Image.Image  # the model input with its patch grid (the query patch outlined)
    heads: Image.Image  # every head of the chosen layer, with its colour bar
    rollout: Image.Image  # attention rollout through all layers, with its colour bar
    predictions: dict[str, float]  # top classes (empty for a model without a classifier)
    model_ms: float  # preprocessing and the forward pass
    drawing_ms: float


def live_frame(
    loaded: LoadedModel,
    frame: Image.Image,
    query: Query,
    layer: int,
    style: MapStyle,
    max_bytes: int | None = None,
    text_px: int = TEXT_PX,
) -> LiveFrame:
    """The Live view of one frame: one forward pass, then the Explore tab's views of it for
    `layer` (0-based) and `query`, both checked by the caller against the model. A model whose
    attention maps would take more than `max_bytes` is refused (ExplanationTooLarge). Their
    words are `text_px` high."""
    started = time.perf_counter()
    pre = loaded.preprocessing
    ex = explain(loaded.model, loaded.meta.class_names, pre, frame, "crop", top_k=3, max_bytes=max_bytes)
    computed = time.perf_counter()
    pictures = (
        views.input_view(ex, query),
        views.heads(ex, query, layer, style, text_px=text_px),
        views.rollout(
            ex, controls.Fusion(ROLLOUT_FUSION, ROLLOUT_DISCARD), style, controls.Showing(ROLLOUT_SHOW), text_px
        ),
    )
    drawn = time.perf_counter()
    return LiveFrame(*pictures, ex.probabilities, 1000 * (computed - started), 1000 * (drawn - computed))


def data_url(image: Image.Image) -> str:
    """`image` as a JPEG `data:` URL, for the page to show without a file on disk."""
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=JPEG_QUALITY)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
