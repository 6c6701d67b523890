"""The Train tab's pictures of a run (explorer.run_views): their alt texts."""

import torch

from explorer import run_views


def test_a_long_runs_probe_alt_text_names_the_epochs_the_picture_shows():
    maps = torch.rand(2, 3, 2, 2) / 8
    long_run = run_views.probe_alt([(e, maps) for e in range(201)])
    assert "after each of 200 epochs" in long_run
    assert "the picture shows before training and after epochs 9, " in long_run and long_run.endswith(" and 200")
    short = run_views.probe_alt([(e, maps) for e in range(3)])
    assert "the picture shows" not in short  # every epoch is on it
