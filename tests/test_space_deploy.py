"""The README's deploy command (issue 44, item 6): what its `hf upload` sends
(bench.space.deploy_files, huggingface_hub's own selection) is what a Space needs and nothing
else, the app starts and analyses an image from exactly those files, and every binary among them
shows itself as binary in the sample the Hub is sent (the first 512 bytes, `lfs.UploadInfo`),
from which the Hub's preupload step stores it in Xet/LFS."""

from __future__ import annotations

import shutil
import subprocess

from conftest import REPO, app_server
from huggingface_hub.lfs import UploadInfo

from bench.space import deploy_commands, deploy_files, option
from explorer.catalog import BUNDLED_PATH


def tracked() -> set[str]:
    return set(subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split())


def test_the_deploy_command_makes_a_zerogpu_gradio_space_and_uploads_this_folder_to_it():
    create, upload = deploy_commands()
    assert create[:3] == ["hf", "repos", "create"] and upload[:2] == ["hf", "upload"]
    assert create[3] == upload[2]  # the same Space
    assert option(create, "--type") == ["space"] and option(create, "--space-sdk") == ["gradio"]
    assert option(create, "--flavor") == ["zero-a10g"] and "--exist-ok" in create  # run again: uploads again
    assert upload[3:5] == [".", "."] and option(upload, "--repo-type") == ["space"]


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
