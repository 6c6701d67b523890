"""`python -m training.evaluate`: accuracy, per-class accuracy, confusion matrix, PNG and JSON."""

from __future__ import annotations

import json

import pytest
import torch
from training_helpers import CLASSES, write_image_folder

import vit
from training.data import DataError, load_split
from training.evaluate import confusion_matrix, evaluate_checkpoint, main


@pytest.fixture
def checkpoint(tmp_path):
    torch.manual_seed(0)
    model = vit.create_model("vit_cifar_nano", num_classes=3, image_size=16, depth=1)
    preprocessing = vit.Preprocessing(resize_size=16, crop_size=16, mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))
    path = tmp_path / "model.safetensors"
    vit.save_checkpoint(model, path, class_names=list(CLASSES), preprocessing=preprocessing)
    return path


def test_confusion_matrix_rows_are_true_classes():
    labels = torch.tensor([0, 0, 1, 2, 2, 2])
    predictions = torch.tensor([0, 1, 1, 2, 0, 2])
    assert confusion_matrix(labels, predictions, 3).tolist() == [[1, 1, 0], [0, 1, 0], [1, 0, 2]]


def test_results_agree_with_a_direct_forward_pass(tmp_path, checkpoint):
    root = write_image_folder(tmp_path / "data", per_class=2, size=16, test_per_class=5)
    results = evaluate_checkpoint(str(checkpoint), str(root), "test", device="cpu", batch_size=4)
    model, _ = vit.load_checkpoint(checkpoint)
    data = load_split(str(root), "test")
    with torch.no_grad():
        predictions = model((data.images.float() / 255 - 0.5) / 0.25).argmax(dim=1)
    correct = predictions == data.labels
    assert results["images"] == 15
    assert results["accuracy"] == pytest.approx(correct.float().mean().item())
    for label, name in enumerate(CLASSES):
        assert results["per_class_accuracy"][name] == pytest.approx(correct[data.labels == label].float().mean().item())
    assert sum(map(sum, results["confusion_matrix"])) == 15


def test_cli_writes_png_and_json(tmp_path, checkpoint, capsys):
    root = write_image_folder(tmp_path / "data", per_class=2, size=16, test_per_class=2)
    png, report = tmp_path / "confusion.png", tmp_path / "results.json"
    args = ["--checkpoint", str(checkpoint), "--data", str(root), "--confusion", str(png), "--json", str(report)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("test accuracy: ") and all(name in out for name in CLASSES)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads(report.read_text())["class_names"] == list(CLASSES)


def test_data_with_other_classes_is_refused(tmp_path, checkpoint):
    root = write_image_folder(tmp_path / "data", per_class=2, size=16, classes=("a", "b", "c"))
    with pytest.raises(DataError, match="differ from the model's"):
        evaluate_checkpoint(str(checkpoint), str(root), "train")
