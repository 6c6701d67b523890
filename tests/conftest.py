"""Shared test helpers and fixtures: seeding, random weights, a tiny checkpoint and one real
app server per session (for the app tests)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

import vit
from bench.serving import free_port, wait_until_served
from vit.preprocessing import CIFAR10, CIFAR10_CLASSES

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
# Gradio's folder (files sent, views drawn, what gradio_client downloads) is the run's own, never
# the machine's /tmp/gradio: a run wrote 257 MB there and left it, and a test's prune must never
# delete the files of an app running beside the tests. Set as this file is imported, before any
# test module imports gradio: gradio_client reads it once, at import. Servers started inherit it.
GRADIO_FOLDER = Path(tempfile.mkdtemp(prefix="vit-explorer-tests-gradio-"))
os.environ["GRADIO_TEMP_DIR"] = str(GRADIO_FOLDER)


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.fixture(scope="session", autouse=True)
def gradio_folder() -> Iterator[Path]:
    """GRADIO_FOLDER, deleted when the run ends (what a stopped app's clean-up deletes at the
    same moment is gone either way)."""
    yield GRADIO_FOLDER
    shutil.rmtree(GRADIO_FOLDER, ignore_errors=True)


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    """Decoded data sets are cached per test, never in the user's ~/.cache."""
    monkeypatch.setenv("VIT_EXPLORER_CACHE", str(tmp_path / "cache"))


def randomise_(module: torch.nn.Module, std: float = 0.02) -> torch.nn.Module:
    """Give every parameter random values: torchvision zero-initialises its head (and timm
    its biases), and a parity test that compares zeros with zeros proves nothing."""
    with torch.no_grad():
        for p in module.parameters():
            p.normal_(0.0, std)
    return module


def flip_byte(path: Path, from_end: int = 100) -> None:
    """Damage a file in place: one byte near its end (inside the tensors of a checkpoint)."""
    data = bytearray(path.read_bytes())
    data[-from_end] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory) -> Path:
    """A vit_cifar_nano with fixed random weights, CIFAR-10 names and preprocessing."""
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("models") / "tiny.safetensors"
    vit.save_checkpoint(vit.create_model("vit_cifar_nano"), path, class_names=CIFAR10_CLASSES, preprocessing=CIFAR10)
    return path


@contextmanager
def app_server(
    checkpoint: Path,
    tmp_path_factory,
    *options: str,
    program: tuple[str, ...] = ("app.py",),
    env: dict[str, str] | None = None,
    cwd: Path = REPO,
) -> Iterator[str]:
    """`python app.py` on `checkpoint` with `options`, in a subprocess on a free port, offline as a
    classroom without network; yields its URL. `program`: what python runs instead
    of app.py (e.g. "-c", code that patches a loader and then calls app.main); `env`: variables
    set over those (`HF_HUB_OFFLINE="0"` and `HF_ENDPOINT` for a server that downloads from a stand-in);
    `cwd`: the folder it runs in (a copy of what a Space receives)."""
    port = free_port()
    runs = tmp_path_factory.mktemp("runs")
    log = (tmp_path_factory.mktemp("log") / "app.log").open("w")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", **(env or {})}
    cmd = [sys.executable, *program, "--port", str(port), "--model", str(checkpoint), "--runs-dir", str(runs), *options]
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_until_served(url, proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@pytest.fixture(scope="session")
def server(tiny_checkpoint, tmp_path_factory):
    """The real app (`python app.py`) in a subprocess on a free port; yields its URL."""
    with app_server(tiny_checkpoint, tmp_path_factory) as url:
        yield url


@pytest.fixture(scope="module")
def present_server(tiny_checkpoint, tmp_path_factory):
    """The real app in its presentation mode (`python app.py --present`)."""
    with app_server(tiny_checkpoint, tmp_path_factory, "--present") as url:
        yield url


@pytest.fixture
def client(server):
    from gradio_client import Client

    return Client(server, verbose=False)
