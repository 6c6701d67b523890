"""The Train tab's background job: one at a time, live snapshots, probe attention, graceful stop."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from conftest import flip_byte
from training_helpers import CLASSES, write_image_folder

import vit
from training import job as job_module
from training.chunks import ChunkRefused, train_chunk
from training.config import describe_device, resolve_device
from training.job import RETRY_AFTER_S, WAIT_RETRY_S, ChunkPlan, JobBusy, TrainingJob, TurnOver
from training.registry import JobRegistry, TrainLimits

FAST = {"threads": 1, "warmup_epochs": 0.0}


@pytest.fixture
def data(tmp_path):
    return str(write_image_folder(tmp_path / "data", per_class=12, size=16))


def test_job_trains_reports_and_refuses_a_second_start(data, tmp_path):
    job = TrainingJob()
    job.start(model="vit_cifar_nano", data=data, epochs=2, lr=1e-3, batch_size=8, out_dir=str(tmp_path / "a"), **FAST)
    first = job.snapshot()
    assert first.running and first.device == describe_device(resolve_device("auto")) and first.epochs == 2
    with pytest.raises(JobBusy, match="already running"):
        job.start(model="vit_cifar_nano", data=data, epochs=1, lr=1e-3, batch_size=8, out_dir=str(tmp_path / "b"))
    assert job.wait(timeout=120)

    s = job.snapshot()
    assert not s.running and s.error is None and s.message.startswith("finished 2 epochs")
    assert (
        [r["epoch"] for r in s.history] == [1, 2] and s.epoch == 2 and s.steps_per_epoch == 5
    )  # (36 - 3 held out) / 8
    assert set(s.history[0]) == {
        "epoch",
        "train_loss",
        "train_acc",
        "val_loss",
        "val_acc",
        "lr",
        "img_per_s",
        "seconds",
        "elapsed_seconds",
    }
    assert s.probe_image.shape == (3, 16, 16) and s.probe_image.dtype == torch.uint8
    model, meta = vit.load_checkpoint(s.checkpoint)
    assert meta.class_names == list(CLASSES) and model.config.image_size == 16
    assert Path(s.checkpoint).name == f"vit_cifar_nano_2epochs_acc{round(100 * s.history[-1]['val_acc'])}.safetensors"
    assert s.step_losses[0][0] == 1 / 5  # the first loss reading comes after the first step (of 5 per epoch)
    assert not (tmp_path / "b").exists()
    assert [epoch for epoch, _ in s.probe] == [0, 1, 2]
    assert all(maps.shape == (6, 4, 4, 4) for _, maps in s.probe)  # (L, H, gh, gw)
    assert not torch.equal(s.probe[0][1], s.probe[-1][1])  # attention changed with training


class Images(list):
    """A stand-in image set: its length, and one probe image."""

    images = torch.zeros(1, 3, 4, 4, dtype=torch.uint8)


def test_the_start_message_says_how_many_images_are_held_out_for_validation(monkeypatch):
    monkeypatch.setattr(job_module, "probe_attention", lambda _trainer, _image: torch.zeros(1, 1, 1, 1))
    trainer = SimpleNamespace(
        train_set=Images([0] * 45_000), val_set=Images([0] * 5_000), steps_per_epoch=352, epoch=0, step=0
    )
    job = TrainingJob()
    job._on_start(trainer)
    assert job.snapshot().message == "training on 45,000 images (5,000 held out for validation)"


def test_stop_ends_the_job_early_with_a_saved_model(data, tmp_path):
    job = TrainingJob()
    job.start(
        model="vit_cifar_nano", data=data, epochs=200, lr=1e-3, batch_size=4, out_dir=str(tmp_path / "run"), **FAST
    )
    deadline = time.monotonic() + 60
    while job.snapshot().epoch < 1:
        assert time.monotonic() < deadline and job.snapshot().error is None
        time.sleep(0.05)
    job.stop()
    assert job.wait(timeout=60)
    s = job.snapshot()
    assert not s.running and s.message.startswith("stopped during epoch") and 1 <= len(s.history) < 200
    _, meta = vit.load_checkpoint(s.checkpoint)
    assert meta.info["stopped"] is True


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"data": "/no/such/folder"}, "no such folder"),
        ({"epochs": 0}, "epochs must be"),
        ({"model": "not_a_model"}, "unknown model"),
        ({"colour": "blue"}, "unknown training option"),
    ],
)
def test_bad_arguments_raise_before_a_thread_starts(data, tmp_path, changes, match):
    job = TrainingJob()
    args = {"model": "vit_cifar_nano", "data": data, "epochs": 1, "lr": 1e-3, "batch_size": 8, "out_dir": str(tmp_path)}
    with pytest.raises(ValueError, match=match):
        job.start(**{**args, **changes})
    assert not job.snapshot().running and job.wait(timeout=0)


def test_failure_inside_the_thread_reaches_the_snapshot(data, tmp_path):
    job = TrainingJob()
    job.start(model="vit_cifar_nano", data=data, epochs=1, lr=1e-3, batch_size=8, out_dir=str(tmp_path), holdout=10_000)
    assert job.wait(timeout=60)
    s = job.snapshot()
    assert not s.running and s.message == "training failed" and "cannot hold out 10000" in s.error


def test_a_damaged_checkpoint_fails_the_job_with_the_reason(data, tiny_checkpoint, tmp_path):
    # The Train tab's path: a visitor's (or a typed) checkpoint file becomes the job's model.
    damaged = tmp_path / "damaged.safetensors"
    damaged.write_bytes(tiny_checkpoint.read_bytes())
    flip_byte(damaged)
    job = TrainingJob()
    job.start(model=str(damaged), data=data, epochs=1, lr=1e-3, batch_size=8, out_dir=str(tmp_path / "run"), **FAST)
    assert job.wait(timeout=120)
    s = job.snapshot()
    assert s.message == "training failed" and "is corrupt: its tensors do not match the hash" in s.error
    assert s.checkpoint is None


# -- chunked jobs (the Train tab on ZeroGPU): no thread, one chunk per advance() ----------


class Chunks:
    """A ChunkPlan's runner: 3-step chunks here, except the calls told to fail."""

    def __init__(self, failures: dict[int, Exception] | None = None):
        self.failures, self.calls = failures or {}, 0

    def __call__(self, out_dir: str, seconds: float):
        self.calls += 1
        if self.calls in self.failures:
            raise self.failures[self.calls]
        return train_chunk(out_dir, max_steps=3)


def chunked_job(data, tmp_path, runner: Chunks) -> TrainingJob:
    job = TrainingJob(ChunkPlan(runner, seconds=45))
    job.start(model="vit_cifar_nano", data=data, epochs=2, lr=1e-3, batch_size=8, out_dir=str(tmp_path / "run"), **FAST)
    return job


def test_a_chunked_job_trains_only_when_advanced_and_ends_as_the_threaded_one(data, tmp_path):
    runner = Chunks()
    threads = threading.active_count()
    job = chunked_job(data, tmp_path, runner)
    s = job.snapshot()
    assert s.running and s.message == "waiting for the GPU" and runner.calls == 0
    assert threading.active_count() == threads
    job.advance()
    s = job.snapshot()
    assert s.running and (s.epoch, s.step, s.steps_per_epoch) == (0, 3, 5) and [e for e, _ in s.probe] == [0]
    assert "3 steps" in s.message and "saved at epoch 1, step 3" in s.message
    while job.snapshot().running:
        job.advance()
        assert runner.calls < 10
    s = job.snapshot()
    assert s.message.startswith("finished 2 epochs") and [r["epoch"] for r in s.history] == [1, 2]
    assert [e for e, _ in s.probe] == [0, 1, 2] and s.probe_image.shape == (3, 16, 16) and s.step_losses
    assert Path(s.checkpoint).name.startswith("vit_cifar_nano_2epochs_acc") and vit.load_checkpoint(s.checkpoint)
    calls = runner.calls
    job.advance()  # an ended run trains no more
    assert runner.calls == calls


def test_a_chunk_cut_short_loses_nothing_and_three_in_a_row_fail_the_run_which_goes_on_when_asked(data, tmp_path):
    killed = RuntimeError("GPU task aborted")
    runner = Chunks({2: killed, 4: killed, 5: killed, 6: killed})
    now = [0.0]
    job = TrainingJob(ChunkPlan(runner, seconds=45, clock=lambda: now[0]))
    job.start(model="vit_cifar_nano", data=data, epochs=2, lr=1e-3, batch_size=8, out_dir=str(tmp_path / "run"), **FAST)
    job.advance()
    job.advance()  # cut short: the state saved by the first chunk stays
    s = job.snapshot()
    assert s.running and s.error is None and (s.epoch, s.step) == (0, 3)
    assert s.message == (
        "the last chunk was cut short (GPU task aborted); nothing is lost, the next goes on from epoch 1 step 3"
    )
    assert s.next_try_s == 15  # the page counts it down (ui.train_handlers.progress_html)
    now[0] += 5
    assert job.snapshot().next_try_s == 10
    now[0] -= 5
    job.advance()  # a poll within the 15 s asks for no chunk (three polls in 1.3 s asked for three: issue 44)
    assert runner.calls == 2
    now[0] += RETRY_AFTER_S[0]
    job.advance()
    assert (job.snapshot().epoch, job.snapshot().step) == (1, 1)  # 3 more steps: 5 an epoch
    job.advance()  # cut short: 15 s again, the first in a row
    now[0] += RETRY_AFTER_S[0]
    job.advance()  # the second in a row: 45 s
    assert job.snapshot().next_try_s == 45 and runner.calls == 5
    now[0] += RETRY_AFTER_S[0]
    job.advance()
    assert runner.calls == 5  # still backing off
    now[0] += RETRY_AFTER_S[1]
    job.advance()
    s = job.snapshot()
    assert not s.running and s.message == "training failed" and runner.calls == 6
    assert s.error == (
        "3 chunks in a row were cut short (the last: GPU task aborted); the run is saved at epoch 2 step 1: "
        "press Continue this run to go on from there"
    )
    assert s.resumable  # a failed run with its save is never lost (issue 60)
    job.go_on()
    job.advance()
    s = job.snapshot()
    assert s.error is None and (s.epoch, s.step) == (1, 4) and runner.calls == 7


def test_a_refused_chunk_waits_for_gpu_time_and_goes_on_when_advanced(data, tmp_path):
    advice = "log in to Hugging Face for 5 minutes a day, or continue tomorrow"
    refusal = ChunkRefused("GPU time used up for today", advice)
    runner = Chunks({2: refusal})
    now = [0.0]
    job = TrainingJob(ChunkPlan(runner, seconds=45, clock=lambda: now[0]))
    job.start(model="vit_cifar_nano", data=data, epochs=2, lr=1e-3, batch_size=8, out_dir=str(tmp_path / "run"), **FAST)
    job.advance()
    job.advance()
    s = job.snapshot()
    assert not s.running and s.paused and s.error is None
    assert s.message == (
        f"GPU time used up for today: the run is saved at epoch 1 step 3; it goes on by itself while this page is "
        f"open; {advice}"
    )
    assert s.next_try_s == WAIT_RETRY_S[0]
    job.advance()  # backing off: no chunk asked for
    assert runner.calls == 2
    now[0] += WAIT_RETRY_S[0]
    job.advance()
    s = job.snapshot()
    assert s.running and not s.paused and (s.epoch, s.step) == (1, 1)


def test_refusals_in_a_row_back_off_longer_and_longer_and_never_fail_the_run(data, tmp_path):
    """Three "no GPU free" refusals in a minute failed a run for good (issue 60): refused, a run
    waits, asking again less and less often, for as long as it takes."""
    busy = ChunkRefused("every GPU of this Space is busy right now", "try again in a minute")
    runner = Chunks({call: busy for call in range(2, 2 + len(WAIT_RETRY_S) + 2)})
    now = [0.0]
    job = TrainingJob(ChunkPlan(runner, seconds=45, clock=lambda: now[0]))
    job.start(model="vit_cifar_nano", data=data, epochs=2, lr=1e-3, batch_size=8, out_dir=str(tmp_path / "run"), **FAST)
    job.advance()
    waits = []
    for _ in range(len(WAIT_RETRY_S) + 2):
        job.advance()
        s = job.snapshot()
        assert s.paused and s.error is None
        waits.append(s.next_try_s)
        now[0] += s.next_try_s
    assert waits == [*WAIT_RETRY_S, WAIT_RETRY_S[-1], WAIT_RETRY_S[-1]]
    job.advance()  # the platform is free again: the run goes on from its save
    s = job.snapshot()
    assert s.running and (s.epoch, s.step) == (1, 1) and s.next_try_s == 0


def test_a_chunked_run_that_cannot_load_its_model_fails_before_any_chunk(data, tiny_checkpoint, tmp_path):
    damaged = tmp_path / "damaged.safetensors"
    damaged.write_bytes(tiny_checkpoint.read_bytes())
    flip_byte(damaged)
    runner = Chunks()
    job = TrainingJob(ChunkPlan(runner, seconds=45))
    job.start(model=str(damaged), data=data, epochs=1, lr=1e-3, batch_size=8, out_dir=str(tmp_path / "run"), **FAST)
    job.advance()
    s = job.snapshot()
    assert not s.running and s.message == "training failed" and "do not match the hash" in s.error
    assert runner.calls == 0


def test_a_stop_between_chunks_ends_the_run_at_once_with_a_model_and_asks_for_no_chunk(data, tmp_path):
    """Stop between chunks cost one more 48 s GPU request, which only read the STOP file and saved
    the model (issue 44): the model is now written from the last chunk's save, on the CPU."""
    runner = Chunks()
    job = chunked_job(data, tmp_path, runner)
    job.advance()
    job.stop()
    s = job.snapshot()
    assert not s.running and s.message.startswith("stopped during epoch 1") and (s.epoch, s.step) == (0, 3)
    model, meta = vit.load_checkpoint(s.checkpoint)
    assert meta.info["stopped"] is True and meta.info["step"] == 3 and "optimizer" not in meta.info
    saved, _ = vit.load_checkpoint(tmp_path / "run" / "last.safetensors")
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), saved.state_dict().values(), strict=True))
    job.advance()
    assert runner.calls == 1 and not (tmp_path / "run" / "STOP").exists()


def test_a_stop_while_waiting_for_gpu_time_ends_the_run_at_once_with_its_last_save(data, tmp_path):
    """With the day's GPU time used up the run waited, and Stop was refused: the registry asked for
    a running run (issue 44). Now it ends at once, asking for no chunk."""
    runner = Chunks({3: ChunkRefused("GPU time used up for today", "continue tomorrow")})
    registry = JobRegistry(tmp_path / "runs", TrainLimits(), chunks=ChunkPlan(runner, seconds=45))
    registry.start("alice", model="vit_cifar_nano", data=data, epochs=2, batch_size=8, lr=1e-3, warmup_epochs=0.0)
    registry.advance("alice"), registry.advance("alice"), registry.advance("alice")  # 6 steps, then refused
    assert registry.snapshot("alice").paused
    assert not registry.stop("bob") and registry.stop("alice")
    s = registry.snapshot("alice")
    assert not s.running and not s.paused and s.message.startswith("stopped during epoch 2; model saved to")
    assert vit.load_checkpoint(s.checkpoint)[1].info["epoch"] == 1 and (s.epoch, s.step) == (1, 1)
    registry.advance("alice")
    assert runner.calls == 3  # no chunk asked for after the stop


def test_a_stop_while_waiting_inside_the_first_epoch_saves_the_model_of_its_last_chunk(data, tmp_path):
    """It said that no model file was written, the first epoch unfinished: the last chunk's state is the model."""
    runner = Chunks({2: ChunkRefused("GPU time used up for today", "continue tomorrow")})
    job = chunked_job(data, tmp_path, runner)
    job.advance(), job.advance()  # 3 steps of the first epoch's 5, then refused
    job.stop()
    s = job.snapshot()
    assert not s.running and not s.paused and s.message.startswith("stopped during epoch 1; model saved to")
    assert vit.load_checkpoint(s.checkpoint)[1].info["step"] == 3
    job.advance()
    assert runner.calls == 2


def test_a_data_error_reaches_the_page_in_its_own_words():
    """Offline the Train tab showed "DataError: could not download ... (URLError ...)"."""
    from training.data import DataError
    from training.job import failure

    assert failure(DataError("CIFAR-10 cannot be downloaded here")) == "CIFAR-10 cannot be downloaded here"
    assert failure(KeyError("x")) == "the run stopped: 'x'"  # no type's name (issue 42): the log has it


def test_a_run_whose_visitor_left_frees_its_slot_keeps_its_save_and_goes_on_when_the_visitor_is_back(data, tmp_path):
    """Visitor A started a run on ZeroGPU and closed the page: every other visitor was told "the
    server is busy: 1 training run(s) at a time" for as long as the Space ran (issue 44, item 1)."""
    from training.registry import VISITOR_GONE_S

    now, runner = [0.0], Chunks()
    plan = ChunkPlan(runner, seconds=45, clock=lambda: now[0])
    registry = JobRegistry(tmp_path / "runs", TrainLimits(max_concurrent=1), chunks=plan)
    registry.start("alice", model="vit_cifar_nano", data=data, epochs=2, batch_size=8, lr=1e-3, warmup_epochs=0.0)
    registry.advance("alice")  # one chunk of 3 steps, then alice's page is gone
    now[0] += VISITOR_GONE_S - 1
    registry.check_start("bob", epochs=1, batch_size=8, lr=1e-3)
    assert registry.snapshot("alice").running  # a minute and more: alice may be in a long chunk
    now[0] += 2
    registry.check_start("bob", epochs=1, batch_size=8, lr=1e-3)  # alice's run set aside: bob may start
    s = registry.snapshot("alice")
    assert not s.running and s.paused and (s.epoch, s.step) == (0, 3) and "set aside" in s.message
    registry.start("bob", model="vit_cifar_nano", data=data, epochs=1, batch_size=8, lr=1e-3, warmup_epochs=0.0)
    assert registry.snapshot("bob").place == 0
    registry.advance("alice")  # alice is back while bob trains: her run queues for the slot
    assert registry.snapshot("alice").paused and registry.snapshot("alice").place == 1 and runner.calls == 1
    assert registry.stop("bob")
    registry.advance("bob")  # bob's run reads its STOP file and ends
    registry.advance("alice")  # the slot is free: alice's run goes on from its save
    s = registry.snapshot("alice")
    assert s.running and not s.paused and (s.epoch, s.step) == (1, 1)  # 5 steps an epoch: 3, then 3 more


def test_a_stop_during_a_chunk_cut_short_ends_the_run_when_the_chunk_returns(data, tmp_path):
    """The chunk that should have read the STOP file died first: the run must not wait for ever."""
    job = None

    def stopped_then_cut_short(out_dir: str, seconds: float):
        job.stop()  # the visitor presses Stop while the chunk trains
        raise RuntimeError("GPU task aborted")

    job = TrainingJob(ChunkPlan(stopped_then_cut_short, seconds=45))
    job.start(model="vit_cifar_nano", data=data, epochs=2, lr=1e-3, batch_size=8, out_dir=str(tmp_path / "run"), **FAST)
    job.advance()
    s = job.snapshot()
    assert not s.running and not s.paused and s.message.startswith("stopped before its first chunk trained a step")


def turn_at(call: int, ends: bool = False):
    """A registry's watch that ends the run's turn before its `call`-th step (1-based), once."""
    calls = [0]

    def watch():
        calls[0] += 1
        return TurnOver("the turn is over", "what next", ends=ends) if calls[0] == call else None

    return watch


def test_a_thread_set_aside_goes_on_from_its_save_bitwise_as_if_never_paused(data, tmp_path):
    """Off ZeroGPU a run trained in a thread that nothing could set aside: one API call that never
    polled again held the server's only run slot for hours (issue 56). Set aside, the thread saves
    the resumable state and ends; `resume` goes on from that very step, history and curves kept."""
    options = {**FAST, "deterministic": True}
    alone = TrainingJob()  # first: two runs at once would share torch's global random state
    alone.start(
        model="vit_cifar_nano", data=data, epochs=2, lr=1e-3, batch_size=8, out_dir=str(tmp_path / "a"), **options
    )
    assert alone.wait(timeout=120)
    job = TrainingJob(watch=turn_at(7))  # before epoch 2's second step (5 steps an epoch)
    job.start(
        model="vit_cifar_nano", data=data, epochs=2, lr=1e-3, batch_size=8, out_dir=str(tmp_path / "b"), **options
    )
    assert job.wait(timeout=120)
    aside = job.snapshot()
    assert not aside.running and aside.paused and (aside.epoch, aside.step) == (1, 1)
    assert aside.message == "the turn is over: the run is saved at epoch 2 step 1; what next"
    assert vit.load_checkpoint(tmp_path / "b" / "last.safetensors")[1].info["step"] == 6
    job.resume()
    assert job.snapshot().running and job.snapshot().message == "going on from its save at epoch 2 step 1"
    assert job.wait(timeout=120)
    s = job.snapshot()
    assert s.message.startswith("finished 2 epochs") and [r["epoch"] for r in s.history] == [1, 2]
    assert s.history[0] == aside.history[0] and s.step_losses[: len(aside.step_losses)] == aside.step_losses
    assert [epoch for epoch, _ in s.probe] == [0, 1, 2]
    model, meta = vit.load_checkpoint(s.checkpoint)
    expected, _ = vit.load_checkpoint(alone.snapshot().checkpoint)
    assert meta.info["step"] == 10
    assert all(
        torch.equal(a, b) for a, b in zip(model.state_dict().values(), expected.state_dict().values(), strict=True)
    )


def test_a_thread_set_aside_and_then_stopped_ends_from_its_save(data, tmp_path):
    job = TrainingJob(watch=turn_at(4))
    job.start(model="vit_cifar_nano", data=data, epochs=2, lr=1e-3, batch_size=8, out_dir=str(tmp_path / "run"), **FAST)
    assert job.wait(timeout=120) and job.snapshot().paused
    job.stop()
    s = job.snapshot()
    assert not s.running and not s.paused and s.message.startswith("stopped during epoch 1; model saved to")
    assert vit.load_checkpoint(s.checkpoint)[1].info["step"] == 3
    job.resume()  # an ended run does not go on
    assert not job.snapshot().running


def test_a_thread_at_its_time_limit_stops_with_its_model_saved_and_says_so(data, tmp_path):
    job = TrainingJob(watch=turn_at(4, ends=True))
    job.start(model="vit_cifar_nano", data=data, epochs=2, lr=1e-3, batch_size=8, out_dir=str(tmp_path / "run"), **FAST)
    assert job.wait(timeout=120)
    s = job.snapshot()
    assert not s.running and not s.paused and s.error is None
    assert s.message.startswith("the turn is over: the run is saved at epoch 1 step 3, its model in ")
    assert s.message.endswith(f"{Path(s.checkpoint).name}; what next")
    assert vit.load_checkpoint(s.checkpoint)[1].info["step"] == 3
    assert vit.load_checkpoint(tmp_path / "run" / "last.safetensors")[1].info["step"] == 3  # resumable, as a Stop's


def test_a_chunked_run_past_its_time_limit_ends_between_chunks_from_its_save(data, tmp_path):
    """On ZeroGPU too a run's turn ends at the time limit, without asking for one more chunk."""
    now, runner = [0.0], Chunks()
    plan = ChunkPlan(runner, seconds=45, clock=lambda: now[0])
    registry = JobRegistry(tmp_path / "runs", TrainLimits(time_limit_s=600), chunks=plan)
    registry.start("alice", model="vit_cifar_nano", data=data, epochs=2, batch_size=8, lr=1e-3, warmup_epochs=0.0)
    registry.advance("alice")  # one chunk of 3 steps
    now[0] += 600
    registry.advance("alice")  # the visitor polls on, but the turn is over
    s = registry.snapshot("alice")
    assert runner.calls == 1 and not s.running and not s.paused
    assert s.message.startswith("stopped at the time limit of 10 minutes a run has on this server: the run is saved")
    assert vit.load_checkpoint(s.checkpoint)[1].info["step"] == 3
    registry.check_start("bob", epochs=1, batch_size=8, lr=1e-3)  # the slot is free


def stop_at(call: int, job: list):
    """A registry's watch that presses Stop on `job[0]` while it checks before its `call`-th step
    (1-based): that step is trained, the run stops before the next."""
    calls = [0]

    def watch():
        calls[0] += 1
        if calls[0] == call:
            job[0].stop()

    return watch


def test_a_stopped_thread_goes_on_from_its_save_bitwise_as_if_never_stopped(data, tmp_path):
    """Issue 61: after Stop the Train tab offered only a new run from the stopped model, its
    optimiser and schedule started afresh. `go_on` continues the run itself from the step it
    stopped at: its history, probe and loss readings go on, and its model is the one a run never
    stopped ends with."""
    options = {**FAST, "deterministic": True}
    alone = TrainingJob()  # first: two runs at once would share torch's global random state
    alone.start(
        model="vit_cifar_nano", data=data, epochs=2, lr=1e-3, batch_size=8, out_dir=str(tmp_path / "a"), **options
    )
    assert alone.wait(timeout=120)
    pressed: list = []
    job = TrainingJob(watch=stop_at(7, pressed))  # epoch 2's second step trained, then Stop (5 steps an epoch)
    pressed.append(job)
    with pytest.raises(ValueError, match="you have no stopped run to continue"):
        job.go_on()  # nothing has run yet
    job.start(
        model="vit_cifar_nano", data=data, epochs=2, lr=1e-3, batch_size=8, out_dir=str(tmp_path / "b"), **options
    )
    assert job.wait(timeout=120)
    stopped = job.snapshot()
    assert stopped.message.startswith("stopped during epoch 2") and stopped.resumable
    assert (stopped.epoch, stopped.step) == (1, 2) and [r["epoch"] for r in stopped.history] == [1]
    assert vit.load_checkpoint(tmp_path / "b" / "last.safetensors")[1].info["step"] == 7
    job.go_on()
    going = job.snapshot()
    assert going.running and not going.resumable and going.message == "going on from its save at epoch 2 step 2"
    assert job.wait(timeout=120)
    s = job.snapshot()
    assert s.message.startswith("finished 2 epochs") and not s.resumable
    assert s.history[0] == stopped.history[0] and [r["epoch"] for r in s.history] == [1, 2]
    assert s.step_losses[: len(stopped.step_losses)] == stopped.step_losses and [e for e, _ in s.probe] == [0, 1, 2]
    model, meta = vit.load_checkpoint(s.checkpoint)
    expected, _ = vit.load_checkpoint(alone.snapshot().checkpoint)
    assert meta.info["step"] == 10
    assert all(
        torch.equal(a, b) for a, b in zip(model.state_dict().values(), expected.state_dict().values(), strict=True)
    )
    with pytest.raises(ValueError, match="you have no stopped run to continue"):
        job.go_on()  # a finished run has nothing left to continue


def test_a_stopped_chunked_run_goes_on_from_its_save(data, tmp_path):
    """On ZeroGPU too: Stop between chunks ends the run from its last save; Continue takes it on
    from there, chunk by chunk, and it finishes with every step trained once."""
    runner = Chunks()
    job = chunked_job(data, tmp_path, runner)
    job.advance()  # 3 steps
    job.stop()
    stopped = job.snapshot()
    assert not stopped.running and stopped.resumable and (stopped.epoch, stopped.step) == (0, 3)
    job.go_on()
    assert job.snapshot().running and job.snapshot().message == "going on from its save at epoch 1 step 3"
    while job.snapshot().running:
        job.advance()
        assert runner.calls < 10
    s = job.snapshot()
    assert s.message.startswith("finished 2 epochs") and [r["epoch"] for r in s.history] == [1, 2]
    assert vit.load_checkpoint(s.checkpoint)[1].info["step"] == 10


def test_a_stopped_run_whose_save_was_deleted_says_so(data, tmp_path):
    runner = Chunks()
    job = chunked_job(data, tmp_path, runner)
    job.advance()
    job.stop()
    (tmp_path / "run" / "last.safetensors").unlink()  # the registry made room on the disk
    with pytest.raises(ValueError, match="your stopped run's save is gone"):
        job.go_on()
    assert not job.snapshot().running and not job.snapshot().resumable
