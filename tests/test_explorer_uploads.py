"""explorer.uploads: only files inside the upload folder, one message for every refusal."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from explorer.uploads import REFUSED, UploadRefused, checked_upload, prune_oldest


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "uploads" / "abc").mkdir(parents=True)
    (tmp_path / "uploads" / "abc" / "cat.png").write_bytes(b"png")
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "secret.png").write_bytes(b"png")
    os.symlink(tmp_path / "private" / "secret.png", tmp_path / "uploads" / "link.png")
    return tmp_path / "uploads"


def test_an_upload_is_accepted(root: Path) -> None:
    assert checked_upload(str(root / "abc" / "cat.png"), root) == (root / "abc" / "cat.png").resolve()


@pytest.mark.parametrize(
    "path",
    [
        "{root}/../private/secret.png",  # exists, outside
        "{root}/../private/missing.png",  # missing, outside
        "{root}/abc/missing.png",  # missing, inside
        "{root}/link.png",  # a symlink out of the folder
        "{root}/abc",  # a folder
        "{root}",
        "/etc/passwd",
        "",
        "{root}/abc/\0.png",
    ],
)
def test_everything_else_gets_the_same_message(root: Path, path: str) -> None:
    with pytest.raises(UploadRefused) as info:
        checked_upload(path.format(root=root), root)
    assert str(info.value) == REFUSED and str(root) not in str(info.value)


def test_pruning_deletes_the_oldest_files_until_the_folder_fits(tmp_path: Path) -> None:
    for i, name in enumerate(["a/old.png", "b/middle.png", "c/new.png"]):
        path = tmp_path / name
        path.parent.mkdir()
        path.write_bytes(b"x" * 1000)
        os.utime(path, (1000 + i, 1000 + i))
    assert prune_oldest(tmp_path, 2000) == 1000
    assert not (tmp_path / "a/old.png").exists() and (tmp_path / "b/middle.png").exists()
    assert prune_oldest(tmp_path, 2000) == 0  # already within the budget
    assert prune_oldest(tmp_path, 0) == 2000 and not any(p.is_file() for p in tmp_path.rglob("*"))
