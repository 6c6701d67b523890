"""The README's deploy command (issue 44, item 6; issue 56, item 6): what `python -m bench.deploy`
sends (bench.deploy.app_files, which bench.space.deploy_files and its rehearsal copy) is the app's
files git tracks and nothing else, whatever lies beside them in a working copy; the app starts and
analyses an image from exactly those files, and every binary among them shows itself as binary in
the sample the Hub is sent (the first 512 bytes, `lfs.UploadInfo`), from which the Hub's
preupload step stores it in Xet/LFS. No test contacts the Hub."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, app_server
from huggingface_hub.lfs import UploadInfo

import bench.deploy
from bench.space import deploy_files
from explorer.catalog import BUNDLED_PATH

# What a working copy may hold beside the app's files that must never reach a public Space (issue 56).
PLANTED = {
    "training/.venv/lib/python3.11/site-packages/secret_pkg/__init__.py": b"TOKEN = 'hf_xxx'\n",
    "ui/.hf_token.py": b"HF_TOKEN = 'hf_notforthespace'\n",
    "ui/local_settings.py": b"ADMIN_PASSWORD = 'teacher'\n",
    "vit/notes/scratch.py": b"print('half-finished idea')\n",
    "examples/cifar10/private-student-photo.jpg": b"\xff\xd8\xff\xe0 a student's face",
    "explorer/__pycache__/views.cpython-311.pyc": b"\0compiled",
}


def tracked() -> set[str]:
    return set(subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split())


def deploy_command() -> list[str]:
    """README's deploy block: one command."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = next(b for b in text.split("```bash\n")[1:] if "bench.deploy" in b.split("```")[0]).split("```")[0]
    return shlex.split(block.replace("\\\n", " "))


@pytest.fixture(scope="module")
def working_copy(tmp_path_factory) -> Path:
    """A clone of this repository's last commit with PLANTED files beside the app's, untracked."""
    copy = tmp_path_factory.mktemp("working-copy") / "repo"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPO), str(copy)], check=True)
    for name, content in PLANTED.items():
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_bytes(content)
    return copy


def test_the_deploy_command_is_the_deploy_script_on_your_space():
    assert deploy_command() == ["python", "-m", "bench.deploy", "YOU/vit-explorer"]
    assert (bench.deploy.SPACE_SDK, bench.deploy.SPACE_HARDWARE) == ("gradio", "zero-a10g")


def test_it_uploads_every_file_the_app_is_made_of_and_nothing_else():
    """This checkout holds a venv, caches, test outputs: none of it goes, nor tests, benchmarks or docs."""
    sent = set(deploy_files())
    assert sent <= tracked()  # never a file git does not track (a teacher's runs/, .venv, __pycache__)
    modules = {f for f in tracked() if f.split("/")[0] in ("vit", "explorer", "ui", "training") and "." in f}
    assert modules <= sent  # a module imported later (a Train run's) is there too
    assert {"app.py", "README.md", "requirements.txt", BUNDLED_PATH.relative_to(REPO).as_posix()} <= sent
    assert [f for f in sent if f.split("/")[0] in ("tests", "bench", "docs", ".ci")] == []


def test_every_binary_it_uploads_shows_as_binary_to_the_hub():
    """The Hub refuses binaries kept as plain git blobs; `hf upload` asks its preupload step per
    file, sending the file's first 512 bytes, so each binary must show as one in them."""
    binary = {f for f in deploy_files() if b"\0" in (REPO / f).read_bytes()[:8000]}  # git's own test
    assert BUNDLED_PATH.relative_to(REPO).as_posix() in binary and any(f.endswith(".jpg") for f in binary)
    for name in binary:
        assert b"\0" in UploadInfo.from_path(str(REPO / name)).sample, name
    for name in set(deploy_files()) - binary:
        (REPO / name).read_bytes().decode("utf-8")  # the rest is text a git blob may hold


def test_the_app_starts_and_analyses_an_example_from_exactly_the_uploaded_files(tiny_checkpoint, tmp_path_factory):
    from app_helpers import analyze
    from gradio_client import Client

    space = tmp_path_factory.mktemp("space")
    for name in deploy_files():
        (space / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, space / name)
    program = (str(space / "app.py"),)  # on the bundled model, which the copy holds
    with app_server(tiny_checkpoint, tmp_path_factory, "--model", "bundled", program=program, cwd=space) as url:
        result = analyze(Client(url, verbose=False), space / "examples/cifar10/cat.jpg")
    assert result[2]["label"]  # the top class: the model, the example and every view's code were there


def test_what_git_does_not_track_never_goes_from_a_working_copy(working_copy, capsys):
    """Issue 56: `hf upload --include "ui/*.py"` sent every planted file; the deploy sends none."""
    assert bench.deploy.main(["YOU/vit-explorer", "--dry-run", "--folder", str(working_copy)]) == 0
    listed = capsys.readouterr().out.split()
    assert listed == sorted(deploy_files(working_copy)) and set(listed) <= tracked()
    assert set(listed).isdisjoint(PLANTED)
    assert "ui/explore.py" in listed and "examples/cifar10/cat.jpg" in listed  # the app itself still goes
    # The globs README gave `hf upload` before would have sent them (huggingface_hub's `*` crosses `/`)
    from huggingface_hub.utils import DEFAULT_IGNORE_PATTERNS, filter_repo_objects

    files = [p.relative_to(working_copy).as_posix() for p in working_copy.rglob("*") if p.is_file()]
    globs = ["vit/*.py", "explorer/*.py", "ui/*.py", "training/*.py", "examples/cifar10/*.jpg"]
    before = set(filter_repo_objects(files, allow_patterns=globs, ignore_patterns=DEFAULT_IGNORE_PATTERNS))
    assert {name for name in PLANTED if name.endswith((".py", ".jpg"))} <= before


class StandInHub:
    """huggingface_hub's HfApi as the deploy calls it, recording instead of contacting the Hub."""

    calls: list[tuple[str, tuple, dict]] = []

    def create_repo(self, *args, **kwargs):
        self.calls.append(("create_repo", args, kwargs))

    def create_commit(self, *args, **kwargs):
        self.calls.append(("create_commit", args, kwargs))
        return type("CommitInfo", (), {"commit_url": "https://huggingface.co/spaces/YOU/vit-explorer/commit/0"})()


def test_the_one_commit_holds_exactly_the_listed_files_from_the_working_copy(working_copy, monkeypatch, capsys):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", StandInHub)
    monkeypatch.setattr(StandInHub, "calls", [])
    assert bench.deploy.main(["YOU/vit-explorer", "--folder", str(working_copy)]) == 0
    (create, args, kwargs), (commit, (space, operations), options) = StandInHub.calls
    assert create == "create_repo" and args == ("YOU/vit-explorer",) and kwargs["exist_ok"]
    assert (kwargs["repo_type"], kwargs["space_sdk"], kwargs["space_hardware"]) == ("space", "gradio", "zero-a10g")
    assert commit == "create_commit" and space == "YOU/vit-explorer" and options["repo_type"] == "space"
    sent = {op.path_in_repo: Path(op.path_or_fileobj) for op in operations}
    assert sorted(sent) == deploy_files(working_copy) and set(sent).isdisjoint(PLANTED)
    assert all(path == working_copy / name for name, path in sent.items())  # each file from the copy, at its own path
    assert capsys.readouterr().out.startswith(f"{len(sent)} files to YOU/vit-explorer: https://")


def test_a_tracked_file_changed_since_the_last_commit_stops_the_deploy(working_copy, monkeypatch, capsys):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", StandInHub)
    monkeypatch.setattr(StandInHub, "calls", [])
    settings = working_copy / "ui/settings.py"
    kept = settings.read_bytes()
    settings.write_bytes(kept + b"HF_TOKEN = 'hf_pasted_here_for_a_minute'\n")
    try:
        assert bench.deploy.main(["YOU/vit-explorer", "--folder", str(working_copy)]) == 2
    finally:
        settings.write_bytes(kept)
    assert StandInHub.calls == []  # nothing made, nothing sent
    assert "changed since the last commit: ui/settings.py" in capsys.readouterr().err
