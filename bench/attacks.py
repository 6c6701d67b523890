"""Issue 17's attacks on a public server, repeated: what each one makes the server hold.

    python -m bench.attacks            # starts `app.py --public` on a free port, prints a table

The server runs in its own process with its own Gradio folder (GRADIO_TEMP_DIR in a temporary
folder, so the disk budget of 30 MB prunes nothing else). For each attack the table gives the
reply (cut to one line), the server's peak resident memory above its level before the attack
(VmHWM, reset through /proc/<pid>/clear_refs before each attack; Linux only) and what it still
holds after.
"""

from __future__ import annotations

import argparse
import os
import struct
import subprocess
import sys
import tempfile
import threading
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image

import vit
from bench.serving import free_port, wait_until_served
from vit.preprocessing import CIFAR10, CIFAR10_CLASSES, Preprocessing

REPO = Path(__file__).resolve().parent.parent
VIEWS = (
    6,
    "mean",
    0.0,
    "inferno",
    0.6,
    "nearest",
    "overlay",
    "layer",
    "weights",
    60,
)  # /analyze after image, model, mode
STYLE = ("inferno", 0.6, "nearest", "overlay", "layer")


def thin_png(path: Path, width: int, height: int) -> Path:
    """A valid 8-bit grayscale PNG of width x height, every row black: a few hundred bytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = zlib.compress(b"\0" * (height * (width + 1)), 9)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", rows) + chunk(b"IEND", b""))
    return path


def checkpoint(path: Path, pre: Preprocessing = CIFAR10, **config) -> Path:
    """A small, valid checkpoint with a costly header."""
    base = {"image_size": 32, "patch_size": 4, "num_classes": 10, "dim": 8, "depth": 1, "heads": 2, "mlp_dim": 8}
    model = vit.VisionTransformer(vit.ViTConfig(**(base | config)))
    vit.save_checkpoint(model, path, class_names=CIFAR10_CLASSES, preprocessing=pre)
    return path


class Server:
    """`app.py --public` in a subprocess, with its memory and its Gradio folder in reach."""

    def __init__(self, folder: Path, uploads_mb: int = 30):
        self.gradio = folder / "gradio"
        port = free_port()
        env = {**os.environ, "GRADIO_TEMP_DIR": str(self.gradio), "PYTHONUNBUFFERED": "1"}
        cmd = [sys.executable, "app.py", "--public", "--port", str(port), "--runs-dir", str(folder / "runs")]
        cmd += ["--uploads-budget-mb", str(uploads_mb)]
        self.log = (folder / "server.log").open("w")
        self.proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}/"
        wait_until_served(self.url, self.proc)

    def rss_mib(self, field: str = "VmRSS") -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
        raise RuntimeError(f"no {field} for the server")

    def reset_peak(self) -> None:
        Path(f"/proc/{self.proc.pid}/clear_refs").write_text("5")  # VmHWM := VmRSS

    def disk_mb(self) -> float:
        return sum(p.stat().st_size for p in self.gradio.rglob("*") if p.is_file()) / 1e6

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


def attempt(call: Callable[[], object]) -> str:
    """The reply of one request, or its error, on one line of at most 110 characters."""
    try:
        text = f"ok: {str(call())[:60]}"
    except Exception as e:  # noqa: BLE001 - every refusal is a result here
        text = f"refused: {e}"
    text = " ".join(text.split())
    return text if len(text) <= 110 else text[:109] + "…"


def measured(server: Server, call: Callable[[], str]) -> tuple[str, float, float]:
    """(reply, peak MiB above the level before, MiB still held after)."""
    before = server.rss_mib()
    server.reset_peak()
    reply = call()
    return reply, server.rss_mib("VmHWM") - before, server.rss_mib() - before


def image_attacks(client, folder: Path) -> dict[str, Callable[[], str]]:
    from gradio_client import handle_file

    out = {}
    for width in (250_000, 1_000_000, 64_000_000):
        png = thin_png(folder / f"thin{width}.png", width, 1)
        for mode in ("crop", "whole"):
            out[f"{width:,} × 1 PNG ({png.stat().st_size:,} bytes), {mode}"] = lambda p=png, m=mode: attempt(
                lambda: client.predict(handle_file(str(p)), "bundled", m, *VIEWS, api_name="/analyze")
            )
    return out


def checkpoint_attacks(client, folder: Path) -> dict[str, Callable[[], str]]:
    from gradio_client import handle_file

    files = {
        "resize_size=16000": checkpoint(folder / "resize.safetensors", Preprocessing(16000, 32)),
        "80 × 80 patch grid": checkpoint(folder / "grid80.safetensors", image_size=320),
        "144 heads": checkpoint(folder / "heads144.safetensors", dim=144, heads=144),
        "20 layers × 20 heads, 64 × 64 grid (the ranking attack)": checkpoint(
            folder / "rank.safetensors", Preprocessing(256, 256), image_size=256, dim=40, depth=20, heads=20, mlp_dim=40
        ),
    }
    return {
        f"{name} ({path.stat().st_size // 1024:,} KB), /upload_checkpoint": lambda p=path: attempt(
            lambda: client.predict(handle_file(str(p)), api_name="/upload_checkpoint")
        )
        for name, path in files.items()
    }


def concurrency_attack(url: str, image: Path) -> Callable[[], str]:
    """Eight heavy requests at once over /analyze and the three lessons, from eight sessions."""
    from gradio_client import Client, handle_file

    clients = [Client(url, verbose=False) for _ in range(8)]
    calls = [
        lambda c: c.predict(handle_file(str(image)), "bundled", "whole", *VIEWS, api_name="/analyze"),
        lambda c: c.predict(handle_file(str(image)), ["bundled"], "inferno", api_name="/lesson_compare"),
        lambda c: c.predict(
            handle_file(str(image)), "bundled", "bundled", 6, "inferno", api_name="/lesson_token_norms"
        ),
        lambda c: c.predict(handle_file(str(image)), "bundled", api_name="/lesson_head_ranking"),
    ]

    def run() -> str:
        replies: list[str] = []
        threads = [
            threading.Thread(target=lambda c=c, f=calls[i % 4]: replies.append(attempt(lambda: f(c))))
            for i, c in enumerate(clients)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return f"{sum(r.startswith('ok') for r in replies)} of 8 answered"

    return run


def key_attack(client) -> str:
    lengths = set()
    for i in range(300):
        key = f"{i:06d}" + "k" * (2**20 - 6)
        lengths.add(len(attempt(lambda k=key: client.predict(k, api_name="/load_model"))))
    return f"300 refused, replies at most {max(lengths)} characters"


def disk_attack(server: Server, client, folder: Path) -> str:
    """Ten 19 MB uploads with a 30 MB budget, then an example; the upload folder's size after each."""
    from gradio_client import handle_file

    noise = np.random.default_rng(0).integers(0, 256, (2500, 2550, 3), np.uint8)
    sizes = []
    for i in range(10):
        path = folder / f"big{i}.png"
        Image.fromarray(noise[:, i:]).save(path, compress_level=0)  # ~19 MB each, all different
        attempt(lambda p=path: client.predict(handle_file(str(p)), "bundled", "crop", *VIEWS, api_name="/analyze"))
        sizes.append(server.disk_mb())
    example = next(server.gradio.rglob("cat.jpg"))  # what a click on the cat example sends
    after = raw_analyze(server.url, {"path": str(example), "meta": {"_type": "gradio.FileData"}})
    return f"upload folder after each: {max(sizes):.0f} MB at most; an example afterwards: {after}"


def raw_analyze(url: str, payload: dict) -> str:
    """/analyze with a payload as the browser sends it (gradio_client would upload the file again)."""
    import httpx

    base = f"{url}gradio_api/call/analyze"
    # The REST API takes every input, the page's state included: None for which "More views"
    # tab is on screen (gradio_client fills it in by itself).
    data = [payload, None, "bundled", "crop", *VIEWS]
    event = httpx.post(base, json={"data": data}, timeout=60).json()["event_id"]
    reply = httpx.get(f"{base}/{event}", timeout=120).text
    return "ok" if "event: complete" in reply else f"refused: {reply[-80:]}"


def main(argv: list[str] | None = None) -> None:
    from gradio_client import Client

    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        server = Server(folder)
        client = Client(server.url, verbose=False)
        image = folder / "cat.png"
        Image.fromarray(np.random.default_rng(1).integers(0, 256, (64, 256, 3), np.uint8)).save(image)
        depth1 = checkpoint(folder / "depth1.safetensors", dim=16, heads=1)
        attacks = image_attacks(client, folder) | checkpoint_attacks(client, folder)
        attacks["8 heavy requests at once (/analyze and the lessons)"] = concurrency_attack(server.url, image)
        attacks["300 distinct 1 MB model keys on /load_model"] = lambda: key_attack(client)
        attacks["a one-layer, one-head checkpoint, then /analyze"] = lambda: attempt(
            lambda: one_layer(client, depth1, image)
        )
        attacks["data source '<script>alert(1)</script>'"] = lambda: attempt(
            lambda: client.predict(
                "vit_cifar_nano", "<script>alert(1)</script>", "", 1, 1e-3, 8, api_name="/train_start"
            )
        )
        attacks["ten 19 MB uploads, --uploads-budget-mb 30"] = lambda: disk_attack(server, client, folder)
        try:
            print(f"server at rest: {server.rss_mib():.0f} MiB; load average {os.getloadavg()[0]:.1f}")
            print("| attack | reply | peak (MiB) | kept (MiB) |\n|---|---|---|---|")
            for name, call in attacks.items():
                reply, peak, kept = measured(server, call)
                print(f"| {name} | {reply.replace('|', '/')} | {peak:+.0f} | {kept:+.0f} |", flush=True)
        finally:
            server.close()


def one_layer(client, path: Path, image: Path) -> object:
    from gradio_client import handle_file

    key = client.predict(handle_file(str(path)), api_name="/upload_checkpoint")["value"]
    return client.predict(handle_file(str(image)), key, "crop", 1, *VIEWS[1:], api_name="/analyze")[2]["label"]


if __name__ == "__main__":
    main()
