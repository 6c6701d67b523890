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
    "cmap": "inferno",
    "opacity": 0.6,
    "upsampling": "nearest",
    "display": "overlay",
    "scale": "layer",
}


def analyze(client, path, mode: str = "crop", model: str = "bundled", **settings):
    """Call /analyze with default view settings (or `settings` by name); returns its outputs, the
    first screen: the input, the sizes, the predictions, the layer, the head maps, the query token,
    the query's caption, the export."""
    from gradio_client import handle_file

    d = VIEW_DEFAULTS | settings
    return client.predict(
        handle_file(str(path)),
        model,
        mode,
        d["layer"],
        d["cmap"],
        d["opacity"],
        d["upsampling"],
        d["display"],
        d["scale"],
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


def asked(kind: type, *records: object) -> dict:
    """Several "More views" views' own controls as a handler takes them (`kind`, one of
    ui.explore_views.VIEWS_OF): each view gets the one of `records` of its record's kind (a
    Drawing, a MapStyle, a PcaChoice), a view with no controls its empty record."""
    from ui import explore_views as ev

    def of(name: str) -> object:
        wanted = ev.MORE[name].asked.kind
        return next((r for r in records if isinstance(r, wanted)), None) or wanted()

    return kind({name: of(name) for name in ev.VIEWS_OF[kind]})
