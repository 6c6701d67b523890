"""Which files a visitor may make the server open: only their uploads.

Gradio hands handlers the path of each uploaded file. With `preprocess=False` (the app
decodes images itself) that path is whatever the client sent, so every handler checks it
here. A path outside the upload folder and a missing file get the same answer, so a
visitor learns nothing about the server's files, and messages never print server paths.
"""

from __future__ import annotations

import os
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


def prune_oldest(root: str | os.PathLike, budget_bytes: int) -> int:
    """Delete the oldest files under `root` until what is left fits `budget_bytes`; returns
    the bytes freed. The newest files (a visitor's fresh upload, a view just drawn) go last."""
    files = []
    for path in Path(root).rglob("*"):
        try:
            if path.is_file() and not path.is_symlink():
                stat = path.stat()
                files.append((stat.st_mtime, stat.st_size, path))
        except OSError:  # deleted meanwhile by Gradio's own hourly clean-up
            continue
    used, freed = sum(size for _, size, _ in files), 0
    for _, size, path in sorted(files, key=lambda f: f[0]):
        if used - freed <= budget_bytes:
            break
        path.unlink(missing_ok=True)
        freed += size
    return freed
