"""bench/space.py's cheap pieces (the rehearsal itself takes minutes: python -m bench.space)."""

import pytest

import ui
import vit
from bench.space import (
    IMAGE,
    LESSON_1,
    OPENING,
    StepFailed,
    Steps,
    component_values,
    explore,
    lesson_compare,
    lesson_norms,
    opening_models,
)
from explorer.catalog import ModelCatalog


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
