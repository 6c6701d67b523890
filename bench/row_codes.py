"""Could a layer's patch rows be sent in fewer bytes, still exact to the colour (issue 58)?

    python -m bench.row_codes                     # every code below, on five kinds of attention
    python -m bench.row_codes --images cat ship

What the page is sent of a layer's patch rows before any further action is, for each band of
queries (explorer.page_budget), the layer scale's colour index of every cell (explorer.page_maps,
part_plane "layer"), one byte a cell, deflated (`sent`), beside the rows' words. This codes
the same bytes other ways, every one lossless (each code's decoding is checked to give the very
indices back), and prints kilobytes a layer, the mean over the layers measured, band by band as
the page asks for them, and how much smaller than at zlib level 1 as they are (as sent before):

- zlib at level 4 (ROWS_DEFLATE_LEVEL) and 9, and level 9 with zlib's "filtered" strategy;
  brotli at quality 11 (what an HTTP reply could carry with Content-Encoding: br), for reference;
- the planes head-major (each head's queries together) instead of query-major;
- PNG's prediction filters before deflating: Up across the band's queries (raster order), Sub
  along the keys' grid rows, Paeth over the keys' grid, Up across queries then Sub along keys;
- a per-query, per-head linear prediction from the previous query's row (an int8 coefficient and
  offset with a shift: integer arithmetic the page could repeat exactly), the residual deflated;
- a low-rank prediction: per layer and head, r int8 key factors (the index matrix's first r right
  singular vectors, sent once a layer), per query and head r + 1 int8 coefficients with a shift;
  the residual mod 256 deflated. Its key factors are counted once a layer.

The kinds of attention: the bundled model (trained) at its 32 px (8 x 8 patches) and at 56 px
(14 x 14, ViT-B/16's 196 keys; its position embeddings interpolated), and ViT-B/16 with random
weights (as bench.page_bytes measures it) whose queries and keys are multiplied by a gain
(bench.forward.peaked: 1 is the random initialisation, larger gains peak the attention as training
does). Nothing here is a test; one run takes a few minutes on two cores.
"""

from __future__ import annotations

import argparse
import zlib
from collections.abc import Callable

import brotli
import numpy as np
import torch
from PIL import Image

import vit
from bench.checkpoints import IMAGENET
from bench.forward import peaked
from bench.visitors import EXAMPLES
from explorer.catalog import BUNDLED_PATH
from explorer.explain import Explanation, explain
from explorer.page_maps import ROWS_DEFLATE_LEVEL, ROWS_FILTERS, filtered_planes, page_shape, part_plane, patch_rows
from vit.preprocessing import Preprocessing

BEFORE = "zlib level 1, as is (sent before)"
SENT = f"zlib level {ROWS_DEFLATE_LEVEL}, as is or Up-then-Sub filtered, the smaller (sent)"
Code = Callable[[np.ndarray, tuple[int, int]], bytes]  # a band's plane (Q, H, N) and the grid -> bytes sent


def deflated(data: bytes, level: int = ROWS_DEFLATE_LEVEL, strategy: int = zlib.Z_DEFAULT_STRATEGY) -> bytes:
    """`data` deflated as zlib.compress does (a zlib stream, 15 window bits, memory level 8)."""
    packer = zlib.compressobj(level, zlib.DEFLATED, 15, 8, strategy)
    return packer.compress(data) + packer.flush()


def grid_shifted(plane: np.ndarray, grid: tuple[int, int], dq: int = 0, dy: int = 0, dx: int = 0) -> np.ndarray:
    """(Q, H, N) int64: each cell's neighbour at query q - dq, key (y - dy, x - dx); 0 outside."""
    q, h = plane.shape[:2]
    cells = plane.reshape(q, h, *grid)
    out = np.zeros_like(cells)
    out[dq:, :, dy:, dx:] = cells[: q - dq, :, : grid[0] - dy, : grid[1] - dx]
    return out.reshape(plane.shape)


def paeth(plane: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    """PNG's Paeth predictor over the keys' grid: left, above or above-left, whichever is nearest."""
    a, b = grid_shifted(plane, grid, dx=1), grid_shifted(plane, grid, dy=1)
    c = grid_shifted(plane, grid, dy=1, dx=1)
    guess = a + b - c
    pa, pb, pc = np.abs(guess - a), np.abs(guess - b), np.abs(guess - c)
    return np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))


def filtered(predict: Callable[[np.ndarray, tuple[int, int]], np.ndarray]) -> Code:
    """A code that deflates each cell less its prediction, mod 256 (the page adds it back)."""
    return lambda plane, grid: deflated(((plane - predict(plane, grid)) & 255).astype(np.uint8).tobytes())


def fitted(values: np.ndarray, basis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares coefficients of `values` (M, N) on `basis` (M or 1, N, B) as int8 with a shift each:
    (coefficients (M, B) int64, shifts (M,) int64)."""
    basis = np.broadcast_to(basis, (values.shape[0], *basis.shape[1:])).astype(np.float64)
    alpha = np.stack([np.linalg.lstsq(b, v, rcond=None)[0] for b, v in zip(basis, values, strict=True)])
    largest = np.maximum(np.abs(alpha).max(axis=1), 1e-9)
    shifts = np.clip(np.floor(np.log2(127 / largest)), 0, 30).astype(np.int64)
    return np.clip(np.rint(alpha * 2.0 ** shifts[:, None]), -128, 127).astype(np.int64), shifts


def predicted(coefficients: np.ndarray, shifts: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """floor((sum_j a_j b_j + 2^(s-1)) / 2^s): integers only, which the page's float64 holds exactly."""
    total = np.einsum("mb,mnb->mn", coefficients, np.broadcast_to(basis, (len(coefficients), *basis.shape[1:])))
    return (total + (1 << shifts)[:, None] // 2) >> shifts[:, None]


def residual_code(plane: np.ndarray, basis: np.ndarray) -> bytes:
    """Each (query, head) row fitted on `basis` ((Q·H or 1), N, B) int64: its coefficients, shifts and
    residual mod 256, deflated, checked to decode to `plane`."""
    rows = plane.reshape(-1, plane.shape[-1])
    coefficients, shifts = fitted(rows, basis)
    guess = predicted(coefficients, shifts, basis)
    residual = ((rows - guess) & 255).astype(np.uint8)
    assert (((guess + residual) & 255) == rows).all()
    side = coefficients.astype(np.int8).tobytes() + shifts.astype(np.uint8).tobytes()
    return deflated(side + residual.tobytes())


def previous_query(plane: np.ndarray, grid: tuple[int, int]) -> bytes:
    """The previous query's row (0 for the band's first) and a constant, per query and head."""
    before = grid_shifted(plane, grid, dq=1).reshape(-1, plane.shape[-1])
    basis = np.stack([before, np.full_like(before, 127)], axis=-1)
    return residual_code(plane, basis)


def key_factors(layer: np.ndarray, rank: int) -> np.ndarray:
    """(H, N, rank + 1) int64: each head's first `rank` right singular vectors of its (Q, N) indices as
    int8, and a constant column."""
    factors = []
    for head in range(layer.shape[1]):
        right = np.linalg.svd(layer[:, head].astype(np.float64), full_matrices=False)[2][:rank].T
        scaled = np.rint(right * 127 / np.maximum(np.abs(right).max(axis=0), 1e-9))
        factors.append(np.concatenate([scaled, np.full((len(scaled), 1), 127.0)], axis=1))
    return np.stack(factors).astype(np.int64)


def low_rank(layer: np.ndarray, band: int, rank: int) -> int:
    """Bytes of a whole layer's bands coded on its key factors, with the factors once."""
    factors = key_factors(layer, rank)
    total = len(deflated(factors[..., :rank].astype(np.int8).tobytes()))
    for first in range(0, len(layer), band):
        plane = layer[first : first + band]
        total += len(residual_code(plane, np.tile(factors, (len(plane), 1, 1))))
    return total


def sent(plane: np.ndarray, grid: tuple[int, int]) -> bytes:
    """The plane as explorer.page_maps.encode_rows sends it: each of ROWS_FILTERS tried, the smallest kept."""
    laid = {"none": plane.astype(np.uint8), "up-sub": filtered_planes([plane.astype(np.uint8)], grid)[0]}
    return min((deflated(laid[how].tobytes()) for how in ROWS_FILTERS), key=len)


CODES: dict[str, Code] = {
    BEFORE: lambda plane, grid: deflated(plane.astype(np.uint8).tobytes(), 1),
    SENT: sent,
    f"zlib level {ROWS_DEFLATE_LEVEL}, as is": lambda plane, grid: deflated(plane.astype(np.uint8).tobytes()),
    "zlib level 9": lambda plane, grid: deflated(plane.astype(np.uint8).tobytes(), 9),
    "zlib level 9, filtered strategy": lambda plane, grid: deflated(plane.astype(np.uint8).tobytes(), 9, 1),
    "brotli quality 11": lambda plane, grid: brotli.compress(plane.astype(np.uint8).tobytes(), quality=11),
    "head-major": lambda plane, grid: deflated(plane.astype(np.uint8).transpose(1, 0, 2).tobytes()),
    "Up across queries": filtered(lambda plane, grid: grid_shifted(plane, grid, dq=1)),
    "Sub along keys": filtered(lambda plane, grid: grid_shifted(plane, grid, dx=1)),
    "Paeth over the keys' grid": filtered(paeth),
    "Up across queries, then Sub along keys (always)": lambda plane, grid: deflated(
        filtered_planes([plane.astype(np.uint8)], grid)[0].tobytes()
    ),
    "linear in the previous query (per query and head)": previous_query,
}
RANKS = (4, 8, 16)


def layer_planes(ex: Explanation, layers: list[int]) -> list[np.ndarray]:
    """(Q, H, N) int64 layer-scale colour indices of every patch query of each of `layers`."""
    patches, planes = ex.grid[0] * ex.grid[1], []
    for layer in layers:
        maps = patch_rows(ex, layer, 0, patches)[..., len(ex.prefix_names) :]
        planes.append(part_plane("layer", maps, maps.max(axis=-1)).astype(np.int64))
    return planes


def costs(ex: Explanation, layers: list[int]) -> dict[str, float]:
    """Each code's kilobytes a layer (the mean over `layers`), band by band as the page asks."""
    band, planes, result = page_shape(ex).band, layer_planes(ex, layers), {}
    for name, code in CODES.items():
        sizes = [sum(len(code(p[f : f + band], ex.grid)) for f in range(0, len(p), band)) for p in planes]
        result[name] = float(np.mean(sizes)) / 1e3
    for rank in RANKS:
        sizes = [low_rank(p, band, rank) for p in planes]
        result[f"low rank {rank}, key factors once a layer"] = float(np.mean(sizes)) / 1e3
    return result


def kinds(images: list[str], gains: list[float]) -> dict[str, list[tuple[Explanation, list[int]]]]:
    """Label -> the analyses of `images` and the layers measured of each."""
    model, meta = vit.checkpoint.load_checkpoint(BUNDLED_PATH)
    pre, names = meta.preprocessing, [str(i) for i in range(model.config.num_classes)]
    pictures = [Image.open(EXAMPLES / f"{name}.jpg").convert("RGB") for name in images]
    at_56 = Preprocessing(resize_size=56, crop_size=56, mean=pre.mean, std=pre.std)
    result = {
        "bundled, 32 px": [(explain(model, names, pre, p), list(range(model.config.depth))) for p in pictures],
        "bundled, 56 px": [(explain(model, names, at_56, p), list(range(model.config.depth))) for p in pictures],
    }
    for gain in gains:
        with torch.random.fork_rng():
            torch.manual_seed(0)  # bench.checkpoints.random_checkpoint's weights, as bench.page_bytes serves them
            b16 = peaked(vit.create_model("vit_base_patch16_224", num_classes=1000).eval(), gain)
        classes = [str(i) for i in range(1000)]
        result[f"B/16 random, gain {gain:g}"] = [(explain(b16, classes, IMAGENET, p), [0, 5, 11]) for p in pictures]
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", nargs="+", default=["cat"])
    parser.add_argument("--gains", type=float, nargs="+", default=[1, 2, 3])
    args = parser.parse_args(argv)
    torch.set_num_threads(2)
    analyses = kinds(args.images, args.gains)
    columns = {label: [costs(ex, layers) for ex, layers in runs] for label, runs in analyses.items()}
    print("| code (kB a layer, mean) | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    for name in next(iter(columns.values()))[0]:
        cells = []
        for runs in columns.values():
            now, this = (float(np.mean([run[key] for run in runs])) for key in (BEFORE, name))
            cells.append(f"{this:.1f}" + ("" if this == now else f" ({100 * (this / now - 1):+.0f} %)"))
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
