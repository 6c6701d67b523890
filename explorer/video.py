"""A short clip in, an attention video out: every frame beside the chosen layer's head maps,
on one colour scale for the whole clip. No Gradio; PyAV (FFmpeg) decodes and encodes.

The clip is checked before a frame is decoded, from its container's header: its size in
pixels and, where the header says them, its length and frame count (`VideoLimits`). A header
that does not say (a browser's WebM recording often does not) is held to the frame limit while
decoding, so the work stays bounded either way. Only the MP4/MOV and Matroska/WebM demuxers are
used: a file that is really a playlist (HLS, concat) could make FFmpeg read other files.

Two passes, so the colour scale is known before the first frame is drawn: (1) decode each
frame, preprocess it as the model's own `Preprocessing` says (centre crop), run the model in
batches, keep the model input and the chosen layer's maps; (2) draw each frame with
`render.head_grid` at the clip's scale and encode it as H.264 (yuv420p, plays everywhere).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial
from pathlib import Path
from typing import NoReturn

import av
import numpy as np
import torch
from PIL import Image

from vit import AttentionMaps
from vit.analysis import Query, query_attention, query_prefix_attention
from vit.messages import quoted

from . import canvas, render, texts, views
from .canvas import MapStyle
from .compute import forward_flops, pass_seconds, run_here, to_model
from .explain import Explanation, ExplanationTooLarge, attention_bytes, model_input
from .loaded import LoadedModel

DEMUXERS = ("mov", "matroska")  # MP4, MOV, M4V; MKV, WebM: containers that never name other files
# What cameras, phones and browsers record. Other codecs (PNG, QuickTime RLE, FFV1...) carry
# 16-bit RGBA frames whose size the header need not tell: a 11.9 MB MOV whose header said
# 64 × 64 held 16000 × 16000 frames (+5.5 GB for one request).
CODECS = ("h264", "hevc", "vp8", "vp9", "av1", "mpeg4")
BATCH_BYTES = 256 * 2**20  # attention maps of one batch of frames
MAX_BATCH = 16
# Every frame's model input, kept for the clip's one forward pass (300 frames at 224 px: 389 MiB,
# `frame_bytes`): a model at 1,024 px fits 40 frames.
CLIP_INPUT_BYTES = 512 * 2**20
# A clip's passes (compute.forward_flops): 300 frames of ViT-B/16 at 224 px (197 tokens, 35 GFLOP
# a frame: 10.5 TFLOP); ViT-S/16 takes 300 frames with room, ViT-L/16 about 90. The export has a
# queue of its own (ui/concurrency.py), so even a clip at this bound never holds Explore's slots.
CLIP_FLOPS = 11e12
# What an export holds beyond its frames' inputs and the maps (`clip_bytes`): the decoder's frames,
# the pictures drawn and the encoder's buffers. Measured on a warm process (bench.request_memory, a
# crop-1,024 checkpoint of 253 MiB of maps a frame, 1080p clips): 3 frames +627 MiB, 15 frames +963
# (estimated 1,011): 28 MiB a frame over 2 frames' maps and one layer's scores, nothing fixed beyond.
EXPORT_FIXED_BYTES = 64 * 2**20
INPUT_PX = 2 * views.HEAD_PX  # height of the model input drawn beside the head tiles
Progress = Callable[[str, int, int], None]  # (stage, done, total)


class VideoError(ValueError):
    """A clip this app cannot or will not use; the message says why."""


@dataclass(frozen=True)
class VideoLimits:
    """The largest clip accepted (docs/security.md): decoding and the model cost grow with each."""

    max_seconds: float = 20.0
    max_frames: int = 300  # 10 s at 30 frames per second
    max_pixels: int = 1920 * 1080  # per frame
    max_side: int = 3840
    min_fps: float = 1.0  # a clip at 10⁻⁶ frames/s with no duration made a video claiming 10,000,000 s


@dataclass(frozen=True)
class ClipInfo:
    """What the container's header says: frames (0 if it does not say), frames per second,
    seconds (0 if it does not say), width and height in pixels."""

    frames: int
    fps: float
    seconds: float
    width: int
    height: int


@dataclass
class ClipMaps:
    """Pass 1's result: per frame the model input (H, W, 3) uint8 and the chosen layer's maps
    (heads, gh, gw) and attention to the prefix tokens (heads, prefix)."""

    pixels: list[np.ndarray] = field(default_factory=list)
    maps: list[np.ndarray] = field(default_factory=list)
    prefix: list[np.ndarray] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=lambda: {"decode": 0.0, "preprocess": 0.0, "model": 0.0})


def _open(path: str | Path, limits: VideoLimits) -> av.container.InputContainer:
    """The clip, opened by an allowed demuxer. `max_pixels` bounds the frames FFmpeg may decode
    while it reads the streams' parameters (avformat_find_stream_info decodes some)."""
    options = {"enable_drefs": "0", "max_pixels": str(limits.max_pixels)}
    for demuxer in DEMUXERS:
        try:
            return av.open(str(path), format=demuxer, options=options)
        except (av.error.FFmpegError, OSError):
            continue
    raise VideoError("the file is not a video this app can read: upload an MP4, MOV or WebM clip")


def probe(path: str | Path, limits: VideoLimits = VideoLimits()) -> ClipInfo:
    """The clip's header, checked against `limits` before any frame is decoded."""
    with _open(path, limits) as container:
        stream = _video_stream(container, limits)
        width, height = stream.codec_context.width, stream.codec_context.height
        fps = float(stream.average_rate or stream.guessed_rate or 0)
        if stream.duration is not None and stream.time_base is not None:
            seconds = float(stream.duration * stream.time_base)
        else:
            seconds = container.duration / av.time_base if container.duration else 0.0
        frames = stream.frames or (round(seconds * fps) if seconds and fps else 0)
    info = ClipInfo(frames, fps, seconds, width, height)
    _check(info, limits)
    return info


def _video_stream(container: av.container.InputContainer, limits: VideoLimits) -> av.VideoStream:
    """The clip's video stream, its codec one of CODECS, its decoder bounded before a frame is
    decoded: FFmpeg refuses a frame over `limits.max_pixels` before allocating it (whatever the
    header said), and decodes one frame at a time (frame threads held several frames at once)."""
    if not container.streams.video:
        raise VideoError("the file has no video track")
    stream = container.streams.video[0]
    codec = stream.codec_context.codec.canonical_name
    if codec not in CODECS:
        raise VideoError(f"the clip's codec {quoted(codec)} is not one this app decodes: re-encode it as MP4 (H.264)")
    stream.codec_context.options = {"max_pixels": str(limits.max_pixels)}
    stream.thread_type = "SLICE"  # threads within one frame, never frames in parallel
    return stream


def _check(info: ClipInfo, limits: VideoLimits) -> None:
    if info.width < 1 or info.height < 1 or info.fps <= 0:
        raise VideoError("the clip's header gives no frame size or frame rate: re-encode it as MP4 (H.264)")
    if info.width * info.height > limits.max_pixels or max(info.width, info.height) > limits.max_side:
        raise VideoError(
            f"the clip is {info.width} × {info.height} px; at most {limits.max_pixels:,} pixels per frame "
            f"and {limits.max_side} px a side are accepted: scale it down"
        )
    if info.fps < limits.min_fps:
        raise VideoError(
            f"the clip's header gives {info.fps:.3g} frames per second; at least {limits.min_fps:g} are accepted: "
            "re-encode it as MP4 (H.264)"
        )
    if info.seconds > limits.max_seconds:
        raise VideoError(f"the clip lasts {info.seconds:.1f} s; at most {limits.max_seconds:g} s are accepted: trim it")
    if info.frames > limits.max_frames:
        raise VideoError(
            f"the clip has {info.frames} frames; at most {limits.max_frames} are accepted "
            f"({limits.max_frames // 30} s at 30 frames per second): trim it or lower its frame rate"
        )


def _frames(path: str | Path, limits: VideoLimits) -> Iterator[Image.Image]:
    """The clip's frames as RGB images, refusing a clip with more than `limits.max_frames`."""
    with _open(path, limits) as container:
        stream = _video_stream(container, limits)
        decoded = container.decode(stream)
        for index in range(limits.max_frames + 1):
            try:
                frame = next(decoded, None)
            except av.error.FFmpegError as e:
                raise VideoError(
                    f"the clip is corrupt after frame {index}, or a frame has more than {limits.max_pixels:,} "
                    "pixels: re-encode it as MP4 (H.264)"
                ) from e
            if frame is None:
                return
            if index >= limits.max_frames:
                raise VideoError(f"the clip has more than {limits.max_frames} frames: trim it")
            if frame.width * frame.height > limits.max_pixels:
                raise VideoError(f"a frame of the clip is {frame.width} × {frame.height} px: scale the clip down")
            yield frame.to_image()


def _timed(frames: Iterator[Image.Image], seconds: dict[str, float]) -> Iterator[Image.Image]:
    """`frames`, adding the time spent decoding each to seconds["decode"]."""
    while True:
        started = time.perf_counter()
        image = next(frames, None)
        seconds["decode"] += time.perf_counter() - started
        if image is None:
            return
        yield image


def _batch_size(loaded: LoadedModel, frames: int, max_bytes: int | None) -> int:
    """Frames per forward pass: as many as fit BATCH_BYTES of attention maps (at most MAX_BATCH),
    fewer when an export of `frames` frames would pass `max_bytes` (`clip_bytes`); at least one."""
    crop = loaded.preprocessing.crop_size
    most = max(1, min(MAX_BATCH, BATCH_BYTES // attention_bytes(loaded.model, (crop, crop))))
    if max_bytes is None:
        return most
    return max([b for b in range(1, most + 1) if clip_bytes(loaded, frames, b) <= max_bytes], default=1)


def layer_maps(
    loaded: LoadedModel, tensors: torch.Tensor, query: Query, layer: int, batch: int
) -> tuple[np.ndarray, np.ndarray, AttentionMaps]:
    """Task (explorer/compute.py): every frame's `layer` (0-based) maps for `query`, `batch`
    frames per pass over `tensors` (frames, 3, H, W): (maps (frames, heads, gh, gw), attention
    to the prefix tokens (frames, heads, prefix), the first frame's whole AttentionMaps, for
    its captions), on the CPU. Only the chosen layer crosses back, not every layer's maps."""
    maps, prefix, first = [], [], None
    for start in range(0, len(tensors), batch):
        with torch.inference_mode():
            _, attention = loaded.model(to_model(loaded.model, tensors[start : start + batch]), need_weights=True)
        maps.append(query_attention(attention, query)[:, layer].float().cpu())  # (B, heads, gh, gw)
        prefix.append(query_prefix_attention(attention, query)[:, layer].float().cpu())  # (B, heads, prefix)
        # a copy of the first frame's maps: a view would keep its whole batch through the next passes
        first = first or attention.apply(lambda a: a[:1].to("cpu", torch.float32, copy=True))
        del attention  # before the next pass, which would otherwise make its maps beside these (clip_bytes)
    assert first is not None, "layer_maps needs at least one frame"
    return torch.cat(maps).numpy(), torch.cat(prefix).numpy(), first


def layer_maps_cost(loaded: LoadedModel, tensors: torch.Tensor, *_: object) -> float:
    """GPU seconds of `layer_maps`: one forward pass per frame (explorer/compute.py's estimate)."""
    return pass_seconds(loaded.model, tensors.shape[-2:], len(tensors))


def frame_bytes(loaded: LoadedModel) -> int:
    """Bytes one frame keeps until the clip's pass: its model input (float32, 3 × crop²) twice
    (each frame's, and the clip's one tensor made of them) and its pixels (uint8, 3 × crop²)."""
    crop = loaded.preprocessing.crop_size
    return 2 * 3 * crop * crop * 4 + 3 * crop * crop


def clip_bytes(loaded: LoadedModel, frames: int, batch: int) -> int:
    """Peak bytes of an export of `frames` frames, `batch` a forward pass: every frame's input
    (`frame_bytes`), the batch's attention maps and the first frame's (kept for the captions), one
    layer's scores before their softmax for each frame of the batch, and EXPORT_FIXED_BYTES."""
    crop = loaded.preprocessing.crop_size
    one = attention_bytes(loaded.model, (crop, crop))
    scores = batch * one // loaded.model.config.depth
    return frames * frame_bytes(loaded) + (batch + 1) * one + scores + EXPORT_FIXED_BYTES


def check_clip_inputs(loaded: LoadedModel, frames: int, max_bytes: int | None = None) -> None:
    """Refuse, before decoding, a clip whose frames would keep over CLIP_INPUT_BYTES (every
    frame's input is kept for the one pass of `layer_maps`), whose export would take more memory
    than `max_bytes` even one frame a pass (`clip_bytes`), or whose passes would take more than
    CLIP_FLOPS: all grow with the model's input size and tokens, so a model at 1,024 px takes
    fewer frames than one at 224 px."""
    crop = loaded.preprocessing.crop_size
    needed = frames * frame_bytes(loaded)
    if needed > CLIP_INPUT_BYTES:
        raise VideoError(
            f"{frames} frames at this model's {crop} × {crop} px input would take {needed / 2**20:,.0f} MiB, more "
            f"than this server's {CLIP_INPUT_BYTES / 2**20:,.0f} MiB: trim the clip or use a smaller model"
        )
    if max_bytes is not None and clip_bytes(loaded, frames, 1) > max_bytes:
        _refuse_memory(loaded, frames, max_bytes)
    tokens = math.prod(loaded.model.patch_grid(crop, crop)) + len(loaded.model.config.prefix_names)
    work = forward_flops(loaded.model.config, tokens, frames)
    if work > CLIP_FLOPS:
        most = int(CLIP_FLOPS // forward_flops(loaded.model.config, tokens))
        raise VideoError(
            f"{frames} frames through this model ({tokens:,} tokens a frame at {crop} × {crop} px) would take "
            f"{work / 1e12:,.1f} TFLOP, more than this server's {CLIP_FLOPS / 1e12:,.1f} for one clip: trim the clip "
            f"to {most} frames or use a smaller model"
        )


def _refuse_memory(loaded: LoadedModel, frames: int, max_bytes: int) -> NoReturn:
    """The VideoError of an export over `max_bytes`: the frames that would fit, if any."""
    crop, budget = loaded.preprocessing.crop_size, f"{max_bytes / 2**20:,.0f} MiB"
    most = (max_bytes - clip_bytes(loaded, 0, 1)) // frame_bytes(loaded)
    if most < 1:
        one = attention_bytes(loaded.model, (crop, crop)) / 2**20
        raise ExplanationTooLarge(
            f"one frame's attention maps take {one:,.0f} MiB with this model at {crop} × {crop} px: a video would "
            f"take more memory than the {budget} one request may use on this server; use a smaller model"
        )
    needed = clip_bytes(loaded, frames, 1) / 2**20
    raise VideoError(
        f"{frames} frames with this model at {crop} × {crop} px would take about {needed:,.0f} MiB of memory, more "
        f"than the {budget} one request may use on this server: trim the clip to {most} frames or use a smaller model"
    )


def clip_maps(
    loaded: LoadedModel,
    path: str | Path,
    query: Query,
    layer: int,
    limits: VideoLimits = VideoLimits(),
    progress: Progress | None = None,
    total: int = 0,
    max_bytes: int | None = None,
    run: Callable[..., tuple[np.ndarray, np.ndarray, AttentionMaps]] | None = None,
) -> tuple[ClipMaps, Explanation]:
    """Pass 1: the model input and `layer`'s (0-based) maps of every frame for `query`, and
    the first frame's Explanation (what the captions say about the model and the query). The
    export is held to `max_bytes` (what one request may use: `clip_bytes`) before it starts.
    `run(loaded, ...)` runs `layer_maps` (a ZeroGPU worker: one GPU call for the whole clip);
    by default it runs here."""
    out, inputs = ClipMaps(), []
    check_clip_inputs(loaded, max(total, 1), max_bytes)
    for image in _timed(_frames(path, limits), out.seconds):
        started = time.perf_counter()
        inputs.append(model_input(image, loaded.preprocessing, loaded.model.config.patch_size, "crop"))
        out.seconds["preprocess"] += time.perf_counter() - started
        check_clip_inputs(loaded, len(inputs), max_bytes)  # a header may under-count frames
    if not inputs:
        raise VideoError("the clip has no frames")
    size = _batch_size(loaded, len(inputs), max_bytes)
    if progress:
        progress("model", 0, len(inputs))
    started = time.perf_counter()
    tensors = torch.cat([inp.tensor for inp in inputs])  # (frames, 3, H, W)
    maps, prefix, first = (run or partial(run_here, layer_maps))(loaded, tensors, query, layer, size)
    out.seconds["model"] += time.perf_counter() - started
    out.maps, out.prefix, out.pixels = list(maps), list(prefix), [inp.pixels for inp in inputs]
    size_hw = (image.height, image.width)
    return out, Explanation(inputs[0], size_hw, loaded.model.config.patch_size, {}, first)


def clip_tops(maps: np.ndarray, scale: str) -> np.ndarray:
    """(heads,) the value of each head's top colour over a whole clip's (frames, heads, gh, gw)
    maps: the largest of all ("layer"), each head's own largest ("head"), or 1 ("fixed")."""
    if scale == "fixed":
        return np.ones(maps.shape[1])
    if scale == "head":
        return maps.max(axis=(0, 2, 3))
    return np.full(maps.shape[1], maps.max())


@dataclass(frozen=True)
class VideoReport:
    """What was made: the clip's header, the frames drawn, and seconds per stage
    (decode, preprocess, model, draw, encode)."""

    info: ClipInfo
    frames: int
    seconds: dict[str, float]


def frame_picture(
    first: Explanation,
    clip: ClipMaps,
    i: int,
    fps: float,
    query: Query,
    layer: int,
    style: MapStyle,
    tops: np.ndarray,
    text_px: int = canvas.TEXT_PX,
) -> Image.Image:
    """Frame `i` (0-based) of the attention video: the model input beside the head maps of
    `layer` (0-based; the title says both from 1), text `text_px` high."""
    pixels = clip.pixels[i]
    base = canvas.fit_to_grid(pixels, first.grid, views.HEAD_PX)
    title = (
        f"frame {i + 1} of {len(clip.maps)} ({i / fps:.1f} s) · layer {layer + 1} of {first.depth}, "
        f"query: {texts.query_label(first, query)}"
    )
    heads = render.head_grid(
        base,
        clip.maps[i],
        style,
        title,
        prefix=render.Prefix(clip.prefix[i], first.prefix_names),
        note=texts.left_out(first),
        mark=views.patch_of(query),
        top=render.ScaleTop(tops, "this layer over the whole clip"),
        text_px=text_px,
    )
    frame = canvas.enlarge(pixels, canvas.scale_for(pixels.shape[:2], INPUT_PX))
    return canvas.mosaic([[frame, np.asarray(heads)]], text_px)


def _even(picture: Image.Image, size: tuple[int, int]) -> Image.Image:
    """`picture` on a background canvas of `size` (yuv420p needs even sides); a picture larger
    than the first frame (it never is: every frame has the same layout) would be cut."""
    if picture.size == size:
        return picture
    padded = Image.new("RGB", size, canvas.BACKGROUND)
    padded.paste(picture, (0, 0))
    return padded


def encode(pictures: Iterator[Image.Image], path: str | Path, fps: float, seconds: dict[str, float]) -> int:
    """Write `pictures` as an H.264 MP4 at `fps`, the size of the first (rounded up to even
    sides); returns the frames written and adds the time spent drawing and encoding to `seconds`."""
    written = 0
    started = time.perf_counter()
    first = next(pictures)
    seconds["draw"] += time.perf_counter() - started
    size = (first.width + first.width % 2, first.height + first.height % 2)
    with av.open(str(path), "w", format="mp4", options={"movflags": "+faststart"}) as out:
        stream = out.add_stream("libx264", rate=Fraction(fps).limit_denominator(1001))
        stream.width, stream.height, stream.pix_fmt = size[0], size[1], "yuv420p"
        stream.options = {"crf": "23", "preset": "veryfast"}
        picture: Image.Image | None = first
        while picture is not None:
            started = time.perf_counter()
            out.mux(stream.encode(av.VideoFrame.from_image(_even(picture, size))))
            written += 1
            seconds["encode"] += time.perf_counter() - started
            started = time.perf_counter()
            picture = next(pictures, None)
            seconds["draw"] += time.perf_counter() - started
        started = time.perf_counter()
        out.mux(stream.encode())  # flush the encoder's delayed frames
    seconds["encode"] += time.perf_counter() - started
    return written


def attention_video(
    loaded: LoadedModel,
    path: str | Path,
    out_path: str | Path,
    query: Query,
    layer: int,
    style: MapStyle,
    limits: VideoLimits = VideoLimits(),
    progress: Progress | None = None,
    max_bytes: int | None = None,
    run: Callable[..., tuple[np.ndarray, np.ndarray, AttentionMaps]] | None = None,
    text_px: int = canvas.TEXT_PX,
) -> VideoReport:
    """The attention video of the clip at `path`, written to `out_path` (MP4): `layer`'s
    (0-based) head maps for `query`, both checked by the caller against the model, on one
    colour scale over the whole clip (`style.scale`: "layer", "head" or "fixed"), in at most
    `max_bytes` (what one request may use, checked before any frame is decoded); its words
    `text_px` high."""
    info = probe(path, limits)
    clip, first = clip_maps(loaded, path, query, layer, limits, progress, info.frames, max_bytes, run)
    tops = clip_tops(np.stack(clip.maps), style.scale)
    total = len(clip.maps)
    seconds = clip.seconds | {"draw": 0.0, "encode": 0.0}

    def pictures() -> Iterator[Image.Image]:
        for i in range(total):
            if progress:
                progress("drawing and encoding", i, total)
            yield frame_picture(first, clip, i, info.fps, query, layer, style, tops, text_px)

    return VideoReport(info, encode(pictures(), out_path, info.fps, seconds), seconds)
