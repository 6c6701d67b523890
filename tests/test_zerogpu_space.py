"""The app as a ZeroGPU Space runs it, against the device API stand-in (tests/zerogpu_standin.py):
`python app.py` with the platform's environment and the real `spaces` package, which patches
torch, reports at start and asks the stand-in for a GPU per call. This machine has no GPU, so
a GPU call that is granted fails in the worker (no CUDA driver): what a visitor gets then, and
when the quota is used up, is what these tests check. docs/space.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import gradio as gr
import httpx
import pytest
import torch
from app_helpers import analyze
from PIL import Image
from starlette.datastructures import Headers
from training_helpers import write_image_folder
from zerogpu_standin import ANONYMOUS, ZeroGpuStandIn, charged_visitor, serve, visitor_token

from bench.serving import free_port, wait_until_served
from explorer import explain
from explorer.catalog import BUNDLED, BUNDLED_PATH, ModelCatalog
from ui import zerogpu
from ui.class_route import EVENTS_ROUTE
from ui.gate import CLASS_ROUTE

REPO = Path(__file__).resolve().parents[1]
IDLE_S = 5  # --train-idle-s: a run whose page stops polling is set aside after 5 s here, not 2 minutes
RUN = {"model": "vit_cifar_nano", "source": "operator", "folder": "", "epochs": 1, "lr": 1e-3, "batch": 8}
EXAMPLES = REPO / "examples" / "cifar10"


def space_env(gpu: ZeroGpuStandIn, tmp: Path) -> dict[str, str]:
    """The environment of a ZeroGPU Space's `python app.py`, pointed at the stand-in."""
    cgroup = tmp / "cgroup"
    cgroup.write_text("0::/standin/space\n")  # cgroup v2, as /proc/self/cgroup reads
    return {
        **os.environ,
        "SPACES_ZERO_GPU": "true",
        "SPACES_ZERO_DEVICE_API_URL": gpu.url,
        "ZEROGPU_PROC_SELF_CGROUP_PATH": str(cgroup),
        "ZEROGPU_OFFLOAD_DIR": str(tmp / "offload"),
        "HOME": str(tmp / "home"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONUNBUFFERED": "1",
    }


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    """The app started as a ZeroGPU Space on the bundled model: (url, stand-in, log file, log at start)."""
    tmp = tmp_path_factory.mktemp("zerogpu-space")
    with serve() as gpu:
        port, log_path = free_port(), tmp / "app.log"
        cmd = [sys.executable, "app.py", "--model", "bundled", "--port", str(port), "--runs-dir", str(tmp / "runs")]
        cmd += ["--data-folder", str(write_image_folder(tmp / "data", per_class=8, size=16, test_per_class=2))]
        cmd += ["--train-idle-s", str(IDLE_S)]
        with log_path.open("w") as log:
            proc = subprocess.Popen(cmd, cwd=REPO, env=space_env(gpu, tmp), stdout=log, stderr=subprocess.STDOUT)
            url = f"http://127.0.0.1:{port}/"
            try:
                wait_until_served(url, proc)
                yield url, gpu, log_path, log_path.read_text()
            finally:
                proc.terminate()
                proc.wait(timeout=30)


@pytest.fixture(scope="module")
def on_cpu(tmp_path_factory):
    """The bundled model's class probabilities for an example image, computed here on the CPU."""
    loaded = ModelCatalog(BUNDLED_PATH, tmp_path_factory.mktemp("runs")).get(BUNDLED)

    def probabilities(name: str, mode: str) -> dict[str, float]:
        image = Image.open(EXAMPLES / name).convert("RGB")
        ex = explain.explain(loaded.model, loaded.meta.class_names, loaded.preprocessing, image, mode)
        return ex.probabilities

    return probabilities


def served_probabilities(client, name: str, mode: str) -> dict[str, float]:
    label = analyze(client, EXAMPLES / name, mode=mode)[2]
    return {c["label"]: c["confidence"] for c in label["confidences"]}


def assert_close(served: dict[str, float], expected: dict[str, float]) -> None:
    assert list(served) == list(expected)[: len(served)]
    assert served == pytest.approx({k: expected[k] for k in served}, abs=1e-5)


def test_a_zerogpu_space_starts_reports_to_the_platform_and_serves(space):
    url, gpu, _, at_start = space
    assert gpu.paths()[:1] == ["/startup-report"]  # at launch, before any visitor
    assert "Traceback" not in at_start and "CUDA" not in at_start, at_start
    assert "built in" in at_start
    # the models it opens on went to the (emulated) GPU in the main thread, and ZeroGPU packed them
    assert "on the GPU from the start: bundled" in at_start and "ZeroGPU tensors packing" in at_start, at_start


def test_a_visitor_without_gpu_time_gets_the_cpus_result(space, on_cpu):
    from gradio_client import Client

    url, gpu, _, _ = space
    gpu.exceeded = True
    try:
        before = len(gpu.requests)
        served = served_probabilities(Client(url, verbose=False), "cat.jpg", "crop")
    finally:
        gpu.exceeded = False
    assert [path for path, _ in gpu.requests[before:]] == ["/schedule"]  # refused: no worker was started
    assert_close(served, on_cpu("cat.jpg", "crop"))


def test_a_gpu_worker_that_fails_still_gives_the_visitor_the_cpus_result(space, on_cpu):
    """Granted a GPU, the worker finds no CUDA driver on this machine: the platform says "ZeroGPU
    worker error" and the visitor gets the CPU's result, not that."""
    from gradio_client import Client

    url, gpu, log_path, _ = space
    before = len(gpu.requests)
    client = Client(url, verbose=False, headers={"X-IP-Token": visitor_token("ada")})
    served = served_probabilities(client, "dog.jpg", "whole")
    asked = gpu.requests[before:]
    assert [path for path, _ in asked] == ["/schedule", "/allow", "/release"]
    schedule, allow, release = (params for _, params in asked)
    assert schedule["cgroupPath"] == "/standin/space" and schedule["token"] == visitor_token("ada")
    assert gpu.used["ada"] == int(schedule["durationSeconds"]) >= 3  # charged to the visitor, by their token
    assert allow["allowToken"] == release["allowToken"] and release["fail"] == "true"
    assert_close(served, on_cpu("dog.jpg", "whole"))
    assert "Found no NVIDIA driver" in log_path.read_text()  # the worker's failure, in the log only


# -- the real package's refusals, in this process, read by ui/zerogpu.py --


@pytest.fixture
def real_package(monkeypatch, tmp_path):
    """GpuTask built with the real `spaces` wrapper, talking to a stand-in that never grants a
    GPU (2 s of quota: every call asks for more), for a model too large for the CPU."""
    from spaces.config import Config
    from spaces.zero import utils, wrappers

    with serve(quota_s=2) as gpu:
        cgroup = tmp_path / "cgroup"
        cgroup.write_text("0::/standin/space\n")
        monkeypatch.setattr(Config, "zero_device_api_url", gpu.url)
        monkeypatch.setattr(Config, "zerogpu_proc_self_cgroup_path", str(cgroup))
        utils.self_cgroup_device_path.cache_clear()
        monkeypatch.setattr(zerogpu, "ON_ZEROGPU", True)
        monkeypatch.setattr(zerogpu, "CPU_FALLBACK_PARAMS", 0)
        decorate = partial(wrappers.regular_function_wrapper, gpu_size=None)  # spaces.GPU's wrapper, always on
        monkeypatch.setattr(zerogpu, "gpu_decorator", decorate)
        yield gpu, zerogpu.GpuTask(explain.forward_maps, explain.forward_cost, "This analysis")
        utils.self_cgroup_device_path.cache_clear()


def _as_visitor(token: str | None):
    """The Gradio request the package reads the visitor's token from."""
    from gradio.context import LocalContext

    headers = Headers({"x-ip-token": token} if token else {})
    return LocalContext.request.set(gr.Request(headers=headers))


@pytest.mark.parametrize(
    ("token", "auth", "words"),
    [
        (
            "ada",
            "regular",
            "has 2 s left. Try again in 1:00:00, or subscribe to Hugging Face PRO for 40 minutes a day.",
        ),
        ("ada", "pro", "your daily GPU time has 2 s left. Try again in 1:00:00."),
        ("ada", None, "has 2 s left. Try again in 1:00:00, or log in to Hugging Face: a free account gets 5 minutes"),
        (None, None, "this Space has used its GPU time for now: log in to Hugging Face to use your own daily GPU time"),
        (None, "busy", "needs a GPU and every GPU of this Space is busy right now: try again in a minute."),
        # an 8 s call: advice about the model would not help (issue 60), a longer-call account would
        ("ada", "too-long", "s of GPU time in one call, more than ZeroGPU allows your account: Hugging Face PRO"),
    ],
    ids=["logged-in", "pro", "not-logged-in", "space-quota-used", "no-gpu-free", "longer-than-allowed"],
)
def test_a_model_too_large_for_the_cpu_gets_the_platforms_refusal_in_plain_words(
    real_package, tmp_path, token, auth, words
):
    """The real package's refusal for each kind of visitor and each reason (the stand-in's 429s
    and 503), worded by GpuShortage: the seconds asked and left, and what this visitor can do."""
    from gradio.context import LocalContext

    gpu, task = real_package
    gpu.busy, gpu.auth = auth == "busy", auth
    if auth == "too-long":
        gpu.quota_s, gpu.max_duration_s, gpu.auth = 10**6, 1, "regular"
    catalog = ModelCatalog(BUNDLED_PATH, tmp_path)  # kept: the worker names the model by its catalogue
    loaded = catalog.get(BUNDLED)
    tensor = torch.zeros(1, 3, 32, 32)
    seconds = task.seconds(loaded, tensor)
    reset = _as_visitor(token and visitor_token(token))
    try:
        with pytest.raises(gr.Error) as raised:
            task(loaded, tensor)
    finally:
        LocalContext.request.reset(reset)
    assert raised.value.title == "No GPU time left"
    assert raised.value.print_exception is False  # the platform's answer: a log line, not a traceback
    assert words in raised.value.message
    if auth == "too-long":
        assert raised.value.message.startswith(f"This analysis asks for {seconds} s of GPU time in one call")
        assert "smaller model" not in raised.value.message
    elif auth != "busy":
        assert raised.value.message.startswith("This analysis needs ")
        assert f"needs about {seconds} s of GPU time" in raised.value.message
    assert "try again in a minute" not in raised.value.message or auth == "busy"  # a retry would not help
    assert gpu.paths() == ["/schedule"]  # refused before any worker


def said(outputs) -> str:
    return " ".join(o for o in outputs if isinstance(o, str))


def test_a_train_run_out_of_gpu_time_waits_and_stops_without_asking_the_platform(space):
    """The Train tab against the real package (issue 44, item 2): out of GPU time the run waits,
    saved; Stop then ends it at once, asking the platform for nothing (it had been refused, then
    cost one more chunk); a run whose worker fails says why in words (the tab said "cut short ()")."""
    from gradio_client import Client

    url, gpu, _, _ = space
    client = Client(url, verbose=False)
    assert "started" in said(client.predict(**RUN, api_name="/train_start"))
    gpu.exceeded = True
    try:
        assert ">waiting</b>" in said(client.predict(api_name="/train_status"))
        before = len(gpu.requests)
        client.predict(api_name="/train_stop")
        assert "stopped before its first chunk trained a step" in said(client.predict(api_name="/train_status"))
    finally:
        gpu.exceeded = False
    assert gpu.requests[before:] == []
    assert "started" in said(client.predict(**RUN, api_name="/train_start"))
    shown = said(client.predict(api_name="/train_status"))  # granted, and the worker finds no GPU here
    assert "the last chunk was cut short (the GPU could not run it this time)" in shown.replace("\\", ""), shown
    client.predict(api_name="/train_stop")


def test_a_train_run_whose_page_left_frees_the_slot_and_goes_on_when_its_visitor_is_back(space):
    """A visitor who started a run and left held the one run slot for as long as the Space ran
    (issue 44, item 1): against the real package, with the server's idle limit at IDLE_S."""
    from gradio_client import Client

    url, gpu, _, _ = space
    visitor, other = Client(url, verbose=False), Client(url, verbose=False)
    assert "started" in said(visitor.predict(**RUN, api_name="/train_start"))  # then its page is gone
    queued = said(other.predict(**RUN, api_name="/train_start"))  # the slot is taken: the other queues
    assert queued.startswith("queued") and "place 1 in the queue for a run slot" in queued
    time.sleep(IDLE_S + 1)
    assert ">running</b>" in said(other.predict(api_name="/train_status"))  # the slot was freed: its turn
    other.predict(api_name="/train_stop")
    before = len(gpu.requests)
    back = said(visitor.predict(api_name="/train_status"))  # the visitor's page again: its run goes on
    assert "/schedule" in [path for path, _ in gpu.requests[before:]] and "set aside" not in back, back
    visitor.predict(api_name="/train_stop")


# -- class mode: the gallery's GPU calls, made in the app's own route, charged to the teacher --


def _class_state(http: httpx.Client, member: dict) -> dict:
    """The class's state as a page of `member` is first pushed it on its event stream."""
    ticket = http.post(f"{CLASS_ROUTE}/ticket", json=member).raise_for_status().json()["ticket"]
    with http.stream("GET", EVENTS_ROUTE, params={"ticket": ticket}) as events:
        return json.loads(next(line for line in events.iter_lines() if line.startswith("data: "))[len("data: ") :])


def test_the_class_gallerys_gpu_calls_are_charged_to_the_teacher_who_sent_the_token(space):
    """Issue 59: Show the gallery and Spotlight run in the class's route, outside any Gradio event, and
    went out with no visitor's token (the Space's quota). The teacher's page now sends the X-IP-Token
    huggingface.co lends it (ui/js/zeroheaders.js): each such call is charged to the teacher; without the
    header it goes out as before; a student's request, header or not, starts none."""
    url, gpu, _, _ = space
    lent, students = {"X-IP-Token": visitor_token("teacher")}, {"X-IP-Token": visitor_token("student")}
    with httpx.Client(base_url=url, timeout=120) as http:

        def gallery(member: dict, headers: dict | None = None, **asked) -> httpx.Response:
            return http.post(f"{CLASS_ROUTE}/gallery", json=member | asked, headers=headers)

        def charged(reply: httpx.Response, mark: int) -> list[str]:
            assert reply.status_code == 200, reply.text
            return [charged_visitor(p.get("token")) for path, p in gpu.requests[mark:] if path == "/schedule"]

        started = http.post(f"{CLASS_ROUTE}/start", json={"address": url}).raise_for_status().json()
        teacher = {"code": started["code"], "key": started["key"]}
        token = http.post(f"{CLASS_ROUTE}/join", json={"code": started["code"]}).raise_for_status().json()["token"]
        student = {"code": started["code"], "token": token}
        gallery(teacher, do="ask", question="Where does the model look?").raise_for_status()
        with (EXAMPLES / "cat.jpg").open("rb") as f:
            path = http.post("gradio_api/upload", files={"files": ("cat.jpg", f, "image/jpeg")}).json()[0]
        mark = len(gpu.requests)
        gallery(student, students, do="send", path=path).raise_for_status()
        (picture,) = _class_state(http, teacher)["gallery"]["pictures"]
        gallery(teacher, do="approve", id=picture["id"]).raise_for_status()
        forged = gallery(student, students, do="show", head=None)  # a student cannot show, nor be charged
        assert forged.status_code == 403 and gpu.requests[mark:] == []
        used = gpu.used.get("teacher", 0)

        mark = len(gpu.requests)
        assert charged(gallery(teacher, lent, do="show", head=None), mark) == ["teacher"]
        assert gpu.used["teacher"] > used  # the teacher's quota paid it
        mark = len(gpu.requests)
        assert charged(gallery(teacher, do="show", head=None), mark) == [ANONYMOUS]  # no header: as before
        mark = len(gpu.requests)
        assert charged(gallery(teacher, lent, do="spotlight", id=picture["id"]), mark) == ["teacher"]
        http.post(f"{CLASS_ROUTE}/command", json=teacher | {"command": "end"}).raise_for_status()
