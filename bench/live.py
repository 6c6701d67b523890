"""Live view and video export speed, end to end, printed as Markdown.

    python -m bench.live                          # both models, the browser and the video export
    python -m bench.live --models bundled --seconds 20 --skip-video
    python -m bench.live --skip-video --skip-costs --app-dir ../before --app-dir .   # before and after

1. **Webcam to picture, in a real browser.** Starts `python app.py` on a free port with the model,
   and Debian's Chromium whose fake webcam plays a 640 x 480, 30 fps clip that says which frame
   it is (bench/fake_camera.py). A click on the first screen's Live button starts the stream.
   After a warm-up, the page records each new model input it shows: when (the frames per second
   shown), which clip frame that input is (read from the picture), and which frame the camera
   plays at that moment (read from the webcam's <video>): their difference is the latency from
   the camera to the picture, in clip frames of 33 ms.
2. **Server side, per frame**: the CPU time (of the one thread that does the work, so what the
   wall time would be on an idle core) of decoding the browser's JPEG, the model's forward pass
   (`explain`), and making the numbers the page draws the pictures from (`frame_numbers`, with
   the model input as a JPEG; the server drew the pictures until issue 41). With `--app-dir`
   the browser part serves each checkout in turn (A B B A), before and after side by side.
3. **Video export.** `explorer.video.attention_video` on a 10 s, 30 fps, 640 x 480 clip, in this
   process (one torch thread, as the app), with the seconds per stage.

"ViT-S/16" is `vit_small_patch16_224` (224 px, 197 tokens, 12 layers x 6 heads) with random
weights and ImageNet preprocessing: speed does not depend on the weights. The browser, the app
and this script share the machine's cores; `uptime` is printed before and after each part.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import av
import numpy as np
import torch
from PIL import Image

import vit
from bench.fake_camera import clip_frames, write_y4m
from bench.serving import free_port, wait_until_served
from explorer.canvas import MapStyle
from explorer.catalog import BUNDLED_PATH
from explorer.loaded import LoadedModel
from explorer.video import VideoLimits, attention_video
from vit.preprocessing import Preprocessing

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CLIP_FRAMES, CLIP_FPS = 64, 30  # the fake camera's loop: 2.1 s, longer than any latency measured
# In the page: on each new model input shown, the time, the camera's current frame and the frame shown.
RECORDER = """() => {
  window.__live = [];
  const canvas = document.createElement("canvas");
  const number = (source, w, h) => {
    canvas.width = w; canvas.height = h;
    const ctx = canvas.getContext("2d", {willReadFrequently: true});
    ctx.drawImage(source, 0, 0, w, h);
    const side = Math.min(w, h), left = (w - side) / 2, top = (h - side) / 2, cell = side / 8;
    const lit = (col) => {
      const d = ctx.getImageData(left + col * cell + cell / 4, top + 6 * cell + cell / 4, cell / 2, cell / 2).data;
      let sum = 0;
      for (let i = 0; i < d.length; i += 4) sum += d[i];
      return sum / (d.length / 4) > 125;
    };
    if (!lit(0) || lit(7)) return null;
    let n = 0;
    for (let b = 0; b < 6; b++) if (lit(1 + b)) n |= 1 << b;
    return n;
  };
  const camera = document.querySelector("#live-camera video");
  let last = null;
  new MutationObserver(async () => {
    // the server's picture (an <img> whose src changes: before issue 41) or the page's (a new canvas)
    const shown = document.querySelector("#live-input"), drawn = shown && shown.tagName === "CANVAS";
    if (!shown || (drawn ? shown : shown.src) === last) return;
    last = drawn ? shown : shown.src;
    const t = performance.now(), now = number(camera, camera.videoWidth, camera.videoHeight);
    if (!drawn) await shown.decode();
    window.__live.push([t, now, drawn ? number(shown, shown.width, shown.height)
      : number(shown, shown.naturalWidth, shown.naturalHeight)]);
  }).observe(document.querySelector("#live-pictures"), {subtree: true, childList: true, attributes: true});
}"""


def uptime() -> str:
    """The load averages over 1, 5 and 15 minutes, as `uptime` prints them."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def process_tree(pid: int) -> list[int]:
    """`pid` and all its descendants (Linux /proc)."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    kids = [int(c) for c in children.read_text().split()] if children.exists() else []
    return [pid] + [p for kid in kids for p in process_tree(kid)]


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds the processes have used so far."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # exited meanwhile
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (clock ticks)
    return total / os.sysconf("SC_CLK_TCK")


def vit_s_checkpoint(folder: Path) -> Path:
    """ViT-S/16 with random weights, 1000 classes and ImageNet preprocessing, as a checkpoint file."""
    torch.manual_seed(0)
    model = vit.create_model("vit_small_patch16_224")
    path = folder / "vit_s16_random.safetensors"
    pre = Preprocessing(resize_size=256, crop_size=224)
    vit.save_checkpoint(model, path, class_names=[f"class {i}" for i in range(1000)], preprocessing=pre)
    return path


def browser_fps(model: Path, clip: Path, seconds: float, threads: int, app_dir: Path = ROOT) -> dict:
    """Frames shown per second and camera-to-picture latency with one stream, in Chromium, of the
    app in `app_dir` (a checkout)."""
    from playwright.sync_api import sync_playwright

    port = free_port()
    cmd = [sys.executable, "app.py", "--port", str(port), "--model", str(model), "--torch-threads", str(threads)]
    server = subprocess.Popen(cmd, cwd=app_dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    args = ["--no-sandbox", "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"]
    try:
        wait_until_served(url, server)
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM, args=[*args, f"--use-file-for-fake-video-capture={clip}"]
            )
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.set_default_timeout(120_000)
            page.goto(url)
            page.locator("#open-live").click()
            page.wait_for_selector("#live-input")
            time.sleep(5)  # warm-up: the first frames pay for imports and caches
            app = process_tree(server.pid)
            chromium = [p for p in process_tree(os.getpid()) if p != os.getpid() and p not in app]
            cpu = cpu_seconds(app), cpu_seconds(chromium)
            page.evaluate(RECORDER)
            time.sleep(seconds)
            samples = page.evaluate("() => window.__live")
            cpu = (cpu_seconds(app) - cpu[0]) / seconds, (cpu_seconds(chromium) - cpu[1]) / seconds
            status = page.locator("#live-status").inner_text()
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    return summary(samples, status) | {"app_cores": cpu[0], "browser_cores": cpu[1]}


def summary(samples: list[list], status: str) -> dict:
    times = [t for t, _, _ in samples]
    read = [(now - shown) % CLIP_FRAMES for _, now, shown in samples if now is not None and shown is not None]
    latency = [1000 * frames / CLIP_FPS for frames in read]
    return {
        "shown": len(samples),
        "fps": (len(times) - 1) / ((times[-1] - times[0]) / 1000) if len(times) > 1 else 0.0,
        "latency_p50": statistics.median(latency) if latency else float("nan"),
        "latency_p90": statistics.quantiles(latency, n=10)[-1] if len(latency) > 1 else float("nan"),
        "unreadable": len(samples) - len(read),
        "status": status.replace("\n", " "),
    }


def frame_costs(model: Path, camera_frame: np.ndarray, repeats: int) -> dict[str, float]:
    """Median CPU milliseconds per stage of one live frame, in this process, one torch thread:
    the browser's JPEG decoded, the forward pass, the numbers the page draws from made and
    encoded as Gradio sends them."""
    from explorer import live
    from explorer.canvas import TEXT_PX
    from explorer.explain import explain
    from explorer.page_maps import reply_bytes

    torch.set_num_threads(1)
    net, meta = vit.load_checkpoint(model)
    loaded = LoadedModel("bench", model.stem, net.eval(), meta)
    url = live.data_url(Image.fromarray(np.repeat(camera_frame[..., None], 3, axis=2)))
    style, last = MapStyle(), net.config.depth - 1  # the last layer, 0-based
    stages = {
        "decode": lambda: live.decode_frame(url),
        "model": lambda: explain(net, meta.class_names, loaded.preprocessing, live.decode_frame(url), top_k=3),
    }
    ex = stages["model"]()
    stages["numbers"] = lambda: reply_bytes(live.frame_numbers(ex, None, last, style, TEXT_PX, model.stem))
    costs = {}
    for name, fn in stages.items():
        fn()
        samples = []
        for _ in range(repeats):
            started = time.thread_time()
            fn()
            samples.append(1000 * (time.thread_time() - started))
        costs[name] = statistics.median(samples)
    costs["model"] -= costs["decode"]
    return costs


def write_mp4(path: Path, planes: list[np.ndarray], fps: int) -> Path:
    height, width = planes[0].shape
    with av.open(str(path), "w", format="mp4") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for plane in planes:
            out.mux(stream.encode(av.VideoFrame.from_ndarray(np.repeat(plane[..., None], 3, axis=2), format="rgb24")))
        out.mux(stream.encode())
    return path


def video_export(model: Path, clip: Path) -> tuple[float, dict]:
    """Seconds to make the attention video of `clip` and seconds per stage, one torch thread."""
    torch.set_num_threads(1)
    loaded_model, meta = vit.load_checkpoint(model)
    loaded = LoadedModel("bench", model.stem, loaded_model.eval(), meta)
    started = time.perf_counter()
    report = attention_video(loaded, clip, clip.with_name("out.mp4"), None, loaded_model.config.depth - 1, MapStyle())
    return time.perf_counter() - started, report.seconds | {"frames": report.frames}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", default=["bundled", "vit-s"], choices=["bundled", "vit-s"])
    p.add_argument("--seconds", type=float, default=20.0, help="how long the browser records")
    p.add_argument("--torch-threads", type=int, nargs="+", default=[1], help="the app's --torch-threads")
    p.add_argument("--skip-browser", action="store_true")
    p.add_argument("--skip-video", action="store_true")
    p.add_argument("--skip-costs", action="store_true")
    p.add_argument("--repeats", type=int, default=20, help="frames timed per stage (server side)")
    p.add_argument(
        "--app-dir",
        action="append",
        type=Path,
        help="a checkout whose app.py the browser part serves (repeatable, run A B B A: before and after "
        "side by side; default: this one)",
    )
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        models = {"bundled": BUNDLED_PATH, "vit-s": vit_s_checkpoint(folder) if "vit-s" in args.models else None}
        camera = write_y4m(folder / "camera.y4m", clip_frames(CLIP_FRAMES, 480, 640), CLIP_FPS)
        print(f"torch {torch.__version__}, {os.cpu_count()} cores, PyAV {av.__version__}\n")
        if not args.skip_browser:
            print(
                "| model | app | app torch threads | frames shown | frames/s shown | latency p50 | latency p90 "
                "| CPU: app, browser (cores) | load before → after |"
            )
            print("|---|---|---|---|---|---|---|---|---|")
            dirs = [d.resolve() for d in args.app_dir or [ROOT]]
            for name in args.models:
                for threads in args.torch_threads:
                    for app_dir in dirs + dirs[::-1] if len(dirs) > 1 else dirs:  # A B B A: a drift weighs alike
                        before = uptime()
                        r = browser_fps(models[name], camera, args.seconds, threads, app_dir)
                        print(
                            f"| {name} | {app_dir.name} | {threads} | {r['shown']} | **{r['fps']:.1f}** | "
                            f"{r['latency_p50']:.0f} ms | {r['latency_p90']:.0f} ms | "
                            f"{r['app_cores']:.2f}, {r['browser_cores']:.2f} | {before} → {uptime()} |"
                        )
                        print(f"<!-- status: {r['status']}; unreadable frames: {r['unreadable']} -->", flush=True)
        if not args.skip_costs:
            print("\n| model | decode | model | numbers | total CPU per frame | at most | load before → after |")
            print("|---|---|---|---|---|---|---|")
            for name in args.models:
                before = uptime()
                c = frame_costs(models[name], clip_frames(CLIP_FRAMES, 480, 640)[5], args.repeats)
                total = sum(c.values())
                cells = " | ".join(f"{v:.1f} ms" for v in c.values())
                print(f"| {name} | {cells} | {total:.1f} ms | {1000 / total:.1f} frames/s | {before} → {uptime()} |")
        if not args.skip_video:
            limits = VideoLimits()
            loop = clip_frames(CLIP_FRAMES, 480, 640)
            clip = write_mp4(folder / "clip.mp4", (loop * 5)[: limits.max_frames], 30)  # 10 s at 30 fps
            for name in args.models:
                before = uptime()
                total, stages = video_export(models[name], clip)
                parts = ", ".join(f"{k} {v:.1f} s" for k, v in stages.items() if k != "frames")
                print(
                    f"\nvideo export, {name}: {stages['frames']} frames (10.0 s of video) in **{total:.1f} s** = "
                    f"{total / 10:.2f}x real time; {parts}; load {before} → {uptime()}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
