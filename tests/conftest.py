"""Shared fixtures for the app tests: a tiny checkpoint and one real app server per session."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import vit
from explorer.models import CIFAR10_CLASSES
from vit.preprocessing import CIFAR10

ROOT = Path(__file__).resolve().parent.parent
STARTUP_TIMEOUT_S = 120  # the CI machine is small and shared; Gradio's import alone takes seconds


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_served(url: str, proc: subprocess.Popen | None = None, timeout: float = STARTUP_TIMEOUT_S) -> float:
    """Poll `url` until it answers 200; returns the seconds waited."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return time.perf_counter() - start
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"{url} not served within {timeout} s")


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


VIEW_DEFAULTS = {"layer": 6, "fusion": "mean", "discard": 0.0, "cmap": "inferno", "opacity": 0.6}


def analyze(client, path, mode: str = "crop", model: str = "bundled"):
    """Call /analyze with default view settings; returns its outputs as a tuple."""
    from gradio_client import handle_file

    d = VIEW_DEFAULTS
    return client.predict(
        handle_file(str(path)),
        model,
        mode,
        d["layer"],
        d["fusion"],
        d["discard"],
        d["cmap"],
        d["opacity"],
        "nearest",
        "overlay",
        api_name="/analyze",
    )


def save_rgb(path: Path, array: np.ndarray, **kwargs) -> Path:
    Image.fromarray(array).save(path, **kwargs)
    return path
