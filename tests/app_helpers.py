"""Helpers for the app tests: calling /analyze with default views, writing test images."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

VIEW_DEFAULTS = {
    "layer": 6,
    "fusion": "mean",
    "discard": 0.0,
    "cmap": "inferno",
    "opacity": 0.6,
    "upsampling": "nearest",
    "display": "overlay",
    "scale": "layer",
    "show": "weights",
    "keep_percent": 60,
}


def analyze(client, path, mode: str = "crop", model: str = "bundled", **settings):
    """Call /analyze with default view settings (or `settings` by name); returns its outputs."""
    from gradio_client import handle_file

    d = VIEW_DEFAULTS | settings
    return client.predict(
        handle_file(str(path)),
        model,
        mode,
        d["layer"],
        d["fusion"],
        d["discard"],
        d["cmap"],
        d["opacity"],
        d["upsampling"],
        d["display"],
        d["scale"],
        d["show"],
        d["keep_percent"],
        api_name="/analyze",
    )


def save_rgb(path: Path, array: np.ndarray, **kwargs) -> Path:
    Image.fromarray(array).save(path, **kwargs)
    return path
