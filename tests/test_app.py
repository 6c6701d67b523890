"""app.py: the command line."""

import pytest

import app


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


def test_the_live_stream_limits_come_from_the_command_line(capsys):
    from ui.settings import ServerSettings

    settings = ServerSettings.from_args(app.parse_args(["--live-streams", "2", "--live-seconds", "300"]))
    assert (settings.live_streams, settings.live_turn_s) == (2, 300.0)
    assert ServerSettings.from_args(app.parse_args([])).live_streams == 1  # a free Space's two vCPUs
    for bad in (["--live-streams", "0"], ["--live-seconds", "nan"]):
        with pytest.raises(SystemExit, match="2"):
            app.parse_args(bad)
        assert "must be a number of at least 1" in capsys.readouterr().err
