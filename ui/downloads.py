"""Models loaded for a visitor with the download shown: bytes and percent in Gradio's progress
bar while pretrained weights download (explorer.catalog shares one download among everyone who
asks at once), one line without Python in the toast when a model cannot be had."""

from __future__ import annotations

import gradio as gr

from explorer.catalog import ModelCatalog, ModelUnavailable, Progress, download_text
from explorer.loaded import LoadedModel

from .checks import visitor_error


def download_progress(progress: gr.Progress, key: str) -> Progress:
    """The catalogue's progress callback drawn as `progress`: a bar with "downloading NAME:
    12.5 of 88.3 MB (14%)" (an open bar with the megabytes so far when the size is unknown)."""
    name = key.partition(":")[2] or key

    def report(done: int, total: int | None) -> None:
        text = download_text(name, done, total)
        if total:
            progress(min(done / total, 1.0), desc=text)
        else:
            progress((done, None), desc=text, unit="bytes")

    return report


def load(
    catalog: ModelCatalog, key: object, progress: gr.Progress | None = None, visitor: str | None = None
) -> LoadedModel:
    """The model behind `key` for `visitor` (ModelCatalog.check_use), its download
    drawn on `progress`; gr.Error (one line) if it cannot be had. The full reason is in the
    server log (explorer.catalog logs it)."""
    try:
        on_bytes = download_progress(progress, str(key)) if progress is not None else None
        return catalog.get(str(key), progress=on_bytes, visitor=visitor)
    except ModelUnavailable as e:
        raise visitor_error(str(e)) from e
