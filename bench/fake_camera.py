"""A clip for Chromium's fake webcam (`--use-file-for-fake-video-capture=clip.y4m`) that says
which frame it is: a bright square moving left to right across a dark frame, and the frame
number written in bright and dark blocks. Used by tests/test_ui_live.py and bench/live.py.

Everything sits inside the centre square of the frame (what the app's centre crop keeps),
on a grid of 8 x 8 cells of that square, so it survives any model input size down to 32 px:
cells (row 1-2) hold the square, 2 x 2 cells whose left edge moves from column 0 to 6 over the
clip; row 6 holds the frame number's bits (columns 1-6, least significant first) between a
bright marker (column 0) and a dark one (column 7).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

CELLS = 8
BITS = 6  # frame numbers 0 to 63
DARK, BRIGHT = 16, 235  # luma of the background and of the square and the set bits
BIT_ROW = 6


def clip_frames(frames: int, height: int, width: int) -> list[np.ndarray]:
    """`frames` luma planes (height, width) uint8 of the moving square and the frame number."""
    if not 0 < frames <= 2**BITS:
        raise ValueError(f"frames must be from 1 to {2**BITS}, got {frames}")
    side = min(height, width)
    top, left, cell = (height - side) // 2, (width - side) // 2, side // CELLS
    out = []
    for n in range(frames):
        y = np.full((height, width), DARK, np.uint8)
        x = left + round(square_left(n, frames) * cell)
        y[top + cell : top + 3 * cell, x : x + 2 * cell] = BRIGHT
        lit = [0] + [1 + b for b in range(BITS) if n >> b & 1]
        for col in lit:
            y[top + BIT_ROW * cell : top + (BIT_ROW + 1) * cell, left + col * cell : left + (col + 1) * cell] = BRIGHT
        out.append(y)
    return out


def square_left(n: int, frames: int) -> float:
    """The square's left edge in frame `n`, in cells of the centre square (0 to 6)."""
    return (CELLS - 2) * n / frames


def write_y4m(path: str | Path, frames: list[np.ndarray], fps: int) -> Path:
    """Frames as a YUV4MPEG2 (4:2:0, full-range BT.601) clip, the format Chromium's fake
    camera reads: luma planes (H, W) for a grey clip, or RGB images (H, W, 3)."""
    height, width = frames[0].shape[:2]
    grey = np.full((height // 2, width // 2), 128, np.uint8).tobytes()
    with open(path, "wb") as f:
        f.write(f"YUV4MPEG2 W{width} H{height} F{fps}:1 Ip A1:1 C420jpeg\n".encode())
        for frame in frames:
            if frame.ndim == 2:
                f.write(b"FRAME\n" + frame.tobytes() + grey + grey)
                continue
            y, cb, cr = Image.fromarray(frame).convert("YCbCr").split()  # JPEG's (full-range) YCbCr
            half = (width // 2, height // 2)
            chroma = [c.resize(half, Image.Resampling.BOX).tobytes() for c in (cb, cr)]
            f.write(b"FRAME\n" + y.tobytes() + chroma[0] + chroma[1])
    return Path(path)


def read_frame(square: np.ndarray) -> tuple[int | None, float | None]:
    """(frame number, the square's centre in cells from the left) read from the centre square
    of a frame as the model saw it: (side, side) or (side, side, 3), any side divisible by 8.
    The number is None where the markers are not where they belong (not a frame of the clip)."""
    grey = square.mean(axis=2) if square.ndim == 3 else square.astype(float)
    cell = grey.shape[0] // CELLS
    middle = grey[BIT_ROW * cell + cell // 4 : (BIT_ROW + 1) * cell - cell // 4]  # rows inside the bit cells

    def lit(col: int) -> bool:
        return middle[:, col * cell + cell // 4 : (col + 1) * cell - cell // 4].mean() > (DARK + BRIGHT) / 2

    if not lit(0) or lit(CELLS - 1):
        return None, None
    number = sum(1 << b for b in range(BITS) if lit(1 + b))
    band = grey[cell + cell // 4 : 3 * cell - cell // 4] > (DARK + BRIGHT) / 2  # rows inside the square
    columns = np.nonzero(band.any(axis=0))[0]
    centre = (columns.min() + columns.max() + 1) / 2 / cell if columns.size else None
    return number, centre
