"""The Train tab through its API: a real (tiny) training run in the live app's background job."""

import re
import time
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest
import torch
from app_helpers import analyze
from conftest import flip_byte
from gradio_client import Client
from gradio_client.exceptions import AppError
from picture_helpers import curve_series
from PIL import Image
from training_helpers import shown_text, write_image_folder

import vit
from explorer.catalog import ModelCatalog
from training.budget import gb, image_set_bytes, run_config, training_cost
from training.job import JobSnapshot
from training.registry import VISITOR_GONE_S, JobRegistry, TrainLimits, visitor_id
from ui import train_handlers as h
from ui.common import Server
from ui.outputs import upload_folder
from ui.settings import SPACE_MODEL, ServerSettings

CLASSES = ("cat", "dog")


NAMES = ("status", "progress", "curves", "probe", "checkpoint", "model")


def running(progress: str) -> bool:
    """Whether the progress bar's state word says the run is going."""
    return ">running</b>" in progress


def wait_for_job(client, timeout_s: float = 150) -> dict:
    """Poll /train_status until the job stops running. Returns what this visitor's page
    shows then: every output of the last poll, and the newest curves, probe and model list
    among all polls (a poll sends a picture only when it changed), each picture's alt text as
    "<name>_alt"."""
    shown: dict = {}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = dict(zip(NAMES, client.predict(api_name="/train_status"), strict=True))
        # A picture arrives as an update with its file and alt text; a skipped output (an unchanged
        # picture or list) as None or an update without a value.
        pictures = {k: status[k]["value"] for k in ("curves", "probe") if (status[k] or {}).get("value")}
        pictures |= {f"{k}_alt": status[k]["alt_text"] for k in ("curves", "probe") if k in pictures}
        listed = (
            {"model": status["model"]} if isinstance(status["model"], dict) and "choices" in status["model"] else {}
        )
        shown |= pictures | listed
        shown |= {k: status[k] for k in ("status", "progress", "checkpoint")}
        if not running(status["progress"]):
            return shown
        time.sleep(0.5)
    raise TimeoutError("training did not finish")


def test_train_watch_and_explore_the_checkpoint(client, tmp_path):
    data = write_image_folder(tmp_path / "data", per_class=8, size=16, classes=CLASSES, test_per_class=2)
    started = client.predict("vit_cifar_nano", "folder", str(data), 2, 1e-3, 8, api_name="/train_start")[0]
    assert "started" in started and "device" in started and str(tmp_path) not in started

    shown = wait_for_job(client)
    assert "cpu" in shown["status"].lower() and "error" not in shown["status"].lower()
    assert "finished" in shown["progress"]
    assert re.fullmatch(r"Training loss and accuracy: 2 epochs done, [1-9]\d* loss readings", shown["curves_alt"])
    loss, accuracy = curve_series(Image.open(shown["curves"]))
    assert loss == {"train", "val", "steps"} and accuracy == {"train", "val"}  # each series in its panel
    assert Image.open(shown["probe"]).height > 2 * 64  # initial + two epochs, one row each
    # The run's checkpoint joined this visitor's model list without a reload.
    assert any(key.startswith("checkpoint:") for _, key in shown["model"]["choices"])
    model, meta = vit.load_checkpoint(shown["checkpoint"])
    assert meta.class_names == list(CLASSES)

    picker = client.predict(api_name="/train_open_in_explore")
    key = picker["value"]
    assert key.startswith("checkpoint:") and key in [value for _, value in picker["choices"]]
    client.predict(key, api_name="/load_model")
    label = analyze(client, red_square(tmp_path), model=key)[2]
    assert {c["label"] for c in label["confidences"]} == set(CLASSES)


def test_an_empty_warm_up_box_means_the_default_and_0_means_none():
    assert h.warmup_epochs("", 200) is None and h.warmup_epochs(None, 200) is None
    assert h.warmup_epochs(" 0 ", 200) == 0.0 and h.warmup_epochs(0.5, 200) == 0.5
    for bad in ("ten", "nan", "-1", "201"):
        with pytest.raises(gr.Error, match="warm-up epochs must be a number from 0.0 to 200.0"):
            h.warmup_epochs(bad, 200)


def test_stop_ends_the_run_early_and_keeps_a_checkpoint(client, tmp_path):
    data = write_image_folder(tmp_path / "data", per_class=8, size=16, classes=CLASSES, test_per_class=2)
    with pytest.raises(AppError, match=re.escape("warmup_epochs (3) must be shorter than the run (3 epochs)")):
        client.predict("vit_cifar_nano", "folder", str(data), 3, 1e-3, 4, 3, api_name="/train_start")
    client.predict("vit_cifar_nano", "folder", str(data), 200, 1e-3, 4, api_name="/train_start")
    # A run of 200 epochs is surely still going (a 2-epoch one may end before a loaded server
    # answers the next request): a second start is refused.
    with pytest.raises(AppError, match="your training run is still going: stop it first"):
        client.predict("vit_cifar_nano", "folder", str(data), 2, 1e-3, 8, api_name="/train_start")
    assert "stopping" in client.predict(api_name="/train_stop")
    shown = wait_for_job(client)
    assert "stopped" in shown["progress"] and "error" not in shown["status"].lower()
    assert "width:100.0%" not in shown["progress"]  # the bar stops where the run did, early in epoch 1
    assert vit.load_checkpoint(shown["checkpoint"])[1].class_names == list(CLASSES)


def test_bad_training_arguments_are_reported_before_any_work(client, tmp_path):
    with pytest.raises(AppError, match="folder"):
        client.predict("vit_cifar_nano", "folder", "", 1, 1e-3, 8, api_name="/train_start")
    with pytest.raises(AppError, match="missing") as info:
        client.predict("vit_cifar_nano", "folder", str(tmp_path / "missing"), 1, 1e-3, 8, api_name="/train_start")
    assert str(tmp_path) not in str(info.value)  # no server path in any message
    for epochs, lr, batch, message in (
        (10_000_000, 1e-3, 8, "epochs must be a whole number from 1 to 200, got 10000000"),
        (1e300, 1e-3, 8, "epochs must be a whole number from 1 to 200"),
        (0, 1e-3, 8, "epochs must be a whole number from 1 to 200, got 0"),
        (1, 5.0, 8, "learning rate must be a number above 0 and at most 1, got 5.0"),
        (1, 1e-3, 50_000, "batch size must be a whole number from 1 to 1024, got 50000"),
    ):
        with pytest.raises(AppError, match=message):
            client.predict("vit_cifar_nano", "cifar10", "", epochs, lr, batch, api_name="/train_start")
    with pytest.raises(AppError, match="learning rate must be a number above 0"):  # one rule: training.checks
        client.predict("vit_cifar_nano", "cifar10", "", 1, 0, 8, api_name="/train_start")

    checks = [
        (("ftp", "x", 1, 1e-3, 8), "unknown data source 'ftp'; choose one of 'folder', 'cifar10'"),
        (("folder", "x", 1, -1.0, 8), "learning rate must be a number above 0 and at most 1, got -1.0"),
        (("folder", "x", 1, 1e-3, 2.5), "batch size must be a whole number from 1 to 1024, got 2.5"),
    ]
    for args, message in checks:
        with pytest.raises(AppError, match=re.escape(message)):
            client.predict("vit_cifar_nano", *args, api_name="/train_start")


def test_visitors_see_stop_and_download_only_their_own_run(client, tmp_path):
    data = write_image_folder(tmp_path / "data", per_class=8, size=16, classes=CLASSES, test_per_class=2)
    client.predict("vit_cifar_nano", "folder", str(data), 200, 1e-3, 4, api_name="/train_start")
    other = Client(client.src, verbose=False)
    status, progress, _, _, checkpoint, _ = other.predict(api_name="/train_status")
    assert not running(progress) and checkpoint is None and "device" not in status  # B sees nothing of A's run
    assert "you have no run to stop" in other.predict(api_name="/train_stop")
    # the server-wide limit: B queues for the slot, told the place and the wait
    queued = other.predict("vit_cifar_nano", "folder", str(data), 1, 1e-3, 4, api_name="/train_start")
    assert queued[0].startswith("queued") and "place 1 in the queue for a run slot, estimated wait" in queued[1]
    assert other.predict(api_name="/train_stop") == "stopped"  # B leaves the queue, at once
    with pytest.raises(AppError, match="No checkpoint yet"):
        other.predict(api_name="/train_open_in_explore")
    assert running(client.predict(api_name="/train_status")[1])  # A's run went on
    assert "stopping" in client.predict(api_name="/train_stop")
    wait_for_job(client)


def red_square(tmp_path):
    path = tmp_path / "probe.png"
    Image.new("RGB", (32, 32), (200, 30, 30)).save(path)
    return path


class OneRun:
    """A stand-in for the registry: every visitor's run has ended with `checkpoint`."""

    def __init__(self, checkpoint: Path) -> None:
        self.snap = JobSnapshot(epoch=1, epochs=1, checkpoint=str(checkpoint), message="finished 1 epochs")

    def advance(self, _visitor: str) -> None:
        """An ended run trains no more."""

    def page_seen(self, _page: str, _visitor: str) -> None:
        """No queue here."""

    def snapshot(self, _visitor: str) -> JobSnapshot:
        return self.snap

    def checkpoint(self, _visitor: str) -> Path | None:
        path = Path(self.snap.checkpoint or "")
        return path if self.snap.checkpoint and path.is_file() else None


def test_a_run_checkpoint_that_fails_its_checks_is_said_not_hidden(tiny_checkpoint, tmp_path):
    catalog = ModelCatalog(tiny_checkpoint, tmp_path / "runs")
    request = SimpleNamespace(session_hash="visitor")
    damaged = tmp_path / "model.safetensors"
    damaged.write_bytes(tiny_checkpoint.read_bytes())
    flip_byte(damaged)
    out = h.train_status(Server(catalog, runs=OneRun(damaged)), h.NOTHING_SHOWN, request)
    assert "not added to your models" in out["status"] and "is corrupt" in out["status"]
    assert str(tmp_path) not in out["status"]  # the file by its name only
    missing = h.train_status(Server(catalog, runs=OneRun(tmp_path / "none.safetensors")), h.NOTHING_SHOWN, request)
    assert "not added" not in missing["status"]  # stopped before its first checkpoint: nothing to say
    listed = h.train_status(Server(catalog, runs=OneRun(tiny_checkpoint)), h.NOTHING_SHOWN, request)
    assert "not added" not in listed["status"]
    assert [key for _, key in listed["model"].choices if key.startswith("checkpoint:")] != []


def test_the_checkpoint_is_offered_for_download_once_the_run_has_ended(tiny_checkpoint, tmp_path):
    """A running run's model file is renamed when the run ends: a poll that handed Gradio its old
    name at that moment failed, the file gone before Gradio read it."""
    catalog = ModelCatalog(tiny_checkpoint, tmp_path / "runs")
    request = SimpleNamespace(session_hash="visitor")
    runs = OneRun(tiny_checkpoint)
    runs.snap = JobSnapshot(running=True, epoch=1, epochs=2, steps_per_epoch=2, checkpoint=str(tiny_checkpoint))
    assert h.train_status(Server(catalog, runs=runs), h.NOTHING_SHOWN, request)["checkpoint"] is None
    runs.snap = JobSnapshot(epoch=2, epochs=2, steps_per_epoch=2, checkpoint=str(tiny_checkpoint), message="finished")
    offered = Path(h.train_status(Server(catalog, runs=runs), h.NOTHING_SHOWN, request)["checkpoint"])
    assert offered.read_bytes() == tiny_checkpoint.read_bytes()  # a copy in Gradio's folder, counted (test_ui_outputs)
    assert offered.is_relative_to(upload_folder()) and offered.name == tiny_checkpoint.name


def test_stop_asks_to_confirm_only_when_there_is_a_run_to_stop(tiny_checkpoint, tmp_path):
    """Stop asked "Yes, stop my run / No, keep training" under an idle status, and only after "Yes"
    said there was no run (a teacher's walk). A run training or waiting for GPU time is asked about."""
    catalog = ModelCatalog(tiny_checkpoint, tmp_path / "runs")
    request = SimpleNamespace(session_hash="visitor")
    runs = OneRun(tiny_checkpoint)  # ended
    idle = h.ask_to_stop(Server(catalog, runs=runs), request)
    assert idle["status"] == "you have no run to stop" and idle["confirm"].visible is False
    for snap in (JobSnapshot(running=True), JobSnapshot(paused=True)):
        runs.snap = snap
        asked = h.ask_to_stop(Server(catalog, runs=runs), request)
        assert "status" not in asked and asked["confirm"].visible is True


def test_a_run_that_ends_between_a_poll_and_the_timer_is_still_shown_ending(tiny_checkpoint, tmp_path):
    # The Train-tab browser test once stood 150 s at "running · epoch 2 of 2, step 0 of 2" under
    # load: a poll showed the run running, the run ended, and the timer's on/off step (a
    # separate event, later in the queue) read the job again and switched polling off, leaving
    # "running" on the page. The timer now follows what the last poll showed.
    catalog = ModelCatalog(tiny_checkpoint, tmp_path / "runs")
    request = SimpleNamespace(session_hash="visitor")
    runs = OneRun(tiny_checkpoint)
    runs.snap = JobSnapshot(running=True, device="cpu", epoch=1, epochs=2, steps_per_epoch=2)
    assert h.keep_polling(h.NOTHING_SHOWN)["timer"].active  # a run just started: poll
    shown = h.train_status(Server(catalog, runs=runs), h.NOTHING_SHOWN, request)
    assert "epoch 2 of 2, step 0 of 2" in shown["progress"]
    runs.snap = JobSnapshot(epoch=2, epochs=2, steps_per_epoch=2, checkpoint=str(tiny_checkpoint), message="finished")
    assert h.keep_polling(shown["seen"])["timer"].active  # the page still says "running": poll again
    last = h.train_status(Server(catalog, runs=runs), shown["seen"], request)
    assert ">finished</b>" in last["progress"]
    assert not h.keep_polling(last["seen"])["timer"].active  # the end is on the page: stop


def test_a_poll_whose_picture_fails_still_shows_the_run_ended(tiny_checkpoint, tmp_path, monkeypatch):
    # A 200-epoch run's probe passed WebP's size limit: every poll raised, and the page stood at
    # "running · epoch 191 of 200" with the timer polling after the run had finished and saved.
    catalog = ModelCatalog(tiny_checkpoint, tmp_path / "runs")
    runs = OneRun(tiny_checkpoint)
    runs.snap.probe_image, runs.snap.probe = torch.rand(3, 8, 8), [(0, torch.rand(1, 2, 2, 2))]

    def too_big(*_args) -> Image.Image:
        raise ValueError("Image size exceeds WebP limit")

    monkeypatch.setattr(h.run_views, "probe", too_big)
    shown = h.train_status(Server(catalog, runs=runs), h.NOTHING_SHOWN, SimpleNamespace(session_hash="visitor"))
    assert ">finished</b> · finished 1 epochs" in shown["progress"] and "status" in shown
    assert isinstance(shown["probe"], type(gr.skip()))  # no picture this time, and no error
    assert not h.keep_polling(shown["seen"])["timer"].active  # the end is on the page: the timer stops


def test_the_status_is_said_once_and_steps_are_not_guessed_before_the_first():
    loading = JobSnapshot(running=True, device="cpu", epochs=5, message="loading data and model")
    assert h.progress_text(loading)[2] == "epoch 1 of 5, preparing…"  # not "step 0 of 1"
    going = JobSnapshot(running=True, device="cpu", epochs=5, steps_per_epoch=352, step=8, message="training on 9")
    assert h.progress_text(going)[2] == "epoch 1 of 5, step 8 of 352" and "training on 9" in h.describe(going)
    stopped = JobSnapshot(epoch=1, epochs=5, steps_per_epoch=352, checkpoint="m.safetensors", message="stopped early")
    shown = h.describe(stopped) + h.progress_html(*h.progress_text(stopped), h.run_state(stopped))
    assert shown.count("stopped early") == 1


def test_an_ended_run_says_its_device_and_last_epoch_once_and_a_failure_in_words():
    """The device note was said twice (the device, then "Only a CPU ...") and the
    last epoch's numbers twice (the status, then the bar); a failed bar ended in "failed ·"."""
    cpu = "cpu (no GPU found: training runs on the CPU and will be slow)"
    epoch = {"epoch": 2, "train_loss": 0.5, "val_acc": 0.75}
    going = JobSnapshot(running=True, device=cpu, epochs=5, steps_per_epoch=4, history=[epoch], message="training")
    assert h.describe(going).count("slow") == 1 and "epoch 2: train loss 0.500" in h.describe(going)
    done = JobSnapshot(device=cpu, epoch=2, epochs=2, history=[epoch], checkpoint="m.safetensors", message="finished 2")
    shown = h.describe(done) + h.progress_html(*h.progress_text(done), h.run_state(done))
    assert shown.count("slow") == 1 and "epoch 2: train loss" not in shown  # the bar says how it ended
    failed = JobSnapshot(device=cpu, epochs=2, error="CIFAR-10 cannot be downloaded here", message="training failed")
    bar = h.progress_html(*h.progress_text(failed), h.run_state(failed))
    assert bar.endswith(">failed</b></div>")
    assert "CIFAR-10 cannot be downloaded here" in shown_text(h.describe(failed))


def test_the_default_data_source_is_one_that_works_offline(tmp_path, monkeypatch):
    from training.data import default_cache_dir
    from ui.settings import ServerSettings
    from ui.train_handlers import data_choices, data_note

    local = ServerSettings()
    assert data_choices(local)[0][1] == "folder" and data_choices(local)[-1][0] == "CIFAR-10 (downloads once)"
    assert "First step" in data_note(local) and "cifar10-jpeg" not in data_note(local)  # no archive a teacher lacks
    # offline: CIFAR-10 is said impossible here, on the list and in the note
    assert data_choices(local, offline=True)[-1] == ("CIFAR-10 (cannot be downloaded here: no internet)", "cifar10")
    assert "CIFAR-10 cannot be downloaded here (no internet)" in data_note(local, offline=True)
    assert data_choices(ServerSettings(data_folder=tmp_path))[0][1] == "operator"
    (default_cache_dir() / "torchvision" / "cifar-10-batches-py").mkdir(parents=True)  # downloaded once before
    assert data_choices(local)[0] == ("CIFAR-10 (downloaded)", "cifar10") and data_note(local) == ""


def test_layout_messages_keep_their_slashes_for_visitors(tmp_path):
    from training.data import DataError, load_cifar10
    from ui.settings import for_visitors

    with pytest.raises(DataError) as info:
        load_cifar10(tmp_path, train=True, download=False)
    shown = for_visitors(str(info.value))
    assert "train/&lt;class&gt;/ and test/&lt;class&gt;/ image folders" in shown and str(tmp_path) not in shown


class Recorded:
    """A registry that records what a start asked for (the run itself is not the point here)."""

    def __init__(self) -> None:
        self.asked: dict = {}

    def start(self, visitor: str, **asked) -> None:
        self.asked = asked

    def check_start(self, _visitor: str, **_asked) -> None:
        """Room for every run here."""

    def set_down(self, _visitor: str) -> None:
        """No saved run here."""

    def snapshot(self, _visitor: str) -> JobSnapshot:
        return JobSnapshot(running=True)


def test_a_run_is_fitted_to_the_servers_memory_before_it_starts(tiny_checkpoint, tmp_path, monkeypatch):
    """The tab's defaults (batch 128) on the Space's DeiT-S took +7.5 GB; a run is now
    estimated before it starts (training.budget) and its batch scaled down, said in the status."""
    monkeypatch.setattr(vit, "is_pretrained_cached", lambda name: True)  # DeiT-S's weights are on this machine
    catalog = ModelCatalog(tiny_checkpoint, tmp_path / "runs")
    settings = ServerSettings(public=True)
    runs, request = Recorded(), SimpleNamespace(session_hash="visitor")
    server = Server(catalog, settings=settings, runs=runs)
    out = h.train_start(server, h.run_options(SPACE_MODEL, "cifar10", "", 1, 1e-4, 128), request)
    limit = settings.train.memory_bytes
    cost = training_cost(run_config(SPACE_MODEL, 32))
    batch = runs.asked["batch_size"]
    assert 1 <= batch < 128 and cost.memory(batch, 1, image_set_bytes(50_000, 32)) <= limit
    assert cost.memory(batch + 1, 1, image_set_bytes(50_000, 32)) > limit  # the largest batch that fits
    assert 1 <= runs.asked["eval_batch_size"] <= 500  # evaluation no longer 500 images at a time at 224 px
    assert f"Batch size 128 would need about {gb(cost.memory(128, 500, image_set_bytes(50_000, 32)))}" in out["status"]
    assert f"so your run trains {batch} images at a time" in out["status"]
    out = h.train_start(
        server,
        h.run_options("vit_cifar_nano", "cifar10", "", 1, 1e-3, 128),
        request,
    )
    assert runs.asked["batch_size"] == 128 and "Batch size" not in out["status"]  # a small run as asked


def test_a_run_whose_evaluation_alone_is_scaled_down_says_so(tiny_checkpoint, tmp_path, monkeypatch):
    """Issue 43: batch 8 of DeiT-S said "your run trains 8 images at a time (about 3.2 GB)" when only
    the evaluation batch had been reduced: the status now says what was reduced."""
    monkeypatch.setattr(vit, "is_pretrained_cached", lambda name: True)
    runs, request = Recorded(), SimpleNamespace(session_hash="visitor")
    catalog, settings = ModelCatalog(tiny_checkpoint, tmp_path / "runs"), ServerSettings(public=True)
    server = Server(catalog, settings=settings, runs=runs)
    out = h.train_start(server, h.run_options(SPACE_MODEL, "cifar10", "", 1, 1e-4, 8), request)
    evaluated = runs.asked["eval_batch_size"]
    assert runs.asked["batch_size"] == 8 and 1 <= evaluated < 500
    assert out["status"].startswith("started\n\nEvaluating 500 images at a time would need about ")
    assert f"so your run evaluates {evaluated} images at a time (about " in out["status"]
    assert "and trains 8 at a time, as asked." in out["status"] and "Batch size" not in out["status"]


def test_pretrained_weights_not_on_an_offline_machine_are_refused_at_start(tiny_checkpoint, tmp_path, monkeypatch):
    """Issue 43: such a run said "started", then failed with "NoInternet: cannot load …"."""
    monkeypatch.setattr(vit, "is_pretrained_cached", lambda name: False)
    runs, request = Recorded(), SimpleNamespace(session_hash="visitor")
    catalog = ModelCatalog(tiny_checkpoint, tmp_path / "runs")
    settings = ServerSettings(public=True, data_folder=write_image_folder(tmp_path / "data"))
    catalog.online = False
    options = h.run_options(SPACE_MODEL, "operator", "", 1, 1e-4, 8)
    server = Server(catalog, settings=settings, runs=runs)
    with pytest.raises(gr.Error, match="is not on this machine, and this machine has no internet connection"):
        h.train_start(server, options, request)
    assert runs.asked == {}  # no run registered
    catalog.online = True  # online: the run downloads its weights
    h.train_start(server, options, request)
    assert runs.asked["model"] == SPACE_MODEL
    catalog.online = False  # a preset needs no weights
    h.train_start(
        server,
        h.run_options("vit_cifar_nano", "operator", "", 1, 1e-3, 8),
        request,
    )
    assert runs.asked["model"] == "vit_cifar_nano"


def test_run_messages_show_as_written_not_as_markdown():
    """A run's message may hold a visitor's words (an uploaded checkpoint's name): a `![x](url)` in it
    would be fetched by every browser showing the status."""
    error = "cannot use this checkpoint: ![x](http://evil.example/p.png) *a*.safetensors <b>"
    shown = h.describe(JobSnapshot(device="cpu", error=error))
    assert "![x](" not in shown and "*a*" not in shown and "<b>" not in shown and "&lt;" not in shown
    assert shown_text(shown).endswith(error)  # every character shown as written
    running_run = h.describe(JobSnapshot(running=True, message="training my_*run*"))
    assert running_run == "training my\\_\\*run\\*"


def test_a_run_that_cannot_fit_is_refused_in_a_sentence():
    small = TrainLimits(memory_bytes=200 * 2**20)
    with pytest.raises(
        ValueError,
        match=r"deit_small_patch16_224.fb_in1k cannot be trained on this server: it needs "
        r"about \d+\.\d GB of memory even one image at a time .* Pick a smaller model",
    ):
        h.memory_plan(small, SPACE_MODEL, "cifar10", 1, 8, 1e-3)
    with pytest.raises(ValueError, match="checkpoints would take about 8.5 GB on disk"):
        h.memory_plan(TrainLimits(memory_bytes=2**40), "vit_l_16.tv_in1k", "cifar10", 1, 8, 1e-3)
    with pytest.raises(ValueError, match="epochs must be a whole number from 1 to 200, got True"):
        h.memory_plan(TrainLimits(), "vit_cifar_nano", "cifar10", True, 8, 1e-3)  # a bool is not 1 epoch


def test_starts_first_step_refuses_as_the_start_would_and_starts_nothing(tiny_checkpoint, tmp_path):
    """Start checks first, in a step with no outputs (its refusal left six bare "Error" badges):
    that step says what `train_start` would say, and never starts a run."""
    from training.registry import JobRegistry

    catalog = ModelCatalog(tiny_checkpoint, tmp_path / "runs")
    runs, settings = JobRegistry(tmp_path / "runs"), ServerSettings()
    request = SimpleNamespace(session_hash="visitor")
    server = Server(catalog, settings=settings, runs=runs)
    with pytest.raises(gr.Error, match="Enter the folder that holds train/ and test/ class folders"):
        h.check_start(
            server,
            h.run_options("vit_cifar_nano", "folder", " ", 1, 1e-3, 8),
            request,
        )
    with pytest.raises(gr.Error, match="epochs must be a whole number from 1 to 200, got 0"):
        h.check_start(
            server,
            h.run_options("vit_cifar_nano", "cifar10", "", 0, 1e-3, 8),
            request,
        )
    data = write_image_folder(tmp_path / "data", per_class=2)
    h.check_start(
        server,
        h.run_options("vit_cifar_nano", "folder", str(data), 1, 1e-3, 8),
        request,
    )
    assert not runs.snapshot("visitor").running and not (tmp_path / "runs").exists()  # checked, nothing started


def _said(call) -> str:
    """What a Train step said: "ok", or its refusal's words."""
    try:
        call()
    except gr.Error as e:
        return str(e)
    return "ok"


@pytest.mark.parametrize(
    ("who", "source", "epochs", "why"),
    [
        ("alice", "folder", 1, "no folder typed"),
        ("alice", "cifar10", 0, "a number out of range"),
        ("alice", "data", 1, "her own run still going"),
        ("bob", "data", 1, "the run slot taken and no queue"),
    ],
)
def test_starts_first_step_and_the_start_refuse_the_same_runs_in_the_same_words(
    tiny_checkpoint, tmp_path, who, source, epochs, why
):
    """Start's toast (`check_start`) is `train_start`'s own checks, down to the registry's, not a
    stand-in that had to mirror each of its calls: whatever the start refuses, the check refuses
    in the same words."""
    data = write_image_folder(tmp_path / "data", per_class=2)
    runs = JobRegistry(tmp_path / "runs", TrainLimits(max_concurrent=1, max_queue=0))
    server = Server(ModelCatalog(tiny_checkpoint, tmp_path / "runs"), settings=ServerSettings(), runs=runs)
    alice, asking = SimpleNamespace(session_hash="alice"), SimpleNamespace(session_hash=who)
    h.train_start(server, h.run_options("vit_cifar_nano", "folder", str(data), 200, 1e-3, 8), alice)
    folder = {"folder": " ", "data": str(data), "cifar10": ""}[source]
    run = h.run_options("vit_cifar_nano", "cifar10" if source == "cifar10" else "folder", folder, epochs, 1e-3, 8)
    checked = _said(lambda: h.check_start(server, run, asking))
    started = _said(lambda: h.train_start(server, run, asking))
    assert checked == started != "ok", why
    hers = h.run_visitor_of(None, alice)
    runs.stop(hers)
    assert runs._jobs[visitor_id(hers)].wait(300), "alice's run did not end in 300 s"


def test_each_epoch_is_said_once_in_the_status():
    """Each epoch was said twice, in two formats: the job's "epoch 2/5: validation accuracy
    75.00%" and the tab's "epoch 2: train loss 0.500, validation accuracy 75.0%"."""
    from training.job import epoch_message

    epoch = {"epoch": 2, "train_loss": 0.5, "val_acc": 0.75}
    going = JobSnapshot(running=True, epochs=5, steps_per_epoch=4, history=[epoch], message=epoch_message(epoch, 5))
    said = h.describe(going)
    assert said.count("epoch 2") == 1 and "epoch 2: train loss 0.500, validation accuracy 75.0%" in said
    stopping = JobSnapshot(running=True, epochs=5, history=[epoch], message="stopping after the current step")
    assert "stopping after the current step" in h.describe(stopping)  # any other message is still said


def test_no_step_of_the_poll_shows_gradios_status_tracker(tmp_path):
    """Gradio's "processing 0.3/0.3s" and "queue: 1/1" came and went over the progress bar:
    every step of the poll, its timer's restart included, hides the status tracker."""
    import ui

    config = ui.build_demo(ModelCatalog(runs_dir=tmp_path)).config
    by_id = {d["id"]: d for d in config["dependencies"]}
    polls = [d for d in by_id.values() if d["api_name"].startswith("train_status")]
    steps = polls + [d for d in by_id.values() if d["trigger_after"] in {p["id"] for p in polls}]
    # the timer's, the tab's, the page's load's and Stop's (issue 60), each a poll and the timer's restart
    assert len(steps) == 8 and {d["show_progress"] for d in steps} == {"hidden"}


def test_opening_the_tab_draws_the_model_picker_as_the_catalogue_is_now(tiny_checkpoint, tmp_path, monkeypatch):
    """The picker's words were drawn when the page was built: after a lesson downloaded DeiT-S
    it still offered "(pretrained, downloads once)" (issue 42, item 4)."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    downloaded: set[str] = set()
    monkeypatch.setattr(vit, "is_pretrained_cached", lambda name: name in downloaded)
    catalog = ModelCatalog(tiny_checkpoint, tmp_path / "runs")
    catalog.online = True
    alice = SimpleNamespace(session_hash="alice")
    deit = "deit_small_patch16_224.fb_in1k"
    labels = {value: label for label, value in h.train_models(Server(catalog), alice)["model"].choices}
    assert labels[deit] == f"{deit} (pretrained, downloads once)"
    downloaded.add(deit)  # what lesson 1's Compare, or Explore, downloads meanwhile
    labels = {value: label for label, value in h.train_models(Server(catalog), alice)["model"].choices}
    assert labels[deit] == f"{deit} (pretrained)"


def test_the_tab_gives_the_page_a_run_token_that_a_reload_keeps_and_no_one_forges(tiny_checkpoint, tmp_path):
    """The run belongs to the token the page keeps (issue 44): a reload (a new session) finds it,
    another session or a made-up token does not, and an API client without one is its session."""
    catalog = ModelCatalog(tiny_checkpoint, tmp_path / "runs")
    first = h.train_models(Server(catalog), SimpleNamespace(session_hash="a"))["run_token"]
    assert h.RUN_TOKEN.fullmatch(first) and h.train_models(Server(catalog), SimpleNamespace(session_hash="b"))[
        "run_token"
    ] not in (first, "")
    assert h.train_models(Server(catalog), SimpleNamespace(session_hash="c"), first)["run_token"] == first  # kept
    assert h.train_models(Server(catalog), SimpleNamespace(session_hash="c"), "../x")["run_token"] != "../x"
    reloaded, other = SimpleNamespace(session_hash="after a reload"), SimpleNamespace(session_hash="someone else")
    assert h.run_visitor_of(first, SimpleNamespace(session_hash="a")) == h.run_visitor_of(first, reloaded)
    assert h.run_visitor_of(first, reloaded) != h.run_visitor_of(None, reloaded) != h.run_visitor_of(None, other)
    assert h.run_visitor_of("not a token", other) == h.run_visitor_of(None, other) == h.visitor_of(other)


def until(check, timeout_s: float = 150):
    """`check()`'s first true value, asked every 10 ms (a loaded machine may take a while)."""
    deadline = time.monotonic() + timeout_s
    while not (value := check()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)
    return value


def clocked_tab(tiny_checkpoint, tmp_path, **limits) -> tuple[Server, list[float], Path]:
    """The Train tab off ZeroGPU over a registry whose idle time and time limit read a fake clock
    (now[0], seconds), and a folder of tiny images: 5 steps an epoch at batch 8."""
    now = [0.0]
    runs = JobRegistry(tmp_path / "runs", TrainLimits(max_concurrent=1, **limits), clock=lambda: now[0])
    data = write_image_folder(tmp_path / "data", per_class=12, size=16)
    return Server(ModelCatalog(tiny_checkpoint, tmp_path / "runs"), runs=runs), now, data


def test_a_run_whose_page_stops_polling_frees_the_slot_and_goes_on_exactly_from_its_save(tiny_checkpoint, tmp_path):
    """Issue 56: off ZeroGPU one /train_start that never polled again held the server's only run
    slot for hours ("the server is busy" for everyone else) while its thread trained on. Now its
    page's silence sets it aside with its save; its visitor's page, back, reads why and goes on
    from the very step it was saved at, its history kept."""
    server, now, data = clocked_tab(tiny_checkpoint, tmp_path)
    alice, bob = SimpleNamespace(session_hash="alice"), SimpleNamespace(session_hash="bob")
    token = h.train_models(server, alice)["run_token"]
    h.train_start(server, h.run_options("vit_cifar_nano", "folder", str(data), 20, 1e-3, 8), alice, token)
    run_visitor = h.run_visitor_of(token, alice)
    until(lambda: server.runs.snapshot(run_visitor).step_losses)  # it trains; alice's page never polls
    short = h.run_options("vit_cifar_nano", "folder", str(data), 1, 1e-3, 8)
    now[0] += VISITOR_GONE_S + 1
    aside = until(lambda: (s := server.runs.snapshot(run_visitor)).paused and s)
    saved = vit.load_checkpoint(next((tmp_path / "runs").glob("*/last.safetensors")))[1].info
    assert saved["step"] == aside.epoch * 5 + aside.step and len(saved["history"]) == aside.epoch
    h.check_start(server, short, bob)  # the slot is free: bob may start
    assert h.train_start(server, short, bob)["status"].startswith("started")
    shown = h.train_status(server, h.NOTHING_SHOWN, alice, token)  # alice's page is back while bob trains
    said = f"set aside after 2 minutes without your page: the run is saved at epoch {aside.epoch + 1} step {aside.step}"
    assert ">queued</b>" in shown["progress"] and said in shown_text(shown["progress"])
    assert "place 1 in the queue for a run slot" in shown["progress"] and shown["seen"][4] == h.QUEUE_POLL_S
    until(lambda: not server.runs.snapshot(h.run_visitor_of(None, bob)).running)
    shown = h.train_status(server, shown["seen"], alice, token)
    assert running(shown["progress"]) and h.keep_polling(shown["seen"])["timer"].active
    end = until(lambda: (s := server.runs.snapshot(run_visitor)).checkpoint and not s.running and s)
    assert end.message.startswith("finished 20 epochs") and [r["epoch"] for r in end.history] == list(range(1, 21))
    assert (
        end.history[: aside.epoch] == aside.history and end.step_losses[: len(aside.step_losses)] == aside.step_losses
    )
    assert vit.load_checkpoint(end.checkpoint)[1].info["step"] == 20 * 5  # not one step lost or done twice


def test_a_run_stops_at_the_time_limit_with_its_model_saved_and_says_how_to_go_on(tiny_checkpoint, tmp_path):
    """Every run has a time limit (`--train-limit-s`), polled or not: then it stops as a Stop
    would, its model saved, and the slot is another visitor's."""
    server, now, data = clocked_tab(tiny_checkpoint, tmp_path, time_limit_s=600, idle_s=3600)  # the page polls on
    alice, bob = SimpleNamespace(session_hash="alice"), SimpleNamespace(session_hash="bob")
    h.train_start(server, h.run_options("vit_cifar_nano", "folder", str(data), 20, 1e-3, 8), alice)
    run_visitor = h.run_visitor_of(None, alice)
    until(lambda: server.runs.snapshot(run_visitor).step_losses)
    now[0] += 600
    ended = until(lambda: not (s := server.runs.snapshot(run_visitor)).running and s)
    shown = h.train_status(server, h.NOTHING_SHOWN, alice)
    where = f"epoch {ended.epoch + 1} step {ended.step}"
    said = (
        f"stopped at the time limit of 10 minutes a run has on this server: the run is saved at {where}, its model in"
    )
    assert ">stopped</b>" in shown["progress"] and said in shown_text(shown["progress"])
    advice = (
        "to train it further, press Continue this run (it goes on from there, when a run slot is free) "
        "or start a new run from its checkpoint (it is in your model list)"
    )
    assert advice in shown["progress"]
    assert Path(shown["checkpoint"]).read_bytes() == Path(ended.checkpoint).read_bytes()
    assert Path(ended.checkpoint).name in shown["progress"]
    assert vit.load_checkpoint(ended.checkpoint)[1].info["step"] == ended.epoch * 5 + ended.step
    h.check_start(server, h.run_options("vit_cifar_nano", "folder", str(data), 1, 1e-3, 8), bob)  # the slot is free


def test_stop_then_continue_goes_on_from_the_saved_step_with_the_same_history(tiny_checkpoint, tmp_path):
    """Issue 61: after Stop the tab offered only a new run from "my run, 0 epochs", its optimiser
    and learning-rate schedule started afresh. A stopped run now shows Continue this run, which
    goes on from the very step it stopped at: the same run, its history and loss readings going on,
    not one step lost or done twice; it is offered to its run_visitor only, and not once the run is over."""
    server, _, data = clocked_tab(tiny_checkpoint, tmp_path)
    alice, bob = SimpleNamespace(session_hash="alice"), SimpleNamespace(session_hash="bob")
    token = h.train_models(server, alice)["run_token"]
    started = h.train_start(server, h.run_options("vit_cifar_nano", "folder", str(data), 20, 1e-3, 8), alice, token)
    assert started["continue_run"].visible is False
    run_visitor = h.run_visitor_of(token, alice)
    until(lambda: server.runs.snapshot(run_visitor).history)  # an epoch done: its record must go on into the next
    assert h.train_status(server, h.NOTHING_SHOWN, alice, token)["continue_run"].visible is False  # running
    assert "stopping" in h.train_stop(server, alice, token)["status"]
    stopped = until(lambda: not (s := server.runs.snapshot(run_visitor)).running and s)
    shown = h.train_status(server, h.NOTHING_SHOWN, alice, token)
    assert ">stopped</b>" in shown["progress"] and shown["continue_run"].visible is True
    saved = vit.load_checkpoint(next((tmp_path / "runs").glob("*/last.safetensors")))[1].info
    assert saved["step"] == stopped.epoch * 5 + stopped.step and len(saved["history"]) == stopped.epoch
    with pytest.raises(gr.Error, match="you have no stopped run to continue"):
        h.check_continue(server, bob)  # another visitor's run is not theirs to continue
    h.check_continue(server, alice, token)
    going = h.train_continue(server, alice, token)
    assert running(going["progress"]) and going["continue_run"].visible is False and going["seen"][4] == h.POLL_S
    assert f"going on from its save at epoch {stopped.epoch + 1} step {stopped.step}" in shown_text(going["status"])
    end = until(lambda: (s := server.runs.snapshot(run_visitor)).checkpoint and not s.running and s)
    assert end.message.startswith("finished 20 epochs") and [r["epoch"] for r in end.history] == list(range(1, 21))
    assert end.history[: stopped.epoch] == stopped.history
    assert end.step_losses[: len(stopped.step_losses)] == stopped.step_losses
    assert vit.load_checkpoint(end.checkpoint)[1].info["step"] == 20 * 5  # not one step lost or done twice
    assert h.train_status(server, h.NOTHING_SHOWN, alice, token)["continue_run"].visible is False
    with pytest.raises(gr.Error, match="you have no stopped run to continue"):
        h.train_continue(server, alice, token)


def test_with_a_saved_run_the_page_asks_continue_or_new_and_a_new_run_keeps_the_saved_one(tiny_checkpoint, tmp_path):
    """Issue 60: Start began a new run and orphaned the saved one without a word. With a saved run
    the page offers "Continue this run at epoch E" beside "Start a new run (your saved run stays
    downloadable)", and the new run lists the saved run's model among the visitor's models."""
    from ui.common import visitor_of

    server, _, data = clocked_tab(tiny_checkpoint, tmp_path)
    alice = SimpleNamespace(session_hash="alice")
    token = h.train_models(server, alice)["run_token"]
    fresh = h.train_start(server, h.run_options("vit_cifar_nano", "folder", str(data), 20, 1e-3, 8), alice, token)
    assert fresh["start"].visible is True and fresh["start_new"].visible is False  # nothing saved yet
    run_visitor = h.run_visitor_of(token, alice)
    until(lambda: server.runs.snapshot(run_visitor).history)
    h.train_stop(server, alice, token)
    stopped = until(lambda: not (s := server.runs.snapshot(run_visitor)).running and s)
    shown = h.train_status(server, h.NOTHING_SHOWN, alice, token)
    assert shown["start"].visible is False and shown["start_new"].visible is True
    assert shown["continue_run"].value == f"Continue this run at epoch {stopped.epoch + 1}"
    saved = Path(stopped.checkpoint)
    h.train_start(server, h.run_options("vit_cifar_nano", "folder", str(data), 1, 1e-3, 8), alice, token)
    labels = [label for label, _ in server.catalog.choices(visitor_of(alice))]
    assert saved.exists() and f"checkpoint: my run, {stopped.epoch} epoch" in " ".join(labels)  # kept, listed
