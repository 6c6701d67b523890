"""Which files a visitor may make the server open: only their uploads.

Gradio hands handlers the path of each uploaded file. With `preprocess=False` (the app
decodes images itself) that path is whatever the client sent, so every handler checks it
here. A path outside the upload folder and a missing file get the same answer, so a
visitor learns nothing about the server's files, and messages never print server paths.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path

REFUSED = "this file is not an upload of this app: upload the file again"


class UploadRefused(ValueError):
    """A path that is not a readable file inside the upload folder; the message never says which."""


def checked_upload(path: str | os.PathLike | None, upload_root: str | os.PathLike) -> Path:
    """`path` resolved (symlinks followed) if it is a regular file inside `upload_root`;
    otherwise UploadRefused with one message whatever the reason."""
    if not path:
        raise UploadRefused(REFUSED)
    root = Path(upload_root).resolve()
    try:
        resolved = Path(path).resolve()
    except (OSError, RuntimeError, ValueError) as e:  # symlink loops, NUL bytes
        raise UploadRefused(REFUSED) from e
    if not (resolved.is_relative_to(root) and resolved != root and resolved.is_file()):
        raise UploadRefused(REFUSED)
    return resolved


SPACE_FULL = "the server's space for uploads is full right now: try again in a few minutes"


class UploadSpaceFull(UploadRefused):
    """A file that arrived does not fit the upload folder's budget, even with older files gone."""


def _files(root: str | os.PathLike) -> list[tuple[float, int, Path]]:
    """(mtime, bytes, path) of every regular file under `root`."""
    files = []
    for path in Path(root).resolve().rglob("*"):  # resolved, as the paths in `keep` are
        try:
            if path.is_file() and not path.is_symlink():
                stat = path.stat()
                files.append((stat.st_mtime, stat.st_size, path))
        except OSError:  # deleted meanwhile by Gradio's own hourly clean-up
            continue
    return files


def prune_oldest(root: str | os.PathLike, budget_bytes: int, keep: Collection[Path] = ()) -> int:
    """Delete the oldest files under `root` until what is left fits `budget_bytes`; returns
    the bytes freed. Files in `keep` (the app's own files, such as its examples' cached
    copies) are never deleted; the newest files (a fresh upload, a view just drawn) go last."""
    files = _files(root)
    used, freed = sum(size for _, size, _ in files), 0
    for _, size, path in sorted(files, key=lambda f: f[0]):
        if used - freed <= budget_bytes:
            break
        if path in keep:
            continue
        path.unlink(missing_ok=True)
        freed += size
    return freed


def admit(path: Path, root: str | os.PathLike, budget_bytes: int, keep: Collection[Path] = ()) -> None:
    """Make room for `path`, a file that just arrived under `root`: older files go first (never
    `keep`). A file that would not fit even then is deleted and refused, and frees nothing."""
    if path in keep:  # one of the app's own files (an example): already there, always allowed
        return
    kept = sum(size for _, size, p in _files(root) if p in keep)
    if kept + path.stat().st_size > budget_bytes:
        path.unlink(missing_ok=True)
        raise UploadSpaceFull(SPACE_FULL)
    prune_oldest(root, budget_bytes, {*keep, path})
