"""The Train tab through its API: a real (tiny) training run in the live app's background job."""

import re
import time

import numpy as np
import pytest
from app_helpers import analyze
from gradio_client import Client
from gradio_client.exceptions import AppError
from PIL import Image
from training_helpers import write_image_folder

import vit

CLASSES = ("cat", "dog")


def wait_for_job(client, timeout_s: float = 150):
    """Poll /train_status until the job stops running; returns the last outputs."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = client.predict(api_name="/train_status")
        if "**job:** not running" in status[0]:
            return status
        time.sleep(0.5)
    raise TimeoutError("training did not finish")


def test_train_watch_and_explore_the_checkpoint(client, tmp_path):
    data = write_image_folder(tmp_path / "data", per_class=8, size=16, classes=CLASSES, test_per_class=2)
    started = client.predict("vit_cifar_nano", "folder", str(data), 2, 1e-3, 8, api_name="/train_start")
    assert "started" in started and "device" in started
    with pytest.raises(AppError, match="already in progress"):
        client.predict("vit_cifar_nano", "folder", str(data), 2, 1e-3, 8, api_name="/train_start")

    wait_for_job(client)
    # A browser that opens now gets every picture (a watching one only gets what changed).
    status, progress, curves, probe, checkpoint = Client(client.src, verbose=False).predict(api_name="/train_status")
    assert "cpu" in status.lower() and "error" not in status.lower()
    assert "finished" in progress
    assert np.asarray(Image.open(curves)).std() > 10
    assert Image.open(probe).height > 2 * 64  # initial + two epochs, one row each
    model, meta = vit.load_checkpoint(checkpoint)
    assert meta.class_names == list(CLASSES)

    picker = client.predict(api_name="/train_open_in_explore")
    key = picker["value"]
    assert key.startswith("checkpoint:") and key in [value for _, value in picker["choices"]]
    client.predict(key, api_name="/load_model")
    label = analyze(client, red_square(tmp_path), model=key)[2]
    assert {c["label"] for c in label["confidences"]} == set(CLASSES)


def test_stop_ends_the_run_early_and_keeps_a_checkpoint(client, tmp_path):
    data = write_image_folder(tmp_path / "data", per_class=8, size=16, classes=CLASSES, test_per_class=2)
    client.predict("vit_cifar_nano", "folder", str(data), 200, 1e-3, 4, api_name="/train_start")
    assert "stopping" in client.predict(api_name="/train_stop")
    status, progress, _, _, checkpoint = wait_for_job(client)
    assert "stopped" in progress and "error" not in status.lower()
    assert vit.load_checkpoint(checkpoint)[1].class_names == list(CLASSES)


def test_bad_training_arguments_are_reported_before_any_work(client, tmp_path):
    with pytest.raises(AppError, match="folder"):
        client.predict("vit_cifar_nano", "folder", "", 1, 1e-3, 8, api_name="/train_start")
    with pytest.raises(AppError, match="missing"):
        client.predict("vit_cifar_nano", "folder", str(tmp_path / "missing"), 1, 1e-3, 8, api_name="/train_start")
    checks = [
        (("ftp", "x", 1, 1e-3, 8), "unknown data source 'ftp'; choose one of 'cifar10', 'folder'"),
        (("folder", "x", 0, 1e-3, 8), "epochs must be a whole number of at least 1, got 0"),
        (("folder", "x", 1, -1.0, 8), "learning rate must be a number of at least 0.0, got -1.0"),
        (("folder", "x", 1, 1e-3, 2.5), "batch size must be a whole number of at least 1, got 2.5"),
    ]
    for args, message in checks:
        with pytest.raises(AppError, match=re.escape(message)):
            client.predict("vit_cifar_nano", *args, api_name="/train_start")


def red_square(tmp_path):
    path = tmp_path / "probe.png"
    Image.new("RGB", (32, 32), (200, 30, 30)).save(path)
    return path
