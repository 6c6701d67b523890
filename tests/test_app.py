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
