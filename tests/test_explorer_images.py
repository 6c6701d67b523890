"""Every kind of awkward upload, through the real API: a correct result or a clear error."""

import io
import struct
import zlib

import numpy as np
import pytest
from app_helpers import analyze
from gradio_client.exceptions import AppError
from PIL import Image

from bench.serving import file_of


def png_with_header_only(path, width: int, height: int):
    """A few hundred bytes claiming to be width x height: what a decompression bomb looks like."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit grayscale
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)))
    return path


def input_view(client, path, mode="crop"):
    """(model-input view pixels, numbers markdown) after analysing `path`."""
    view, numbers, *_ = analyze(client, path, mode)
    return np.asarray(Image.open(file_of(view)).convert("RGB")).astype(int), numbers


@pytest.mark.parametrize(
    ("name", "make", "message"),
    [
        ("empty.png", lambda p: p.write_bytes(b""), "empty"),
        ("notes.png", lambda p: p.write_text("this is not a picture"), "not an image"),
        ("truncated.jpg", None, "truncated or corrupt"),
        ("bomb.png", lambda p: png_with_header_only(p, 20000, 20000), "too large"),
    ],
)
def test_unusable_files_get_a_clear_error(client, tmp_path, name, make, message):
    path = tmp_path / name
    if make is None:  # the first half of a real JPEG
        buf = io.BytesIO()
        Image.fromarray(np.random.default_rng(0).integers(0, 256, (64, 64, 3), np.uint8)).save(buf, "JPEG")
        path.write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    else:
        make(path)
    with pytest.raises(AppError, match=message):
        analyze(client, path)
    assert analyze(client, _solid(tmp_path, (10, 200, 10)))[2]["confidences"]  # the server is still up


def test_uploads_over_the_size_limit_are_refused(client, tmp_path):
    path = tmp_path / "huge.png"
    path.write_bytes(b"\x89PNG" + bytes(21 * 1024 * 1024))  # over the app's 20 MB max_file_size
    with pytest.raises(Exception, match="maximum file size"):
        analyze(client, path)
    assert analyze(client, _solid(tmp_path, (10, 200, 10)))[2]["confidences"]


def _solid(tmp_path, colour, size=(40, 30)):
    path = tmp_path / "solid.png"
    Image.new("RGB", size, colour).save(path)
    return path


def test_wrong_extension_is_decoded_by_content(client, tmp_path):
    path = tmp_path / "really_a_png.jpg"
    Image.new("RGB", (50, 50), (250, 0, 0)).save(path, format="PNG")
    view, _ = input_view(client, path)
    assert view[20, 20].tolist() == [250, 0, 0]  # (20, 20): inside a patch, off the grid lines


def test_one_pixel_image(client, tmp_path):
    path = tmp_path / "dot.png"
    Image.new("RGB", (1, 1), (0, 0, 250)).save(path)
    view, numbers = input_view(client, path)
    assert "uploaded **1 × 1** px" in numbers and view[20, 20].tolist() == [0, 0, 250]
    assert "**Enlarged:** the image is 1 × 1 px" in numbers and "upscaled to 32 × 32 px (width × height)" in numbers


def test_sixteen_bit_grayscale_is_scaled_not_clipped(client, tmp_path):
    path = tmp_path / "deep.png"
    Image.fromarray(np.full((40, 40), 32768, np.uint16)).save(path)  # mid-grey in 16 bits
    view, _ = input_view(client, path)
    assert abs(view[20, 20, 0] - 128) <= 1  # clipping to 8 bits would give 255


def test_cmyk_jpeg(client, tmp_path):
    path = tmp_path / "print.jpg"
    Image.new("CMYK", (40, 40), (0, 255, 255, 0)).save(path)  # pure red in CMYK
    view, _ = input_view(client, path)
    r, g, b = view[20, 20]
    assert r > 200 and g < 60 and b < 60


def test_palette_with_transparency_and_rgba_composite_on_white(client, tmp_path):
    palette = Image.new("P", (40, 40), 0)
    palette.putpalette([0, 0, 0] + [0, 0, 255] * 255)
    palette.info["transparency"] = 0  # index 0 (black) is transparent
    palette.save(tmp_path / "palette.png", transparency=0)
    view, _ = input_view(client, tmp_path / "palette.png")
    assert view[20, 20].tolist() == [255, 255, 255]
    Image.new("RGBA", (40, 40), (255, 0, 0, 0)).save(tmp_path / "clear.png")
    view, _ = input_view(client, tmp_path / "clear.png")
    assert view[20, 20].tolist() == [255, 255, 255]  # fully transparent red is white, not red or black


def test_grayscale(client, tmp_path):
    path = tmp_path / "grey.png"
    Image.new("L", (40, 40), 90).save(path)
    view, _ = input_view(client, path)
    assert view[20, 20].tolist() == [90, 90, 90]


def test_animated_gif_uses_the_first_frame(client, tmp_path):
    path = tmp_path / "anim.gif"
    frames = [Image.new("RGB", (40, 40), c) for c in ((255, 0, 0), (0, 0, 255))]
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=100, loop=0)
    view, _ = input_view(client, path)
    assert view[20, 20, 0] > 200 and view[20, 20, 2] < 60


def test_an_animated_image_says_that_its_first_frame_is_shown(tmp_path, monkeypatch):
    """An animated GIF was analysed silently on its first frame: Explore and the lessons say so."""
    import gradio as gr

    from explorer.images import first_frame_note
    from ui import explore_handlers, lessons_handlers
    from ui.outputs import cache_path

    path = cache_path("anim.gif")  # in Gradio's upload folder, as a browser's upload
    frames = [Image.new("RGB", (40, 40), c) for c in ((255, 0, 0), (0, 0, 255))]
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=100, loop=0)
    said = "This GIF is animated: the maps show its first frame only."
    assert first_frame_note(path) == said
    Image.new("RGB", (40, 40)).save(tmp_path / "still.gif")
    assert first_frame_note(tmp_path / "still.gif") == first_frame_note(tmp_path / "absent.gif") == ""
    toasts = []
    monkeypatch.setattr(gr, "Info", lambda message, **_: toasts.append(message))  # the page's toast
    explore_handlers.check_new_image({"path": str(path)})
    lessons_handlers.check_lesson_image({"path": str(path)})
    assert toasts == [said, said]


def test_exif_rotated_photo_is_shown_upright(client, tmp_path):
    stored = np.zeros((32, 64, 3), np.uint8)  # stored landscape, 64 wide...
    stored[:, :32] = 255  # ...white on the left half
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation 6: the camera was turned; rotate 90 degrees clockwise to view
    path = tmp_path / "phone.jpg"
    Image.fromarray(stored).save(path, exif=exif, quality=95)
    view, numbers = input_view(client, path, mode="whole")
    assert "uploaded **32 × 64** px" in numbers  # upright: 32 wide, 64 high (width × height)
    h = view.shape[0]
    # (+5: sample inside a patch, not on the white grid lines every 24 px)
    assert view[h // 4 + 5, 5].mean() > 200 and view[3 * h // 4 + 5, 5].mean() < 60  # white half on top


@pytest.mark.parametrize("length", [250_000, 1_000_000])
@pytest.mark.parametrize("mode", ["crop", "whole"])
def test_thin_images_are_refused_from_their_header_before_any_decoding(tmp_path, monkeypatch, length, mode):
    """A 1 x 250,000 PNG is 567 bytes; crop mode used to resize it to 32 x 8,000,000 px (+4.8 GB)."""
    from explorer.explain import explain
    from explorer.images import ImageError, load_image
    from vit import create_model
    from vit.preprocessing import CIFAR10

    path = png_with_header_only(tmp_path / "thin.png", 1, length)
    assert path.stat().st_size < 2000

    def never(*_args, **_kwargs):
        raise AssertionError("the image was decoded")

    monkeypatch.setattr(Image.Image, "load", never)
    monkeypatch.setattr(Image.Image, "seek", never)
    with pytest.raises(ImageError, match=f"1 × {length:,} px .*more elongated than 20:1") as refused:
        explain(create_model("vit_cifar_nano"), [], CIFAR10, load_image(path), mode)
    assert "\n" not in str(refused.value)


def test_the_resize_each_mode_makes_is_bounded_before_it_is_made(monkeypatch):
    """An image inside the elongation limit can still ask crop mode for a huge resize when the
    model's resize size is large: refused from the sizes alone."""
    from explorer.explain import MAX_RESIZED_PIXELS, InputTooLarge, model_input, resized_size
    from vit.preprocessing import Preprocessing

    big = Preprocessing(resize_size=1024, crop_size=1024)
    image = Image.new("RGB", (19 * 200, 200))  # 19:1, allowed by the header check
    assert resized_size((200, 19 * 200), big, 16, "crop") == (1024, 19 * 1024)
    monkeypatch.setattr(Preprocessing, "geometry", lambda _self: pytest.fail("resized anyway"))
    with pytest.raises(InputTooLarge, match=f"1,024 px for this model in crop mode, .*{MAX_RESIZED_PIXELS:,}"):
        model_input(image, big, 16, "crop")
    assert model_input(image, big, 16, "whole").pixels.shape == (1024, 4096, 3)  # squashed to 4:1: allowed


def _photo(path, mode: str, side: int):
    """A noise image of `mode` (side × side), saved in a format that keeps the mode; a JPEG
    photo carries an EXIF orientation, so decoding turns it upright."""
    rng = np.random.default_rng(0)
    if mode in ("I;16", "I", "F"):
        dtype = {"I;16": np.uint16, "I": np.int32, "F": np.float32}[mode]
        Image.fromarray((rng.random((side, side)) * 60000).astype(dtype)).save(path)
        return path
    image = Image.fromarray(rng.integers(0, 256, (side, side, 4), np.uint8), "RGBA").convert(mode)
    if mode == "RGB":
        exif = Image.Exif()
        exif[0x0112] = 6  # rotated 90°: exif_transpose makes a turned copy
        image.save(path, exif=exif, quality=90)
    else:
        image.save(path, **({"transparency": 0} if mode == "P" else {}))
    return path


@pytest.mark.parametrize(
    ("mode", "suffix"),
    [("RGB", ".jpg"), ("RGBA", ".png"), ("P", ".png"), ("L", ".png"), ("I;16", ".png"), ("I", ".tif"), ("F", ".tif")],
)
def test_decoding_costs_at_most_its_table_entry(tmp_path, mode, suffix):
    """The bytes per pixel charged for a mode (DECODE_BYTES_PER_PIXEL) bound what load_image
    allocates, measured in a fresh process (ru_maxrss, no other work in it)."""
    import subprocess
    import sys

    from explorer.images import DECODE_BYTES_PER_PIXEL, WIDE_BYTES_PER_PIXEL

    side = 3000
    path = _photo(tmp_path / f"photo{suffix}", mode, side)
    with Image.open(path) as im:
        assert im.mode == mode
    script = (
        "import resource, sys\n"
        "from explorer.images import load_image\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "load_image(sys.argv[1])\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)\n"
    )
    run = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True)
    charged = DECODE_BYTES_PER_PIXEL.get(mode, WIDE_BYTES_PER_PIXEL) * side * side
    assert int(run.stdout) <= charged, f"{mode}: {int(run.stdout) / side**2:.1f} bytes a pixel"


def test_an_image_whose_decoding_would_pass_the_budget_is_refused_from_its_header(tmp_path, monkeypatch):
    """A 64-megapixel int32 TIFF of 388 KB cost +1.7 GB: refused by mode × pixels, undecoded;
    the same sides in 8-bit RGB still open."""
    import explorer.images as images

    budget = images.MAX_DECODE_BYTES
    assert 7999 * 7999 * images.WIDE_BYTES_PER_PIXEL > budget  # the reported TIFF
    assert 8000 * 8000 * images.DECODE_BYTES_PER_PIXEL["RGB"] <= budget  # a 64 Mpx photo
    wide, narrow = _photo(tmp_path / "wide.tif", "I", 64), tmp_path / "narrow.png"
    Image.new("RGB", (64, 64)).save(narrow)
    monkeypatch.setattr(images, "MAX_DECODE_BYTES", 64 * 64 * 10)  # between RGB's 9 and I's 13 bytes a pixel
    assert images.load_image(narrow).size == (64, 64)
    monkeypatch.setattr(Image.Image, "load", lambda *_: pytest.fail("decoded anyway"))
    with pytest.raises(images.ImageError, match="64 × 64 px in mode I: decoding it would take 0 MiB") as refused:
        images.check_image(wide)
    assert "\n" not in str(refused.value)


def test_a_16_bit_image_is_charged_by_the_bytes_of_its_samples(tmp_path, monkeypatch):
    """A 121 KB 7999 × 7999 16-bit PNG was charged like 8-bit RGB (9 bytes a pixel,
    549 MiB, under the budget) and its /analyze cost +733 MiB; it is refused from its header."""
    import explorer.images as images
    from bench.attacks import wide_image

    path = wide_image(tmp_path / "wide16.png", "I;16", side=7999)
    assert path.stat().st_size < 200_000
    monkeypatch.setattr(Image.Image, "load", lambda *_: pytest.fail("decoded anyway"))
    with pytest.raises(images.ImageError, match="7,999 × 7,999 px in mode I;16: decoding it would take 732 MiB"):
        images.check_image(path)
    images.check_decoding("I;16", 6900, 6900)  # 47.6 Mpx of 16-bit samples: 545 MiB, within the budget
