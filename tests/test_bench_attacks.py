"""bench/attacks.py's hostile files are what they claim to be (the run itself is a benchmark)."""

import numpy as np
from PIL import Image

import vit
from bench.attacks import checkpoint, thin_png
from vit.preprocessing import Preprocessing


def test_the_thin_png_is_a_valid_image_of_the_stated_size(tmp_path):
    path = thin_png(tmp_path / "thin.png", 5000, 1)
    assert path.stat().st_size < 200
    with Image.open(path) as im:
        assert im.size == (5000, 1) and not np.asarray(im).any()


def test_the_costly_checkpoints_are_valid_and_small(tmp_path):
    path = checkpoint(tmp_path / "resize.safetensors", Preprocessing(16000, 32))
    model, meta = vit.load_checkpoint(path)
    assert meta.preprocessing.resize_size == 16000 and model.config.depth == 1 and path.stat().st_size < 20_000
