"""app.py: the command line."""

import pytest
from hub_standin import hub  # noqa: F401 - the fixture

import app
from ui.settings import start_model


def test_defaults_serve_the_bundled_model_locally(monkeypatch):
    for name in ("GRADIO_SERVER_NAME", "GRADIO_SERVER_PORT", "VIT_EXPLORER_MODEL", "VIT_EXPLORER_TORCH_THREADS"):
        monkeypatch.delenv(name, raising=False)
    args = app.parse_args([])
    assert (args.host, args.port, args.model, args.torch_threads) == ("127.0.0.1", 7860, None, 1)


def test_a_missing_model_file_is_refused_with_its_name(tmp_path, capsys):
    with pytest.raises(SystemExit):
        app.parse_args(["--model", str(tmp_path / "absent.safetensors")])
    assert "absent.safetensors: no such file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"hello, not weights", "notes.safetensors is not a readable safetensors file"), (b"", "not a readable")],
)
def test_a_file_that_is_not_weights_is_refused_without_a_traceback(tmp_path, capsys, content, message):
    path = tmp_path / "notes.safetensors"
    path.write_bytes(content)
    with pytest.raises(SystemExit, match="2"):
        app.parse_args(["--model", str(path)])
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_public_mode_is_on_in_a_space(monkeypatch):
    monkeypatch.setenv("SPACE_ID", "someone/vit-explorer")
    assert app.parse_args([]).public
    monkeypatch.delenv("SPACE_ID")
    assert not app.parse_args([]).public and app.parse_args(["--public"]).public


def test_a_space_starts_on_an_imagenet_model_and_elsewhere_on_the_bundled_one(monkeypatch):
    monkeypatch.delenv("VIT_EXPLORER_MODEL", raising=False)
    monkeypatch.setenv("SPACE_ID", "someone/vit-explorer")
    assert app.parse_args([]).model == "deit_small_patch16_224.fb_in1k"
    assert start_model(app.parse_args([]).model) == (None, "pretrained:deit_small_patch16_224.fb_in1k")
    assert start_model(app.parse_args(["--model", "bundled"]).model) == (None, "bundled")  # the operator's choice
    monkeypatch.delenv("SPACE_ID")
    assert app.parse_args([]).model is None and start_model(None) == (None, "bundled")
    args = app.parse_args(["--model", "vit_small_patch16_224.dino"])  # a pretrained name anywhere, not downloaded yet
    assert start_model(args.model) == (None, "pretrained:vit_small_patch16_224.dino")


def test_a_checkpoint_file_is_shown_as_the_bundled_model(tiny_checkpoint):
    assert start_model(str(tiny_checkpoint)) == (str(tiny_checkpoint), "bundled")


def test_a_model_that_is_neither_a_file_nor_a_pretrained_name_is_refused(capsys):
    with pytest.raises(SystemExit):
        app.parse_args(["--model", "deit_smal_patch16_224"])
    assert "no such file, and not a pretrained name" in capsys.readouterr().err


def test_the_live_stream_limits_come_from_the_command_line(capsys):
    from ui.settings import ServerSettings

    settings = ServerSettings.from_args(app.parse_args(["--live-streams", "2", "--live-seconds", "300"]))
    assert (settings.live_streams, settings.live_turn_s) == (2, 300.0)
    assert ServerSettings.from_args(app.parse_args([])).live_streams == 1  # a free Space's two vCPUs
    for bad in (["--live-streams", "0"], ["--live-seconds", "nan"]):
        with pytest.raises(SystemExit, match="2"):
            app.parse_args(bad)
        assert "must be a number of at least 1" in capsys.readouterr().err


def test_a_training_runs_turn_comes_from_the_command_line(capsys):
    """How long a run keeps its slot without its page, and at most (issue 56): 2 and 30 minutes."""
    from ui.settings import ServerSettings

    settings = ServerSettings.from_args(app.parse_args(["--train-idle-s", "30", "--train-limit-s", "600"]))
    assert (settings.train.idle_s, settings.train.time_limit_s) == (30.0, 600.0)
    default = ServerSettings.from_args(app.parse_args([])).train
    assert (default.idle_s, default.time_limit_s) == (120.0, 1800.0)
    with pytest.raises(SystemExit, match="2"):
        app.parse_args(["--train-limit-s", "0"])
    assert "must be a number of at least 1" in capsys.readouterr().err


def test_a_space_names_its_training_folder_in_a_variable(monkeypatch, tmp_path):
    """A Space runs `python app.py` with no arguments: `--data-folder` is also VIT_EXPLORER_DATA_FOLDER."""
    from ui.settings import ServerSettings

    monkeypatch.delenv("VIT_EXPLORER_DATA_FOLDER", raising=False)
    assert ServerSettings.from_args(app.parse_args([])).data_folder is None
    monkeypatch.setenv("VIT_EXPLORER_DATA_FOLDER", str(tmp_path))
    assert ServerSettings.from_args(app.parse_args([])).data_folder == tmp_path.resolve()
    assert app.parse_args(["--data-folder", "elsewhere"]).data_folder == "elsewhere"


def test_the_readme_tells_a_teacher_how_to_reach_the_app_from_the_class_first():
    """Issue 61: read as a teacher, the README never mentioned --present, phones, or how students'
    devices reach a laptop's app, and its first screen was configuration. Its "Teaching with it"
    section comes right after the title, before "Two commands", with flags the app really has."""
    from pathlib import Path

    root = Path(app.__file__).resolve().parent
    readme = (root / "README.md").read_text(encoding="utf-8").split("---\n", 2)[2]  # after the front matter
    sections = [line for line in readme.splitlines() if line.startswith("## ")]
    assert sections[:2] == ["## Teaching with it", "## Two commands"]
    teaching = readme.split("## Teaching with it", 1)[1].split("## Two commands", 1)[0]
    command = next(line for line in teaching.splitlines() if line.startswith(".venv/bin/python app.py"))
    args = app.parse_args(command.split()[2:])  # the command as typed parses
    assert args.present and args.host == "0.0.0.0" and args.port == 7860
    for said in ("phones", ":7860", "firewall", "same network", "docs/space.md", "--port"):
        assert said in teaching, said
    picture = teaching.split("![", 1)[1].split("](", 1)[1].split(")", 1)[0]  # the screenshot
    assert picture == "docs/app-present.png" and (root / picture).is_file()


def test_a_space_starts_without_weights_its_build_could_not_preload(hub, tmp_path, tiny_checkpoint):  # noqa: F811
    """A preload that is missing failed the Space's build (issue 60): weights not preloaded are
    downloaded at start, and when the Hub lacks them the app starts all the same, saying why."""
    import timm
    from conftest import randomise_

    from explorer.catalog import ModelCatalog

    name = "deit_tiny_patch16_224.fb_in1k"  # a small stand-in for CLIP B/16, which the Hub serves here
    timm.models.save_for_hf(randomise_(timm.create_model(name)), str(tmp_path / "w"), safe_serialization=True)
    hub.publish_folder(f"timm/{name}", tmp_path / "w")
    catalog = ModelCatalog(tiny_checkpoint, tmp_path / "runs", scan_runs=False)
    fetched = app.fetch_not_preloaded(catalog, (name, "vit_base_patch16_clip_224.openai"))
    assert fetched[0] == f"{name} (not preloaded) downloaded at start" and catalog.available(f"pretrained:{name}")
    assert fetched[1].startswith(
        "vit_base_patch16_clip_224.openai (not preloaded) cannot be had, starting without it: "
        "vit_base_patch16_clip_224.openai cannot be downloaded: the Hugging Face Hub does not have it"
    )


def test_the_classes_a_server_runs_come_from_the_command_line():
    from ui.classroom import ClassLimits
    from ui.settings import ServerSettings

    assert ServerSettings.from_args(app.parse_args(["--max-classes", "3"])).classes.classes == 3
    assert ServerSettings.from_args(app.parse_args([])).classes == ClassLimits()  # 8 classes of 60
    assert ServerSettings.from_args(app.parse_args(["--max-classes", "0"])).classes.classes == 0  # none
