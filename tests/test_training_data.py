"""Data loading: ImageFolder folders, torchvision's CIFAR-10 format, caching, clear errors."""

from __future__ import annotations

import hashlib
import pickle
import tarfile

import numpy as np
import pytest
import torch
from conftest import SHARED
from training_helpers import CLASSES, class_image, write_image_folder

from training.data import (
    DataError,
    ImageSet,
    check_source,
    holdout_split,
    load_cifar10,
    load_image_folder,
    load_split,
)
from vit.preprocessing import CIFAR10_CLASSES


def test_image_folder_loads_pixels_labels_and_class_names(tmp_path):
    root = write_image_folder(tmp_path / "data", per_class=3, size=8)
    data = load_split(str(root), "train")
    assert data.class_names == list(CLASSES)
    assert data.images.shape == (9, 3, 8, 8) and data.images.dtype == torch.uint8
    assert data.labels.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert torch.equal(data.images[4], class_image(1, 1, 8))  # PNG is lossless: exact pixels
    assert len(load_split(str(root), "test")) == 3 * 4


def test_decoded_set_is_cached_and_refreshed_when_files_change(tmp_path):
    root = write_image_folder(tmp_path / "data", per_class=2, size=8)
    cache = tmp_path / "c"
    first = load_image_folder(root / "train", cache)
    assert len(list(cache.glob("*.safetensors"))) == 1
    again = load_image_folder(root / "train", cache)
    assert torch.equal(first.images, again.images)
    (root / "train" / "dog" / "0000.png").unlink()  # the file list changed: a new cache entry
    changed = load_image_folder(root / "train", cache)
    assert len(changed) == 5 and len(list(cache.glob("*.safetensors"))) == 2


@pytest.mark.parametrize(
    ("setup", "match"),
    [
        (lambda root: None, "no such folder"),
        (lambda root: (root / "train" / "cat").mkdir(parents=True), "no images found"),
        (lambda root: write_image_folder(root, per_class=2, classes=("only",)), "need at least 2"),
        (lambda root: (write_image_folder(root, per_class=1), (root / "train" / "bird").mkdir()), "without images"),
    ],
    ids=["missing", "empty", "one-class", "empty-class"],
)
def test_bad_folders_fail_before_any_decoding(tmp_path, setup, match):
    root = tmp_path / "data"
    setup(root)
    with pytest.raises(DataError, match=match):
        check_source(str(root))


def test_unreadable_image_is_named(tmp_path):
    root = write_image_folder(tmp_path / "data", per_class=2, size=8)
    (root / "train" / "dog" / "0001.png").write_bytes(b"not an image")
    with pytest.raises(DataError, match=r"dog/0001\.png: unreadable image"):
        load_split(str(root), "train")


def test_holdout_is_deterministic_disjoint_and_complete(tmp_path):
    data = load_split(str(write_image_folder(tmp_path / "data", per_class=10, size=8)), "train")
    train, val = holdout_split(data, 7, seed=3)
    train2, val2 = holdout_split(data, 7, seed=3)
    assert len(val) == 7 and len(train) == 23
    assert torch.equal(val.images, val2.images) and torch.equal(train.labels, train2.labels)
    keys = {img.flatten().tolist().__str__() for img in torch.cat([train.images, val.images])}
    assert len(keys) == 30  # every image exactly once
    with pytest.raises(DataError, match="cannot hold out"):
        holdout_split(data, 30)


def _write_fake_cifar(root, per_batch: int) -> dict[str, str]:
    """cifar-10-batches-py in the real on-disk format: pickled dicts of a (N, 3072) uint8
    array (channel-major rows) and a label list; returns the md5 of every file."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for b, name in enumerate(names):
        labels = [(b + i) % 10 for i in range(per_batch)]
        data = np.stack([np.full(3072, 10 * b + i, dtype=np.uint8) for i in range(per_batch)])
        data[:, 1024:2048] = 200  # the green plane
        with open(folder / name, "wb") as f:
            pickle.dump({"batch_label": name, "labels": labels, "data": data, "filenames": []}, f, protocol=2)
    with open(folder / "batches.meta", "wb") as f:
        pickle.dump({"label_names": list(CIFAR10_CLASSES), "num_cases_per_batch": per_batch}, f, protocol=2)
    return {p.name: hashlib.md5(p.read_bytes()).hexdigest() for p in folder.iterdir()}


def test_torchvision_cifar10_path_offline(tmp_path, monkeypatch):
    from torchvision.datasets import CIFAR10

    md5 = _write_fake_cifar(tmp_path, per_batch=4)
    # torchvision only unpickles files whose md5 matches its list: point the list at our fakes.
    monkeypatch.setattr(CIFAR10, "train_list", [[f"data_batch_{i}", md5[f"data_batch_{i}"]] for i in range(1, 6)])
    monkeypatch.setattr(CIFAR10, "test_list", [["test_batch", md5["test_batch"]]])
    monkeypatch.setattr(CIFAR10, "meta", {**CIFAR10.meta, "md5": md5["batches.meta"]})
    train = load_cifar10(tmp_path, train=True, download=False)
    assert train.images.shape == (20, 3, 32, 32)
    assert train.class_names == list(CIFAR10_CLASSES)
    assert train.labels[:5].tolist() == [0, 1, 2, 3, 1]
    assert train.images[1, 0, 0, 0] == 1 and train.images[1, 1, 5, 5] == 200  # CHW layout kept
    test = load_cifar10(tmp_path, train=False, download=False)
    assert len(test) == 4 and test.images[0, 2, 31, 31] == 50


def test_torchvision_cifar10_missing_offline_says_what_to_do(tmp_path, monkeypatch):
    with pytest.raises(DataError, match="CIFAR-10 is not under .*ImageFolder layout"):
        load_cifar10(tmp_path / "nothing", train=True, download=False)
    import urllib.error

    import torchvision.datasets

    def offline(*args, **kwargs):
        raise urllib.error.URLError("[Errno -2] Name or service not known")

    monkeypatch.setattr(torchvision.datasets, "CIFAR10", offline)
    with pytest.raises(DataError) as refused:  # a teacher's sentence, not "URLError: <urlopen ..."
        load_cifar10(tmp_path / "nothing", train=True, download=True)
    assert str(refused.value).startswith("CIFAR-10 cannot be downloaded here") and "URLError" not in str(refused.value)


def test_shared_cifar_archive_has_the_torchvision_classes(tmp_path):
    archive = SHARED / "data" / "cifar10-jpeg.tar.gz"
    if not archive.is_file():
        pytest.skip(f"{archive} is absent (the project's shared data is not on this machine)")
    with tarfile.open(archive) as tar:  # unpack 3 test images per class, not all 60,000
        wanted = [m for m in tar.getmembers() if m.isfile() and m.name.split("/")[-3:-2] == ["test"]]
        picked = [m for m in wanted if int(m.name.rsplit("/", 1)[-1].split(".")[0]) < 3]
        tar.extractall(tmp_path, members=picked, filter="data")
    root = next(p.parent for p in tmp_path.rglob("test") if p.is_dir())
    data = load_split(str(root), "test")
    assert data.class_names == list(CIFAR10_CLASSES)  # torchvision's CIFAR10.classes, same order
    assert data.images.shape == (30, 3, 32, 32)


@pytest.mark.parametrize(
    ("images", "labels", "match"),
    [
        (torch.zeros(2, 3, 4, 4), torch.zeros(2, dtype=torch.long), r"uint8 tensor, got torch.float32 \(2, 3, 4, 4\)"),
        (torch.zeros(2, 1, 4, 4, dtype=torch.uint8), torch.zeros(2, dtype=torch.long), r"\(N, 3, H, W\)"),
        (torch.zeros(2, 3, 4, 4, dtype=torch.uint8), torch.zeros(3, dtype=torch.long), "2 images but 3 labels"),
    ],
)
def test_image_set_refuses_tensors_of_the_wrong_kind(images, labels, match):
    with pytest.raises(DataError, match=match):
        ImageSet(images, labels, ["a", "b"])
