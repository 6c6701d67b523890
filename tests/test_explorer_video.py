"""explorer/video.py: clips checked from their header, decoded, and made into an attention video."""

import math
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
import torch

import vit
from bench.attacks import clip_that_grows
from explorer import video
from explorer.canvas import MapStyle
from explorer.compute import forward_flops
from explorer.explain import ExplanationTooLarge
from explorer.loaded import LoadedModel
from explorer.video import VideoError, VideoLimits, attention_video, clip_tops, probe
from vit.preprocessing import CIFAR10, CIFAR10_CLASSES, Preprocessing


def write_clip(path: Path, frames: int, width: int = 64, height: int = 48, fps: int = 10, fmt: str = "mp4") -> Path:
    """A clip of a bright square moving right over a dark background."""
    codec = "libx264" if fmt == "mp4" else "libvpx-vp9"
    with av.open(str(path), "w", format=fmt) as out:
        stream = out.add_stream(codec, rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for n in range(frames):
            pixels = np.full((height, width, 3), 20, np.uint8)
            pixels[8:24, 2 * n : 2 * n + 16] = 230
            out.mux(stream.encode(av.VideoFrame.from_ndarray(pixels, format="rgb24")))
        out.mux(stream.encode())
    return path


@pytest.fixture(scope="module")
def tiny() -> LoadedModel:
    model = vit.create_model("vit_cifar_nano").eval()
    return LoadedModel("bundled", "tiny", model, vit.ModelMeta(list(CIFAR10_CLASSES), CIFAR10, {}))


def test_the_header_says_length_size_and_frames(tmp_path):
    info = probe(write_clip(tmp_path / "c.mp4", 12, fps=10))
    assert (info.frames, info.fps, info.width, info.height) == (12, 10.0, 64, 48)
    assert info.seconds == pytest.approx(1.2)
    assert probe(write_clip(tmp_path / "c.webm", 5, fmt="webm")).width == 64  # WebM, as browsers record


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        (VideoLimits(max_frames=10), "has 12 frames; at most 10"),
        (VideoLimits(max_seconds=1.0), "lasts 1.2 s; at most 1 s"),
        (VideoLimits(max_pixels=32 * 32), "64 × 48 px; at most 1,024 pixels"),
        (VideoLimits(min_fps=20), "gives 10 frames per second; at least 20 are accepted"),
    ],
)
def test_a_clip_over_the_limits_is_refused_before_a_frame_is_decoded(tmp_path, monkeypatch, tiny, limits, message):
    clip = write_clip(tmp_path / "c.mp4", 12, fps=10)

    def no_decoding(*args, **kwargs):
        raise AssertionError("decoded a frame")

    monkeypatch.setattr(video, "_frames", no_decoding)
    with pytest.raises(VideoError, match=message):
        attention_video(tiny, clip, tmp_path / "out.mp4", None, 5, MapStyle(), limits)


def test_a_clip_at_a_millionth_of_a_frame_per_second_is_refused_not_made_ten_million_seconds_long(tmp_path, tiny):
    """A clip with no duration and 10⁻⁶ frames per second yielded a video claiming to
    last 10,000,000 s; its rate is refused from the header (VideoLimits.min_fps)."""
    clip = write_clip(tmp_path / "slow.mkv", 3, fps=Fraction(1, 1_000_000), fmt="matroska")
    with pytest.raises(VideoError, match="frames per second; at least 1 are accepted"):
        attention_video(tiny, clip, tmp_path / "out.mp4", None, 5, MapStyle())
    assert not (tmp_path / "out.mp4").exists()


def test_a_clip_whose_frames_outgrow_its_header_is_refused_before_they_are_decoded(tmp_path):
    """Header 64 × 64, frames 6000 × 6000: FFmpeg's frame threads decoded several before the
    per-frame check (an 8000 × 8000 clip of 190 KB: +444 MiB; 16000 × 16000 16-bit RGBA in the
    issue: +5.5 GB). The decoder's own pixel limit refuses them; peak measured in a fresh process."""
    import subprocess
    import sys

    clip = clip_that_grows(tmp_path / "grows.mov", 6000)
    assert probe(clip).width == 64 and clip.stat().st_size < 200_000
    script = (
        "import resource, sys\n"
        "from explorer import video\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "try:\n"
        "    list(video._frames(sys.argv[1], video.VideoLimits()))\n"
        "except video.VideoError as e:\n"
        "    print(e)\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)\n"
    )
    run = subprocess.run([sys.executable, "-c", script, str(clip)], capture_output=True, text=True, check=True)
    message, peak = run.stdout.splitlines()
    assert int(peak) < 64, f"decoding grew the peak by {peak} MiB"  # one 6000 × 6000 frame alone: 51 MiB
    assert "or a frame has more than 2,073,600 pixels" in message


def test_only_the_codecs_cameras_and_browsers_record_are_decoded(tmp_path):
    clip = tmp_path / "frames.mov"
    with av.open(str(clip), "w", format="mov") as out:
        stream = out.add_stream("png", rate=10)
        stream.width, stream.height, stream.pix_fmt = 64, 64, "rgba64be"
        out.mux(stream.encode(av.VideoFrame.from_ndarray(np.zeros((64, 64, 4), np.uint16), format="rgba64be")))
        out.mux(stream.encode())
    with pytest.raises(VideoError, match="the clip's codec 'png' is not one this app decodes"):
        probe(clip)
    with pytest.raises(VideoError, match="codec 'png'"):
        list(video._frames(clip, VideoLimits()))


def test_a_clip_whose_header_hides_its_length_is_held_to_the_frame_limit_while_decoding(tmp_path):
    clip = write_clip(tmp_path / "c.mp4", 6)
    with pytest.raises(VideoError, match="more than 4 frames"):
        list(video._frames(clip, VideoLimits(max_frames=4)))


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"just some text, not a video",
        b"#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n/etc/hostname\n#EXT-X-ENDLIST\n",  # a playlist naming a file
        b"ffconcat version 1.0\nfile /etc/hostname\n",
    ],
)
def test_what_is_not_an_mp4_or_webm_clip_is_refused_and_names_no_other_file(tmp_path, content):
    path = tmp_path / "clip.mp4"
    path.write_bytes(content)
    with pytest.raises(VideoError, match="not a video this app can read"):
        probe(path)


def test_one_colour_scale_over_the_whole_clip():
    maps = np.full((3, 2, 2, 2), 0.1)  # (frames, heads, gh, gw)
    maps[1, 0, 0, 0], maps[2, 1, 1, 1] = 0.8, 0.4
    assert clip_tops(maps, "layer").tolist() == [0.8, 0.8]  # the clip's largest, for every head
    assert clip_tops(maps, "head").tolist() == [0.8, 0.4]  # each head's largest over the clip
    assert clip_tops(maps, "fixed").tolist() == [1.0, 1.0]


def test_the_attention_video_has_every_frame_beside_its_maps(tmp_path, tiny):
    clip = write_clip(tmp_path / "c.mp4", 7, fps=10)
    seen = []
    made = attention_video(
        tiny, clip, tmp_path / "out.mp4", (1, 2), 5, MapStyle(), progress=lambda *stage: seen.append(stage)
    )
    assert made.frames == 7 and set(made.seconds) == {"decode", "preprocess", "model", "draw", "encode"}
    assert ("drawing and encoding", 6, 7) in seen  # the progress bar counts frames
    with av.open(str(tmp_path / "out.mp4")) as out:
        stream = out.streams.video[0]
        assert stream.codec_context.name == "h264" and float(stream.average_rate) == 10.0
        frames = [f.to_ndarray(format="rgb24") for f in out.decode(stream)]
    assert len(frames) == 7
    height, width, _ = frames[0].shape
    assert width % 2 == 0 and height % 2 == 0 and width > 320 + 4 * 160  # the frame, then four head tiles
    left = [f[:320, :320].astype(int) for f in frames]  # the model input, enlarged 10 times
    assert np.abs(left[0] - left[-1]).mean() > 5  # the square has moved


def test_a_corrupt_clip_gets_a_clear_error_not_a_traceback(tmp_path):
    clip = write_clip(tmp_path / "c.mp4", 30, 160, 120)
    with av.open(str(clip)) as container:
        packets = [(p.pos, p.size) for p in container.demux(container.streams.video[0]) if p.size]
    data = bytearray(clip.read_bytes())
    pos, size = packets[1]
    data[pos : pos + size] = b"\xff" * size  # the second frame's H.264 data
    clip.write_bytes(data)
    with pytest.raises(VideoError, match="the clip is corrupt after frame"):
        list(video._frames(clip, VideoLimits()))


def test_one_pass_over_the_clip_gives_each_frame_the_maps_of_its_own_pass(tiny):
    """layer_maps (the clip's one GPU call on ZeroGPU) batches frames; every frame's maps equal
    those of a forward pass over that frame alone, to float32 rounding of a batched matmul."""
    from tolerance import assert_close_up_to_rounding

    from vit.analysis import query_attention

    frames = torch.randn(5, 3, 32, 32)
    maps, prefix, first = video.layer_maps(tiny, frames, None, 2, 2)  # batches of 2, 2, 1
    assert maps.shape == (5, 4, 8, 8) and prefix.shape == (5, 4, 1) and first[0].shape[0] == 1
    for i in range(5):
        with torch.inference_mode():
            _, alone = tiny.model(frames[i : i + 1], need_weights=True)
        want = query_attention(alone)[0, 2]
        # 3 blocks of 128-wide sums (dim 128) before the layer-3 softmax, each ~4 reductions
        assert_close_up_to_rounding(torch.from_numpy(maps[i]), want, reduction=128, magnitude=1.0, steps=12)


def test_a_clip_whose_inputs_would_not_fit_is_refused_before_decoding(tmp_path, monkeypatch, tiny):
    monkeypatch.setattr(video, "CLIP_INPUT_BYTES", 11 * video.frame_bytes(tiny))  # room for 11 frames of 32 px
    clip = write_clip(tmp_path / "c.mp4", 12, fps=10)
    monkeypatch.setattr(video, "_frames", lambda *a: (_ for _ in ()).throw(AssertionError("decoded a frame")))
    with pytest.raises(VideoError, match="12 frames at this model's 32 × 32 px input would take 0 MiB"):
        attention_video(tiny, clip, tmp_path / "out.mp4", None, 5, MapStyle())


def test_a_clip_is_bounded_by_the_work_of_its_model_not_a_224_px_assumption(tmp_path, monkeypatch, tiny):
    """An admitted checkpoint at crop 1,024 made one export cost +2.5 GB and 66 s; a
    clip's frames are now bounded by what the model's input size keeps and its tokens cost."""
    per_frame = forward_flops(tiny.model.config, 8 * 8 + 1)  # 32 px in 4 px patches, and CLS
    monkeypatch.setattr(video, "CLIP_FLOPS", 11.5 * per_frame)  # room for 11 frames' passes
    clip = write_clip(tmp_path / "c.mp4", 12, fps=10)
    monkeypatch.setattr(video, "_frames", lambda *a: (_ for _ in ()).throw(AssertionError("decoded a frame")))
    with pytest.raises(
        VideoError, match=r"12 frames through this model \(65 tokens a frame at 32 × 32 px\).* to 11 frames"
    ):
        attention_video(tiny, clip, tmp_path / "out.mp4", None, 5, MapStyle())
    big = replace(tiny, meta=replace(tiny.meta, preprocessing=Preprocessing(1024, 1024)))
    assert video.frame_bytes(big) == 2 * 3 * 1024**2 * 4 + 3 * 1024**2  # a 1,024 px model's frame: 28 MiB
    monkeypatch.setattr(video, "CLIP_FLOPS", math.inf)
    with pytest.raises(VideoError, match="would take .* MiB, more than this server's 512 MiB"):
        video.check_clip_inputs(big, 20 * 1)  # 20 frames of 1,024 px pass 512 MiB...
    video.check_clip_inputs(replace(big, meta=tiny.meta), 300)  # ...300 of 32 px do not


def test_an_export_over_the_request_budget_is_refused_before_decoding_with_the_frames_that_fit(
    tmp_path, monkeypatch, tiny
):
    """Issue 43: an admitted crop-1,024 checkpoint's export took +1,508 MiB against the 1 GiB a
    request may use: every frame's input, two frames' maps (the batch's and the first frame's, kept
    for the captions) and one layer's scores are estimated from the model (`clip_bytes`) and held
    to the request's budget before a frame is decoded; the batch shrinks to what fits."""
    budget = video.clip_bytes(tiny, 11, 1)  # room for 11 frames, one a pass
    clip = write_clip(tmp_path / "c.mp4", 12, fps=10)
    monkeypatch.setattr(video, "_frames", lambda *a: (_ for _ in ()).throw(AssertionError("decoded a frame")))
    said = r"12 frames .* more than the \d+ MiB one request may use on this server: trim the clip to 11 frames"
    with pytest.raises(VideoError, match=said):
        attention_video(tiny, clip, tmp_path / "out.mp4", None, 5, MapStyle(), max_bytes=budget)
    with pytest.raises(ExplanationTooLarge, match="one frame's attention maps take 0 MiB .*; use a smaller model"):
        video.check_clip_inputs(tiny, 1, video.clip_bytes(tiny, 0, 1) + video.frame_bytes(tiny) - 1)
    assert video._batch_size(tiny, 11, budget) == 1 and video._batch_size(tiny, 11, None) == video.MAX_BATCH
    assert video._batch_size(tiny, 11, video.clip_bytes(tiny, 11, 3)) == 3


def test_the_first_frames_maps_are_its_own_not_a_view_of_its_batch(tiny):
    """The captions keep the first frame's maps: a view kept its whole batch's (up to BATCH_BYTES)
    through every later pass, beside that pass's own maps."""
    _, _, first = video.layer_maps(tiny, torch.randn(4, 3, 32, 32), None, 2, 4)
    assert all(a.untyped_storage().nbytes() == a.numel() * a.element_size() for a in first)
