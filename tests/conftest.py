"""Shared fixtures for the app tests: a tiny checkpoint and one real app server per session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from app_helpers import free_port, wait_until_served

import vit
from explorer.models import CIFAR10_CLASSES
from vit.preprocessing import CIFAR10

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory) -> Path:
    """A vit_cifar_nano with fixed random weights, CIFAR-10 names and preprocessing."""
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("models") / "tiny.safetensors"
    vit.save_checkpoint(vit.create_model("vit_cifar_nano"), path, class_names=CIFAR10_CLASSES, preprocessing=CIFAR10)
    return path


@pytest.fixture(scope="session")
def server(tiny_checkpoint, tmp_path_factory):
    """The real app (`python app.py`) in a subprocess on a free port; yields its URL."""
    port = free_port()
    runs = tmp_path_factory.mktemp("runs")
    log = (tmp_path_factory.mktemp("log") / "app.log").open("w")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "app.py", "--port", str(port), "--model", str(tiny_checkpoint), "--runs-dir", str(runs)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_until_served(url, proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@pytest.fixture
def client(server):
    from gradio_client import Client

    return Client(server, verbose=False)
