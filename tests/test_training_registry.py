"""training.registry: per-visitor runs, the server-wide limit, bounded inputs, the disk budget."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from training_helpers import write_image_folder

import training.cli
from training import registry
from training.job import JobBusy
from training.registry import APP_RUN_MARKER, MARKER_TEXT, JobRegistry, TrainLimits, visitor_id
from training.run_files import LAST

TINY = dict(model="vit_cifar_nano", epochs=1, batch_size=8, lr=1e-3)


@pytest.fixture
def data(tmp_path: Path) -> str:
    return str(write_image_folder(tmp_path / "data", per_class=12, size=16))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("epochs", 10_000_000, "epochs must be a whole number from 1 to 200, got 10000000"),
        ("epochs", 1e300, "epochs must be a whole number from 1 to 200"),
        ("epochs", 2.5, "epochs must be a whole number"),
        ("epochs", "nan", "epochs must be a whole number"),
        ("batch_size", 0, "batch size must be a whole number from 1 to 1024"),
        ("batch_size", 50_000, "batch size must be a whole number from 1 to 1024"),
        ("lr", 0, "learning rate must be a number above 0 and at most 1"),
        ("lr", float("inf"), "learning rate must be a number above 0"),
        ("lr", "fast", "learning rate must be a number above 0"),
    ],
)
def test_every_bound_is_checked_with_a_message(field, value, message) -> None:
    args = {"epochs": 1, "batch_size": 8, "lr": 1e-3, field: value}
    with pytest.raises(ValueError, match=message):
        TrainLimits().check(**args)


def test_visitors_see_and_stop_only_their_own_run(data, tmp_path: Path) -> None:
    runs = JobRegistry(tmp_path / "runs", TrainLimits(max_concurrent=2))
    folder_a = runs.start("alice", data=data, **{**TINY, "epochs": 200})
    assert folder_a.name.startswith(visitor_id("alice")) and "alice" not in folder_a.name
    assert (folder_a.stat().st_mode & 0o777) == 0o700
    assert runs.snapshot("alice").running and not runs.snapshot("bob").running
    assert runs.stop("bob") is False and runs.snapshot("alice").running  # bob cannot stop alice's run
    assert runs.checkpoint("bob") is None
    with pytest.raises(JobBusy, match="your training run is still going"):
        runs.start("alice", data=data, **TINY)
    folder_b = runs.start("bob", data=data, **TINY)
    assert folder_b != folder_a
    assert runs.stop("alice") is True
    for who in ("alice", "bob"):  # a loaded machine may take a while; an error says what went wrong
        assert runs._jobs[visitor_id(who)].wait(300), f"{who}'s run did not end in 300 s"
        assert runs.snapshot(who).error is None, runs.snapshot(who).error
    assert runs.checkpoint("alice").is_relative_to(folder_a) and runs.checkpoint("bob").is_relative_to(folder_b)


def test_check_start_refuses_what_start_would_and_starts_nothing(data, tmp_path: Path) -> None:
    """The Train tab's first step asks the registry itself (no stand-in mirroring its calls)."""
    runs = JobRegistry(tmp_path / "runs", TrainLimits(max_concurrent=1, max_queue=0))
    asked = {"epochs": 1, "batch_size": 8, "lr": 1e-3}
    runs.check_start("alice", **asked)
    assert not (tmp_path / "runs").exists() and not runs.snapshot("alice").running  # checked, nothing started
    with pytest.raises(ValueError, match="epochs must be a whole number from 1 to 200, got 0"):
        runs.check_start("alice", **{**asked, "epochs": 0})
    runs.start("alice", data=data, **{**TINY, "epochs": 200})
    with pytest.raises(JobBusy, match="your training run is still going"):
        runs.check_start("alice", **asked)
    with pytest.raises(JobBusy, match="the queue for training is full"):
        runs.check_start("bob", **asked)
    assert not runs.snapshot("bob").running and runs.stop("alice") is True
    assert runs._jobs[visitor_id("alice")].wait(300), "alice's run did not end in 300 s"


def _outcome(call) -> str:
    """What a call said: "ok", or its refusal's kind and words."""
    try:
        call()
    except (JobBusy, ValueError) as e:
        return f"{type(e).__name__}: {e}"
    return "ok"


@pytest.mark.parametrize(
    ("visitor", "asked"),
    [
        ("alice", {}),  # her own run still going
        ("carol", {}),  # the slot taken and the queue full
        ("bob", {}),  # already in the queue: his new run takes his place
        ("carol", {"epochs": 0}),  # a number out of the limits, said before the room
        ("alice", {"lr": 5}),
    ],
)
def test_check_start_and_start_say_the_same_of_every_run(data, tmp_path: Path, visitor, asked) -> None:
    """The Train tab's toast (`check_start`) and its start (`start`) are one path: the check refuses
    what the start refuses, in its words, and lets through what it starts (it was a stand-in that
    mirrored the registry's calls, and had to be kept in step by hand)."""
    runs = JobRegistry(tmp_path / "runs", TrainLimits(max_concurrent=1, max_queue=1))
    runs.start("alice", data=data, **{**TINY, "epochs": 200})
    runs.start("bob", data=data, **TINY)  # queued: the queue is now full
    numbers = {"epochs": 1, "batch_size": 8, "lr": 1e-3, **asked}
    checked = _outcome(lambda: runs.check_start(visitor, **numbers))
    started = _outcome(lambda: runs.start(visitor, model=TINY["model"], data=data, **numbers))
    assert checked == started
    assert runs.stop("alice") is True and runs._jobs[visitor_id("alice")].wait(300), "alice's run did not end in 300 s"


def test_a_visitor_finding_the_slot_taken_queues_and_starts_when_the_slot_is_free(data, tmp_path: Path) -> None:
    """Bob was told "the server is busy … try again when one finishes" and pressed Start 11 times in
    115 s (issue 60): he now waits in the queue, and his run starts at his page's next poll."""
    runs = JobRegistry(tmp_path / "runs")  # the default: one run at a time
    runs.start("alice", data=data, **{**TINY, "epochs": 200})
    runs.start("bob", data=data, **TINY)
    bob = runs.snapshot("bob")
    assert bob.place == 1 and bob.paused and not bob.running and bob.wait_s == pytest.approx(1800, abs=5)
    runs.advance("bob")  # alice still trains: bob keeps his place
    assert runs.snapshot("bob").place == 1 and runs._jobs[visitor_id("bob")]._thread is None
    runs.stop("alice")
    runs._jobs[visitor_id("alice")].wait(60)
    runs.advance("bob")  # the slot is free and bob is first: his run starts from its beginning
    assert runs.snapshot("bob").place == 0 and runs.snapshot("bob").running
    runs._jobs[visitor_id("bob")].wait(60)
    assert runs.snapshot("bob").message.startswith("finished 1 epochs") and runs.snapshot("bob").error is None


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def chunked(tmp_path: Path, limits: TrainLimits, clock: Clock) -> JobRegistry:
    """A registry whose runs train 3-step chunks when polled, as on ZeroGPU."""
    from training.chunks import train_chunk
    from training.job import ChunkPlan

    return JobRegistry(
        tmp_path / "runs", limits, chunks=ChunkPlan(lambda out, s: train_chunk(out, max_steps=3), 45, clock)
    )


def test_the_queue_is_fair_bounded_says_each_place_and_wait_and_a_closed_page_gives_its_place_up(data, tmp_path):
    clock = Clock()
    runs = chunked(tmp_path, TrainLimits(max_queue=2, idle_s=3600), clock)  # every page polls, as open pages do
    for who in ("alice", "bob", "carol"):
        runs.start(who, data=data, **{**TINY, "epochs": 3})
        runs.page_seen(f"{who}'s page", who)
    with pytest.raises(JobBusy, match="the queue for training is full: 2 visitors are waiting"):
        runs.check_start("dave", epochs=1, batch_size=8, lr=1e-3)
    clock.now = 600.0
    assert [runs.snapshot(who).place for who in ("alice", "bob", "carol")] == [0, 1, 2]
    # Nothing measured yet: each run ahead is counted for the time limit, less what alice has had of hers.
    assert (runs.snapshot("bob").wait_s, runs.snapshot("carol").wait_s) == (1200, 1200 + 1800)
    runs.page_closed("bob's page")  # bob gives his place up: carol is next, dave may queue
    assert runs.snapshot("carol").place == 1 and runs.snapshot("bob").place == 0
    runs.start("dave", data=data, **TINY)
    assert runs.snapshot("dave").place == 2
    runs.advance("dave")  # the slot is taken and carol is ahead: dave waits
    assert runs.snapshot("dave").place == 2 and not runs.snapshot("dave").running
    runs.stop("alice")  # a 600 s turn: now the measure of a turn here
    runs.advance("dave")  # carol is ahead, though the slot is free: dave still waits
    assert not runs.snapshot("dave").running and runs.snapshot("dave").wait_s == 600
    runs.advance("carol")
    assert runs.snapshot("carol").running and runs.snapshot("carol").step == 3
    assert runs.snapshot("dave").place == 1
    runs.advance("bob")  # bob is back: he queues at the end, his place given up
    assert runs.snapshot("bob").place == 2


def test_a_closed_page_frees_its_runs_slot_at_once_and_the_run_goes_on_when_its_visitor_is_back(data, tmp_path):
    """A closed page held the slot for 2 minutes of silence (issue 60): Gradio's unload says it at once."""
    clock = Clock()
    runs = chunked(tmp_path, TrainLimits(), clock)
    runs.start("alice", data=data, **{**TINY, "epochs": 2})
    runs.page_seen("tab 1", "alice")
    runs.page_seen("tab 2", "alice")
    runs.advance("alice")
    runs.page_closed("tab 1")  # her other tab is still open: the run goes on
    assert runs.snapshot("alice").running
    runs.page_closed("tab 2")
    alice = runs.snapshot("alice")
    assert alice.paused and alice.message.startswith(
        "set aside when your page closed: the run is saved at epoch 1 step 3"
    )
    runs.start("bob", data=data, **TINY)
    assert runs.snapshot("bob").place == 0  # the slot is his at once
    runs.stop("bob")
    runs.advance("alice")  # her page is open again
    assert runs.snapshot("alice").running and (runs.snapshot("alice").epoch, runs.snapshot("alice").step) == (1, 1)


def test_shared_mode_shows_one_run_that_only_its_starter_stops(data, tmp_path: Path) -> None:
    runs = JobRegistry(tmp_path / "runs", shared=True)
    runs.start("teacher", data=data, **{**TINY, "epochs": 200})
    assert runs.snapshot("student").running
    assert runs.stop("student") is False and runs.snapshot("teacher").running
    assert runs.stop("teacher") is True
    runs._jobs["shared"].wait(60)


def app_run(root: Path, name: str, size: int, age: int) -> Path:
    """A finished run folder as the registry leaves it: its marker and a model file of `size` bytes."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / APP_RUN_MARKER).write_text(MARKER_TEXT)
    (folder / "model.safetensors").write_bytes(b"x" * size)
    os.utime(folder, (1000 + age, 1000 + age))
    return folder


def test_oldest_finished_runs_are_pruned_to_fit_the_disk_budget(data, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    for i, name in enumerate(["old", "newer"]):
        app_run(root, name, 1000 - len(MARKER_TEXT), i)
    runs = JobRegistry(root, TrainLimits(disk_budget_bytes=1500))
    runs.start("alice", data=data, **TINY)
    assert not (root / "old").exists() and (root / "newer").exists()
    runs._jobs[visitor_id("alice")].wait(60)


def test_room_is_made_for_the_new_runs_own_checkpoints(data, tmp_path: Path) -> None:
    """Issue 56's soak: pruned only down to the budget, the runs folder reached 345 MB of 268 once
    a run that writes 190 MB started beside the others; now the start makes room for what it will
    write (training.budget's estimate) as well."""
    root = tmp_path / "runs"
    for i, name in enumerate(["old", "newer"]):
        app_run(root, name, 500 - len(MARKER_TEXT), i)
    runs = JobRegistry(root, TrainLimits(disk_budget_bytes=1500))
    runs.start("alice", data=data, disk_bytes=900, **TINY)  # 1,000 kept + 900 would pass 1,500
    assert not (root / "old").exists() and (root / "newer").exists()
    runs._jobs[visitor_id("alice")].wait(60)


def test_a_cli_run_beside_the_app_runs_is_never_deleted(data, tmp_path: Path) -> None:
    # `python -m training --out runs/cli` into the app's runs folder: older and larger than
    # the whole budget, it is neither deleted nor counted; the app prunes only its own runs.
    root = tmp_path / "runs"
    cli = ["--model", "vit_cifar_nano", "--data", data, "--out", str(root / "cli"), "--epochs", "1"]
    assert training.cli.main([*cli, "--batch-size", "8", "--holdout", "6", "--threads", "1", "--no-eval-test"]) == 0
    os.utime(root / "cli", (500, 500))
    cli_files = sorted(p.relative_to(root) for p in (root / "cli").rglob("*"))
    app_run(root, "old", 1000, 0)
    app_run(root, "newer", 1000, 1)
    runs = JobRegistry(root, TrainLimits(disk_budget_bytes=1500))
    out = runs.start("alice", data=data, **TINY)
    assert (out / APP_RUN_MARKER).is_file()  # the app's new run is marked as the app's
    assert not (root / "old").exists() and (root / "newer").exists()
    assert sorted(p.relative_to(root) for p in (root / "cli").rglob("*")) == cli_files
    runs._jobs[visitor_id("alice")].wait(60)


def test_a_failed_delete_is_not_counted_as_freed(data, tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "runs"
    app_run(root, "stuck", 2000, 0)

    def undeletable(path, ignore_errors=False, **_):  # what rmtree does when nothing can go
        if not ignore_errors:
            raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(registry.shutil, "rmtree", undeletable)
    runs = JobRegistry(root, TrainLimits(disk_budget_bytes=1500))
    with pytest.raises(JobBusy, match="disk budget for training runs is full"):
        runs.start("alice", data=data, **TINY)
    assert (root / "stuck" / "model.safetensors").is_file() and len(list(root.iterdir())) == 1


def test_a_stopped_run_goes_on_with_room_for_its_training_state_written_anew(data, tmp_path: Path) -> None:
    """Going on, a run's next save writes last.safetensors (its weights and AdamW's two moments)
    beside the old one before replacing it: the room made is that file's size, not its model's
    (a third of it), so an older finished run goes first rather than the folder passing its budget."""
    root = tmp_path / "runs"
    runs = JobRegistry(root)
    alice = runs.start("alice", data=data, **{**TINY, "epochs": 200})
    while not (alice / LAST).is_file():
        time.sleep(0.01)
    assert runs.stop("alice") and runs._jobs[visitor_id("alice")].wait(60) and runs.snapshot("alice").resumable
    last, model = (alice / LAST).stat().st_size, runs.checkpoint("alice").stat().st_size
    assert last > 2 * model
    old = app_run(root, "old", 1000, 0)
    # the two folders and the model once more fit; the training state once more does not
    runs.limits = TrainLimits(disk_budget_bytes=registry.folder_bytes(alice) + 1000 + last - 1)
    runs.go_on("alice")
    assert not old.exists() and alice.exists()
    runs.stop("alice")
    runs._jobs[visitor_id("alice")].wait(60)


def test_a_run_set_aside_is_deleted_last_when_the_runs_outgrow_their_budget(data, tmp_path: Path) -> None:
    """A run set aside keeps its folder for its visitor, but not for ever: each visitor who leaves
    sets one aside, and kept whatever the budget, a few of them would refuse every Start."""
    now, root = [0.0], tmp_path / "runs"
    runs = JobRegistry(root, clock=lambda: now[0])
    alice = runs.start("alice", data=data, **{**TINY, "epochs": 200})
    while not runs.snapshot("alice").step_losses:
        time.sleep(0.01)
    now[0] += registry.VISITOR_GONE_S + 1  # alice's page is gone
    assert runs._jobs[visitor_id("alice")].wait(60) and runs.snapshot("alice").paused
    app_run(root, "old", 1000, 0)  # a finished run, older than alice's
    runs.limits = TrainLimits(disk_budget_bytes=registry.folder_bytes(alice) + 1)
    bob = runs.start("bob", data=data, **TINY)  # the finished run goes first
    assert not (root / "old").exists() and alice.exists() and runs.snapshot("alice").paused
    assert runs._jobs[visitor_id("bob")].wait(60)
    runs.limits = TrainLimits(disk_budget_bytes=1)
    runs.start("carol", data=data, **TINY)  # then the runs set aside
    s = runs.snapshot("alice")
    assert not bob.exists() and not alice.exists() and not s.paused and not s.running and s.checkpoint is None
    assert s.error == (
        "your run waited with its save until the server needed its disk space for newer runs: it was deleted; "
        "start a new run"
    )
    runs._jobs[visitor_id("carol")].wait(60)
