"""Helpers for the app tests: calling /analyze with default views, writing test images."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from PIL import Image

from bench.serving import free_port

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
    "pca_layer": 6,
    "pca_examples": False,
    "pca_background": True,
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
        d["pca_layer"],
        d["pca_examples"],
        d["pca_background"],
        api_name="/analyze",
    )


def save_rgb(path: Path, array: np.ndarray, **kwargs) -> Path:
    Image.fromarray(array).save(path, **kwargs)
    return path


@contextmanager
def served(demo) -> Iterator[str]:
    """`demo` launched in this process on a free loopback port; yields its URL and closes it after."""
    port = free_port()
    demo.launch(server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()
