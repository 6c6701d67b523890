"""Train together (ui/class_run.py, issue 59): the run a teacher shares with the class is pushed to its
pages as it moves on, its pictures drawn once for the class however many ask, and a student can
neither share, stop nor continue it."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import gradio as gr
import pytest
import torch
from starlette.applications import Starlette
from starlette.testclient import TestClient
from training_helpers import write_image_folder

import ui.class_run
from explorer import run_views
from explorer.catalog import ModelCatalog
from training.job import JobSnapshot
from ui import train_handlers as h
from ui.class_route import Bell, class_events, class_routes
from ui.class_run import ClassRuns, run_said, run_summary
from ui.classroom import ClassError, Classroom
from ui.common import Server
from ui.gate import CLASS_ROUTE

NET = "192.0.2.5"
TEACHERS_RUN = "run token " + "a" * 32


class FakeRuns:
    """The registry as the classes read it: one snapshot a visitor, as the test sets it."""

    def __init__(self) -> None:
        self.snaps: dict[str, JobSnapshot] = {}

    def snapshot(self, visitor: str) -> JobSnapshot:
        return self.snaps.get(visitor, JobSnapshot())


def training(step: int, epoch: int = 0, losses: int = 3, probes: int = 1) -> JobSnapshot:
    """A run training at `step` of 10 in `epoch` of 3, with `losses` loss readings and `probes` probe readings."""
    torch.manual_seed(probes)
    return JobSnapshot(
        running=True,
        epoch=epoch,
        epochs=3,
        step=step,
        steps_per_epoch=10,
        history=[
            {"epoch": e + 1, "train_loss": 1.5, "train_acc": 0.4, "val_loss": 1.6, "val_acc": 0.35}
            for e in range(epoch)
        ],
        step_losses=[(i / 10, 2.0 - i / 10) for i in range(losses)],
        probe_image=torch.zeros(3, 32, 32, dtype=torch.uint8),
        probe=[(e, torch.rand(2, 3, 4, 4)) for e in range(probes)],
        message="training",
    )


@pytest.fixture
def shared():
    """(a class with a teacher and a student, its runs, the fake registry, the codes rung, key, token). Its
    clock stands still: the teacher's page is never away, so the class's watcher never pushes in its place."""
    classes, runs = Classroom(), FakeRuns()
    class_runs, rung = ClassRuns(classes, runs, 12, clock=lambda: 0.0), []
    class_runs.ring = rung.append
    code, key = classes.start(NET)
    token, _ = classes.join(code, NET)
    runs.snaps[TEACHERS_RUN] = training(2)
    yield class_runs, runs, rung, code, key, token
    class_runs.forget(code)  # its watcher stops


def watchers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "class run watcher"}


def until(done, timeout: float = 5.0) -> bool:
    """Whether `done()` came true within `timeout` seconds (the watcher's thread works meanwhile)."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


@pytest.fixture
def away():
    """A class whose run's watcher looks every 10 ms, on a clock the test moves: ahead of the teacher's
    last poll by more than ui.class_run.AWAY_S, the teacher's page is away (closed, asleep, throttled)."""
    classes, runs, now = Classroom(), FakeRuns(), [0.0]
    class_runs, rung = ClassRuns(classes, runs, 12, every_s=0.01, clock=lambda: now[0]), []
    class_runs.ring = rung.append
    code, key = classes.start(NET)
    token, _ = classes.join(code, NET)
    runs.snaps[TEACHERS_RUN] = training(2)
    yield class_runs, runs, rung, now, code, key, token
    class_runs.forget(code)


@pytest.fixture
def drawings(monkeypatch) -> list[str]:
    """The pictures the class's runs draw (ui.class_run.drawn_png's calls, by name), in order."""
    drawn, drawn_png = [], ui.class_run.drawn_png

    def counted(snap, which, text_px):
        drawn.append(which)
        return drawn_png(snap, which, text_px)

    monkeypatch.setattr(ui.class_run, "drawn_png", counted)
    return drawn


def test_the_class_sees_the_run_move_on_while_the_teachers_page_is_away(away, drawings):
    class_runs, runs, rung, now, code, key, token = away
    classes, before = class_runs.classes, watchers()
    class_runs.share(code, key, TEACHERS_RUN, NET)
    assert len(watchers() - before) == 1 and rung == [code]  # one thread for the class whose run trains
    runs.snaps[TEACHERS_RUN] = training(5, losses=6)  # the run moves on; the teacher's page polls it...
    time.sleep(0.1)
    assert classes.snapshot(code, token)["run"]["version"] == 1 and rung == [code]  # ...so the watcher stands aside
    now[0] = 10.0  # the teacher's page has not polled for 10 s: the watcher pushes in its place
    assert until(lambda: classes.snapshot(code, token)["run"]["version"] == 2)
    run = classes.snapshot(code, token)["run"]
    assert run["said"] == "The teacher's run is training: epoch 1 of 3, step 5 of 10." and rung == [code, code]
    assert sorted(drawings) == ["curves", "probe"]  # drawn once for the class, before its pages ask
    students = [classes.join(code, NET)[0] for _ in range(29)] + [token]
    sent = {class_runs.picture({"code": code, "token": t, "picture": "curves"}, NET) for t in students}
    assert len(sent) == 1 and sorted(drawings) == ["curves", "probe"]
    time.sleep(0.1)  # the run unchanged: looked at ten times, pushed none
    assert rung == [code, code] and classes.snapshot(code, token)["run"]["version"] == 2
    # the teacher's page closes: the registry sets the run aside, and the class is told so
    runs.snaps[TEACHERS_RUN] = JobSnapshot(paused=True, epochs=3, step=5, steps_per_epoch=10, message="set aside")
    assert until(lambda: not (watchers() - before))  # the run no longer trains: its watcher ends
    assert classes.snapshot(code, token)["run"]["state"] == "waiting" and rung == [code, code, code]
    # the teacher is back: the page's poll sets the run going again, and a watcher watches it again
    runs.snaps[TEACHERS_RUN] = training(6, losses=7)
    class_runs.polled(TEACHERS_RUN, runs.snaps[TEACHERS_RUN], {})
    assert len(watchers() - before) == 1 and classes.snapshot(code, token)["run"]["version"] == 4
    now[0] = 20.0  # away again, and the run finishes meanwhile: pushed once, and its watcher ends
    runs.snaps[TEACHERS_RUN] = JobSnapshot(epoch=3, epochs=3, checkpoint="m", message="done")
    assert until(lambda: not (watchers() - before))
    assert classes.snapshot(code, token)["run"]["state"] == "finished" and len(rung) == 5


def test_the_watcher_stops_when_the_class_ends_or_watches_a_run_that_does_not_train(away):
    class_runs, runs, rung, now, code, key, _ = away
    before = watchers()
    class_runs.share(code, key, TEACHERS_RUN, NET)
    (watcher,) = watchers() - before
    now[0] = 10.0
    class_runs.classes.end(code, key, NET)
    watcher.join(5.0)
    assert not watcher.is_alive() and class_runs.watched == {} and class_runs.shown == {}
    assert class_runs.watchers == {} and rung == [code]  # nothing pushed to a class that has ended
    code, key = class_runs.classes.start(NET)  # a run that has finished: no watcher at all
    runs.snaps["another run"] = JobSnapshot(epoch=3, epochs=3, checkpoint="m", message="done")
    class_runs.share(code, key, "another run", NET)
    assert watchers() == before and class_runs.watchers == {}


def test_a_watchers_look_older_than_the_teachers_poll_is_not_pushed(away):
    class_runs, runs, rung, now, code, key, token = away
    class_runs.share(code, key, TEACHERS_RUN, NET)
    now[0] = 5.0
    class_runs.polled(TEACHERS_RUN, training(4, losses=5), {})
    class_runs.update(code, training(3, losses=4), {}, read=4.0)  # read before that poll: older
    run = class_runs.classes.snapshot(code, token)["run"]
    assert run["version"] == 2 and run["done"] == 4 and rung == [code, code]


def test_the_teachers_run_is_pushed_to_the_class_as_it_moves_on_and_only_then(shared):
    class_runs, runs, rung, code, key, token = shared
    classes = class_runs.classes
    before = classes.snapshot(code, token)
    assert before["run"] is None
    said = class_runs.share(code.lower(), key, TEACHERS_RUN, NET)
    assert said == f"Class {code} watches this run: its students see its curves and probe on their Train tab."
    state = classes.snapshot(code, token)
    run = state["run"]
    assert state["version"] == before["version"]  # the teacher's view is not drawn again for a run
    assert run["version"] == 1 and run["state"] == "running" and rung == [code]
    assert run["said"] == "The teacher's run is training: epoch 1 of 3, step 2 of 10."
    assert (run["done"], run["total"]) == (2, 30) and run["pictures"] == {"curves": 3, "probe": 1}
    assert TEACHERS_RUN not in json.dumps(state)  # which run it is stays on the server
    class_runs.polled(TEACHERS_RUN, training(2), {})  # polled again, unchanged: nothing pushed
    assert classes.snapshot(code, token)["run"]["version"] == 1 and rung == [code]
    class_runs.polled("run token of someone else", training(3, losses=4), {})
    assert rung == [code]
    class_runs.polled(TEACHERS_RUN, training(3, losses=4), {})
    assert classes.snapshot(code, token)["run"]["version"] == 2 and rung == [code, code]
    classes.end(code, key, NET)  # the class ends: what it kept of the run goes with it
    class_runs.polled(TEACHERS_RUN, training(4, losses=5), {})
    assert class_runs.watched == {} and class_runs.shown == {} and rung == [code, code]


def test_a_student_cannot_share_a_run_with_the_class(shared):
    class_runs, _, rung, code, _, token = shared
    for key in (token, "forged", None):
        with pytest.raises(ClassError, match="Only the class's teacher can do this.") as refused:
            class_runs.share(code, key, "run token of the student", NET)
        assert refused.value.status == 403
    assert class_runs.watched == {} and rung == []


def test_thirty_students_cost_no_drawing_of_their_own(shared, drawings):
    class_runs, runs, _, code, key, token = shared
    class_runs.share(code, key, TEACHERS_RUN, NET)
    students = [class_runs.classes.join(code, NET)[0] for _ in range(29)] + [token]
    pictures = {class_runs.picture({"code": code, "token": t, "picture": "curves"}, NET) for t in students}
    assert drawings == ["curves"] and len(pictures) == 1
    assert pictures.pop().startswith(b"\x89PNG\r\n\x1a\n")
    probe = class_runs.picture({"code": code, "key": key, "picture": "probe"}, NET)  # the teacher's page may ask too
    assert probe.startswith(b"\x89PNG") and drawings == ["curves", "probe"]
    runs.snaps[TEACHERS_RUN] = moved = training(5, losses=6)
    class_runs.picture({"code": code, "token": token, "picture": "curves"}, NET)
    assert drawings == ["curves", "probe"]  # the page was told of no change: it is sent the picture it was told of
    class_runs.polled(TEACHERS_RUN, moved, {})  # pushed, the teacher's page drew nothing: drawn for the class, once
    for t in students:
        class_runs.picture({"code": code, "token": t, "picture": "curves"}, NET)
    assert drawings == ["curves", "probe", "curves"]
    # the teacher's poll drew the run's next curves for the teacher's page: the class is sent that very drawing
    runs.snaps[TEACHERS_RUN] = moved = training(6, losses=7)
    teachers = run_views.curves(moved.history, moved.step_losses, 12)
    class_runs.polled(TEACHERS_RUN, moved, {"curves": teachers})
    assert class_runs.classes.snapshot(code, token)["run"]["pictures"]["curves"] == 7
    sent = {class_runs.picture({"code": code, "token": t, "picture": "curves"}, NET) for t in students}
    assert sent == {ui.class_run.png(teachers)} and drawings == ["curves", "probe", "curves"]
    # a new run of the teacher's, with fewer numbers: the last run's pictures are never sent for it
    runs.snaps[TEACHERS_RUN] = training(1, losses=2)
    class_runs.polled(TEACHERS_RUN, runs.snaps[TEACHERS_RUN], {})
    class_runs.picture({"code": code, "token": token, "picture": "curves"}, NET)
    assert drawings == ["curves", "probe", "curves", "curves"]


def test_a_picture_is_refused_in_words_to_a_stranger_and_before_there_is_one(shared):
    class_runs, runs, _, code, key, token = shared
    with pytest.raises(ClassError, match="The teacher shares no training run with the class.") as none:
        class_runs.picture({"code": code, "token": token, "picture": "curves"}, NET)
    assert none.value.status == 404
    class_runs.share(code, key, TEACHERS_RUN, NET)
    with pytest.raises(ClassError, match="This page is not in the class") as stranger:
        class_runs.picture({"code": code, "token": "forged", "picture": "curves"}, NET)
    assert stranger.value.status == 403
    with pytest.raises(ClassError, match="A class run's picture is curves or probe.") as bad:
        class_runs.picture({"code": code, "token": token, "picture": "../checkpoint"}, NET)
    assert bad.value.status == 400
    runs.snaps[TEACHERS_RUN] = JobSnapshot(running=True, epochs=3, message="preparing")
    with pytest.raises(ClassError, match="has not drawn this picture yet") as early:
        class_runs.picture({"code": code, "token": token, "picture": "probe"}, NET)
    assert early.value.status == 404


@pytest.mark.parametrize(
    ("snap", "said"),
    [
        (JobSnapshot(running=True, epochs=3), "The teacher's run is training: epoch 1 of 3 (its data is loading)."),
        (
            training(4, epoch=1),
            "The teacher's run is training: epoch 2 of 3, step 4 of 10. "
            "After epoch 1: training loss 1.500, validation accuracy 35.0%.",
        ),
        (
            JobSnapshot(epoch=1, epochs=3, message="stopped at epoch 1"),
            "The teacher stopped the run after 1 of 3 epochs.",
        ),
        (
            JobSnapshot(epoch=3, epochs=3, checkpoint="m", message="done"),
            "The teacher's run has finished: 3 of 3 epochs trained.",
        ),
        (JobSnapshot(place=2, epochs=3), "The teacher's run is waiting for a run slot on the server."),
        (
            JobSnapshot(error="/secret/path failed", epochs=3),
            "The teacher's run failed: the teacher's Train tab says why.",
        ),
        (JobSnapshot(), "The teacher's run has not started yet."),
    ],
)
def test_a_student_reads_the_runs_state_in_a_sentence(snap, said):
    assert run_said(snap) == said
    assert run_summary(snap, 12)["said"] == said


def test_only_the_runs_move_is_a_run_event_and_a_page_is_pushed_it_at_once(shared):
    class_runs, runs, _, code, key, token = shared
    classes, bell = class_runs.classes, Bell()

    async def follow() -> list[str]:
        class_runs.ring = bell.ring_soon  # as ui.class_route.class_routes sets it
        stream = class_events(classes, bell, *classes.open_stream(classes.ticket(code, None, token, NET)), 5.0, 30.0)
        events = [await anext(stream)]
        waiting = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0.05)  # the stream waits on its bell
        await asyncio.to_thread(class_runs.share, code, key, TEACHERS_RUN, NET)  # as Gradio's thread would
        events.append(await asyncio.wait_for(waiting, 1.0))  # pushed at once, not at the heartbeat
        return events

    first, moved = asyncio.run(follow())
    assert first.startswith("event: state") and json.loads(first.split("data: ")[1])["run"] is None
    assert moved.startswith("event: run")
    assert json.loads(moved.split("data: ")[1])["said"] == "The teacher's run is training: epoch 1 of 3, step 2 of 10."


def test_the_class_run_route_gives_a_student_the_picture_and_no_way_to_stop_the_run(tiny_checkpoint, tmp_path):
    """A real tiny run the teacher shares from the Train tab's handler: a student reads its pictures on
    the class's route; the student's forged Stop (the Train tab's, with the student's own run token, and a
    class action) is refused, and the teacher's run goes on."""
    server = Server(ModelCatalog(tiny_checkpoint, tmp_path / "runs"))
    data = write_image_folder(tmp_path / "data", per_class=8, size=16)
    code, key = server.classes.start(NET)
    token, _ = server.classes.join(code, NET)
    teacher, student = "b" * 32, "c" * 32
    member = json.dumps({"code": code, "key": key, "join": "/", "qr": []})
    assert h.train_share(server, True, "", None, teacher) is None  # a page in no class: nothing shared
    with pytest.raises(gr.Error, match="This page leads no class"):
        h.train_share(server, False, "", None, teacher)
    with pytest.raises(gr.Error, match="Only the class's teacher can do this."):
        h.train_share(server, False, json.dumps({"code": code, "key": token}), None, student)
    server.runs.start(h.run_visitor_of(teacher, None), model="vit_cifar_nano", data=str(data), epochs=200,
                      batch_size=8, lr=1e-3)  # fmt: skip
    h.train_share(server, False, member, None, teacher)
    app = Starlette(routes=class_routes(server, heartbeat_s=0.05, lasting_s=0.3))
    try:
        with TestClient(app) as client:
            for _ in range(600):  # the probe's first reading is taken before the first step
                if server.runs.snapshot(h.run_visitor_of(teacher, None)).probe:
                    break
                asyncio.run(asyncio.sleep(0.1))
            picture = client.post(f"{CLASS_ROUTE}/run", json={"code": code, "token": token, "picture": "probe"})
            assert picture.status_code == 200 and picture.headers["content-type"] == "image/png"
            assert picture.content.startswith(b"\x89PNG") and picture.headers["cache-control"] == "no-store"
            assert client.post(f"{CLASS_ROUTE}/stop", json={"code": code, "token": token}).status_code == 404
            assert h.train_stop(server, None, student)["status"] == "you have no run to stop"
            with pytest.raises(gr.Error, match="you have no stopped run to continue"):
                h.check_continue(server, None, student)
            assert server.runs.snapshot(h.run_visitor_of(teacher, None)).running  # the teacher's run goes on
            h.train_status(server, h.NOTHING_SHOWN, None, teacher)  # the teacher's poll pushes the run
            assert server.classes.snapshot(code, token)["run"]["state"] == "running"
    finally:
        assert server.runs.stop(h.run_visitor_of(teacher, None))
        assert server.runs._jobs[next(iter(server.runs._jobs))].wait(300)
