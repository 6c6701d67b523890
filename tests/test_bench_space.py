"""bench/space.py's cheap pieces (the rehearsal itself takes minutes: python -m bench.space)."""

import sys
from pathlib import Path

import pytest
from zerogpu_standin import serve, visitor_token

import ui
import vit
from bench.space import (
    IMAGE,
    LESSON_1,
    NO_DRIVER,
    OPENING,
    STUDENTS,
    TEACHERS_QUOTA,
    ForwardPasses,
    GpuCalls,
    Lesson,
    StepFailed,
    Steps,
    class_ends,
    class_gallery,
    class_spotlight,
    class_steps,
    class_students_follow,
    class_teacher_leads,
    component_values,
    counted,
    explore,
    lesson_compare,
    lesson_norms,
    no_traceback,
    opening_models,
    out_of_gpu_time,
    refused_in_plain_words,
    tiny_folder,
    torch_pair,
    workers_failed_and_cpu_answered,
)
from explorer.catalog import ModelCatalog
from ui.zerogpu import CALL_LINE, COUNT_CALLS


def test_the_rehearsal_reads_what_every_tab_opens_on_from_the_page(tiny_checkpoint, tmp_path, monkeypatch):
    monkeypatch.setattr(vit, "is_pretrained_cached", lambda name: False)
    demo = ui.build_demo(ModelCatalog(tiny_checkpoint, tmp_path))
    values = component_values(demo.get_config_file())
    assert set(OPENING) <= set(values)
    assert values["Model"] == "bundled" and values[LESSON_1] == ["bundled"]
    assert values["Layer (1 = first; up to the shallower model's depth)"] == 6
    with pytest.raises(StepFailed, match="the page opens on .*'Model': 'bundled'"):
        opening_models(values)  # offline, nothing preloaded: not what a Space must open on


def test_steps_print_one_line_each_and_stop_at_the_first_failure(capsys):
    steps = Steps()
    assert steps.run("first", lambda: "fine") == "fine"
    with pytest.raises(StepFailed):
        steps.run("second", lambda: 1 / 0)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("[ ok ] first (") and out[0].endswith(": fine")
    assert out[1].startswith("[FAIL] second (") and out[1].endswith("ZeroDivisionError: division by zero")
    assert steps.verdict().startswith("VERDICT: FAIL at 'second' after 2 steps")


def test_the_rehearsal_reads_what_the_served_app_answers(client):
    """The steps' client code against the real API (the app serving the tiny model): the
    rehearsal itself is too slow for CI, and its reading of /analyze once broke unseen when
    the pictures began to carry alt texts."""
    from gradio_client import handle_file

    image = handle_file(str(IMAGE))
    assert "top class" in explore(client, "bundled")
    assert lesson_compare(client, image, ["bundled"]) == "1 models side by side"
    values = {
        "Layer (1 = first; up to the shallower model's depth)": 1,
        "First row: a model with registers": "bundled",
        "Second row: a model without": "bundled",
    }
    assert lesson_norms(client, image, values) == "layer 1 of bundled and bundled: 2 norm tables"


def test_the_zerogpu_rehearsal_tells_failed_workers_and_refusals_from_anything_else(tmp_path):
    """bench.space --zerogpu's checks, against the device API stand-in: every worker failing here
    is expected (no GPU), a traceback that is not one of theirs is not, and a quota-out step sees
    only refused requests."""
    log = tmp_path / "app.log"
    log.write_text(f"built in 1.0 s\nTraceback (most recent call last):\n  ...\n{NO_DRIVER}. Please check\n")
    assert no_traceback(log, workers_failed=1).endswith("1 tracebacks, each a GPU worker finding no CUDA driver")
    with pytest.raises(StepFailed, match="1 tracebacks in the app's log, 0 GPU workers failed"):
        no_traceback(log)
    log.write_text(log.read_text() + "Traceback (most recent call last):\nValueError: boom\n")
    with pytest.raises(StepFailed, match="2 tracebacks"):
        no_traceback(log, workers_failed=1)

    with serve() as gpu:
        with pytest.raises(StepFailed, match="expected each /schedule to start a worker"):
            workers_failed_and_cpu_answered(gpu)  # no GPU call at all: nothing was rehearsed
        gpu.requests += [("/schedule", {}), ("/allow", {}), ("/release", {"fail": "true"})]
        assert workers_failed_and_cpu_answered(gpu).startswith("1 GPU calls")
        gpu.requests.append(("/schedule", {}))
        with pytest.raises(StepFailed):
            workers_failed_and_cpu_answered(gpu)  # a call that never reached a worker

        def visit() -> str:
            assert gpu.exceeded
            gpu.requests.append(("/schedule", {}))
            return "ran on the CPU"

        assert out_of_gpu_time(gpu, visit) == "1 refused; ran on the CPU" and not gpu.exceeded
        with pytest.raises(StepFailed, match="expected only refused /schedule requests, got"):
            out_of_gpu_time(gpu, lambda: "asked nothing")


def test_the_venv_step_names_a_torch_and_torchvision_that_do_not_load_together(tmp_path):
    assert torch_pair(Path(sys.executable)).endswith("load together")
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'RuntimeError: operator torchvision::nms does not exist' >&2\nexit 1\n")
    broken.chmod(0o755)
    with pytest.raises(StepFailed, match="do not load together: .* operator torchvision::nms does not exist"):
        torch_pair(broken)


def test_a_refusal_counts_only_in_the_apps_own_words():
    from gradio_client.exceptions import AppError

    def refused(message: str):
        def visit():
            raise AppError(message)

        return visit

    plain = "This lesson needs about 9 s of GPU time and this Space has used its GPU time for now: log in ..."
    assert refused_in_plain_words(refused(plain)) == plain
    with pytest.raises(StepFailed, match="not the plain message"):
        refused_in_plain_words(refused("ZeroGPU worker error: RuntimeError"))
    with pytest.raises(StepFailed, match="should have been refused"):
        refused_in_plain_words(lambda: "a result")


def _rehearsal_that_fills(steps, work, weights, reuse_venv, zerogpu=False):
    """What a rehearsal leaves in its work folder, in miniature, then a failed step."""
    (work / "venv" / "bin").mkdir(parents=True)
    (work / "venv" / "bin" / "python").write_text("a venv")
    (work / "hf-home").mkdir()
    (work / "app.log").write_text("the app's log")
    (work / "app.log.old").symlink_to(work / "app.log")
    steps.run("a step that fails", lambda: 1 / 0)


@pytest.mark.parametrize("given", [False, True])
def test_a_temporary_work_folder_is_emptied_but_for_the_apps_log(given, tmp_path, monkeypatch, capsys):
    """Five kept rehearsals (11 GB each) once filled the disk the CI installs on; a folder the
    user named with --work is theirs, and kept whole."""
    import bench.space

    monkeypatch.setattr(bench.space, "rehearse", _rehearsal_that_fills)
    monkeypatch.setattr(bench.space.tempfile, "tempdir", str(tmp_path))
    argv = ["--work", str(tmp_path / "mine")] if given else []
    assert bench.space.main(argv) == 1  # the failed step is still the verdict
    (work,) = tmp_path.iterdir()
    left = sorted(p.name for p in work.iterdir())
    assert left == (["app.log", "app.log.old", "hf-home", "venv"] if given else ["app.log"])
    assert (work / "app.log").read_text() == "the app's log"
    assert ("emptied but for the app's log" in capsys.readouterr().out) is not given


def test_the_class_steps_lead_a_class_on_the_served_app_and_count_its_gpu_calls(server, tmp_path):
    """bench.space --zerogpu's class (issue 59) against the real routes, the app serving the tiny
    model off ZeroGPU: the class is led to its end, and the steps that must each cost one GPU
    call say that none was asked for."""
    with serve() as gpu:
        calls = GpuCalls(gpu)
        gpu.requests += [("/schedule", {}), ("/allow", {}), ("/schedule", {"token": visitor_token("teacher")})]
        assert counted(calls, 1, None, "anything") == "1 GPU call (teacher's quota)"  # only what came after `before`
        with pytest.raises(StepFailed, match="the teacher's new image made 2 GPU calls, not 0"):
            counted(calls, 0, 0, "the teacher's new image")
        assert counted(calls, 0, 2, "both") == "2 GPU calls (teacher's quota, the Space's quota)"
        with pytest.raises(StepFailed, match="the gallery was charged to teacher's quota, the Space's quota, not only"):
            counted(calls, 0, 2, "the gallery", TEACHERS_QUOTA)  # issue 59: a gallery's call went out anonymous
        assert counted(calls, 1, 1, "the gallery", TEACHERS_QUOTA) == "1 GPU call (teacher's quota)"
        gpu.requests.clear()
        lesson = Lesson(server, tmp_path, "bundled")
        try:
            with pytest.raises(StepFailed, match="the teacher's new image made 0 GPU calls, not 1"):
                class_teacher_leads(lesson, calls)
            assert class_students_follow(lesson, calls).endswith("0 GPU calls")
            assert all(f.fetched for f in lesson.room.followers) and len(lesson.room.followers) == STUDENTS
            with pytest.raises(StepFailed, match="showing 2 students' pictures made 0 GPU calls, not 1"):
                class_gallery(lesson, calls)
            with pytest.raises(StepFailed, match="the spotlit picture's analysis made 0 GPU calls, not 1"):
                class_spotlight(lesson, calls)
            assert class_ends(lesson, calls) == f"{STUDENTS} students' streams told; 0 GPU calls"
        finally:
            lesson.close()


def test_a_cpu_space_class_counts_the_forward_passes_its_log_says(tiny_checkpoint, tmp_path_factory, tmp_path):
    """bench.space's class steps as a CPU Space runs them: the app's log counts each model call
    (COUNT_CALLS): one for the teacher's new image, the gallery's batch and a spotlight, none for
    the students' pages, and Train together trains here, its students reading both pictures."""
    from conftest import app_server

    folder = tiny_folder(tmp_path / "data")
    with app_server(tiny_checkpoint, tmp_path_factory, "--data-folder", str(folder), env={COUNT_CALLS: "1"}) as url:
        # app_server's log, the newest: what ForwardPasses reads as bench.space reads the Space's
        log = max(tmp_path_factory.getbasetemp().glob("log*/app.log"), key=lambda p: p.stat().st_mtime)
        steps = Steps()
        class_steps(steps, url, tmp_path, ForwardPasses(log), zerogpu=False, model_key="bundled")
    assert [ok for _, ok in steps.done] == [True] * 6
    out = [line for line in log.read_text().splitlines() if line.startswith(CALL_LINE)]
    assert out == [f"{CALL_LINE}forward_maps", f"{CALL_LINE}gallery_maps", f"{CALL_LINE}forward_maps"]


def test_forward_passes_are_the_model_calls_the_log_says(tmp_path):
    log = tmp_path / "app.log"
    log.write_text(f"started\n{CALL_LINE}forward_maps\nsomething else\n")
    calls = ForwardPasses(log)
    before = calls.mark()
    log.write_text(log.read_text() + f"{CALL_LINE}gallery_maps\n")
    assert before == 1 and counted(calls, before, 1, "the gallery") == "1 forward pass (gallery_maps)"
    with pytest.raises(StepFailed, match="the students made 1 forward pass, not 0"):
        counted(calls, before, 0, "the students")
