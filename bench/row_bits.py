"""How many bytes one layer's patch rows must take, exact to the colour, for a trained model and
for random weights (issue 58's goals for ViT-B/16: 0.3 MB a layer, 0.5 MB before any action).

    python -m bench.row_bits                      # the bundled model, then ViT-B/16 at several gains
    python -m bench.row_bits --gains 1 3 6 --images cat ship

The page draws each cell of a map in one of 256 colours, exactly the server's PNG's
(explorer.page_maps.part_plane, the layer scale), so a layer's patch rows carry one colour index
a cell, deflated. What deflate leaves of them is the information they hold: this prints it in
bits a cell for each layer, for the bundled model (trained), and for ViT-B/16 with random
weights whose queries and keys are multiplied by a gain (bench.forward.peaked: 1 is the random
initialisation's near-uniform attention; larger gains peak it as training does), with the
megabytes one ViT-B/16 layer (196 x 196 cells x 12 heads) would take at that rate. The inputs are
the committed CIFAR-10 examples, resized to the model's side (not its preprocessing: the
attention's shape, not its accuracy, is what is measured). Nothing here is a test.
"""

from __future__ import annotations

import argparse
import zlib

import numpy as np
import torch
from PIL import Image

import vit
from bench.forward import peaked
from bench.visitors import EXAMPLES
from explorer.catalog import BUNDLED_PATH
from explorer.explain import model_maps
from explorer.page_maps import ROWS_DEFLATE_LEVEL, part_plane

B16_CELLS = 196 * 196 * 12  # one ViT-B/16 layer's patch rows: queries x patches x heads


def bits_per_cell(model: vit.VisionTransformer, images: list[str]) -> np.ndarray:
    """(layers,) bits a cell of each layer's patch rows, layer-scale colour indices deflated at the
    rows' level, unfiltered (bench.row_codes compares the filters), averaged over `images` (example names)."""
    side = model.config.image_size
    per_image = []
    for name in images:
        pixels = np.array(Image.open(EXAMPLES / f"{name}.jpg").convert("RGB").resize((side, side)))
        tensor = (torch.from_numpy(pixels).permute(2, 0, 1).float() / 255 - 0.5) / 0.5  # (3, side, side)
        with torch.no_grad():
            _, maps = model_maps(model, tensor[None])
        prefix, layers = maps.prefix_tokens, []
        for attention in maps:
            rows = attention[0][:, prefix:, prefix:].permute(1, 0, 2).numpy()  # (patches Q, heads H, patches N)
            plane = part_plane("layer", rows, rows.max(axis=-1)).astype(np.uint8)
            layers.append(8 * len(zlib.compress(plane.tobytes(), ROWS_DEFLATE_LEVEL)) / plane.size)
        per_image.append(layers)
    return np.mean(per_image, axis=0)


def report(label: str, bits: np.ndarray) -> None:
    per_layer = " ".join(f"{b:.2f}" for b in bits)
    print(f"| {label} | {per_layer} | {bits.mean():.2f} | {bits.mean() * B16_CELLS / 8e6:.3f} MB |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gains", type=float, nargs="+", default=[1, 2, 3, 4, 6])
    parser.add_argument("--images", nargs="+", default=["cat", "ship", "horse", "truck"])
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print("| model | bits a cell, layer by layer | mean | a ViT-B/16 layer at that rate |")
    print("|---|---|---|---|")
    report("bundled (trained)", bits_per_cell(vit.checkpoint.load_checkpoint(BUNDLED_PATH)[0], args.images))
    for gain in args.gains:
        torch.manual_seed(0)
        model = peaked(vit.create_model("vit_base_patch16_224").eval(), gain)
        report(f"ViT-B/16, random weights, gain {gain:g}", bits_per_cell(model, args.images))


if __name__ == "__main__":
    main()
