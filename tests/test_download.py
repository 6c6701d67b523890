"""`python -m vit.download NAME...`: fills the cache through the Hub stand-in, prints progress,
one line per failure and exit status 1 if any name failed."""

from __future__ import annotations

import timm
from conftest import randomise_
from hub_standin import hub  # noqa: F401 - the fixture

import vit
from vit.download import main

NAME = "vit_tiny_patch16_224.augreg_in21k_ft_in1k"


def test_download_fills_the_cache_and_reports_bytes(hub, tmp_path, capsys) -> None:  # noqa: F811
    model = randomise_(timm.create_model(NAME, pretrained=False))
    timm.models.save_for_hf(model, str(tmp_path / "weights"), safe_serialization=True)
    hub.publish_folder(f"timm/{NAME}", tmp_path / "weights")
    assert main([NAME]) == 0
    out, err = capsys.readouterr()
    assert out == f"{NAME}: cached\n"
    assert "MiB" in err and "(100%)" in err
    assert vit.is_pretrained_cached(NAME)
    assert main([NAME]) == 0
    assert capsys.readouterr().out == f"{NAME}: already cached\n"


def test_each_failure_is_one_line_and_the_exit_status_is_1(hub, capsys) -> None:  # noqa: F811
    assert main(["nope", "facebook/dinov2-small"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "nope: not a pretrained name (see python -m vit.download --help)"
    assert lines[1].startswith("facebook/dinov2-small: cannot load facebook/dinov2-small: the Hugging Face Hub does ")
    assert len(lines) == 2
