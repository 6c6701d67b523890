"""Rendered pictures as files Gradio can serve, and the disk budget of that folder: the one
place that knows Gradio's cache folder."""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from collections.abc import Iterable
from pathlib import Path

import gradio as gr
from gradio.utils import get_upload_folder
from PIL import Image

from .uploads import UploadBudget


def upload_folder() -> Path:
    """Gradio's folder of uploads and served files: the only files a visitor may name."""
    return Path(get_upload_folder())


MAX_NAME_BYTES = 160  # of a file the app writes; file systems refuse names over 255 bytes


def bounded_name(name: str) -> str:
    """`name` cut to MAX_NAME_BYTES (UTF-8), its suffix kept, as one file name (no folders)."""
    name = Path(name).name or "file"
    if len(name.encode()) <= MAX_NAME_BYTES:
        return name
    suffix = Path(name).suffix[:16]
    stem = name[: len(name) - len(Path(name).suffix)].encode()[: MAX_NAME_BYTES - len(suffix.encode())]
    return stem.decode(errors="ignore") + suffix


def cache_path(name: str) -> Path:
    """A fresh path in Gradio's upload cache (so `delete_cache` cleans it up), unique per call,
    named `name` cut to a length every file system takes (`bounded_name`)."""
    path = Path(get_upload_folder()) / "vit-explorer" / uuid.uuid4().hex / bounded_name(name)
    path.parent.mkdir(parents=True)
    return path


# How each kind of file is written: both lossless, so every colour a visitor reads is the
# colour drawn (docs/pictures.md). Views shown on the page are WebP at libwebp's fastest effort:
# 20 to 40% less CPU than PNG at zlib level 1, and smaller (bench/profile_analysis.py --encodings,
# docs/benchmarks-app.md); files people download by name (exports) stay PNG.
ENCODINGS = {
    ".webp": {"format": "WEBP", "lossless": True, "quality": 0, "method": 0},
    ".png": {"format": "PNG", "compress_level": 1},
}


def saved(image: Image.Image, name: str = "view.webp") -> str:
    """Write a rendered view under a unique name and return its path; the name's suffix
    (.webp or .png) picks the encoding (ENCODINGS).

    Why not return the PIL image: Gradio then writes it to a path derived from its content,
    non-atomically, so two sessions rendering the identical picture at the same moment (a
    class clicking the same example) can be served a half-written file. Unique paths avoid
    that race."""
    path = cache_path(name)
    image.save(path, **ENCODINGS[path.suffix.lower()])
    UPLOADS.added(path.stat().st_size)
    return str(path)


class UploadSpace(UploadBudget):
    """Gradio's upload folder under its disk budget (docs/security.md): held when a file
    arrives and by a periodic prune; the app's own files in the folder (its examples' cached
    copies, the pictures the page starts with) are never deleted."""

    def __init__(self) -> None:
        super().__init__(upload_folder, 2 * 1024**3)

    def protect(self, blocks: Iterable[gr.blocks.Block]) -> None:
        """Keep every file Gradio cached for these blocks while the page was built."""
        self.keep = frozenset(Path(f).resolve() for block in blocks for f in getattr(block, "temp_files", ()))


UPLOADS = UploadSpace()  # ui.app sets the budget and what to keep


def forget_deleted_files(demo: gr.Blocks) -> int:
    """Drop from Gradio's sets of the files it served (`temp_file_sets`: a path for every view
    drawn) those no longer on disk; how many. Gradio forgets a path only when it deletes the file
    itself, an hour on; the views the budget pruned before that stayed in its sets for good, a
    path for each view a class draws (docs/security.md, the soak)."""
    forgotten = 0
    for files in demo.temp_file_sets:
        gone = {f for f in list(files) if not os.path.exists(f)}  # list(): other threads add meanwhile
        files.difference_update(gone)
        forgotten += len(gone)
    return forgotten


class ServedCopies:
    """Copies, inside Gradio's folder and counted against its budget, of files from outside it
    that a page may download (a training run's checkpoint, in the runs folder). Handed a path
    outside its folder, Gradio copies the file in itself, uncounted: a 25 MB checkpoint took the
    soak's folder past its budget by that much (issue 56), and Gradio hashed the whole file again
    at every poll to name its copy. One copy per version of a file (its path, size and time)."""

    def __init__(self, space: UploadSpace, kept: int = 64) -> None:
        self.space, self.kept = space, kept
        self._copies: dict[tuple[str, int, int], Path] = {}  # version -> its copy, oldest first
        self._lock = threading.Lock()

    def copy(self, path: Path) -> str | None:
        """The path of `path`'s copy in the folder, made (and counted) if none is there; None
        if `path` is gone (a finished run's folder deleted to make room for a new run)."""
        path = path.resolve()
        if path.is_relative_to(Path(self.space.folder()).resolve()):
            return str(path)
        try:
            stat = path.stat()
        except FileNotFoundError:
            return None
        version = (str(path), stat.st_size, stat.st_mtime_ns)
        with self._lock:
            copy = self._copies.get(version)
        if copy is not None and copy.is_file():  # the budget may have pruned it since
            return str(copy)
        copy = cache_path(path.name)
        try:
            shutil.copyfile(path, copy)  # its fresh folder is named to no one until this returns
        except FileNotFoundError:
            shutil.rmtree(copy.parent)
            return None
        self.space.added(copy.stat().st_size)
        with self._lock:
            self._copies[version] = copy
            while len(self._copies) > self.kept:
                del self._copies[next(iter(self._copies))]
        return str(copy)


SERVED = ServedCopies(UPLOADS)
