"""Rehearse a Hugging Face Space on this machine: `python -m bench.space` (docs/space.md).

1. a fresh venv from requirements.txt alone (what a Space installs), and the files README's deploy
   command uploads (`deploy_files`) copied to a temporary folder;
2. the Hub: the stand-in of tests/hub_standin.py on 127.0.0.1, serving the Space's weights
   (ui.settings.space_weights(): at their real shapes with random values, saved as their Hub
   repositories hold them: timm's models as timm uploads them, CLIP as open_clip's one file of
   both towers; built with timm and open_clip in this, the dev, venv);
3. the Space's build: those weights preloaded into a fresh HF_HOME with `python -m vit.download`
   (what README.md's `preload_from_hub:` does);
4. `python app.py` started as a Space starts it: SPACE_ID set, HF_ENDPOINT at the stand-in, no
   HF_HUB_OFFLINE;
5. through gradio_client: the models every tab opens on, Explore on its default model and on
   DINO ViT-S/16, and every lesson with the models it opens on;
6. a class (issue 59, `class_steps`), led over HTTP as the pages lead one: the teacher's new
   image one model call (on a CPU Space the app's log says each: COUNT_CALLS), the students'
   pages none, the gallery's pictures one batched call, a spotlight the picture's one, and
   Train together (a tiny run on the operator's folder, VIT_EXPLORER_DATA_FOLDER) none for
   the students who read its state and pictures.

With `--zerogpu` the Space is a ZeroGPU one: the app also gets the platform's environment
(SPACES_ZERO_GPU, the device API: the stand-in of tests/zerogpu_standin.py), so the real
`spaces` package patches torch, reports at start and asks for a GPU per call. This machine has
no GPU: every GPU worker fails (no CUDA driver) and the visitor must get the CPU's answer; the
class's calls are the GPU calls the platform is asked for, each named by whose quota pays it
(the teacher is logged in: an X-IP-Token); a visitor out of GPU time gets the CPU for a small
model and plain words for a ViT-L/14.

One line per step, then a verdict; the exit code is 1 if any step failed. It takes minutes
(the venv, two ViT-L/14 of 1.2 GB): not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import venv
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

import vit
from bench.deploy import app_files
from bench.serving import file_of, free_port, wait_until_served
from explorer.catalog import pretrained_key
from explorer.lessons import COMPARED, RANKED, WITH_REGISTERS, WITHOUT_REGISTERS, WORDS
from explorer.prompts import DEFAULT_PROMPTS
from training.registry import VISITOR_GONE_S
from ui import settings
from ui.settings import SPACE_MODEL, preloaded_weights, space_weights
from ui.zerogpu import CALL_LINE, COUNT_CALLS
from vit.clip import OPEN_CLIP_WEIGHTS
from vit.pretrained import PRETRAINED

REPO = Path(__file__).resolve().parents[1]
DINO = "vit_small_patch16_224.dino"  # the Explore model: self-supervised, no classifier
NOT_PRELOADED = "deit_tiny_patch16_224.fb_in1k"  # a listed model a visitor picks: downloads on first use
IMAGE = REPO / "examples" / "cifar10" / "cat.jpg"
START_TIMEOUT_S = 900  # a Space loads its start model and the lesson pair (2 x ViT-L/14) before serving
LESSON_1 = "Models to compare (up to 3)"
GPU_FAILED = "the GPU could not run it this time"  # ui.zerogpu's words for a failed worker
# What the Lessons tab must open on once every lesson weight is preloaded, by component label.
OPENING = {
    "Model": pretrained_key(SPACE_MODEL),
    LESSON_1: [pretrained_key(n) for n in COMPARED],
    "First row: a model with registers": pretrained_key(WITH_REGISTERS[0]),
    "Second row: a model without": pretrained_key(WITHOUT_REGISTERS[0]),
    "Model (with classes)": pretrained_key(RANKED[0]),
    "Model (CLIP)": pretrained_key(WORDS[0]),
}


class StepFailed(RuntimeError):
    """A rehearsal step went wrong; the message is its one-line reason."""


class Steps:
    """Runs named steps in order, printing one line each; the first failure stops the rehearsal."""

    def __init__(self) -> None:
        self.done: list[tuple[str, bool]] = []
        self.started = time.perf_counter()

    def run(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        start = time.perf_counter()
        try:
            result = fn(*args)
        except Exception as e:  # noqa: BLE001 - any failure is the rehearsal's finding, reported in one line
            print(f"[FAIL] {name} ({time.perf_counter() - start:.1f} s): {type(e).__name__}: {e}", flush=True)
            self.done.append((name, False))
            raise StepFailed(name) from e
        detail = f": {result}" if isinstance(result, str) else ""
        print(f"[ ok ] {name} ({time.perf_counter() - start:.1f} s){detail}", flush=True)
        self.done.append((name, True))
        return result

    def verdict(self) -> str:
        failed = [name for name, ok in self.done if not ok]
        took = time.perf_counter() - self.started
        if failed:
            return f"VERDICT: FAIL at '{failed[0]}' after {len(self.done)} steps ({took:.0f} s)"
        return f"VERDICT: PASS, {len(self.done)} steps ({took:.0f} s): a Space built from requirements.txt serves them"


def run(command: list[str], **kwargs: Any) -> str:
    """Run a command to the end; its stdout, or StepFailed with the last lines it printed."""
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if done.returncode:
        said = " | ".join([*done.stdout.strip().splitlines()[-3:], *done.stderr.strip().splitlines()[-1:]])
        raise StepFailed(f"{' '.join(command[:4])} ... exited with {done.returncode}: {said}")
    return done.stdout


def fresh_venv(folder: Path) -> str:
    """A venv with requirements.txt installed and nothing else; its python's path."""
    venv.EnvBuilder(with_pip=True, clear=True).create(folder)
    python = folder / "bin" / "python"
    with tempfile.TemporaryDirectory() as no_wheels:  # as README installs: PyPI's torch, not a local CPU wheel
        env = {**os.environ, "PIP_FIND_LINKS": no_wheels}
        run([str(python), "-m", "pip", "install", "-q", "-r", str(REPO / "requirements.txt")], env=env)
    return f"{python}: {requirements_line(python)}; {torch_pair(python)}"


def torch_pair(python: Path) -> str:
    """torch and torchvision load together: a machine whose local wheels hold a CPU build of
    the pinned torch gets it beside PyPI's CUDA torchvision, which then cannot register its
    operators (seen here: torch 2.13.0+cpu from /opt/wheels, "operator torchvision::nms does not
    exist" at the build's first model load): `fresh_venv` installs as README says, so this
    names what went wrong if a machine still finds another wheel. A Space installs both from PyPI."""
    check = "import torch, torchvision.ops; print(torch.__version__, torchvision.__version__)"
    try:
        return "torch {} and torchvision {} load together".format(*run([str(python), "-c", check]).split())
    except StepFailed as e:
        raise StepFailed(f"torch and torchvision in the venv do not load together: {e}") from e


def requirements_line(python: Path) -> str:
    """What the venv holds beyond the standard library, in one line (transformers must not be there:
    the dev venv's reference; timm may, since open_clip, CLIP's text side, needs it to install, and
    `import vit` still loads it only for a CLIP model, tests/test_architecture.py)."""
    listed = run([str(python), "-m", "pip", "list", "--format=freeze"])
    names = sorted(line.split("==")[0].lower() for line in listed.split())
    if "transformers" in names:
        raise StepFailed("transformers got into the Space's venv: the rehearsal would prove nothing")
    return f"{len(names)} packages, no transformers"


def deploy_files(folder: Path = REPO) -> list[str]:
    """What README's deploy command (`python -m bench.deploy`) sends from `folder`: the app's
    files git tracks there, and nothing else."""
    return app_files(folder)


def deployed_copy(folder: Path) -> str:
    """The files README's deploy command uploads, copied as they are in the working tree."""
    names = deploy_files()
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, folder / name)
    return f"{len(names)} files"


def hub_weights(name: str, folder: Path) -> Path:
    """`name`'s files as its Hub repository holds them, real shapes, random values: timm's
    (config.json + model.safetensors), or for CLIP open_clip's one file of both towers; made
    once per folder (the ViT-L/14 take a while)."""
    out = folder / name
    spec = PRETRAINED[name]
    if spec.library == "open_clip":
        path = out / OPEN_CLIP_WEIGHTS
        if not path.is_file():
            import open_clip
            import safetensors.torch

            out.mkdir(parents=True, exist_ok=True)
            model = open_clip.create_model(spec.config, pretrained=None)
            safetensors.torch.save_file(model.state_dict(), str(path))
    elif not (out / "model.safetensors").is_file():
        import timm

        model = timm.create_model(name, pretrained=False)
        timm.models.save_for_hf(model, str(out), safe_serialization=True)
    return out


@contextmanager
def hub_serving(names: list[str], weights: Path) -> Iterator[Any]:
    """The Hub stand-in (tests/hub_standin.py) serving `names`' repos from disk; yields it."""
    sys.path.insert(0, str(REPO / "tests"))
    import hub_standin

    with hub_standin.serve() as hub:
        for name in names:
            for path in sorted(hub_weights(name, weights).iterdir()):
                hub.publish_file(vit.pretrained_repo(name), path.name, path)
                hub.etag((vit.pretrained_repo(name), path.name))  # hashed now, not while a download waits
        yield hub


def space_env(endpoint: str, hf_home: Path, port: int) -> dict[str, str]:
    """The environment a Space runs in: SPACE_ID, the Hub (here the stand-in), a fresh cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "VIT_EXPLORER_", "GRADIO_"))}
    return env | {
        "SPACE_ID": "rehearsal/vit-attention-explorer",
        "HF_ENDPOINT": endpoint,
        "HF_HOME": str(hf_home),
        "GRADIO_SERVER_NAME": "127.0.0.1",
        "GRADIO_SERVER_PORT": str(port),
        "PYTHONUNBUFFERED": "1",
    }


def preload(python: str, app: Path, env: dict[str, str]) -> str:
    """What `preload_from_hub:` does when the Space is built: the weights into the Hub cache."""
    names = preloaded_weights()
    run([python, "-m", "vit.download", *names], cwd=app, env=env)
    return f"{len(names)} repos: {', '.join(names)}"


def start_app(python: str, app: Path, env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("w") as out:
        proc = subprocess.Popen([python, "app.py"], cwd=app, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until_served(f"http://127.0.0.1:{env['GRADIO_SERVER_PORT']}/", proc, timeout=START_TIMEOUT_S)
    except (RuntimeError, TimeoutError) as e:
        raise StepFailed(f"{e}; the app's log: {log}") from e
    return proc


def component_values(config: dict) -> dict[str, Any]:
    """{label: value} of the page's labelled components (the first of each label), from Gradio's
    /config: what a visitor's page opens with."""
    values: dict[str, Any] = {}
    for component in config["components"]:
        props = component.get("props", {})
        if props.get("label") and "value" in props:
            values.setdefault(props["label"], props["value"])
    return values


def page_values(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}config", timeout=30) as r:
        return component_values(json.load(r))


def opening_models(values: dict[str, Any]) -> str:
    """The models the Explore tab and every lesson open on are the Space's own."""
    wrong = {label: values.get(label) for label, want in OPENING.items() if values.get(label) != want}
    if wrong:
        raise StepFailed(f"the page opens on {wrong}, not on {OPENING}")
    return f"Explore on {SPACE_MODEL}; lessons on {', '.join(space_weights()[1:])}"


def explore(client: Any, key: str, mode: str = "crop") -> str:
    """Pick `key` in the Explore tab, then analyse the example image with it."""
    from gradio_client import handle_file

    info = client.predict(key, api_name="/load_model")[0]  # the model description (gr.State outputs are not sent)
    outputs = client.predict(image=handle_file(str(IMAGE)), model_key=key, mode=mode, api_name="/analyze")
    heads, label = Path(file_of(outputs[4])), outputs[2]
    if not heads.is_file():
        raise StepFailed("/analyze drew no head maps")
    # What the page sends instead (issue 41): the first screen's numbers, the shown layer's CLS rows (issue 58).
    maps = client.predict(image=handle_file(str(IMAGE)), model_key=key, mode=mode, api_name="/analyze_page")[-1]
    if not isinstance(maps, dict) or not (maps.get("token_rows") or {}).get("deflated"):
        raise StepFailed("/analyze_page sent no numbers for the page's maps")
    said = f"top class {label['label']!r}" if label and label.get("label") else "no classifier: maps only"
    return f"{info.splitlines()[0]}; {said}; the page's numbers {len(json.dumps(maps)) / 1e6:.2f} MB"


def lesson_compare(client: Any, image: Any, models: list[str]) -> str:
    _, note = client.predict(image, models, "inferno", api_name="/lesson_compare")
    if note:
        raise StepFailed(note)
    return f"{len(models)} models side by side"


def lesson_norms(client: Any, image: Any, values: dict[str, Any]) -> str:
    layer = values["Layer (1 = first; up to the shallower model's depth)"]
    pair = (values["First row: a model with registers"], values["Second row: a model without"])
    _, table = client.predict(image, *pair, layer, "inferno", api_name="/lesson_token_norms")
    return f"layer {layer} of {pair[0]} and {pair[1]}: {table.count('median patch norm')} norm tables"


def lesson_heads(client: Any, image: Any, key: str) -> str:
    _, note = client.predict(image, key, "1.1, 12.6", api_name="/lesson_heads_off")
    _, ranked = client.predict(image, key, api_name="/lesson_head_ranking")
    return f"{note.split('. ')[0]}; {ranked.split('. ')[0]}"


def lesson_words(client: Any, image: Any, key: str) -> str:
    """Lesson 4 with the teacher's default words: a probability and a map per word."""
    label, _, maps = client.predict(image, key, DEFAULT_PROMPTS, "inferno", api_name="/lesson_words")
    words = [c["label"] for c in label.get("confidences", [])]
    if len(words) != len(DEFAULT_PROMPTS.split(",")) or len(maps) != len(words):
        raise StepFailed(f"{len(words)} words scored and {len(maps)} maps drawn for {DEFAULT_PROMPTS!r}")
    return f"{len(words)} words, {len(maps)} maps; first {words[0]!r}"


def more_views(client: Any, zerogpu: bool) -> str:
    """Explore's other GPU tasks on the image just analysed: the patch features' PCA and the logit
    lens (on ZeroGPU here, their failed workers answered on the CPU: DeiT-S is small), and the
    relevance map, which has no CPU fallback (on ZeroGPU here: plain words)."""
    pca, lens = client.predict(api_name="/patch_pca"), client.predict(api_name="/logit_lens")
    drawn = [name for name, out in (("PCA", pca), ("logit lens", lens)) if Path(file_of(out)).is_file()]
    if len(drawn) != 2:
        raise StepFailed(f"drawn: {drawn}, of the PCA and the logit lens")
    if zerogpu:
        said = refused_in_plain_words(partial(client.predict, api_name="/relevance"), GPU_FAILED)
        return f"PCA and logit lens drawn on the CPU; relevance refused: {said}"
    return f"PCA, logit lens and relevance ({Path(file_of(client.predict(api_name='/relevance'))).name}) drawn"


def explore_words(client: Any, key: str, zerogpu: bool) -> str:
    """Explore with CLIP B/16 and the teacher's words: a map per word, the top three's probabilities
    (Explore's label shows three) (on ZeroGPU here CLIP's worker fails and CLIP, 86 M parameters,
    is too large for the CPU)."""
    if zerogpu:
        return refused_in_plain_words(partial(explore, client, key), GPU_FAILED)
    said = explore(client, key)
    label, maps, _ = client.predict(DEFAULT_PROMPTS, api_name="/zero_shot")  # (probabilities, maps, note)
    words, scored = len(DEFAULT_PROMPTS.split(",")), len(label.get("confidences", []))
    if len(maps) != words or scored != min(words, 3):
        raise StepFailed(f"{len(maps)} maps and {scored} probabilities for {words} words")
    return f"{said}; {words} words, a map each"


def tiny_folder(folder: Path) -> Path:
    """Two classes of 16 x 16 pictures, 8 each to train and 2 to test: the operator's folder."""
    from PIL import Image

    rng = np.random.default_rng(0)
    for split, count in (("train", 8), ("test", 2)):
        for name in ("cat", "dog"):
            (folder / split / name).mkdir(parents=True)
            for i in range(count):
                pixels = rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(folder / split / name / f"{i}.png")
    return folder


def train_said(outputs: Any) -> str:
    """The Train tab's words in a reply: its status and progress."""
    return " ".join(o for o in (outputs if isinstance(outputs, tuple | list) else [outputs]) if isinstance(o, str))


RUN = {"model": "vit_cifar_nano", "source": "operator", "folder": "", "epochs": 1, "lr": 1e-3, "batch": 8}


def train_start(client: Any) -> str:
    """A 1-epoch run of the bundled nano model on the operator's folder."""
    said = train_said(client.predict(**RUN, api_name="/train_start"))
    if "started" not in said:
        raise StepFailed(said[:300])
    return said.splitlines()[0]


def polled(client: Any, *wanted: str) -> str:
    """One poll of the visitor's run, which must say each of `wanted`: its words as sent (HTML)."""
    said = train_said(client.predict(api_name="/train_status"))
    if missing := [w for w in wanted if w not in said]:
        raise StepFailed(f"{missing} not said: {said[:400]}")
    if re.search(r"\\?\(\\?\)", said):  # "cut short ()": an error with nothing to say (Markdown-escaped)
        raise StepFailed(f"empty words in brackets: {said[:400]}")
    return said


def shown(said: str) -> str:
    """A reply's words as a person reads them (no tags), cut to fit a step's line."""
    return re.sub(r"<[^>]+>", "", said)[:200]


def train_poll(client: Any, *wanted: str) -> str:
    """One poll of the visitor's run, which must say each of `wanted`, as a person reads it."""
    return shown(polled(client, *wanted))


def next_try(said: str) -> int:
    """The seconds of the countdown a reply shows ("next try in 45 s"): when the page polls next."""
    found = re.search(r'data-countdown="(\d+)"', said)
    return int(found[1]) if found else 0


def as_the_page(client: Any, said: str, *wanted: str) -> str:
    """The page's next poll after the reply `said` (as sent): at its next try, as the page's timer
    does (ui.train_handlers.poll_after). Returns the poll's reply as sent."""
    time.sleep(next_try(said) + 1)
    return polled(client, *wanted)


def asked_for_a_chunk(gpu: Any, since: int) -> bool:
    return "/schedule" in [path for path, _ in gpu.requests[since:]]


def train_quota_back(client: Any, gpu: Any) -> str:
    """Out of GPU time the run waits, saved, saying when it tries next; the quota back, the page's
    next poll (at that try) goes on by itself: a chunk is asked for (issue 60: the page sent no
    request and stayed "waiting")."""
    said = polled(client)
    gpu.exceeded = True
    try:
        waiting = as_the_page(client, said, "waiting", "goes on by itself", "next try")
    finally:
        gpu.exceeded = False
    if not next_try(waiting):
        raise StepFailed(f"no countdown to the next try: {waiting}")
    before = len(gpu.requests)
    back = as_the_page(client, waiting)
    if not asked_for_a_chunk(gpu, before) or "failed" in back:
        raise StepFailed(f"the run did not go on by itself: {shown(back)}")
    return f"{shown(waiting)[:150]} ... next try in {next_try(waiting)} s: a chunk asked"


def train_waits_then_stops(client: Any, gpu: Any) -> str:
    """Out of GPU time the run waits, saved, in the quota's words; Stop then ends it at once,
    says "stopped" in its own reply, and asks the platform for nothing."""
    said = polled(client)
    gpu.exceeded = True
    try:
        waiting = shown(as_the_page(client, said, "waiting"))
        before = len(gpu.requests)
        reply = train_said(client.predict(api_name="/train_stop"))
        stopped = train_poll(client, "stopped")
    finally:
        gpu.exceeded = False
    if asked := [path for path, _ in gpu.requests[before:]]:
        raise StepFailed(f"Stop while waiting asked the platform for {asked}")
    if reply != "stopped":
        raise StepFailed(f"Stop's own reply said {reply!r}, not 'stopped'")
    return f"{waiting} ... then {stopped}"


def train_busy_platform(client: Any, gpu: Any, seconds: float = 120.0) -> str:
    """ "No GPU was available" for `seconds`: the run waits, polled as the page polls (at each
    try), never failing; then a GPU is free and it goes on (issue 60: three refusals in a minute
    failed a run for good)."""
    said, tries, started = train_start(client), 0, time.monotonic()
    said = polled(client)  # its first chunk (its worker fails here: cut short)
    gpu.busy = True
    try:
        while time.monotonic() - started < seconds:
            said = as_the_page(client, said, "waiting")
            if "failed" in said or "busy right now" not in said:
                raise StepFailed(f"a busy platform did not make the run wait: {shown(said)}")
            tries += 1
    finally:
        gpu.busy = False
    before = len(gpu.requests)
    back = as_the_page(client, said)
    if not asked_for_a_chunk(gpu, before):
        raise StepFailed(f"the run did not go on when a GPU was free: {shown(back)}")
    client.predict(api_name="/train_stop")
    return f"{tries} polls in {seconds:.0f} s, each 'waiting' (every GPU busy), never failed; free again: goes on"


def train_queue(url: str, gpu: Any) -> str:
    """Three visitors find the slot taken: each queues with its place and wait; one leaves; the
    others start in order, each by its own poll (issue 60: "busy … try again", no place)."""
    from gradio_client import Client

    holder, *visitors = (Client(url, verbose=False) for _ in range(4))
    gpu.used.clear()  # a new day: the steps before spent the Space's GPU time, which a start needs not
    train_start(holder)
    places = []
    for place, visitor in enumerate(visitors, start=1):
        said = train_said(visitor.predict(**RUN, api_name="/train_start"))
        if f"place {place} in the queue for a run slot, estimated wait about" not in said:
            raise StepFailed(f"visitor {place} was not told its place and wait: {said[:300]}")
        places.append(re.search(r"estimated wait about [^;]+", said)[0])
    first, leaving, last = visitors
    leaving.predict(api_name="/train_stop")  # it leaves the queue
    train_poll(last, "place 2 in the queue")
    holder.predict(api_name="/train_stop")
    before = len(gpu.requests)
    train_poll(last, "place 2 in the queue")  # the slot is free, but the first is ahead
    if asked_for_a_chunk(gpu, before):
        raise StepFailed("a chunk was asked for the third in the queue before the first")
    train_poll(first)  # its turn: its run starts, asking for a chunk (which its worker fails here)
    if not asked_for_a_chunk(gpu, before):
        raise StepFailed("the first in the queue did not start at its poll")
    train_poll(last, "place 1 in the queue")
    first.predict(api_name="/train_stop")
    before = len(gpu.requests)
    train_poll(last)
    if not asked_for_a_chunk(gpu, before):
        raise StepFailed("the third did not start at its poll once the first had stopped")
    last.predict(api_name="/train_stop")
    return f"places 1, 2, 3 ({'; '.join(places)}); the second left; the first, then the third started"


def train_too_long_for_the_account(client: Any, gpu: Any) -> str:
    """A chunk longer than the account's longest call: the run waits in words that would work,
    never the platform's text ("…maximum allowedSubscribe … https://…", issue 60)."""
    gpu.max_duration_s = 20
    try:
        train_start(client)
        said = train_poll(client, "waiting", "a longer GPU call than ZeroGPU allows your account", "PRO")
    finally:
        gpu.max_duration_s = None
    if "allowed" in said.replace("allows", "") or "http" in said:
        raise StepFailed(f"the platform's words reached the page: {said}")
    client.predict(api_name="/train_stop")
    return said[:160]


def train_visitor_gone(url: str, gpu: Any) -> str:
    """A run whose page stops polling holds the one run slot for VISITOR_GONE_S while another
    visitor queues; then the other's run starts at its poll; back, the visitor's run goes on from
    its save when the slot is free again (a GPU call asked)."""
    from gradio_client import Client

    visitor, other = Client(url, verbose=False), Client(url, verbose=False)
    train_start(visitor)
    train_poll(visitor)  # its first chunk (its worker fails here: cut short, saved)
    queued = train_said(other.predict(**RUN, api_name="/train_start"))
    if "place 1 in the queue" not in queued:
        raise StepFailed(f"a second visitor was not queued while the first's page still polled: {queued[:200]}")
    time.sleep(VISITOR_GONE_S + 2)
    train_poll(other, "running")  # the slot is free: the queued run starts
    other.predict(api_name="/train_stop")
    before = len(gpu.requests)
    back = train_poll(visitor)
    if not asked_for_a_chunk(gpu, before) or "set aside" in back:
        raise StepFailed(f"the visitor's run did not go on: {back}")
    gone = f"{VISITOR_GONE_S:.0f} s unpolled: set aside, the other ran"
    return f"while polled: the other queued (place 1); {gone}; back: goes on"


def weight_downloads(hub: Any) -> list[str]:
    """The stand-in's GETs of repository files (the app also asks the Hub's API for other things)."""
    return [path for path in hub.downloads() if "/resolve/" in path]


def fetched_at_start(hub: Any, preloaded: int) -> str:
    """The weights the build does not preload (`settings.NOT_PRELOADED`) came at the app's start."""
    fetched = weight_downloads(hub)[preloaded:]
    repos = {vit.pretrained_repo(name) for name in settings.NOT_PRELOADED}
    if missing := [repo for repo in repos if not any(f"/{repo}/" in path for path in fetched)]:
        raise StepFailed(f"not fetched at start: {missing}")
    return f"{len(fetched)} files of {', '.join(sorted(repos))}"


def no_downloads_after_the_build(hub: Any, before: int) -> str:
    """Visitors waited for no download: every model they used was preloaded."""
    extra = weight_downloads(hub)[before:]
    if extra:
        raise StepFailed(f"{len(extra)} downloads while visitors waited: {extra[:3]}")
    return "0 requests for weights reached the Hub after the build"


def downloads_once(client: Any, hub: Any, key: str) -> str:
    """A listed model that was not preloaded: picked, it downloads through the Hub, once."""
    before = len(weight_downloads(hub))
    said = explore(client, key)
    explore(client, key)  # a second visit reads the loaded model
    fetched = weight_downloads(hub)[before:]
    name = key.partition(":")[2]
    if sorted(p.rsplit("/", 1)[-1] for p in fetched) != sorted(vit.pretrained_files(name)):
        raise StepFailed(f"expected one download of each of {vit.pretrained_files(name)}, got {fetched}")
    return f"{len(fetched)} files fetched once; {said}"


# What the `spaces` package prints when a GPU worker fails on this machine, which has no GPU.
NO_DRIVER = "RuntimeError: Found no NVIDIA driver on your system"


def no_traceback(log: Path, workers_failed: int = 0) -> str:
    """No traceback in the app's log but, with `workers_failed`, the GPU workers' own (ZeroGPU
    here: each prints why it found no GPU)."""
    text = log.read_text(errors="replace")
    tracebacks, expected = text.count("Traceback"), text.count(NO_DRIVER)
    if tracebacks != expected or expected != workers_failed:
        raise StepFailed(f"{tracebacks} tracebacks in the app's log, {workers_failed} GPU workers failed: {log}")
    if expected:
        return f"{len(text.splitlines())} lines; {expected} tracebacks, each a GPU worker finding no CUDA driver"
    return f"{len(text.splitlines())} lines, no traceback"


@contextmanager
def zerogpu_serving() -> Iterator[Any]:
    """ZeroGPU's device API stand-in (tests/zerogpu_standin.py); yields it."""
    sys.path.insert(0, str(REPO / "tests"))
    import zerogpu_standin

    with zerogpu_standin.serve() as gpu:
        yield gpu


def zerogpu_env(url: str, work: Path) -> dict[str, str]:
    """What a ZeroGPU Space adds to the environment (spaces/config.py reads it), pointed here."""
    cgroup = work / "cgroup"
    cgroup.write_text("0::/rehearsal/space\n")  # cgroup v2, as /proc/self/cgroup reads on a Space
    return {
        "SPACES_ZERO_GPU": "true",
        "SPACES_ZERO_DEVICE_API_URL": url,
        "ZEROGPU_PROC_SELF_CGROUP_PATH": str(cgroup),
        "ZEROGPU_OFFLOAD_DIR": str(work / "zerogpu-offload"),
        "HOME": str(work / "home"),  # the package keeps its cleanups under ~/.zerogpu
    }


def reported_at_start(gpu: Any) -> str:
    if gpu.paths() != ["/startup-report"]:
        raise StepFailed(f"the platform heard {gpu.paths()} before any visitor, not one /startup-report")
    return "one /startup-report, before any visitor"


def gpu_calls(gpu: Any) -> dict[str, int]:
    """How many of each request the platform got."""
    counts: dict[str, int] = {}
    for path in gpu.paths():
        counts[path] = counts.get(path, 0) + 1
    return counts


def workers_failed_and_cpu_answered(gpu: Any) -> str:
    """Every GPU call was scheduled, started a worker that failed (no GPU here) and was released
    as failed; the visitors' steps before passed: a small model answered on the CPU, a large
    one in plain words."""
    counts = gpu_calls(gpu)
    failed = sum(1 for path, params in gpu.requests if path == "/release" and params.get("fail") == "true")
    calls = counts.get("/schedule", 0)
    if not calls or counts.get("/allow") != calls or failed != calls:
        raise StepFailed(f"expected each /schedule to start a worker that fails here, got {counts}")
    return f"{calls} GPU calls: each worker found no GPU and failed (the steps before: what visitors got then)"


def out_of_gpu_time(gpu: Any, visit: Callable[[], str]) -> str:
    """`visit` while the platform refuses every GPU call for quota ("quota exceeded", 429)."""
    before = len(gpu.requests)
    gpu.exceeded = True
    try:
        said = visit()
    finally:
        gpu.exceeded = False
    asked = [path for path, _ in gpu.requests[before:]]
    if not asked or set(asked) != {"/schedule"}:
        raise StepFailed(f"expected only refused /schedule requests, got {asked}")
    return f"{len(asked)} refused; {said}"


def refused_in_plain_words(visit: Callable[[], Any], words: str = "s of GPU time") -> str:
    """A model too large for the CPU fallback, without a GPU: the visitor reads ui/zerogpu.py's
    message (holding `words`), not the platform's."""
    from gradio_client.exceptions import AppError

    try:
        visit()
    except AppError as e:
        if words not in str(e) or "ZeroGPU" in str(e):
            raise StepFailed(f"not the plain message: {e}") from e
        return str(e)
    raise StepFailed("ran without a GPU: the ViT-L/14 should have been refused")


def rehearse(steps: Steps, work: Path, weights: Path, reuse_venv: str | None, zerogpu: bool = False) -> None:
    """Every step, in order; raises StepFailed at the first that fails."""
    python = reuse_venv or str(work / "venv" / "bin" / "python")
    if reuse_venv is None:
        steps.run("a fresh venv from requirements.txt only", fresh_venv, work / "venv")
    app, log = work / "app", work / "app.log"
    steps.run("the files README's deploy command uploads, copied", deployed_copy, app)
    with ExitStack() as stack:
        serving = hub_serving([*space_weights(), NOT_PRELOADED], weights)
        what = "Hub stand-in on 127.0.0.1 serving the weights as their repos hold them"
        hub = steps.run(what, stack.enter_context, serving)
        env, gpu, started = space_env(hub.url, work / "hf-home", free_port()), None, "SPACE_ID, HF_ENDPOINT"
        if zerogpu:
            gpu = steps.run("ZeroGPU device API stand-in on 127.0.0.1", stack.enter_context, zerogpu_serving())
            env, started = env | zerogpu_env(gpu.url, work), f"{started}, SPACES_ZERO_GPU"
        env["VIT_EXPLORER_DATA_FOLDER"] = str(tiny_folder(work / "train-data"))  # the operator's
        env[COUNT_CALLS] = "1"  # the log says each model call: a CPU Space's class steps count them
        steps.run("the Space's build: preload_from_hub (python -m vit.download)", preload, python, app, env)
        preloaded = len(weight_downloads(hub))
        proc = steps.run(f"python app.py as a Space starts it ({started})", start_app, python, app, env, log)
        stack.callback(stop, proc)
        built = len(weight_downloads(hub))  # and what the app fetched at its start, before any visitor
        steps.run("what the build did not preload, the app fetched at its start", fetched_at_start, hub, preloaded)
        if gpu is not None:
            steps.run("the app reported to ZeroGPU at start", reported_at_start, gpu)
        from gradio_client import Client, handle_file

        url = f"http://127.0.0.1:{env['GRADIO_SERVER_PORT']}/"
        client, image = Client(url, verbose=False), handle_file(str(IMAGE))
        values = steps.run("the page's /config", page_values, url)
        visit_every_tab(steps, client, image, values, gpu is not None)
        steps.run("no visitor waited for a download", no_downloads_after_the_build, hub, built)
        steps.run(
            f"a model not preloaded ({NOT_PRELOADED})", downloads_once, client, hub, pretrained_key(NOT_PRELOADED)
        )
        calls = ForwardPasses(log) if gpu is None else GpuCalls(gpu)
        class_steps(steps, url, work, calls, gpu is not None)
        workers_failed = 0 if gpu is None else without_a_gpu(steps, client, image, values, gpu, work)
        steps.run("the app's log", no_traceback, log, workers_failed)


def visit_every_tab(steps: Steps, client: Any, image: Any, values: dict[str, Any], zerogpu: bool) -> None:
    """What a visitor does on each tab, on the models the page opens on. On ZeroGPU here every
    GPU worker fails (no GPU): the small models answer on the CPU, lesson 2's ViT-L/14 pair and
    lesson 4's CLIP B/16, too large for it, and the relevance map (no CPU fallback) in plain words."""
    steps.run("every tab opens on the Space's models", opening_models, values)
    steps.run(f"Explore with {SPACE_MODEL}", explore, client, pretrained_key(SPACE_MODEL))
    steps.run("Explore's PCA, logit lens and relevance", more_views, client, zerogpu)
    steps.run(f"Explore with DINO ViT-S/16 ({DINO})", explore, client, pretrained_key(DINO))
    steps.run("Lesson 1, supervised vs self-supervised", lesson_compare, client, image, values[LESSON_1])
    heads, words = values["Model (with classes)"], values["Model (CLIP)"]
    steps.run("Explore with CLIP B/16 and words", explore_words, client, words, zerogpu)
    if zerogpu:  # lesson 2's ViT-L/14 pair and CLIP B/16 (86 M parameters) are too large for the CPU
        said = GPU_FAILED
        norms = partial(lesson_norms, client, image, values)
        steps.run("Lesson 2, its ViT-L/14 worker failed (no GPU here)", refused_in_plain_words, norms, said)
        steps.run("Lesson 3, which heads matter", lesson_heads, client, image, heads)
        clip = partial(lesson_words, client, image, words)
        steps.run("Lesson 4, its CLIP worker failed (no GPU here)", refused_in_plain_words, clip, said)
    else:
        steps.run("Lesson 2, artefacts and registers", lesson_norms, client, image, values)
        steps.run("Lesson 3, which heads matter", lesson_heads, client, image, heads)
        steps.run("Lesson 4, one picture, many words", lesson_words, client, image, words)


STUDENTS = 3  # a class's pages on the Space: enough to tell "once for the class" from "once a page"
TEACHER = "teacher"  # on ZeroGPU the teacher is logged in: the user of the X-IP-Token the teacher's page sends
TEACHERS_QUOTA = f"{TEACHER}'s quota"  # how GpuCalls names a call charged to the teacher


class ModelCalls:
    """What the class steps count, from a mark on: `since(mark)` names each call (whose quota it is
    charged to, or its task). `unit`: what one is called, and its plural."""

    unit: tuple[str, str]

    def mark(self) -> int:
        raise NotImplementedError

    def since(self, mark: int) -> list[str]:
        raise NotImplementedError


class GpuCalls(ModelCalls):
    """On ZeroGPU: the GPU calls (/schedule) the platform's stand-in was asked for, each named by
    whose quota it is charged to (its X-IP-Token's user, or the Space's own IP-based quota)."""

    unit = ("GPU call", "GPU calls")

    def __init__(self, gpu: Any) -> None:
        self.gpu = gpu

    def mark(self) -> int:
        return len(self.gpu.requests)

    def since(self, mark: int) -> list[str]:
        from zerogpu_standin import charged_visitor  # on sys.path with the stand-in (zerogpu_serving)

        charged = [charged_visitor(p.get("token")) for path, p in self.gpu.requests[mark:] if path == "/schedule"]
        return [f"{who}'s quota" if who else "the Space's quota" for who in charged]


class ForwardPasses(ModelCalls):
    """On a CPU Space: the model calls the app's log says (`ui.zerogpu.CALL_LINE`, with COUNT_CALLS
    set), each a task of one forward pass (a batched one for the gallery), named by its task."""

    unit = ("forward pass", "forward passes")

    def __init__(self, log: Path) -> None:
        self.log = log

    def _tasks(self) -> list[str]:
        lines = self.log.read_text(errors="replace").splitlines()
        return [line.removeprefix(CALL_LINE) for line in lines if line.startswith(CALL_LINE)]

    def mark(self) -> int:
        return len(self._tasks())

    def since(self, mark: int) -> list[str]:
        return self._tasks()[mark:]


def times(calls: ModelCalls, n: int) -> str:
    """`n` calls in words: "1 GPU call", "0 forward passes"."""
    return f"{n} {calls.unit[n != 1]}"


def counted(calls: ModelCalls, before: int, wanted: int | None, what: str, whose: str | None = None) -> str:
    """The calls since `before`, which must be `wanted` (any, for None) for `what`, each charged to `whose` (any, for
    None: GpuCalls names each call by whose quota pays it): how many, and whose or which."""
    named = calls.since(before)
    if wanted is not None and len(named) != wanted:
        raise StepFailed(f"{what} made {times(calls, len(named))}, not {wanted}")
    kinds = ", ".join(sorted(set(named)))
    if whose is not None and set(named) - {whose}:
        raise StepFailed(f"{what} was charged to {kinds}, not only to {whose}")
    return times(calls, len(named)) + (f" ({kinds})" if kinds else "")


class Lesson:
    """A class on the Space, led over HTTP as the pages lead one (bench.class_mode's Room, the
    teacher's page on `model_key`, the Space's model; `teacher_headers` what else the teacher's
    browser sends); one event loop run for each step, so that the students' event streams stay
    open from one step to the next. `pictures`: the ids of the gallery's pictures once sent."""

    def __init__(
        self,
        url: str,
        folder: Path,
        model_key: str = pretrained_key(SPACE_MODEL),
        teacher_headers: dict[str, str] | None = None,
    ) -> None:
        import httpx

        from bench.class_mode import WAIT_S, Room

        self.loop = asyncio.new_event_loop()
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(WAIT_S, read=None))
        # Room reads only its server's address here (its model calls are counted by a ModelCalls)
        self.room = Room(SimpleNamespace(url=url), self.http, folder, model_key, teacher_headers)
        self.pictures: list[str] = []
        # whose quota each of the teacher's calls must be charged to: on ZeroGPU (the teacher logged in), the teacher's
        self.teachers = TEACHERS_QUOTA if teacher_headers else None

    def run(self, step: Awaitable[Any]) -> Any:
        return self.loop.run_until_complete(step)

    def close(self) -> None:
        self.room.teacher.close()
        self.run(self.http.aclose())
        self.run(self.loop.shutdown_asyncgens())  # the teacher's stream, left at its first state
        self.loop.close()


def class_teacher_leads(lesson: Lesson, calls: ModelCalls) -> str:
    """The teacher starts a class and shows an image the Space has not analysed: one call."""
    room, before = lesson.room, calls.mark()
    lesson.run(room.start())
    lesson.run(room.lead(handle=lesson.run(room.analyse()), query=None))
    cost = counted(calls, before, 1, "the teacher's new image", lesson.teachers)
    return f"class {room.code}; the teacher's new image: {cost}"


def class_students_follow(lesson: Lesson, calls: ModelCalls) -> str:
    """STUDENTS join and read the teacher's analysis; the teacher clicks a layer (each student then
    asks its rows) and a query patch: no call, whatever the class's size."""
    from bench.class_mode import click, rows_at_once

    room, before = lesson.room, calls.mark()
    lesson.run(room.join(STUDENTS))
    seconds, read = lesson.run(rows_at_once(room, room.shape["depth"] - 1))
    push = lesson.run(click(room, 1))
    lesson.run(room.until(lambda: push.last(room.followers) is not None, "the query's push"))
    if missing := [i for i, f in enumerate(room.followers, 1) if not f.fetched or push.reached(f) is None]:
        raise StepFailed(f"students {missing} did not have the teacher's analysis and click")
    cost = counted(calls, before, 0, f"{STUDENTS} students following")
    rows = f"{read / 1e3:.0f} kB of rows each in {seconds:.2f} s"
    return f"{STUDENTS} students read the teacher's analysis, a layer ({rows}) and a query pushed: {cost}"


async def first_state(lesson: Lesson, member: dict[str, str]) -> dict:
    """The class's state as a page of `member` ({"key": the teacher's} or {"token": a student's})
    opens its event stream: the first state it is sent."""
    from bench.class_mode import SCHOOL, sse_events
    from ui.gate import CLASS_ROUTE

    room = lesson.room
    ticket = (await room.post("ticket", {"code": room.code, **member})).json()["ticket"]
    url = f"{room.server.url}{CLASS_ROUTE.lstrip('/')}/events?ticket={ticket}"
    async with lesson.http.stream("GET", url, headers=SCHOOL) as stream:
        buffer = b""
        async for chunk in stream.aiter_raw():
            events, buffer = sse_events(buffer + chunk)
            if state := next((e.data for e in events if e.name == "state"), None):
                return state
    raise StepFailed("a page's stream ended before its first state")


async def gallery_sent(lesson: Lesson, senders: int) -> list[str]:
    """The teacher asks; `senders` students each upload a picture (Gradio's upload route, as the
    page does) and send it; the pictures' ids, as the teacher's page is pushed them."""
    from bench.class_mode import SCHOOL, picture

    room = lesson.room
    await room.post("gallery", {"code": room.code, "key": room.key, "do": "ask", "question": "Where does it look?"})
    for i, follower in enumerate(room.followers[:senders]):
        sent = picture(room.folder, 100 + i).read_bytes()
        files = {"files": ("mine.png", sent, "image/png")}
        uploaded = await lesson.http.post(f"{room.server.url}gradio_api/upload", files=files, headers=SCHOOL)
        path = uploaded.raise_for_status().json()[0]
        await room.post("gallery", {"code": room.code, "token": follower.token, "do": "send", "path": path})
    return [p["id"] for p in (await first_state(lesson, {"key": room.key}))["gallery"]["pictures"]]


def class_gallery(lesson: Lesson, calls: ModelCalls, senders: int = 2) -> str:
    """Two students send a picture; the teacher approves each and shows the gallery: one call,
    the pictures batched (ui.zerogpu.GALLERY); on ZeroGPU the teacher's, whose page sends its
    X-IP-Token with it (ui/js/zeroheaders.js)."""
    room = lesson.room
    lesson.pictures = ids = lesson.run(gallery_sent(lesson, senders))
    if len(ids) != senders:
        raise StepFailed(f"the teacher's page lists {len(ids)} pictures, {senders} sent")
    teacher = {"code": room.code, "key": room.key}
    for picture_id in ids:
        lesson.run(room.post("gallery", teacher | {"do": "approve", "id": picture_id}))
    before = calls.mark()
    lesson.run(room.post("gallery", teacher | {"do": "show", "head": None}, room.teacher_headers))
    cost = counted(calls, before, 1, f"showing {senders} students' pictures", lesson.teachers)
    tiles = lesson.run(room.post("gallery", {"code": room.code, "token": room.followers[-1].token, "do": "tiles"}))
    if len(tiles.json()["tiles"]) != senders:
        raise StepFailed(f"a student sees {len(tiles.json()['tiles'])} tiles, not {senders}")
    return f"{senders} pictures sent and approved, shown to every page: {cost} for the batch"


def class_spotlight(lesson: Lesson, calls: ModelCalls) -> str:
    """The teacher spotlights a gallery picture: it becomes the class's view. Its analysis is one
    call (a picture the Space has not analysed, ui.class_gallery), the teacher's as the gallery's
    is; the students' pages, which read that analysis as they read the teacher's, none."""
    from bench.class_mode import WAIT_S, Push

    room = lesson.room
    if not lesson.pictures:
        raise StepFailed("no gallery picture to spotlight (the gallery's step did not run)")
    before, began = calls.mark(), time.perf_counter()
    asked = {"code": room.code, "key": room.key, "do": "spotlight", "id": lesson.pictures[0]}
    version = lesson.run(room.post("gallery", asked, room.teacher_headers)).json()["version"]
    teacher, after = counted(calls, before, 1, "the spotlit picture's analysis", lesson.teachers), calls.mark()
    push = Push(began, time.perf_counter(), version, image=True)
    if not lesson.run(room.until(lambda: push.last(room.followers) is not None, "the spotlight's push")):
        raise StepFailed(f"not every student read the spotlit picture's analysis within {WAIT_S:.0f} s")
    students = counted(calls, after, 0, f"{STUDENTS} students reading the spotlit picture")
    took = push.last(room.followers) - began
    return f"the teacher's spotlight: {teacher}; {STUDENTS} students had it as their view in {took:.1f} s: {students}"


SHARE_BUTTON = "train-share"  # ui/train.py's "Share this run with the class"


def clicked_event(url: str, elem_id: str) -> int:
    """The fn_index of a click on the page's button `elem_id`, from /config (a private event: no
    gradio_client endpoint, the page's own)."""
    with urllib.request.urlopen(f"{url}config", timeout=30) as r:
        config = json.load(r)
    button = next(c["id"] for c in config["components"] if c.get("props", {}).get("elem_id") == elem_id)
    return next(d["id"] for d in config["dependencies"] if [button, "click"] in [list(t) for t in d["targets"]])


async def teacher_shares(lesson: Lesson) -> str:
    """The teacher's page presses "Share this run with the class" as the page does: Gradio's queue
    (join, then the session's stream to the event's end), the teacher's session (whose run it is),
    with the class as the page's JS reads it from its storage. The toast's words."""
    from bench.class_mode import SCHOOL

    room, url = lesson.room, lesson.room.server.url
    session, member = room.teacher.session_hash, json.dumps({"code": room.code, "key": room.key})
    body = {"data": [member, None], "fn_index": clicked_event(url, SHARE_BUTTON), "session_hash": session}
    (await lesson.http.post(f"{url}gradio_api/queue/join", json=body, headers=SCHOOL)).raise_for_status()
    said, data = [], {"session_hash": session}
    async with lesson.http.stream("GET", f"{url}gradio_api/queue/data", params=data, headers=SCHOOL) as stream:
        async for line in stream.aiter_lines():
            message = json.loads(line.removeprefix("data: ")) if line.startswith("data: ") else {}
            said += [message["log"]] if message.get("msg") == "log" else []
            if message.get("msg") == "process_completed":
                if not message.get("success"):
                    raise StepFailed(f"sharing the run failed: {message.get('output')}")
                return " ".join(said)
    raise StepFailed("the share's event stream ended before the event did")


def teacher_polls(client: Any, seconds: float = 180.0) -> str:
    """The teacher's Train tab polls its run each second, as the page does, until it has finished,
    failed, or its chunk was cut short (ZeroGPU here: its worker finds no GPU): its last words."""
    deadline = time.monotonic() + seconds
    while True:
        said = train_said(client.predict(api_name="/train_status"))
        if any(word in said for word in ("finished", "failed", "cut short")) or time.monotonic() > deadline:
            return said
        time.sleep(1)


async def student_reads_run(lesson: Lesson, token: str) -> tuple[dict, int]:
    """A student's page opens the class's stream and reads the teacher's run from it, then asks
    for each picture it says is drawn: (the run as pushed, the PNGs read). A picture not drawn yet
    must be refused in ui.class_run's words."""
    from ui.class_run import NOTHING_YET

    room = lesson.room
    run = (await first_state(lesson, {"token": token})).get("run")
    if not run:
        raise StepFailed("a student's page was pushed no run of the teacher's")
    read = 0
    for which, count in run["pictures"].items():
        try:
            reply = await room.post("run", {"code": room.code, "token": token, "picture": which})
        except RuntimeError as e:  # plain_post: any answer but 200
            if count or NOTHING_YET not in str(e):
                raise StepFailed(f"a student's page asked the run's {which}: {e}") from e
            continue
        if not reply.body.startswith(b"\x89PNG"):
            raise StepFailed(f"the run's {which} is not a PNG")
        read += 1
    return run, read


def class_trains_together(lesson: Lesson, calls: ModelCalls, trains_here: bool) -> str:
    """Train together: the teacher starts a tiny run on the Train tab (the operator's folder) and
    shares it with the class; the teacher's page polls it (its calls said, not checked: on ZeroGPU
    its chunks'); each student's page reads its state and pictures, which must cost no call.
    `trains_here`: the run trains on this machine (a CPU Space), so the students must get both
    pictures; on ZeroGPU here each chunk's worker fails (no GPU), so the run has drawn nothing
    yet, and a student's ask is told so."""
    room, before = lesson.room, calls.mark()
    train_start(room.teacher)
    shared = lesson.run(teacher_shares(lesson))
    said = teacher_polls(room.teacher)
    teacher, after = counted(calls, before, None, "the teacher's run", lesson.teachers), calls.mark()
    read = [lesson.run(student_reads_run(lesson, f.token)) for f in room.followers]
    students = counted(calls, after, 0, f"{STUDENTS} students reading the teacher's run")
    room.teacher.predict(api_name="/train_stop")  # its run slot free for the Train steps that follow
    run, pictures = read[-1]
    if trains_here and any(n != len(r["pictures"]) for r, n in read):
        raise StepFailed(f"the students read {[n for _, n in read]} of the run's pictures: {shown(said)}")
    words = f"{pictures} of its {len(run['pictures'])} pictures each" if pictures else "no picture yet, in words"
    read_it = f"{STUDENTS} students read its state, {words}: {students}"
    return f"{shared} The teacher's run ({teacher}) {run['state']}; {read_it}"


def class_ends(lesson: Lesson, calls: ModelCalls) -> str:
    """The teacher ends the class: every student's stream is told, no call."""
    before = calls.mark()
    lesson.run(lesson.room.end())
    if (ended := sum(f.ended is not None for f in lesson.room.followers)) != STUDENTS:
        raise StepFailed(f"{ended} of {STUDENTS} students' streams were told the class ended")
    cost = counted(calls, before, 0, "the class's end")
    return f"{STUDENTS} students' streams told; {cost}"


def class_steps(
    steps: Steps, url: str, work: Path, calls: ModelCalls, zerogpu: bool, model_key: str = pretrained_key(SPACE_MODEL)
) -> None:
    """Class mode on the Space (issue 59): the teacher's new image one call, the students' pages
    none, the students' gallery pictures one batched call, a spotlight the picture's one, Train
    together none for the students. On ZeroGPU the teacher is logged in (an X-IP-Token, sent with
    the teacher's Gradio events and with Show the gallery and Spotlight, as the page sends it:
    ui/js/zeroheaders.js): each call the teacher starts must be charged to the teacher's quota.
    The teacher's page is on `model_key` (the Space's model)."""
    folder = work / "class-pictures"
    folder.mkdir(exist_ok=True)
    headers = None
    if zerogpu:
        from zerogpu_standin import visitor_token  # on sys.path with the stand-in (zerogpu_serving)

        headers = {"X-IP-Token": visitor_token(TEACHER)}
    lesson = Lesson(url, folder, model_key, headers)
    one, none = times(calls, 1), times(calls, 0)
    try:
        steps.run(f"Class: the teacher starts one and shows a new image: {one}", class_teacher_leads, lesson, calls)
        steps.run(
            f"Class: {STUDENTS} students follow, a layer and a query: {none}", class_students_follow, lesson, calls
        )
        steps.run(f"Class: two students' pictures shown: {one} for the batch", class_gallery, lesson, calls)
        steps.run(f"Class: the teacher spotlights one: {one}, the students {none}", class_spotlight, lesson, calls)
        together = partial(class_trains_together, lesson, calls, not zerogpu)
        steps.run(f"Class: Train together, the students reading the run: {none}", together)
        steps.run("Class: the teacher ends it", class_ends, lesson, calls)
    finally:
        lesson.close()


def without_a_gpu(steps: Steps, client: Any, image: Any, values: dict[str, Any], gpu: Any, work: Path) -> int:
    """ZeroGPU's steps after the class's (`class_steps`): the GPU calls so far (each worker failed
    here), then a visitor out of GPU time on a small model (the CPU) and on a ViT-L/14 (plain
    words), then the Train tab's runs (start, a chunk cut short, out of GPU time and back, Stop
    while waiting, a busy platform, a call too long, the queue, a visitor who left). Returns the
    GPU workers started (each failed here)."""
    steps.run("every GPU call on this GPU-less machine", workers_failed_and_cpu_answered, gpu)
    small = partial(explore, client, pretrained_key(SPACE_MODEL), "whole")  # not cached: a new forward pass
    steps.run(f"out of GPU time, {SPACE_MODEL} runs on the CPU", out_of_gpu_time, gpu, small)
    large = partial(refused_in_plain_words, partial(lesson_norms, client, image, values))
    steps.run("out of GPU time, lesson 2's ViT-L/14 gets plain words", out_of_gpu_time, gpu, large)
    steps.run("Train: a run starts on the operator's folder", train_start, client)
    steps.run("Train: its chunk's worker failed, the next waits", train_poll, client, "cut short", "in 15 s")
    steps.run("Train: out of GPU time it waits; the quota back, it goes on by itself", train_quota_back, client, gpu)
    steps.run("Train: out of GPU time it waits; Stop ends it at once", train_waits_then_stops, client, gpu)
    steps.run("Train: a busy platform for 2 minutes: the run waits, then goes on", train_busy_platform, client, gpu)
    steps.run("Train: a call too long for the account, in words", train_too_long_for_the_account, client, gpu)
    steps.run("Train: three visitors queue, one leaves, the others start in order", train_queue, client.src, gpu)
    steps.run("Train: a run whose page left frees the slot, then goes on", train_visitor_gone, client.src, gpu)
    return gpu_calls(gpu)["/allow"]


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def tidy(work: Path, kept: str = "app.log") -> None:
    """Delete a temporary work folder's contents but the app's log. A rehearsal leaves about
    11 GB there (the venv with CUDA's torch, the preloaded weights, ZeroGPU's offloaded copy of
    them): kept after each run, five runs filled this machine's disk and the next CI install failed."""
    for entry in work.iterdir():
        if entry.name == kept:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--work",
        help="folder for the venv, the app copy, the cache and the log, kept after the run (default: a temporary "
        "one, emptied when the run ends but for the app's log)",
    )
    p.add_argument(
        "--weights",
        default=str(Path(tempfile.gettempdir()) / "bench-space-weights"),
        help="where the stand-in weights are made once and kept between runs",
    )
    p.add_argument(
        "--reuse-venv", metavar="PYTHON", help="a venv's python from an earlier run with --work (then not fresh)"
    )
    p.add_argument("--zerogpu", action="store_true", help="rehearse a ZeroGPU Space (the device API stood in for)")
    args = p.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-space-"))
    work.mkdir(parents=True, exist_ok=True)
    steps = Steps()
    print(f"{'ZeroGPU ' if args.zerogpu else ''}Space rehearsal in {work}", flush=True)
    try:
        rehearse(steps, work, Path(args.weights), args.reuse_venv, args.zerogpu)
    except StepFailed:
        pass
    finally:
        if args.work is None:
            tidy(work)
            print(f"{work} emptied but for the app's log (pass --work to keep the venv and the caches)", flush=True)
    print(steps.verdict(), flush=True)
    return 0 if steps.done and all(ok for _, ok in steps.done) else 1


if __name__ == "__main__":
    sys.exit(main())
