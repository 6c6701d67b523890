"""A class at once: N `gradio_client` visitors on one app server, printed as a Markdown report.

    python -m bench.visitors                     # 30 visitors, 12 actions each, the bundled model
    python -m bench.visitors --visitors 10 --actions 12
    python -m bench.visitors --model bundled --model vit_s16.safetensors --rounds 2   # ratios to the first

Starts `python app.py --model MODEL` (`bundled`: the bundled model; else any checkpoint or
pretrained name app.py takes) on a free loopback port, then every visitor, each
in its own thread with its own `gradio_client.Client` (its own session), at the same moment:
uploads an image (/analyze), then clicks patches (/query_patch, 1-based row and column), moves
the layer slider (/heads), changes the colour map (/restyle) or goes back to CLS
(/reset_query), with a human's pause between actions. Most visitors share the ten committed
CIFAR-10 examples (examples/cifar10/), as a class told "click the cat" would; every third
uploads an image of its own. Reports p50/p95 per action, errors, the server's peak resident
memory (VmHWM) against its explanation budget (--cache-mb, docs/security.md), the machine,
its load, and the command; then the server's CPU per request of each kind, measured with one
client asking `--cpu-samples` times in a row after the class. Several `--model`s run in turn,
`--rounds` times (A, B, B, A: the machine's load moves both alike), and the report ends with
each model's p95 as a ratio to the first's. Bounded: a fixed number of actions per visitor and
a deadline after which no visitor starts another action (`--max-seconds`). `--page`: each
visitor sends what a browser now sends (issue 41): where the page draws its own maps (the app
has /analyze_page), an analysis and nothing for its clicks, keys and slider steps; an older
checkout (`--app-dir`) still gets its clicks, so both are measured side by side in one run.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

from bench.serving import free_port, gradio_client, wait_until_served
from vit.preprocessing import CIFAR10_CLASSES

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "cifar10"
BUNDLED = "bundled"  # --model value for the app's bundled model
CMAPS = ("inferno", "viridis", "magma", "plasma")
# How often each kind of action follows the upload (a click is what people do most).
ACTION_WEIGHTS = {"query_patch": 5, "heads": 3, "restyle": 1, "reset_query": 1}
CHEAP = ("query_patch", "heads", "reset_query")  # redraws from the cached forward pass
GOAL_S = 0.3  # issue 30: a click or slider move p95 while the class's analyses run
FLOOR_GOAL = 1.3  # issue 30: analyze p95 at most this many times the floor (floor_seconds)


def percentile(samples: list[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between ranks (numpy's default)."""
    if not samples:
        raise ValueError("percentile of no samples")
    if not 0 <= q <= 100:
        raise ValueError(f"q must be from 0 to 100, got {q}")
    ordered = sorted(samples)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def vm_hwm_bytes(status: str, field: str = "VmHWM") -> int:
    """Peak resident memory from the text of /proc/<pid>/status (its `VmHWM:  1234 kB` line), or
    another of its memory lines (`field`: "VmRSS", resident now)."""
    for line in status.splitlines():
        if line.startswith(field + ":"):
            value, unit = line.split()[1:3]
            if unit != "kB":
                raise ValueError(f"unexpected unit in {line!r}")
            return int(value) * 1024
    raise ValueError(f"no {field} line: not a /proc/<pid>/status of a live process")


def plan(visitor: int, actions: int, seed: int = 0) -> list[str]:
    """The endpoints one visitor calls after its upload, drawn with ACTION_WEIGHTS."""
    rng = random.Random(seed * 100_003 + visitor)
    return rng.choices(list(ACTION_WEIGHTS), weights=list(ACTION_WEIGHTS.values()), k=actions)


def machine() -> str:
    """CPU model and core count of this machine."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores"


def load_average() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def forward_seconds(model: str, repeats: int = 5) -> float:
    """Median seconds of the served analysis's forward pass with every map (`explain`, one torch
    thread, as the app runs it) for `model` (BUNDLED or a checkpoint file), in this process;
    NaN for a named pretrained model, which cannot be loaded here without the network."""
    import statistics

    import torch

    import vit
    from explorer.catalog import BUNDLED_PATH
    from explorer.explain import explain

    path = BUNDLED_PATH if model == BUNDLED else Path(model)
    if not path.is_file():
        return float("nan")
    net, meta = vit.load_checkpoint(path)
    side = net.config.image_size
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (side, side, 3), dtype=np.uint8))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        explain(net.eval(), meta.class_names, meta.preprocessing or vit.preprocessing.CIFAR10, image)  # warm-up
        times = []
        for _ in range(repeats):
            began = time.perf_counter()
            explain(net, meta.class_names, meta.preprocessing or vit.preprocessing.CIFAR10, image)
            times.append(time.perf_counter() - began)
    finally:
        torch.set_num_threads(threads)
    return statistics.median(times)


class Launcher:
    """A thread kept at this process's starting priority, which starts the servers and times the
    forward pass, while the visitors' threads are lowered (`--client-nice`): on a machine of two
    cores, thirty `gradio_client` sessions take more than a core of their own (the report's
    "this script's CPU"), CPU that a class's browsers spend on their own devices, not the
    server's. Linux only: a thread's nice value is its own, and threads and processes inherit
    their creator's."""

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(1, thread_name_prefix="launcher")
        self._pool.submit(lambda: None).result()  # its thread exists now, before any lowering

    def __call__(self, fn, *args, **kwargs):
        return self._pool.submit(fn, *args, **kwargs).result()


def floor_seconds(visitors: int, forward_s: float, cores: int) -> float:
    """The least time in which `visitors` uploads arriving together can all be analysed on
    `cores` cores, one forward pass each (issue 30): N x t / cores + t."""
    return visitors * forward_s / cores + forward_s


@dataclass
class Tally:
    """Seconds per action and errors, shared by the visitor threads."""

    seconds: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    skipped: int = 0  # actions not started because the deadline had passed
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, action: str, seconds: float | None, error: str | None = None) -> None:
        with self.lock:
            if error is None:
                self.seconds[action].append(seconds)
            else:
                self.errors[action].append(error)


def images_for(visitors: int, folder: Path, same: bool = False) -> list[Path]:
    """One image per visitor: the CIFAR-10 examples in turn, shared by several visitors, and
    every third visitor an image of its own (an example with a few pixels changed). `same`: the
    teacher's example for everyone, each under a file name of its own (one picture by content)."""
    if same:
        teacher = (EXAMPLES / "cat.jpg").read_bytes()
        chosen = [folder / f"visitor{i}-cat.jpg" for i in range(visitors)]
        for path in chosen:
            path.write_bytes(teacher)
        return chosen
    chosen = []
    for i in range(visitors):
        example = EXAMPLES / f"{CIFAR10_CLASSES[i % len(CIFAR10_CLASSES)]}.jpg"
        if i % 3 == 2:
            pixels = np.asarray(Image.open(example).convert("RGB")).copy()
            pixels[i % pixels.shape[0], :, :] = (37 * i) % 256  # one row repainted: a different upload
            example = folder / f"visitor{i}.png"
            Image.fromarray(pixels).save(example)
        chosen.append(example)
    return chosen


@dataclass
class Visitor:
    """One person with a browser tab: a session, an image, and what they will do."""

    index: int
    image: Path
    steps: list[str]
    think_s: float
    grid: tuple[int, int]  # the model's patch grid (rows, columns)
    depth: int
    cmap: str = "inferno"
    layer: int = 1
    analysis: str = "analyze"  # the endpoint of an upload: /analyze, or the page's own (--page)

    def arguments(self, action: str, rng: random.Random) -> dict:
        """The keyword arguments of `action` (1-based rows, columns and layers)."""
        style = {"cmap": self.cmap, "opacity": 0.6, "upsampling": "nearest", "display": "overlay"}
        if action == "query_patch":
            row, column = rng.randint(1, self.grid[0]), rng.randint(1, self.grid[1])
            return {"row": row, "column": column, "layer": self.layer, **style}
        if action == "heads":
            self.layer = rng.randint(1, self.depth)
            return {"layer": self.layer, **style}
        if action == "restyle":
            self.cmap = rng.choice([c for c in CMAPS if c != self.cmap])
            style["cmap"] = self.cmap
            return {"layer": self.layer, "fusion": "mean", "discard": 0.0, **style}
        return {"layer": self.layer, **style}  # reset_query

    def run(self, client, tally: Tally, start: threading.Barrier, deadline: float) -> None:
        from gradio_client import handle_file

        rng = random.Random(self.index)
        self.layer = self.depth  # where the page starts
        calls = [("analyze", {"image": handle_file(str(self.image)), "model_key": "bundled", "mode": "crop"})]
        start.wait()
        for i, action in enumerate([self.analysis, *self.steps]):
            if time.monotonic() >= deadline:
                with tally.lock:
                    tally.skipped += len(self.steps) + 1 - i
                return
            kwargs = calls[0][1] if i == 0 else self.arguments(action, rng)
            began = time.perf_counter()
            try:
                client.submit(api_name=f"/{action}", **kwargs).result(timeout=max(deadline - time.monotonic(), 1))
                tally.add("analyze" if i == 0 else action, time.perf_counter() - began)
            except Exception as e:  # noqa: BLE001 - every failure is counted and reported, none stops the class
                tally.add("analyze" if i == 0 else action, None, f"{type(e).__name__}: {e}"[:200])
                if i == 0:
                    return  # nothing to click on without an analysis
            time.sleep(self.think_s * rng.uniform(0.5, 1.5))


class Server:
    """`python app.py` in `app_dir` (another checkout, to compare versions) with `model`
    (app.py --model; None: the bundled one) on a free loopback port, its log in `folder`.
    `module`: a module whose `--serve` runs app.py's main in-process (e.g. with a stand-in
    for downloads) instead of app.py itself. Its Gradio folder (uploads, drawn views) starts
    empty in `folder`, as on a fresh Space: not the machine's shared one, which earlier servers
    may have left full of files. `more`: further app.py arguments; `env`: further environment variables."""

    def __init__(
        self,
        folder: Path,
        cache_mb: int,
        model: str | None = None,
        module: str | None = None,
        app_dir: Path = ROOT,
        more: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        start = ["-m", module, "--serve"] if module else ["app.py"]
        self.command = [sys.executable, *start, "--port", str(self.port), "--runs-dir", str(folder / "runs")]
        self.command += ["--cache-mb", str(cache_mb), *(["--model", model] if model else []), *more]
        self.log_path = folder / "app.log"
        self.log = self.log_path.open("w")
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "GRADIO_ANALYTICS_ENABLED": "False", **(env or {})}
        env["GRADIO_TEMP_DIR"] = str(folder / "gradio")
        self.proc = subprocess.Popen(self.command, cwd=app_dir, env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def wait(self) -> float:
        try:
            return wait_until_served(self.url, self.proc)
        except (RuntimeError, TimeoutError):
            self.stop()
            sys.stderr.write(self.log_path.read_text()[-3000:])
            raise

    def peak_bytes(self, field: str = "VmHWM") -> int:
        """The server's peak resident memory, or another line of its /proc status (`vm_hwm_bytes`)."""
        return vm_hwm_bytes(Path(f"/proc/{self.proc.pid}/status").read_text(), field)

    def cpu_seconds(self, system_only: bool = False) -> float:
        """User + system CPU of the server so far (/proc/<pid>/stat fields 14 and 15), or system alone."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[12]) + (0 if system_only else int(fields[11]))) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def model_shape(numbers: str, slider: dict) -> tuple[tuple[int, int], int]:
    """((rows, columns), layers) of the served model, from /analyze's sizes text and layer slider."""
    found = re.search(r"grid \*\*(\d+) rows × (\d+) columns\*\*", numbers)
    if found is None:
        raise ValueError(f"no patch grid in {numbers[:200]!r}")
    return (int(found[1]), int(found[2])), int(slider["maximum"])


def warm_up(url: str, folder: Path) -> tuple[tuple[int, int], int]:
    """One analysis of an image no visitor uploads: the server's first request pays for lazy
    imports (torchvision), which a class arriving minutes after start-up would not see.
    Returns the model's grid and depth (model_shape)."""
    from gradio_client import handle_file

    image = folder / "warm-up.png"
    Image.fromarray(np.full((32, 32, 3), 128, np.uint8)).save(image)
    client = gradio_client(url)
    out = client.predict(image=handle_file(str(image)), model_key="bundled", mode="crop", api_name="/analyze")
    client.close()
    return model_shape(out[1], out[3])


def page_draws(url: str) -> bool:
    """Whether the server's page draws its own maps (issue 41): it then sends no click, key or
    slider step to the server, and analyses through /analyze_page."""
    client = gradio_client(url)
    try:
        return "/analyze_page" in client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    finally:
        client.close()


def cpu_per_request(server: Server, visitor: Visitor, folder: Path, samples: int) -> dict[str, float]:
    """Server CPU seconds per request of each kind, from one client asking `samples` times in a
    row (nothing else running on the server); the analyses use images the cache has not seen,
    and then the same images again ("analyze, cached": the request without its forward pass).
    "analyze, system": the kernel's share of a fresh analysis (page faults of its allocations).
    A visitor with no steps (the page draws its own maps: --page) sends analyses only."""
    from gradio_client import handle_file

    client = gradio_client(server.url)
    rng, cost = random.Random(1), {}
    pixels = np.asarray(Image.open(visitor.image).convert("RGB"))
    for action in ("analyze", "analyze, cached", *(ACTION_WEIGHTS if visitor.steps else ())):
        before, system = server.cpu_seconds(), server.cpu_seconds(system_only=True)
        for i in range(samples):
            if action.startswith("analyze"):
                path = folder / f"cpu-{i}.png"
                Image.fromarray((pixels.astype(int) + i + 1).clip(0, 255).astype(np.uint8)).save(path)
                kwargs = {"image": handle_file(str(path)), "model_key": "bundled", "mode": "crop"}
            else:
                kwargs = visitor.arguments(action, rng)
            client.predict(**kwargs, api_name=f"/{visitor.analysis if action.startswith('analyze') else action}")
        cost[action] = (server.cpu_seconds() - before) / samples
        if action == "analyze":
            cost["analyze, system"] = (server.cpu_seconds(system_only=True) - system) / samples
    client.close()
    return cost


def clicks_beside_analyses(url: str, visitor: Visitor, folder: Path, uploaders: int, clicks: int) -> dict:
    """Issue 30's "a click never waits behind an analysis", without a class's own load: one
    visitor clicks `clicks` patches in a row, first alone, then while `uploaders` clients upload
    new pictures without pause (each a forward pass). Returns the clicks' seconds in each case."""
    from gradio_client import handle_file

    def clicking() -> list[float]:
        client, rng, seconds = gradio_client(url), random.Random(2), []
        client.predict(image=handle_file(str(visitor.image)), model_key="bundled", mode="crop", api_name="/analyze")
        for _ in range(clicks):
            began = time.perf_counter()
            client.predict(**visitor.arguments("query_patch", rng), api_name="/query_patch")
            seconds.append(time.perf_counter() - began)
            time.sleep(0.2)
        client.close()
        return seconds

    def uploading(index: int, stop: threading.Event) -> None:
        client, n = gradio_client(url), 0
        pixels = np.asarray(Image.open(visitor.image).convert("RGB")).astype(int)
        while not stop.is_set():
            path = folder / f"load-{index}-{n}.png"
            Image.fromarray(((pixels + 7 * n + 50 * index) % 256).astype(np.uint8)).save(path)
            client.predict(image=handle_file(str(path)), model_key="bundled", mode="crop", api_name="/analyze")
            n += 1
        client.close()

    alone = clicking()
    stop = threading.Event()
    load = [threading.Thread(target=uploading, args=(i, stop), daemon=True) for i in range(uploaders)]
    for t in load:
        t.start()
    time.sleep(2)  # the analyses are under way
    beside = clicking()
    stop.set()
    for t in load:
        t.join(timeout=60)
    return {"alone": alone, "beside": beside}


def run_class(url: str, visitors: list[Visitor], max_seconds: float) -> tuple[Tally, float]:
    """Every visitor at once, each with its own client (session); returns the tally and the
    seconds from the start signal until the last visitor finished."""
    clients = [gradio_client(url) for _ in visitors]
    tally, start = Tally(), threading.Barrier(len(visitors) + 1)
    deadline = time.monotonic() + max_seconds
    threads = [
        threading.Thread(target=v.run, args=(c, tally, start, deadline), daemon=True)
        for v, c in zip(visitors, clients, strict=True)
    ]
    for t in threads:
        t.start()
    start.wait()
    began = time.perf_counter()
    for t in threads:
        t.join(timeout=max(deadline - time.monotonic(), 0) + 60)
    elapsed = time.perf_counter() - began
    for c in clients:
        c.close()
    return tally, elapsed


def table(tally: Tally) -> list[str]:
    """Markdown rows: n, p50, p95, max and errors per action, and the cheap actions together."""
    rows = ["| action | n | p50 s | p95 s | max s | errors |", "|---|---|---|---|---|---|"]
    groups = {name: [name] for name in ("analyze", *ACTION_WEIGHTS)}
    groups[f"click or slider ({', '.join(CHEAP)})"] = list(CHEAP)
    for name, members in groups.items():
        samples = [s for m in members for s in tally.seconds.get(m, [])]
        errors = sum(len(tally.errors.get(m, [])) for m in members)
        if samples:
            cells = f"{percentile(samples, 50):.2f} | {percentile(samples, 95):.2f} | {max(samples):.2f}"
        else:
            cells = "- | - | -"
        rows.append(f"| {name} | {len(samples)} | {cells} | {errors} |")
    return rows


@dataclass
class Run:
    """One class on one server: what the visitors saw and what the server spent."""

    model: str
    app_dir: Path
    command: list[str]
    tally: Tally
    elapsed: float
    loads: tuple[str, str]  # before and after the class
    startup_hwm: int  # bytes, after start-up and one analysis
    peak: int  # bytes, after the class and the CPU samples
    class_cpu: float  # server CPU seconds during the class
    cpu: dict[str, float]  # server CPU seconds per request of each kind, asked alone
    forward_s: float  # the model's forward pass with maps, in this process (NaN: not measured)
    floor_s: float  # floor_seconds for this class


def one_run(args: argparse.Namespace, app_dir: Path, model: str, folder: Path, launch: Launcher) -> Run:
    """Start `app_dir`'s server with `model`, warm it up, run the class, sample CPU per request, stop it."""
    server = launch(Server, folder, args.cache_mb, None if model == BUNDLED else model, app_dir=app_dir)
    try:
        server.wait()
        grid, depth = warm_up(server.url, folder)
        images = images_for(args.visitors, folder, args.same_example)
        forward_s = launch(forward_seconds, model)
        in_page = args.page and page_draws(server.url)  # its clicks never reach the server
        analysis = "analyze_page" if in_page else "analyze"
        visitors = [
            Visitor(i, images[i], [] if in_page else plan(i, args.actions, args.seed), args.think, grid, depth)
            for i in range(args.visitors)
        ]
        for visitor in visitors:
            visitor.analysis = analysis
        startup_hwm, startup_cpu, before = server.peak_bytes(), server.cpu_seconds(), load_average()
        tally, elapsed = run_class(server.url, visitors, args.max_seconds)
        loads, class_cpu = (before, load_average()), server.cpu_seconds() - startup_cpu
        if server.proc.poll() is not None:
            raise RuntimeError(f"the server exited with code {server.proc.returncode} during the class: see its log")
        sampler = Visitor(args.visitors, images[0], [] if in_page else ["query_patch"], 0.0, grid, depth)
        sampler.analysis = analysis
        cpu = cpu_per_request(server, sampler, folder, args.cpu_samples) if args.cpu_samples else {}
        floor_s = floor_seconds(args.visitors, forward_s, os.cpu_count() or 1)
        return Run(
            model,
            app_dir,
            server.command,
            tally,
            elapsed,
            loads,
            startup_hwm,
            server.peak_bytes(),
            class_cpu,
            cpu,
            forward_s,
            floor_s,
        )
    finally:
        server.stop()


def clicks_table(args: argparse.Namespace, runs: list[tuple[Path, str]], launch: Launcher) -> str:
    """`--clicks-beside`: for each server, one visitor's clicks alone and beside the uploaders."""
    rows = [
        f"one visitor's {args.clicks} clicks (/query_patch, 0.2 s apart), alone and while {args.clicks_beside} "
        "clients upload new pictures without pause:",
        "",
        "| model | click p50 / p95 s alone | click p50 / p95 s beside analyses | analyses meanwhile |",
        "|---|---|---|---|",
    ]
    for app_dir, model in runs:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            server = launch(Server, folder, args.cache_mb, None if model == BUNDLED else model, app_dir=app_dir)
            try:
                server.wait()
                grid, depth = warm_up(server.url, folder)
                visitor = Visitor(0, images_for(1, folder)[0], [], 0.0, grid, depth)
                seconds = clicks_beside_analyses(server.url, visitor, folder, args.clicks_beside, args.clicks)
                analyses = len(list(folder.glob("load-*.png")))
            finally:
                server.stop()
        cells = [f"{percentile(seconds[k], 50):.2f} / {percentile(seconds[k], 95):.2f}" for k in ("alone", "beside")]
        where = "" if app_dir == ROOT else f" (app in {app_dir})"
        rows.append(f"| `{Path(model).name}`{where} | {cells[0]} | {cells[1]} | {analyses} |")
    return "\n".join(rows)


def merged(runs: list[Run]) -> Tally:
    """The rounds of one model as one tally."""
    tally = Tally()
    for run in runs:
        for action, seconds in run.tally.seconds.items():
            tally.seconds[action] += seconds
        for action, errors in run.tally.errors.items():
            tally.errors[action] += errors
        tally.skipped += run.tally.skipped
    return tally


def p95s(tally: Tally) -> tuple[float, float, int]:
    """(analyze p95, click or slider p95, errors) of a tally (NaN where there are no samples)."""
    cheap = [s for m in CHEAP for s in tally.seconds.get(m, [])]
    analyses = tally.seconds.get("analyze", [])
    return (
        percentile(analyses, 95) if analyses else float("nan"),
        percentile(cheap, 95) if cheap else float("nan"),
        sum(len(e) for e in tally.errors.values()),
    )


def model_report(args: argparse.Namespace, runs: list[Run]) -> list[str]:
    """One model's rounds: each round's load, the pooled table, memory and CPU per request."""
    tally = merged(runs)
    lines = [
        f"### {label(runs[0])}",
        "",
        f"server: `{shlex.join(['python', *runs[0].command[1:]])}` in {runs[0].app_dir}",
    ]
    for i, run in enumerate(runs):
        a, c, e = p95s(run.tally)
        lines.append(
            f"- round {i + 1}: before: {run.loads[0]}; after: {run.loads[1]}; done in {run.elapsed:.1f} s; "
            f"analyze p95 {a:.2f} s, click or slider p95 {c:.2f} s, {e} errors; peak {run.peak / 2**20:.0f} MiB "
            f"(after start-up {run.startup_hwm / 2**20:.0f} MiB); server CPU {run.class_cpu:.1f} s during the class; "
            f"{run.tally.skipped} actions skipped at the deadline; forward pass with maps "
            f"{1e3 * run.forward_s:.0f} ms (this process, 1 thread, median of 5), floor {run.floor_s:.2f} s"
        )
    lines += ["", *table(tally), ""]
    if runs[0].cpu:
        cells = " | ".join(f"{1e3 * sum(r.cpu[a] for r in runs) / len(runs):.0f}" for a in runs[0].cpu)
        lines += [
            f"server CPU per request, ms (one client, {args.cpu_samples} in a row, after the class; mean of rounds):",
            "",
            "| " + " | ".join(runs[0].cpu) + " |",
            "|" + "---|" * len(runs[0].cpu),
            f"| {cells} |",
            "",
        ]
    for action, messages in tally.errors.items():
        lines.append(f"- {action}: {len(messages)} errors, first: {messages[0]}")
    return lines


def label(run: Run) -> str:
    """`model` (and the checkout, if not this one) as the report names a run."""
    where = "" if run.app_dir == ROOT else f" (app in {run.app_dir})"
    return f"`{Path(run.model).name}`{where}"


def ratios(by_model: dict[tuple[Path, str], list[Run]], visitors: int) -> list[str]:
    """Each model's p95s against its floor (floor_seconds, from the forward pass measured in the
    same run) and against the first model of the same checkout, pooled over rounds."""
    rows = [
        f"p95 against the floor ({visitors} uploads at once: N x t / {os.cpu_count()} cores + t, t the forward "
        "pass with maps measured before each class) and against the first model of the same checkout:",
        "",
        "| model | forward pass ms | floor s | analyze p95 s | x floor | x anchor | click or slider p95 s | x anchor "
        "| errors |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    anchors: dict[Path, tuple[float, float, int]] = {}
    for (app_dir, _), runs in by_model.items():
        a, c, e = p95s(merged(runs))
        a0, c0, _ = anchors.setdefault(app_dir, (a, c, e))
        forward = sum(r.forward_s for r in runs) / len(runs)
        floor = sum(r.floor_s for r in runs) / len(runs)
        rows.append(
            f"| {label(runs[0])} | {1e3 * forward:.0f} | {floor:.2f} | {a:.2f} | {a / floor:.2f} | {a / a0:.2f} "
            f"| {c:.2f} | {c / c0:.2f} | {e} |"
        )
    return rows


def goals(by_model: dict[tuple[Path, str], list[Run]]) -> list[str]:
    """Issue 30's goals, met or missed by how much, per model."""
    lines = []
    for runs in by_model.values():
        a, c, e = p95s(merged(runs))
        floor = sum(r.floor_s for r in runs) / len(runs)
        verdicts = [
            f"analyze p95 {a / floor:.2f}x the floor (goal <= {FLOOR_GOAL}x): "
            + ("met" if a <= FLOOR_GOAL * floor else "missed"),
            f"click or slider p95 {c:.2f} s (goal <= {GOAL_S} s): {'met' if c <= GOAL_S else 'missed'}",
            f"{e} errors (goal 0): {'met' if e == 0 else 'missed'}",
        ]
        lines.append(f"- {label(runs[0])}: " + "; ".join(verdicts))
    return lines


def report(args: argparse.Namespace, by_model: dict[tuple[Path, str], list[Run]]) -> str:
    own_cpu = resource.getrusage(resource.RUSAGE_SELF)
    lines = [
        f"command: `{shlex.join([Path(sys.executable).name, '-m', 'bench.visitors', *sys.argv[1:]])}`",
        f"machine: {machine()}",
        f"{args.visitors} visitors x (1 upload + {args.actions} actions), pause {args.think:.1f} s (x0.5..1.5) "
        f"between actions; models in turn, {args.rounds} round(s); explanation budget --cache-mb {args.cache_mb}; "
        f"this script's CPU {own_cpu.ru_utime + own_cpu.ru_stime:.1f} s (same cores; its visitors' threads at nice "
        f"+{args.client_nice})",
        "",
    ]
    for runs in by_model.values():
        lines += model_report(args, runs)
    return "\n".join([*lines, "", *ratios(by_model, args.visitors), "", "goals:", *goals(by_model)])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--visitors", type=int, default=30)
    p.add_argument("--actions", type=int, default=12, help="actions per visitor after the upload")
    p.add_argument("--think", type=float, default=1.0, help="mean pause between a visitor's actions, seconds")
    p.add_argument("--max-seconds", type=float, default=300, help="no action starts after this")
    p.add_argument("--cache-mb", type=int, default=2048, help="the server's explanation budget")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--model", action="append", help=f"app.py --model (repeatable; {BUNDLED!r}: the bundled one, the default)"
    )
    p.add_argument("--rounds", type=int, default=1, help="times every model runs, in turn")
    p.add_argument(
        "--app-dir", action="append", type=Path, help="a checkout whose app.py to serve (repeatable; default: this one)"
    )
    p.add_argument("--cpu-samples", type=int, default=5, help="requests of each kind for the CPU table (0: none)")
    p.add_argument(
        "--same-example",
        action="store_true",
        help="every visitor uploads the teacher's example, each under its own name",
    )
    p.add_argument(
        "--client-nice", type=int, default=10, help="nice value added to the visitors' threads (0: none; Launcher)"
    )
    p.add_argument(
        "--page",
        action="store_true",
        help="visitors send what the page sends: on a server whose page draws its own maps, analyses only",
    )
    p.add_argument("--clicks-beside", type=int, default=0, help="instead of a class: clicks beside N uploaders")
    p.add_argument("--clicks", type=int, default=40, help="with --clicks-beside: clicks in a row")
    args = p.parse_args(argv)
    if args.visitors < 1 or args.actions < 0 or args.think < 0 or args.max_seconds <= 0:
        p.error("--visitors must be at least 1, --actions and --think at least 0, --max-seconds above 0")
    if args.rounds < 1 or args.cpu_samples < 0:
        p.error("--rounds must be at least 1 and --cpu-samples at least 0")
    launch = Launcher()
    if args.client_nice:
        from explorer.priority import lower_this_thread

        lower_this_thread(args.client_nice)  # the visitors' threads and clients, made from this one
    runs = [(d.resolve(), m) for m in args.model or [BUNDLED] for d in args.app_dir or [ROOT]]
    if args.clicks_beside:
        print(f"machine: {machine()}; visitors' threads at nice +{args.client_nice}\n")
        print(clicks_table(args, runs, launch))
        return
    by_model: dict[tuple[Path, str], list[Run]] = {run: [] for run in runs}
    for r in range(args.rounds):
        for app_dir, model in runs if r % 2 == 0 else runs[::-1]:  # A B B A: a drifting load weighs alike
            with tempfile.TemporaryDirectory() as tmp:
                by_model[app_dir, model].append(one_run(args, app_dir, model, Path(tmp), launch))
    print(report(args, by_model))


if __name__ == "__main__":
    main()
