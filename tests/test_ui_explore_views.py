"""The "More views" records (explorer.more_views, as ui/explore_views.py adds Gradio to them): what
the tab, its wiring, its handlers and the API page read of each view comes from its one module, so
every test here runs over the registry."""

import gradio as gr
import pytest

from explorer.catalog import BUNDLED, ModelCatalog
from explorer.more_views import relevance
from ui import explore_views as ev
from ui import zerogpu
from ui.common import Server
from ui.explore import ExploreTab, build_explore_tab

VIEWS = list(ev.MORE.values())


@pytest.fixture(scope="module")
def tab(tiny_checkpoint, tmp_path_factory) -> tuple[gr.Blocks, ExploreTab]:
    """The Explore tab alone in a Blocks, and its view."""
    server = Server(ModelCatalog(tiny_checkpoint, tmp_path_factory.mktemp("runs")))
    with gr.Blocks() as demo:
        explore = build_explore_tab(server)
    return demo, explore


@pytest.fixture(scope="module")
def endpoints(tab) -> dict:
    """The API page: each named endpoint's parameters by name."""
    return {
        name: [p["parameter_name"] for p in endpoint["parameters"]]
        for name, endpoint in tab[0].get_api_info()["named_endpoints"].items()
    }


@pytest.mark.parametrize("more", VIEWS, ids=lambda more: more.name)
def test_each_views_endpoint_takes_its_own_controls_and_nothing_else(more, endpoints):
    if more.api_name is None:  # relevance: drawn by its button's /relevance, with the class it explains
        assert more.picture is None
        return
    assert endpoints[f"/{more.api_name}"] == list(more.asked.leaves(ev.KINDS))


@pytest.mark.parametrize("more", VIEWS, ids=lambda more: more.name)
def test_each_record_sorts_itself_into_the_lists_the_tab_reads(more):
    drawn = more.picture is not None
    assert (more.name in ev.DRAWN_VIEWS) is drawn
    assert (more.name in ev.IMAGE_VIEWS) is (drawn and more.image)
    assert (more.name in ev.MODEL_ONLY_VIEWS) is (drawn and not more.image)
    assert (more.name in ev.STYLE_VIEWS) is (drawn and more.image and more.style)
    assert (more.elem_id in ev.FOLLOW_STYLE) is more.style  # the page asks for it after a style change
    assert (more.name in ev.ON_REQUEST) is not drawn and f" {more.listed}" in ev.MORE_LABEL
    assert (more.gpu is None) is (more.task is None)
    assert more.gpu is None or more.gpu in zerogpu.TASKS  # tests/zerogpu_fake.py reaches it


@pytest.mark.parametrize(("kind", "names"), list(ev.VIEWS_OF.items()), ids=lambda x: getattr(x, "__name__", ""))
def test_several_views_controls_lead_with_the_widest_record(kind, names):
    """The records one event takes: the views with the most controls first, so the style and
    rollout's fusion lead the API page's parameters and a new view's own controls come last."""
    controls = next(c for c in ev.CONTROLS if c.kind is kind)
    widths = [len(ev.MORE[p.name].asked.leaves(ev.KINDS)) for p in controls.parameters]
    assert sorted(p.name for p in controls.parameters) == sorted(names) and widths == sorted(widths, reverse=True)


@pytest.mark.parametrize("more", [more for more in VIEWS if more.own_controls], ids=lambda more: more.name)
def test_a_change_of_a_views_own_controls_redraws_it(more, tab):
    """Rollout's fusion, the PCA's layer: each .input of the view's own controls (its `asked` but
    the style's) redraws that view under its named endpoint."""
    demo, explore = tab
    fn = next(fn for fn in demo.fns.values() if fn.api_name == more.api_name)
    assert {target[1] for target in fn.targets} == {"input"}
    assert {target[0] for target in fn.targets} == {getattr(explore, name)._id for name in more.own_controls}
    assert [o._id for o in fn.outputs] == [getattr(explore, more.name)._id]


@pytest.mark.parametrize("more", [more for more in VIEWS if more.task], ids=lambda more: more.name)
def test_a_views_task_is_never_run_on_this_processs_cpu_on_zerogpu_when_it_needs_a_backward_pass(more):
    assert more.gpu.backward is more.task.backward and more.gpu.what == more.task.what
    assert relevance.TASK.backward  # a backward pass: the one task that must say so


@pytest.mark.parametrize("more", VIEWS, ids=lambda more: more.name)
def test_a_record_lays_out_its_tab_hint_controls_then_picture(more, tiny_checkpoint, tmp_path):
    start = ModelCatalog(tiny_checkpoint, tmp_path).get(BUNDLED)
    with gr.Blocks():
        parts = more.layout(start)
    assert list(parts)[-1] == more.name and parts[more.name].elem_id == more.elem_id
    assert more.controls is not None or list(parts) == [more.name]


@pytest.mark.parametrize("more", VIEWS, ids=lambda more: more.name)
def test_a_new_model_sets_anew_each_control_a_view_renews_and_draws_a_view_of_the_model_alone(
    more, tab, tiny_checkpoint, tmp_path
):
    """/load_model's outputs come from the registry: the PCA's layer and relevance's classes were
    listed by hand beside it, so a new view's control of the model's layers kept the old model's."""
    demo, explore = tab
    fn = next(fn for fn in demo.fns.values() if fn.api_name == "load_model")
    switched = [o._id for o in fn.outputs]
    for name in (*more.renewed, *((more.name,) if more.name in ev.MODEL_ONLY_VIEWS else ())):
        assert getattr(explore, name)._id in switched, name
    loaded = ModelCatalog(tiny_checkpoint, tmp_path).get(BUNDLED)
    for name, renew in more.renewed.items():
        assert renew(loaded).__class__ is getattr(explore, name).__class__, name  # an update of that very control
    assert (more.name in ev.MODEL_SWITCHED) is (more.name in ev.MODEL_ONLY_VIEWS)


def test_on_zerogpu_the_pca_tab_says_each_change_is_a_gpu_call_of_its_own(monkeypatch):
    """Issue 60: docs/space.md said sliders never ask the GPU, while the PCA's layer slider is an
    8 s GPU call; on ZeroGPU its hint says so, and off ZeroGPU it says nothing of the kind."""
    from explorer import more_views

    pca = more_views.REGISTRY["pca"]
    assert "GPU call" not in ev.MoreTab.of(pca).hint
    monkeypatch.setattr(ev, "ON_ZEROGPU", True)
    assert (
        ev.MoreTab.of(pca).hint.endswith(ev.ON_GPU_NOTES["pca"])
        and "charged to your daily GPU time" in ev.ON_GPU_NOTES["pca"]
    )
