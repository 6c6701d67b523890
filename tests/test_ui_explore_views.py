"""The "More views" records (ui/explore_views.py): what the tab, its wiring and its handlers read
of each view comes from its one record."""

import gradio as gr

from explorer.catalog import BUNDLED, ModelCatalog
from ui import explore_views as ev
from ui import zerogpu


def test_the_lists_of_views_are_the_records_flags_in_the_tabs_order():
    assert ev.MORE_VIEWS == ("overview", "rollout", "distance", "similarity", "relevance", "pca", "logit_lens")
    assert ev.DRAWN_VIEWS == tuple(name for name in ev.MORE_VIEWS if name != "relevance")  # it has a button
    assert ev.IMAGE_VIEWS == ("overview", "rollout", "distance", "pca", "logit_lens")  # /analyze's outputs, in order
    assert ev.MODEL_ONLY_VIEWS == ("similarity",)
    assert ev.STYLE_VIEWS == ("overview", "rollout")  # /restyle's outputs after the head maps
    assert [name for name, view in ev.MORE.items() if view.heavy] == ["pca", "logit_lens"]
    assert ev.MORE_LABEL == (
        "More views: layers x heads, rollout, distance, position embeddings, relevance, patch features (PCA), "
        "logit lens"
    )


def test_a_views_task_is_one_zerogpu_decorates():
    tasks = [view.task for view in ev.MORE.values() if view.task is not None]
    assert tasks == [ev.RELEVANCE, ev.PATCH_PCA, ev.LOGIT_LENS]
    assert all(task in zerogpu.TASKS for task in tasks)  # tests/zerogpu_fake.py reaches them
    assert ev.RELEVANCE.backward and not ev.LOGIT_LENS.backward  # never on this process's CPU on ZeroGPU


def test_a_record_lays_out_its_tab_hint_controls_then_picture(tiny_checkpoint, tmp_path):
    start = ModelCatalog(tiny_checkpoint, tmp_path).get(BUNDLED)
    with gr.Blocks():
        pca = ev.MORE["pca"].layout(start)
        lens = ev.MORE["logit_lens"].layout(start)
    assert list(pca) == ["pca_layer", "pca_examples", "pca_background", "pca"]
    assert pca["pca_layer"].maximum == start.model.config.depth
    assert list(lens) == ["logit_lens"] and lens["logit_lens"].elem_id == "logit-lens"
