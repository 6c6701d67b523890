"""Issue 17's attacks on a public server, repeated: what each one makes the server hold.

    python -m bench.attacks            # starts `app.py --public` on a free port, prints a table
    python -m bench.attacks --only "X-Forwarded-For"   # only the attacks whose name says so
    python -m bench.attacks --only "class mode:"       # class mode's cases (bench/class_attacks.py)

The server runs in its own process with its own Gradio folder (GRADIO_TEMP_DIR in a temporary
folder, so the disk budget of 30 MB prunes nothing else). For each attack the table gives the
reply (cut to one line), the server's peak resident memory above its level before the attack
(VmHWM, reset through /proc/<pid>/clear_refs before each attack; Linux only), what it still
holds after, and the CPU seconds the attack cost the server and the attacker (this process): on
one machine the attacker's CPU comes from the cores the server has. The attacker downloads none
of the files the replies name (download_files=False): it reads the replies only, and gradio_client
would keep each file in the machine's own Gradio folder, never deleted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from functools import partial
from pathlib import Path
from typing import NamedTuple

import av
import httpx
import numpy as np
from PIL import Image

import vit
from bench.class_attacks import class_attacks
from bench.live import cpu_seconds
from bench.serving import free_port, gradio_client, wait_until_served
from training.registry import VISITOR_GONE_S
from ui.gate import ROUTE as ROWS_ROUTE
from ui.settings import SPACE_MODEL
from vit.preprocessing import CIFAR10, CIFAR10_CLASSES, Preprocessing

REPO = Path(__file__).resolve().parent.parent
STYLE = ("inferno", 0.6, "nearest", "overlay", "layer")
VIEWS = (6, *STYLE)  # /analyze after image, model, mode: the layer and the style
# /analyze_page after image, model, mode: the layer, rollout's fusion and discard ratio, the style, how
# rollout shows, the PCA tab's layer, examples and background (the "More views" tab on screen is drawn)
PAGE_VIEWS = (6, "mean", 0.0, *STYLE, "weights", 60, 6, False, True)


def thin_png(path: Path, width: int, height: int) -> Path:
    """A valid 8-bit grayscale PNG of width x height, every row black: a few hundred bytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = zlib.compress(b"\0" * (height * (width + 1)), 9)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", rows) + chunk(b"IEND", b""))
    return path


def clip_that_grows(path: Path, side: int, frames: int = 3) -> Path:
    """A MOV whose header (and first two frames) say 64 × 64 px, then `frames` frames of side ×
    side, each with its own in-band H.264 parameter sets: the header lies about the frame size."""
    with av.open(str(path), "w", format="mov") as out:
        stream = out.add_stream("libx264", rate=10)
        stream.width = stream.height = 64
        stream.pix_fmt, stream.options = "yuv420p", {"x264-params": "repeat-headers=1"}
        for n in range(2):
            frame = av.VideoFrame.from_ndarray(np.zeros((64, 64, 3), np.uint8), format="rgb24")
            frame.pts = n
            out.mux(stream.encode(frame))
        out.mux(stream.encode())
        big = av.CodecContext.create("libx264", "w")
        big.width = big.height = side
        big.pix_fmt, big.time_base = "yuv420p", Fraction(1, 10)
        big.options = {"x264-params": "repeat-headers=1", "preset": "ultrafast", "tune": "zerolatency"}
        for n in range(2, 2 + frames):
            frame = av.VideoFrame.from_ndarray(np.full((side, side, 3), 90, np.uint8), format="rgb24")
            frame.pts = n
            for packet in big.encode(frame):
                packet.stream, packet.pts, packet.dts, packet.time_base = stream, n, n, Fraction(1, 10)
                out.mux(packet)
    return path


def wide_image(path: Path, mode: str, side: int = 7999) -> Path:
    """A side × side image of `mode` ("I" int32 TIFF or "I;16" PNG), all zeros: a few hundred KB
    whose decoding used to cost gigabytes."""
    dtype = {"I": np.int32, "I;16": np.uint16}[mode]
    image = Image.fromarray(np.zeros((side, side), dtype))
    image.save(path, **({"compression": "tiff_deflate"} if path.suffix == ".tif" else {"compress_level": 9}))
    return path


def checkpoint(
    path: Path, pre: Preprocessing = CIFAR10, class_names: Sequence[str] = CIFAR10_CLASSES, **config
) -> Path:
    """A small, valid checkpoint with a costly header (or hostile `class_names`)."""
    base = {"image_size": 32, "patch_size": 4, "num_classes": len(class_names), "dim": 8, "depth": 1, "heads": 2}
    model = vit.VisionTransformer(vit.ViTConfig(**(base | {"mlp_dim": 8} | config)))
    vit.save_checkpoint(model, path, class_names=list(class_names), preprocessing=pre)
    return path


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # deleted meanwhile (the server prunes while a soak watches)
        return 0


# The attacker's network as the Hub's proxy names a visitor (the last entry of X-Forwarded-For, the
# one the proxy appends; an address of the documentation range, RFC 5737). A server that trusts one
# proxy (`--trusted-hops 1`, the default with SPACE_ID set) takes it (ui.limits.sender), so the
# soak's attacker and its class are two networks, as on a Space; a server that trusts none names
# every client here 127.0.0.1.
ATTACKER_NETWORK = {"X-Forwarded-For": "203.0.113.66"}
VISITOR_NETWORK = {"X-Forwarded-For": "198.51.100.2"}  # a class behind another router
CLIP_B16 = "pretrained:vit_base_patch16_clip_224.openai"


def serve(app_args: list[str]) -> None:
    """app.py's main in this process, its CLIP B/16 loader giving open_clip's architecture with
    random weights (`bench.request_memory.clip_b16`): the real shapes, no download."""
    import app
    from bench.request_memory import clip_b16
    from explorer.catalog import ModelCatalog

    vit.pretrained.load_pretrained_clip = lambda name, progress=None: clip_b16()
    built = ModelCatalog.__init__

    def pinning(catalog: ModelCatalog, *args, **kwargs) -> None:
        # Once loaded (the attacker's first attack), CLIP stays, as a lesson's model does (ui.lessons
        # pins them): 680 MiB in a soak's first minute, not a load after every few checkpoints.
        built(catalog, *args, **kwargs)
        catalog.pinned.add(CLIP_B16)

    ModelCatalog.__init__ = pinning
    app.main(app_args)


class Server:
    """`app.py --public` in a subprocess (`serve`: its CLIP B/16 has random weights), with its
    memory and its Gradio folder in reach."""

    def __init__(self, folder: Path, uploads_mb: int = 30, args: tuple[str, ...] = (), env: dict | None = None):
        self.gradio, self.runs = folder / "gradio", folder / "runs"
        # After this long without its page polling, a training run gives its slot up (the app's default, or as asked)
        self.train_idle_s = (
            float(args[args.index("--train-idle-s") + 1]) if "--train-idle-s" in args else VISITOR_GONE_S
        )
        port = free_port()
        env = {**os.environ, **(env or {}), "GRADIO_TEMP_DIR": str(self.gradio), "PYTHONUNBUFFERED": "1"}
        cmd = [sys.executable, "-m", "bench.attacks", "--serve", "--public", "--port", str(port)]
        cmd += ["--runs-dir", str(self.runs)]
        cmd += ["--uploads-budget-mb", str(uploads_mb), *args]
        self.log = (folder / "server.log").open("w")
        self.proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}/"
        try:
            wait_until_served(self.url, self.proc, timeout=600)  # a loaded, shared machine may take minutes
        except BaseException:  # never leave a server behind that nobody will close
            self.proc.kill()
            self.proc.wait()
            self.log.close()
            raise

    def rss_mib(self, field: str = "VmRSS") -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
        raise RuntimeError(f"no {field} for the server")

    def reset_peak(self) -> None:
        Path(f"/proc/{self.proc.pid}/clear_refs").write_text("5")  # VmHWM := VmRSS

    def disk_mb(self, folder: Path | None = None) -> float:
        """MB in `folder` (default: the Gradio folder). os.walk skips what the server deletes
        while it is walked (a soak watches the folders as the server prunes them)."""
        walked = os.walk(folder or self.gradio)
        return sum(_size(Path(root) / name) for root, _, names in walked for name in names) / 1e6

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


def web(timeout: float = 120) -> httpx.Client:
    """One HTTP client for all of an attack's requests, shared by its threads (httpx's Client can
    be). `httpx.post` makes a Client per request, ~26 ms of CPU loading the certificate bundle: on
    the soak's two cores, 1,500 sessions cost the attacker 78 CPU-seconds that the class lost and
    an attacker elsewhere would not take from it."""
    return httpx.Client(timeout=timeout)


def attempt(call: Callable[[], object]) -> str:
    """The reply of one request, or its error, on one line of at most 110 characters."""
    try:
        return one_line(f"ok: {str(call())[:60]}")
    except Exception as e:  # noqa: BLE001 - every refusal is a result here
        return one_line(f"refused: {e}")


def one_line(text: str) -> str:
    """`text` on one line of at most 110 characters."""
    text = " ".join(text.split())
    return text if len(text) <= 110 else text[:109] + "…"


class Cost(NamedTuple):
    """What one attack cost: the server's memory and CPU, and the attacker's own CPU (this process,
    every thread), which on one machine is taken from the same cores the server has."""

    reply: str
    peak_mib: float  # above the level before
    kept_mib: float  # still held after
    server_cpu_s: float
    attacker_cpu_s: float


def measured(server: Server, call: Callable[[], str]) -> Cost:
    before, cpu, own = server.rss_mib(), cpu_seconds([server.proc.pid]), time.process_time()
    server.reset_peak()
    try:
        reply = call()
    except Exception as e:  # noqa: BLE001 - a step of the attack refused (its checkpoint's upload past the disk budget)
        reply = one_line(f"refused: {e}")
    return Cost(
        reply,
        server.rss_mib("VmHWM") - before,
        server.rss_mib() - before,
        cpu_seconds([server.proc.pid]) - cpu,
        time.process_time() - own,
    )


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
        "64 heads of 2 channels (a header that does not match its weights)": checkpoint(
            folder / "heads64.safetensors", dim=128, heads=64
        ),
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
    from gradio_client import handle_file

    clients = [gradio_client(url) for _ in range(8)]
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


def session_attack(url: str, sessions: int, chars: int, first: int = 0) -> str:
    """`sessions` /analyze requests, each from a new browser session (sessions `first` on) and
    carrying a `chars`-character resize mode: Gradio keeps every session's last inputs."""
    from concurrent.futures import ThreadPoolExecutor

    base = f"{url}gradio_api/call/analyze"

    def one(i: int) -> int:
        data = [None, "bundled", f"{i:07d}".ljust(chars, "m"), *VIEWS]
        reply = http.post(base, json={"data": data, "session_hash": f"visitor{i:07d}"})
        if reply.status_code == 200:
            http.get(f"{base}/{reply.json()['event_id']}").raise_for_status()
        return reply.status_code

    with web() as http, ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(one, range(first, first + sessions)))
    answered = ", ".join(f"{codes.count(c)} × HTTP {c}" for c in sorted(set(codes)))
    return f"{sessions} new sessions: {answered}"


def eviction_attack(url: str, image: Path, sessions: int = 510) -> str:
    """A student analyses an image, then `sessions` new sessions (more than the server keeps) send
    one cheap request each from the student's own network, then the student clicks once more:
    it used to be told "No image analysed yet in this session" (issue 43)."""
    from gradio_client import handle_file

    student = gradio_client(url)
    student.predict(handle_file(str(image)), "bundled", "crop", *VIEWS, api_name="/analyze")
    flood = session_attack(url, sessions, 16, first=20_000)
    return f"{flood}; the student's next click: {attempt(lambda: student.predict(6, *STYLE, api_name='/heads'))}"


def session_rounds(server: Server, rounds: int, sessions: int, chars: int) -> str:
    """`rounds` × `session_attack`, each from new sessions: what the server keeps after each round
    (it stops growing once Gradio keeps as many sessions as it may)."""
    before, kept = server.rss_mib(), []
    for r in range(rounds):
        session_attack(server.url, sessions, chars, first=1000 + r * sessions)
        kept.append(f"{server.rss_mib() - before:+.0f}")
    return f"kept after each {sessions} new sessions: {', '.join(kept)} MiB"


def upload_flood(server: Server, count: int = 177, megabytes: int = 19) -> str:
    """`count` raw uploads of `megabytes` MB to /gradio_api/upload, eight at a time, no event:
    the replies and the most the upload folder held meanwhile (polled every 0.2 s)."""
    from concurrent.futures import ThreadPoolExecutor

    body, most, done = np.random.default_rng(2).bytes(megabytes * 10**6), [0.0], threading.Event()

    def watch() -> None:
        while not done.wait(0.2):
            try:
                most[0] = max(most[0], server.disk_mb())
            except OSError:  # the server's folder went (a soak ended while the flood ran)
                return

    def one(i: int) -> str:
        try:
            upload = {"files": (f"u{i}.bin", body)}
            reply = http.post(f"{server.url}gradio_api/upload", files=upload, headers=ATTACKER_NETWORK)
            return str(reply.status_code)
        except httpx.HTTPError as e:  # the server may close the connection before the body is sent
            return type(e).__name__

    watcher = threading.Thread(target=watch)
    watcher.start()
    with web() as http, ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(one, range(count)))
    done.set()
    watcher.join()
    answered = ", ".join(f"{replies.count(r)} × {r}" for r in sorted(set(replies)))
    return f"{answered}; the upload folder held at most {max(most[0], server.disk_mb()):.0f} MB"


def forged_senders(server: Server, count: int = 40, megabytes: int = 2, photos: int = 5) -> str:
    """`count` raw uploads of `megabytes` MB, eight at a time, each under a new invented first
    X-Forwarded-For entry before the one the proxy appends, then a visitor's `photos` 1 MB photos
    from another network (issue 43: each invented address took an upload share of its own, and
    the flood refused 27 of a visitor's 36 photos)."""
    from concurrent.futures import ThreadPoolExecutor

    # Each body its own bytes: Gradio stores an upload by its content, and the same bytes twice are one file.
    flood, photo = np.random.default_rng(3).bytes(megabytes * 10**6), np.random.default_rng(4).bytes(10**6)

    def send(body: bytes, headers: dict[str, str]) -> str:
        try:
            reply = http.post(f"{server.url}gradio_api/upload", files={"files": ("u.bin", body)}, headers=headers)
            return str(reply.status_code)
        except httpx.HTTPError as e:  # the server may close the connection before the body is sent
            return type(e).__name__

    def forged(i: int) -> str:
        invented = f"198.18.{i // 256}.{i % 256}, {ATTACKER_NETWORK['X-Forwarded-For']}"
        return send(i.to_bytes(4) + flood[4:], {"X-Forwarded-For": invented})

    with web() as http, ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(forged, range(count)))
        visitor = [send(i.to_bytes(4) + photo[4:], VISITOR_NETWORK) for i in range(photos)]
    answered = ", ".join(f"{replies.count(r)} × {r}" for r in sorted(set(replies)))
    return f"the flood: {answered}; the visitor's photos: {visitor.count('200')} of {photos} stored"


def decoding_attacks(client, folder: Path) -> dict[str, Callable[[], str]]:
    """Files whose header is small and whose decoding used to cost gigabytes."""
    from gradio_client import handle_file

    out = {}
    for name, path in {
        "7999 × 7999 int32 TIFF": wide_image(folder / "wide.tif", "I"),
        "7999 × 7999 16-bit PNG": wide_image(folder / "wide16.png", "I;16"),
    }.items():
        out[f"{name} ({path.stat().st_size // 1024:,} KB), /analyze"] = lambda p=path: attempt(
            lambda: client.predict(handle_file(str(p)), "bundled", "crop", *VIEWS, api_name="/analyze")[2]
        )
    clip = clip_that_grows(folder / "grows.mov", 8000)
    controls = ("bundled", 6, "cls", 4, 4, "inferno", "layer")
    out[f"MOV, header 64 × 64, frames 8000 × 8000 ({clip.stat().st_size // 1024:,} KB), /attention_video"] = lambda: (
        attempt(lambda: client.predict(handle_file(str(clip)), *controls, api_name="/attention_video"))
    )
    return out


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


def silent_joins(url: str, image: Path, joins: int = 70) -> str:
    """`joins` webcam streams from new sessions that send one frame and nothing more, then an
    /analyze: they filled Gradio's one queue and every /analyze got 503 "Queue is full"."""
    import base64
    from concurrent.futures import ThreadPoolExecutor

    frame = "data:image/png;base64," + base64.b64encode(image.read_bytes()).decode()
    body = {"data": [{"url": frame}, "bundled", 6, "cls", 4, 4, "inferno", "layer"]}

    def join(i: int) -> int:  # sent 16 at a time: joins sent together once all passed a look at the queue
        reply = http.post(f"{url}gradio_api/call/live_frame", json=body | {"session_hash": f"silent{i}"})
        return reply.status_code

    with web() as http, ThreadPoolExecutor(16) as pool:
        codes = list(pool.map(join, range(joins)))
    answered = ", ".join(f"{codes.count(c)} × HTTP {c}" for c in sorted(set(codes)))
    return f"{answered}; then /analyze: {raw_analyze(url, None)}"


def frame_hoard(url: str, image: Path, sessions: int = 20) -> str:
    """Webcam requests from new sessions, each a small frame beside a 1 MB query: Gradio keeps
    every input of a session, so the query would stay after the frame is dropped."""
    import base64

    frame = "data:image/png;base64," + base64.b64encode(image.read_bytes()).decode()
    data = [{"url": frame}, "bundled", 6, "q" * 2**20, 4, 4, "inferno", "layer"]
    with web() as http:
        join = f"{url}gradio_api/call/live_frame"
        codes = [http.post(join, json={"data": data, "session_hash": f"hoard{i}"}).status_code for i in range(sessions)]
    return ", ".join(f"{codes.count(c)} × HTTP {c}" for c in sorted(set(codes)))


def foreign_key(url: str, folder: Path, image: Path) -> str:
    """Another visitor's checkpoint key on /analyze (issue 28: taken, where /load_model refused it)."""
    from gradio_client import handle_file

    visitor, other = (gradio_client(url) for _ in range(2))
    path = checkpoint(folder / "theirs.safetensors", dim=16, heads=1)
    key = visitor.predict(handle_file(str(path)), api_name="/upload_checkpoint")["value"]
    return attempt(lambda: other.predict(handle_file(str(image)), key, "crop", 1, *VIEWS[1:], api_name="/analyze"))


def stand_in_data(folder: Path, per_class: int = 60) -> Path:
    """A train/ and test/ image folder of two classes (bright and dark 32 px squares with noise)."""
    rng = np.random.default_rng(0)
    for split, count in (("train", per_class), ("test", per_class // 3)):
        for name, level in (("bright", 200), ("dark", 50)):
            (folder / split / name).mkdir(parents=True, exist_ok=True)
            for i in range(count):
                pixels = np.clip(level + rng.normal(0, 30, (32, 32, 3)), 0, 255).astype(np.uint8)
                Image.fromarray(pixels).save(folder / split / name / f"{i}.png")
    return folder


def big_run(client, folder: Path, source: tuple[str, str] = ("operator", "")) -> str:
    """A small checkpoint at 1,012 px (a 46 × 46 grid), trained with the tab's batch of 128 on
    `source` (the Train tab's data source and folder box; by default the server's --data-folder):
    +7.0 GB before the Train tab budgeted runs (issue 28); the reply says what the run got."""
    from gradio_client import handle_file

    path = checkpoint(
        folder / "big1012.safetensors", Preprocessing(1012, 1012), image_size=1012, patch_size=22, dim=16, mlp_dim=16
    )
    key = client.predict(handle_file(str(path)), api_name="/upload_checkpoint")["value"]
    reply = attempt(lambda: client.predict(key, *source, 1, 1e-3, 128, api_name="/train_start")[0])
    attempt(lambda: client.predict(api_name="/train_stop"))
    return reply


def shown_state(progress: str) -> str:
    """The Train tab's progress bar in words: its state and its text ("waiting · set aside …")."""
    return re.sub(r"<[^>]+>", "", progress).strip()


def slot_hold(url: str, idle_s: float, model: str = "vit_cifar_small", poll_s: float = 2.0) -> str:
    """Issue 56: one /train_start of a long run (200 epochs at batch 1 on the operator's folder)
    from a session that never polls again; a visitor from another network asks to start one (as
    long: the slot stays taken while the long run's page is read) at once, and is queued (issue
    60), its page polling every `poll_s` as a page does. Off ZeroGPU the run trained in a thread
    for hours and every other visitor was told "the server is busy"; now it is set aside after
    `idle_s` without a poll and the queued run starts. The reply: the visitor's first answer, when
    its run started, what the long run's page then reads. The visitor's run is stopped, and
    ended, before the next attack."""
    attacker, visitor = gradio_client(url, headers=ATTACKER_NETWORK), gradio_client(url, headers=VISITOR_NETWORK)
    long = attempt(lambda: attacker.predict(model, "operator", "", 200, 1e-3, 1, api_name="/train_start")[0])
    began = time.monotonic()
    another = ("vit_cifar_nano", "operator", "", 200, 1e-3, 8)
    first = attempt(lambda: visitor.predict(*another, api_name="/train_start")[0])
    state = shown_state(visitor.predict(api_name="/train_status")[1])
    while state.startswith("queued") and time.monotonic() - began < idle_s + 120:
        time.sleep(poll_s)
        state = shown_state(visitor.predict(api_name="/train_status")[1])
    waited = time.monotonic() - began
    page = shown_state(attacker.predict(api_name="/train_status")[1])  # the attacker's page, back at last
    attempt(lambda: visitor.predict(api_name="/train_stop"))
    while "running" in shown_state(visitor.predict(api_name="/train_status")[1]) and time.monotonic() - began < 600:
        time.sleep(poll_s)
    return (
        f"the long run: {long[:20]}; another network at once: {first[:40]}; after {waited:.0f} s "
        f"(idle time {idle_s:g} s): {state[:12]}; the long run's page then: {page[:200]}"
    )


def empty_session(url: str) -> str:
    """/analyze joined with an empty session hash: Gradio answered HTTP 500 with a KeyError."""

    body = {"data": [None, "bundled", "crop", *VIEWS], "fn_index": 0, "session_hash": ""}
    with web() as http:
        reply = http.post(f"{url}gradio_api/queue/join", json=body)
    return f"HTTP {reply.status_code} {reply.text[:60]}"


def raw_analyze(url: str, payload: dict | None) -> str:
    """/analyze with a payload as the browser sends it (gradio_client would upload the file again):
    "ok" once answered, with the image's classes when one was given."""

    base = f"{url}gradio_api/call/analyze"
    # The REST API takes every input, the page's state included; /analyze reads none since it
    # stopped drawing the "More views" (docs/app.md, 2026-11-28), so the payload comes first. (A
    # state's place is where Gradio ignores a value: before issue 43 the payload was put in one,
    # the image was None, and an example "answered".)
    data = [payload, "bundled", "crop", *VIEWS]
    with web() as http:
        joined = http.post(base, json={"data": data})
        if joined.status_code != 200:  # e.g. 503 "Queue is full"
            return f"refused: HTTP {joined.status_code} {joined.text[:60]}"
        reply = http.get(f"{base}/{joined.json()['event_id']}").text
    analysed = payload is None or '"confidences"' in reply  # an image given must come back classified
    return "ok" if "event: complete" in reply and analysed else f"refused: {reply[-80:]}"


# Files Gradio refused itself with a 1.7 KB traceback in the log each (issue 43).
NOT_UPLOADS = ("/etc/passwd", "../../../../etc/passwd", "file:///etc/passwd", "data:image/png;base64,iVBORw0KGgo=")
NOT_UPLOADS += ("HTTPS://example.com/cat.png",)


# File inputs that are no file payload at all (issue 56: Gradio refused each with a 1,303-byte
# traceback and a bare "Error"): a bare path, a number, a list, a path that is no string.
NOT_FILE_PAYLOADS = ("/etc/passwd", 7, ["/etc/passwd"], {"path": 5}, {"path": ["/etc/passwd"]}, True)


def refused_files(server: Server, count: int = 1000, images: Sequence[object] = ()) -> str:
    """`count` /analyze requests, eight at a time, each with one of `images` in turn as its image
    (default: a file payload of each of NOT_UPLOADS, files that are no upload): what they were
    answered and what they wrote to the server's log."""
    from concurrent.futures import ThreadPoolExecutor

    log = Path(server.log.name)
    before = log.stat().st_size
    images = images or [{"path": path, "meta": {"_type": "gradio.FileData"}} for path in NOT_UPLOADS]

    def one(i: int) -> str:
        image = images[i % len(images)]
        reply = http.post(f"{server.url}gradio_api/call/analyze", json={"data": [image, "bundled", "crop", *VIEWS]})
        if reply.status_code == 200:  # queued: the event's end says how it went
            return "HTTP 200, " + http.get(f"{server.url}gradio_api/call/analyze/{reply.json()['event_id']}").text[-40:]
        return f"HTTP {reply.status_code} {reply.text[:30]}"

    with web() as http, ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(one, range(count)))
    time.sleep(0.5)  # the server's last lines reach the file
    written = log.read_bytes()[before:].decode(errors="replace")
    answered = ", ".join(f"{replies.count(r)} × {' '.join(r.split())}" for r in sorted(set(replies)))
    # the public server's report every minute (what it holds, its heap) may fall in the window too
    said = [line for line in written.splitlines() if not line.startswith(("holding:", "heap:", "collector:"))]
    size, tracebacks = sum(len(line) + 1 for line in said), written.count("Traceback")
    return f"{answered}; the log: +{len(said)} lines, {size:,} bytes, {tracebacks} tracebacks"


def clip_words(client, folder: Path) -> str:
    """CLIP B/16's 8 words on a 224 × 768 image in whole-image mode, the widest the maps budget
    admits (issue 43: +1,290 MiB and 29 s, in two of the class's heavy slots). The model was loaded
    by the attack before; the reply says how many maps came and the note's first words."""
    from gradio_client import handle_file

    from bench.request_memory import WORDS

    image = folder / "wide.png"
    Image.fromarray(np.random.default_rng(3).integers(0, 256, (224, 768, 3), np.uint8)).save(image)
    client.predict(handle_file(str(image)), CLIP_B16, "whole", *VIEWS, api_name="/analyze")
    _, maps, note = client.predict(", ".join(WORDS), *STYLE, "weights", 60, api_name="/zero_shot")
    return f"{len(maps)} maps; the note: {note[:50]}…"


def hostile_prompts(client, image: Path) -> str:
    """Prompts that are Markdown, HTML, a look-alike (a zero-width space) and 60 emoji on /zero_shot
    (issue 43: the note rendered the first two, fetching an address and making an element; the
    look-alike passed the duplicate check; the emoji were cut to CLIP's 77 tokens silently)."""
    from gradio_client import handle_file

    client.predict(handle_file(str(image)), CLIP_B16, "crop", *VIEWS, api_name="/analyze")
    prompts = ["![x](http://evil.example/p.png)", "<img src=x>", "a cat", "a c\u200bat", "🐱" * 60]
    _, maps, note = client.predict(", ".join(prompts), *STYLE, "weights", 60, api_name="/zero_shot")
    raw = len([p for p in prompts[:2] if p in note])
    cut = "a cut said" if "longer than CLIP reads" in note else "no prompt cut"
    return f"{len(maps)} maps of 5; {raw} unescaped; {cut}"


def big_video(client, folder: Path, frames: int) -> str:
    """An admitted checkpoint at crop 1,024 px (7 layers × 9 heads on a 32 × 32 grid: 253 MiB of
    maps a frame) and a 1080p clip of `frames` frames on /attention_video (issue 43: 18 frames,
    as many as the inputs' bound admits, +1,508 MiB against the 1 GiB a request may use)."""
    from gradio_client import handle_file

    from bench.request_memory import write_clip

    pre, config = Preprocessing(1024, 1024), {"image_size": 1024, "patch_size": 32, "dim": 72, "heads": 9}
    path = checkpoint(folder / "crop1024.safetensors", pre, **config, depth=7, mlp_dim=72)
    clip = write_clip(folder / f"video{frames}.mp4", frames)

    def export() -> object:  # the checkpoint's upload too may be refused (the network's upload share)
        key = client.predict(handle_file(str(path)), api_name="/upload_checkpoint")["value"]
        controls = (key, 7, "cls", 4, 4, "inferno", "layer")
        return client.predict(handle_file(str(clip)), *controls, api_name="/attention_video")[1]

    return attempt(export)


def weights_elsewhere(client) -> str:
    """/train_start of pretrained weights that are not on this (offline) machine (issue 43: "started",
    then the run failed with "NoInternet: cannot load …")."""
    reply = attempt(lambda: client.predict(SPACE_MODEL, "operator", "", 1, 1e-4, 8, api_name="/train_start")[0])
    attempt(lambda: client.predict(api_name="/train_stop"))
    return reply


def train_start_status(client, path: Path, batch: int) -> str:
    """The status /train_start shows for the checkpoint at `path` trained `batch` images at a time
    on the server's --data-folder (the run is stopped at once)."""
    from gradio_client import handle_file

    key = client.predict(handle_file(str(path)), api_name="/upload_checkpoint")["value"]
    try:
        return client.predict(key, "operator", "", 1, 1e-3, batch, api_name="/train_start")[0]
    finally:
        attempt(lambda: client.predict(api_name="/train_stop"))


def evaluation_scaled_down(client, folder: Path) -> str:
    """Batch 8 of a 224 px checkpoint whose 500-image evaluation does not fit a run's memory (issue
    43: "your run trains 8 images at a time (about 3.2 GB)" when only the evaluation was reduced)."""
    config = {"image_size": 224, "patch_size": 14, "dim": 96, "depth": 1, "heads": 12, "mlp_dim": 96}  # 0.6 MB
    path = checkpoint(folder / "eval224.safetensors", Preprocessing(224, 224), **config)
    return " ".join(train_start_status(client, path, 8).split())[:100]


def markdown_name(client, folder: Path) -> str:
    """A checkpoint named as Markdown (a picture, emphasis, a tag) whose run is scaled down: the
    start's status names it; does the raw Markdown reach the page?"""
    name = "![x](p.png)*b*<i>.safetensors"
    config = {"image_size": 1012, "patch_size": 22, "dim": 16, "mlp_dim": 16}
    status = train_start_status(client, checkpoint(folder / name, Preprocessing(1012, 1012), **config), 128)
    return f"the status holds '![x](' raw: {'![x](' in status}; '*b*' raw: {'*b*' in status}"


def page_rows_flood(server: Server, client, folder: Path, questions: int = 8, unread: int = 4) -> str:
    """Issue 56: a 1.4 MB checkpoint of a 48 × 48 grid (1 layer, 12 heads of 8 channels, 768 px),
    its /analyze_page, then `unread` questions for a band of its layer's rows whose replies are
    never read, and `questions` at a time for ever new bands (none of them encoded yet) for as
    long as another network's visitor analyses photos with CLIP B/16: that analysis alone, and
    meanwhile (medians of 3)."""
    from gradio_client import handle_file

    grid48 = checkpoint(folder / "grid48.safetensors", Preprocessing(768, 768), image_size=768, patch_size=16,
                        dim=96, heads=12, mlp_dim=96)  # fmt: skip
    key = client.predict(handle_file(str(grid48)), api_name="/upload_checkpoint")["value"]
    photo = folder / "photo768.png"
    Image.fromarray(np.random.default_rng(4).integers(0, 256, (768, 768, 3), np.uint8)).save(photo)
    page = client.predict(handle_file(str(photo)), key, "crop", 1, *PAGE_VIEWS[1:], api_name="/analyze_page")[-1]
    first = len(json.dumps(page, separators=(",", ":")))
    bands = -(-48 * 48 // page["band"])
    victim = victim_analysis(server, folder)
    alone = victim()
    question = partial(layer_rows_question, page["handle"])
    server.reset_peak()  # the flood's own peak, past the photo's analysis and CLIP's load
    before = server.rss_mib()
    held = [unread_question(server.url, json.dumps(question(page["band"] % bands)).encode()) for _ in range(unread)]
    try:
        with web() as http, ThreadPoolExecutor(questions) as pool:
            done, replies = threading.Event(), []
            asking = partial(ask_bands, http, server.url, question, bands, pool, questions)
            flood = threading.Thread(target=asking, args=(done, replies))
            flood.start()
            meanwhile = victim()
            held_mib, peak_mib = server.rss_mib(), server.rss_mib("VmHWM")
            done.set()
            flood.join()
    finally:
        for sock in held:
            sock.close()
    sizes = [len(r.content) for r in replies if r.status_code == 200]
    codes = ", ".join(sorted({str(r.status_code) for r in replies}))
    return (
        f"first screen {first / 1e6:.2f} MB; {len(sizes)} of {len(replies)} bands answered (HTTP {codes}), "
        f"at most {max(sizes, default=0) / 1e6:.2f} MB; {unread} unread: server at {held_mib:.0f} MiB, the flood's "
        f"peak +{peak_mib - before:.0f} MiB; "
        f"a visitor's analysis {alone:.2f} s alone, {meanwhile:.2f} s meanwhile ({meanwhile / alone:.2f} ×)"
    )


def ask_bands(http, url: str, question: Callable[[int], dict], bands: int, pool, at_once: int,
              done: threading.Event, replies: list) -> None:  # fmt: skip
    """Ask for band after band of layer 1, `at_once` at a time, until `done`: each
    band new to the server (it keeps the last few encoded), so each is encoded again."""
    headers = {"content-type": "application/json", **ATTACKER_NETWORK}
    band = 0
    while not done.is_set():
        asked = []
        for _ in range(at_once):
            body = json.dumps(question(band % bands)).encode()
            asked.append(pool.submit(http.post, f"{url}{ROWS_ROUTE.lstrip('/')}", content=body, headers=headers))
            band += 1
        replies.extend(future.result() for future in asked)


def layer_rows_question(handle: str, band: int) -> dict:
    """The page's question for a band of layer 1's rows, as ui/js/rows.js asks the rows route
    (ui/rows_route.py), by the handle its analysis was sent with."""
    return {"handle": handle, "layer": 1, "band": band}


def unread_question(url: str, body: bytes) -> socket.socket:
    """A connection that asks for a band of rows and never reads the reply (its socket is returned)."""
    host, port = httpx.URL(url).host, httpx.URL(url).port
    sock = socket.create_connection((host, port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    head = (
        f"POST {ROWS_ROUTE} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"X-Forwarded-For: {ATTACKER_NETWORK['X-Forwarded-For']}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    sock.sendall(head.encode() + body)
    return sock


def victim_analysis(server: Server, folder: Path) -> Callable[[], float]:
    """A visitor on another network: the median of 3 timed /analyze of a 224 px photo with CLIP
    B/16 (random weights of its real shapes; a class's model of seconds a photo, as DeiT-S was in
    issue 56's report), loaded first."""
    from gradio_client import handle_file

    visitor = gradio_client(server.url, headers=VISITOR_NETWORK)
    visitor.predict(CLIP_B16, api_name="/load_model")
    seeds = iter(range(10, 10**6))

    def timed() -> float:
        times = []
        for _ in range(3):  # a new picture each time: no analysis comes from the store
            photo = folder / "victim.png"
            Image.fromarray(np.random.default_rng(next(seeds)).integers(0, 256, (224, 224, 3), np.uint8)).save(photo)
            start = time.perf_counter()
            visitor.predict(handle_file(str(photo)), CLIP_B16, "crop", *VIEWS, api_name="/analyze")
            times.append(time.perf_counter() - start)
        return sorted(times)[1]

    return timed


def store_oracle(url: str, folder: Path, rounds: int = 3, model: str = CLIP_B16) -> str:
    """Issue 56: the store of analyses was one for the whole server, and a picture another session
    had analysed answered in 0.05-0.09 s, a new one in 0.24-0.66 s. Each round a visitor from
    another network (VISITOR_NETWORK) analyses a photo; the attacker then times `/analyze_page` of
    that photo, of a photo no one has analysed, and of the first again (its own network's now). The
    medians: the first two alike (nothing learnt), the third from the store. On `model`, CLIP
    B/16 by default: the bundled model's pass is too short beside the rest of a reply to show."""
    from statistics import median

    from gradio_client import handle_file

    visitor, attacker = gradio_client(url, headers=VISITOR_NETWORK), gradio_client(url, headers=ATTACKER_NETWORK)
    rng, times = np.random.default_rng(56), {"theirs": [], "new": [], "own again": []}

    def timed(client, path: Path) -> float:
        start = time.perf_counter()
        client.predict(handle_file(str(path)), model, "crop", *PAGE_VIEWS, api_name="/analyze_page")
        return time.perf_counter() - start

    visitor.predict(model, api_name="/load_model")  # loaded before anything is timed
    for n in range(rounds):
        theirs, new = folder / f"oracle-theirs-{n}.png", folder / f"oracle-new-{n}.png"
        for path in (theirs, new):
            Image.fromarray(rng.integers(0, 256, (96, 128, 3), np.uint8)).save(path)
        timed(visitor, theirs)
        order = ("theirs", "new") if n % 2 == 0 else ("new", "theirs")  # neither always first on a busy machine
        for name in order:
            times[name].append(timed(attacker, theirs if name == "theirs" else new))
        times["own again"].append(timed(attacker, theirs))
    said = {name: f"{median(values):.3f} s" for name, values in times.items()}
    return f"another network's photo {said['theirs']}, a new one {said['new']}, its own again {said['own again']}"


def page_paths(url: str) -> str:
    """Issue 56 (open since s6): the page's description and the API page named the examples'
    cached copies by their paths in Gradio's temp folder. How many absolute paths each holds,
    a path being "/" then one of this machine's top folders (as in a `/file=/tmp/…` URL)."""
    import re

    tops = "|".join(re.escape(entry) for entry in sorted(os.listdir("/")))
    path = re.compile(rf"""(?:^|[\s"'=(:,\[])/(?:{tops})/""")
    with web() as http:
        counts = {route: len(path.findall(http.get(f"{url}{route.lstrip('/')}").text)) for route in PAGE_ROUTES}
    return "; ".join(f"{route}: {n} server paths" for route, n in counts.items())


PAGE_ROUTES = ("/config", "/gradio_api/info")


def issue_56_attacks(server: Server, client, folder: Path) -> dict[str, Callable[[], str]]:
    """A checkpoint whose page's numbers were 170 MB, the page's description read for server paths,
    the store of analyses timed across networks, and a run that never polls holding the Train slot."""
    return {
        "a 200-epoch run on /train_start that never polls, then another network's Start": lambda: slot_hold(
            server.url, server.train_idle_s
        ),
        "a 48 × 48-grid checkpoint's /analyze_page, 4 unread questions for its rows, then 8 at a time for new "
        "bands while a CLIP B/16 visitor analyses": lambda: page_rows_flood(server, client, folder),
        "server paths in the page's description and the API page (/config, /gradio_api/info)": lambda: page_paths(
            server.url
        ),
        "timing /analyze_page of a photo another network analysed (the store as an oracle)": lambda: store_oracle(
            server.url, folder
        ),
    }


# Class names a checkpoint's author writes (issue 56): a tag with a script, a picture and a link
# to a third host (RFC 5737's documentation range), emphasis.
MARKDOWN_CLASSES = (
    "<img src=x onerror=alert(1)>",
    "![p](http://203.0.113.9/p.png)",
    "[click me](http://203.0.113.9/)",
    "**bold**",
)


def live_status(url: str, session: str, image: Path, key: str, wait_s: float = 120.0) -> str:
    """Live's status line for one webcam frame of `image` with the model `key`, in `session`;
    while Live is busy (the streams of an attack just before still hold its slots) the frame is
    sent again, as a webcam does, for up to `wait_s`."""
    import base64
    import json

    frame = "data:image/png;base64," + base64.b64encode(image.read_bytes()).decode()
    body = {"data": [{"url": frame}, key, 1, "cls", 1, 1, "inferno", "layer"], "session_hash": session}
    deadline = time.monotonic() + wait_s
    with web() as http:
        while True:
            joined = http.post(f"{url}gradio_api/call/live_frame", json=body)
            if joined.status_code != 200:
                return f"HTTP {joined.status_code} {joined.text[:60]}"
            reply = http.get(f"{url}gradio_api/call/live_frame/{joined.json()['event_id']}").text
            data = [line.removeprefix("data: ") for line in reply.splitlines() if line.startswith("data: [")]
            status = str(json.loads(data[-1])[-1]) if data else reply[-80:]
            if not status.startswith("**Live view busy") or time.monotonic() > deadline:
                return status
            time.sleep(1.0)


def markdown_classes(client, url: str, folder: Path, image: Path) -> str:
    """A checkpoint whose class names are Markdown and HTML (MARKDOWN_CLASSES) on the three texts
    that name a prediction: /lesson_heads_off's and /lesson_head_ranking's notes and Live's
    status (issue 56: rendered, and Chromium fetched a picture from the third host). Which of
    them hold a name raw, and which show it escaped (vit.messages.markdown_text)."""
    from gradio_client import handle_file

    from vit.messages import markdown_text

    path = checkpoint(folder / "markdown-classes.safetensors", class_names=MARKDOWN_CLASSES, dim=16)
    key = client.predict(handle_file(str(path)), api_name="/upload_checkpoint")["value"]
    notes = {
        "heads off": client.predict(handle_file(str(image)), key, "", api_name="/lesson_heads_off")[1],
        "ranking": client.predict(handle_file(str(image)), key, api_name="/lesson_head_ranking")[1],
        "Live": live_status(url, client.session_hash, image, key),
    }
    raw = [where for where, note in notes.items() if any(name in note for name in MARKDOWN_CLASSES)]
    escaped = [where for where, note in notes.items() if any(markdown_text(n) in note for n in MARKDOWN_CLASSES)]
    return f"raw in: {', '.join(raw) or 'none'}; escaped in: {', '.join(escaped) or 'none'}"


def names_and_shapes(server: Server, client, folder: Path, image: Path) -> dict[str, Callable[[], str]]:
    """Issue 56's attacks: file inputs that are no file payload, a checkpoint's hostile class names."""
    return {
        "1,000 images that are no file payload (a bare path, a number, a list, a path no string) on /analyze": (
            lambda: refused_files(server, images=NOT_FILE_PAYLOADS)
        ),
        "a checkpoint whose class names are Markdown and HTML, on the lessons' notes and Live's status": (
            lambda: attempt(lambda: markdown_classes(client, server.url, folder, image))
        ),
    }


def attack_list(server: Server, client, folder: Path) -> dict[str, Callable[[], str]]:
    """Every attack, by name, as a call that returns its reply on one line (`python -m
    bench.soak` replays them in a loop beside a class)."""
    image = folder / "cat.png"
    Image.fromarray(np.random.default_rng(1).integers(0, 256, (64, 256, 3), np.uint8)).save(image)
    depth1 = checkpoint(folder / "depth1.safetensors", dim=16, heads=1)
    # First, so that a soak's memory takes its step in the settling minutes (`serve` keeps it loaded)
    attacks = {
        "CLIP B/16 loaded (/load_model; random weights, the real shapes)": lambda: attempt(
            lambda: client.predict(CLIP_B16, api_name="/load_model")
        )
    }
    attacks |= image_attacks(client, folder) | checkpoint_attacks(client, folder)
    attacks["8 heavy requests at once (/analyze and the lessons)"] = concurrency_attack(server.url, image)
    attacks["300 distinct 1 MB model keys on /load_model"] = lambda: key_attack(client)
    attacks["a one-layer, one-head checkpoint, then /analyze"] = lambda: attempt(
        lambda: one_layer(client, depth1, image)
    )
    attacks["data source '<script>alert(1)</script>'"] = lambda: attempt(
        lambda: client.predict("vit_cifar_nano", "<script>alert(1)</script>", "", 1, 1e-3, 8, api_name="/train_start")
    )
    attacks["ten 19 MB uploads, --uploads-budget-mb 30"] = lambda: disk_attack(server, client, folder)
    attacks["177 raw 19 MB uploads (no event), eight at a time, --uploads-budget-mb 30"] = lambda: upload_flood(server)
    attacks["40 raw 2 MB uploads, each under an invented first X-Forwarded-For, then a visitor's 5 photos"] = lambda: (
        forged_senders(server)
    )
    attacks |= decoding_attacks(client, folder)
    attacks["a 10 MB key and '<img src=x onerror=alert(1)>' on /live_model"] = lambda: " / ".join(
        attempt(lambda k=key: client.predict(k, api_name="/live_model"))
        for key in ("k" * 10 * 2**20, "<img src=x onerror=alert(1)>")
    )
    attacks["60 new sessions, each with a 1 MB resize mode, on /analyze"] = lambda: session_attack(
        server.url, 60, 2**20
    )
    attacks["1,500 new sessions, each with a 7,000-character resize mode (under the limit)"] = lambda: session_rounds(
        server, 6, 250, 7000
    )
    attacks["510 new sessions, one cheap /analyze each, then a student's next click"] = lambda: eviction_attack(
        server.url, image
    )
    attacks["70 silent webcam streams (new sessions, 16 at a time), then /analyze"] = lambda: silent_joins(
        server.url, image
    )
    attacks["20 new sessions, each a webcam frame beside a 1 MB query, on /live_frame"] = lambda: frame_hoard(
        server.url, image
    )
    attacks["an empty session hash on /queue/join"] = lambda: empty_session(server.url)
    attacks["an image named by a web address on /analyze"] = lambda: raw_analyze(
        server.url, {"path": "https://example.com/cat.png", "meta": {"_type": "gradio.FileData"}}
    )
    attacks["1,000 files that are no upload (/etc/passwd, ../, file:, data:, HTTPS://) on /analyze"] = lambda: (
        refused_files(server)
    )
    attacks |= names_and_shapes(server, client, folder, image)
    attacks["another visitor's checkpoint key on /analyze"] = lambda: foreign_key(server.url, folder, image)
    attacks |= issue_56_attacks(server, client, folder)
    attacks["a 1,012 px checkpoint trained at batch 128 on /train_start"] = lambda: big_run(client, folder)
    attacks["epochs=true on /train_start"] = lambda: attempt(
        lambda: client.predict("vit_cifar_nano", "cifar10", "", True, 1e-3, 8, api_name="/train_start")
    )
    attacks["Markdown, HTML, a look-alike and 60 emoji as CLIP B/16's prompts (/zero_shot)"] = lambda: attempt(
        lambda: hostile_prompts(client, image)
    )
    attacks["8 words of CLIP B/16 on a 224 × 768 image, whole-image mode (/zero_shot)"] = lambda: attempt(
        lambda: clip_words(client, folder)
    )
    attacks["pretrained weights not on this offline machine on /train_start"] = lambda: weights_elsewhere(client)
    attacks["batch 8 of a 224 px checkpoint whose evaluation is scaled down, /train_start"] = lambda: attempt(
        lambda: evaluation_scaled_down(client, folder)
    )
    attacks["a checkpoint named '![x](p.png)*b*<i>.safetensors' on /train_start"] = lambda: attempt(
        lambda: markdown_name(client, folder)
    )
    for frames in (18, 15):
        attacks[f"a crop-1,024 checkpoint, {frames} frames of 1080p on /attention_video"] = lambda n=frames: big_video(
            client, folder, n
        )
    visitor = partial(victim_analysis, server, folder)
    return attacks | class_attacks(server.url, server.proc.pid, server.rss_mib, Path(server.log.name), visitor)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", metavar="WORDS", help="run only the attacks whose name contains WORDS")
    parser.add_argument("--serve", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)  # the server process itself
    args = parser.parse_args(argv)
    if args.serve is not None:
        return serve(args.serve)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # --trusted-hops 1: this script stands where the Hub's proxy does, and its X-Forwarded-For
        # names the network, as on a Space (ATTACKER_NETWORK)
        server_args = ("--data-folder", str(stand_in_data(folder / "data")), "--trusted-hops", "1")
        server = Server(folder, args=server_args)  # the runs attacked

        client = gradio_client(server.url, headers=ATTACKER_NETWORK)
        attacks = {k: v for k, v in attack_list(server, client, folder).items() if (args.only or "") in k}
        try:
            print(f"server at rest: {server.rss_mib():.0f} MiB; load average {os.getloadavg()[0]:.1f}")
            print("| attack | reply | peak (MiB) | kept (MiB) | server CPU s | attacker CPU s |")
            print("|---|---|---|---|---|---|")
            for name, call in attacks.items():
                c = measured(server, call)
                cells = f"{c.peak_mib:+.0f} | {c.kept_mib:+.0f} | {c.server_cpu_s:.1f} | {c.attacker_cpu_s:.1f}"
                print(f"| {name} | {c.reply.replace('|', '/')} | {cells} |", flush=True)
        finally:
            server.close()


def one_layer(client, path: Path, image: Path) -> object:
    from gradio_client import handle_file

    key = client.predict(handle_file(str(path)), api_name="/upload_checkpoint")["value"]
    return client.predict(handle_file(str(image)), key, "crop", 1, *VIEWS[1:], api_name="/analyze")[2]["label"]


if __name__ == "__main__":
    main()
