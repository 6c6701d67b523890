"""Decode untrusted image files into plain RGB, or fail with a message a user can act on.

The app takes uploads as file paths and decodes them here, not in Gradio, so that every
kind of bad file (empty, truncated, not an image, gigantic) ends in one clear `ImageError`.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

# Decompression-bomb guard. PIL warns above MAX_IMAGE_PIXELS and refuses above twice that;
# we set the limit deliberately (a 64-megapixel phone photo still opens) and turn the
# warning into a refusal too, so a 20000x20000 PNG of a few kilobytes never gets decoded.
MAX_PIXELS = 64_000_000
Image.MAX_IMAGE_PIXELS = MAX_PIXELS

# Thin images: a 567-byte 1 x 250,000 PNG decodes to little, but crop mode resizes its shorter
# side to the model's resize size first (32 x 8,000,000 px, gigabytes). The sides are read
# from the header and refused past this ratio before anything is decoded; the resize each
# mode would make is bounded again in explorer.explain (MAX_RESIZED_PIXELS).
MAX_ELONGATION = 20

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


def _read(path: str | os.PathLike, decode: bool) -> Image.Image | None:
    if os.path.getsize(path) == 0:
        raise ImageError("the uploaded file is empty (0 bytes)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as im:  # reads the header only: nothing is decoded yet
                check_sides(*im.size)
                if not decode:
                    return None
                im.seek(0)  # first frame of an animated GIF/WebP/APNG
                im.load()  # decode now, inside the try: truncation shows up here
                return to_rgb(ImageOps.exif_transpose(im))
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


def to_rgb(im: Image.Image) -> Image.Image:
    """Convert any PIL mode to 8-bit RGB the way a viewer would display it."""
    if im.mode in ("I;16", "I;16B", "I;16L", "I"):
        # 16/32-bit grayscale: convert("L") would clip everything above 255 to white.
        pixels = np.asarray(im, dtype=np.float64)
        top = 65535.0 if pixels.max() > 255 else 255.0
        im = Image.fromarray(np.clip(pixels / top * 255.0 + 0.5, 0, 255).astype(np.uint8))
    elif im.mode == "F":
        im = Image.fromarray(np.clip(np.asarray(im) * 255.0 + 0.5, 0, 255).astype(np.uint8))
    if im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info):
        background = Image.new("RGBA", im.size, WHITE + (255,))
        return Image.alpha_composite(background, im.convert("RGBA")).convert("RGB")
    return im.convert("RGB")
