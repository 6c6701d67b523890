"""Decode untrusted image files into plain RGB, or fail with a message a user can act on.

The app takes uploads as file paths and decodes them here, not in Gradio, so that every
kind of bad file (empty, truncated, not an image, gigantic) ends in one clear `ImageError`.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

# Decompression-bomb guard. PIL warns above MAX_IMAGE_PIXELS and refuses above twice that;
# we set the limit deliberately (a 64-megapixel phone photo still opens) and turn the
# warning into a refusal too, so a 20000x20000 PNG of a few kilobytes never gets decoded.
# The CIFAR-10 test images the app offers as examples (examples/cifar10/pick.py chose them).
EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples" / "cifar10"
MAX_PIXELS = 64_000_000
Image.MAX_IMAGE_PIXELS = MAX_PIXELS

# Thin images: a 567-byte 1 x 250,000 PNG decodes to little, but crop mode resizes its shorter
# side to the model's resize size first (32 x 8,000,000 px, gigabytes). The sides are read
# from the header and refused past this ratio before anything is decoded; the resize each
# mode would make is bounded again in explorer.explain (MAX_RESIZED_PIXELS).
MAX_ELONGATION = 20

# What decoding costs, by the header's mode: peak bytes per pixel of `load_image` (decoding,
# turning upright, converting to 8-bit RGB; PIL keeps RGB, RGBA, LA, CMYK, I and F in 4 bytes a
# pixel; a photo turned upright by its EXIF orientation is held twice for a moment), measured in
# a fresh process and rounded up (test_decoding_costs_at_most_its_table_entry checks each against
# a real decode). A palette image may carry transparency, composited like RGBA. Modes not listed
# (I, F) are charged WIDE_BYTES_PER_PIXEL. An image whose decoding would cost more than
# MAX_DECODE_BYTES is refused from its header (before: a 388 KB 64-megapixel int32 TIFF cost
# +1.7 GB, a 16-bit PNG +1.5 GB). The budget lets a 64-megapixel photo through.
DECODE_BYTES_PER_PIXEL = {"1": 6, "L": 6, "RGB": 9, "CMYK": 9}
DECODE_BYTES_PER_PIXEL |= dict.fromkeys(("P", "LA", "PA", "RGBA"), 17)
# 16-bit samples are charged by their bytes: the 2-byte image stays while its float32 copy (4) is
# scaled to 8 bits (1) and made RGB (3), and an analysis holds that RGB beside the 2-byte image
# until the request ends: 12 bytes a pixel (measured: decoding 8, the whole /analyze of a 64 Mpx
# 16-bit PNG +733 MiB, 11.4). So a 16-bit image is refused above 48 Mpx (issue 28), where 9 a
# pixel had let a 64 Mpx one through at +733 MiB, past MAX_DECODE_BYTES.
DECODE_BYTES_PER_PIXEL |= dict.fromkeys(("I;16", "I;16B", "I;16L"), 12)
WIDE_BYTES_PER_PIXEL = 13
MAX_DECODE_BYTES = 576 * 2**20  # 9 bytes × 64 Mpx (MAX_PIXELS)

WHITE = (255, 255, 255)


class ImageError(ValueError):
    """An uploaded file cannot be used as an image; the message says why."""


def load_image(path: str | os.PathLike) -> Image.Image:
    """Read the first frame of any image PIL understands as an upright RGB image.

    EXIF orientation is applied, transparency is composited onto white, and 16-bit
    images are scaled down to 8 bits rather than clipped.
    """
    return _read(path, decode=True)


def check_image(path: str | os.PathLike) -> None:
    """Refuse, from the header alone (nothing is decoded), a file that is no image this app
    reads or whose sides it refuses: `load_image`'s cheap checks, with its messages."""
    _read(path, decode=False)


def first_frame_note(path: str | os.PathLike) -> str:
    """For an animated image (GIF, WebP, PNG with frames), the sentence that says the views are of
    its first frame only (`load_image` takes that one); "" for a still image or one unreadable
    here (`check_image` says why). Reads the header and the next frame's start, nothing decoded."""
    try:
        with Image.open(path) as im:
            if not getattr(im, "is_animated", False):
                return ""
            kind = im.format or "image"
    except (OSError, SyntaxError, ValueError, EOFError):
        return ""
    return f"This {kind} is animated: the maps show its first frame only."


def _read(path: str | os.PathLike, decode: bool) -> Image.Image | None:
    if os.path.getsize(path) == 0:
        raise ImageError("the uploaded file is empty (0 bytes)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as im:  # reads the header only: nothing is decoded yet
                check_sides(*im.size)
                check_decoding(im.mode, *im.size)
                if not decode:
                    return None
                im.seek(0)  # first frame of an animated GIF/WebP/APNG
                im.load()  # decode now, inside the try: truncation shows up here
                return to_rgb(ImageOps.exif_transpose(im, in_place=True) or im)
    except ImageError:
        raise
    except UnidentifiedImageError as e:
        raise ImageError("the file is not an image format this app can read (try PNG, JPEG, GIF or WebP)") from e
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
        raise ImageError(f"the image is too large: at most {MAX_PIXELS:,} pixels are accepted ({e})") from e
    except (OSError, SyntaxError, ValueError, EOFError) as e:  # PIL's ways of saying "corrupt"
        raise ImageError(f"the image file is truncated or corrupt: {e}") from e


def check_sides(width: int, height: int) -> None:
    """Refuse an image whose sides (from its header) make it useless or costly to resize."""
    if min(width, height) < 1:
        raise ImageError(f"the image is {width} × {height} px: it has no pixels")
    if max(width, height) > MAX_ELONGATION * min(width, height):
        raise ImageError(
            f"the image is {width:,} × {height:,} px (width × height), more elongated than {MAX_ELONGATION}:1, "
            "which this app does not accept: crop it closer to a square first"
        )


def check_decoding(mode: str, width: int, height: int) -> None:
    """Refuse, from the header's mode and sides, an image whose decoding would allocate more
    than MAX_DECODE_BYTES (DECODE_BYTES_PER_PIXEL)."""
    cost = width * height * DECODE_BYTES_PER_PIXEL.get(mode, WIDE_BYTES_PER_PIXEL)
    if cost > MAX_DECODE_BYTES:
        raise ImageError(
            f"the image is {width:,} × {height:,} px in mode {mode}: decoding it would take {cost / 2**20:,.0f} MiB, "
            f"more than this server's {MAX_DECODE_BYTES / 2**20:,.0f} MiB: scale it down or save it as 8-bit"
        )


def _scaled(im: Image.Image, top: float | None) -> Image.Image:
    """A 16/32-bit or float image as 8-bit grayscale: value / top × 255, rounded, clipped; in
    float32, in place (a float64 copy per step cost 28 bytes a pixel). `top` None: 65535 if any
    value is above 255, else 255."""
    pixels = np.array(im, dtype=np.float32)  # a copy, written in place below
    if top is None:
        top = 65535.0 if pixels.max() > 255 else 255.0
    pixels *= np.float32(255.0 / top)
    pixels += np.float32(0.5)
    np.clip(pixels, 0, 255, out=pixels)
    return Image.fromarray(pixels.astype(np.uint8))


def to_rgb(im: Image.Image) -> Image.Image:
    """Convert any PIL mode to 8-bit RGB the way a viewer would display it."""
    if im.mode in ("I;16", "I;16B", "I;16L", "I"):
        im = _scaled(im, None)  # convert("L") would clip everything above 255 to white
    elif im.mode == "F":
        im = _scaled(im, 255.0)
    if im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info):
        background = Image.new("RGBA", im.size, WHITE + (255,))
        return Image.alpha_composite(background, im if im.mode == "RGBA" else im.convert("RGBA")).convert("RGB")
    return im if im.mode == "RGB" else im.convert("RGB")
