"""bound(): a handler tied to its tab keeps the signature and hints Gradio reads, takes values
made of several controls as one, and returns its result by field name to the tab's components."""

import inspect
from dataclasses import dataclass

import gradio as gr
import pytest
from gradio import utils

from ui.binding import Controls, TabComponents, bound


def handler(tab: object, catalog: object, layer: float, evt: gr.SelectData) -> dict:
    """Docstring for the API page."""
    return {"view": tab, "catalog": catalog, "layer": layer, "evt": evt}


def test_bound_handler_hides_its_context_and_keeps_names_hints_and_docs():
    f = bound(handler, "V", "C")
    assert list(inspect.signature(f).parameters) == ["layer", "evt"]
    assert utils.get_type_hints(f)["evt"] is gr.SelectData  # so Gradio fills in the click event
    assert f.__name__ == "handler" and f.__doc__ == handler.__doc__
    assert f(3, evt="e") == {"view": "V", "catalog": "C", "layer": 3, "evt": "e"}


def steps(tab: object, n: int):
    yield from ((tab, i) for i in range(n))


def test_a_bound_generator_stays_a_generator_function():
    f = bound(steps, "V")
    assert inspect.isgeneratorfunction(f)  # how Gradio decides to stream each update
    assert list(f(2)) == [("V", 0), ("V", 1)]


def pair(low: int, high: int = 9) -> tuple[int, int]:
    """A value made of two controls, checked as a parser at the binding would."""
    if low > high:
        raise ValueError(f"low {low} above high {high}")
    return (low, high)


class Span(tuple):
    """A value made of a pair and a step (controls made of other controls)."""


def span(bounds: tuple, step: int = 1) -> Span:
    return Span((*bounds, step))


PAIR = Controls(tuple, tuple(inspect.signature(pair).parameters.values()), pair)
SPAN = Controls.of(Span, span)


def drawn(catalog: object, name: str, bounds: tuple, request: gr.Request | None = None) -> dict:
    return {"shown": (catalog, name, bounds), "request": request}


def test_a_value_of_several_controls_is_those_controls_on_the_api_page_and_one_value_for_the_handler():
    f = bound(drawn, "C", controls=[PAIR])
    assert list(inspect.signature(f).parameters) == ["name", "low", "high", "request"]
    assert [p.default for p in inspect.signature(f).parameters.values()][2] == 9  # the parser's own default
    assert utils.get_type_hints(f)["request"] == gr.Request | None  # Gradio still fills it in
    assert f("n", 2, 5) == {"shown": ("C", "n", (2, 5)), "request": None}
    assert f("n", low=3)["shown"] == ("C", "n", (3, 9))
    with pytest.raises(ValueError, match="low 7 above high 5"):  # parsed before the handler runs
        f("n", 7, 5)


def stepped(name: str, extent: Span) -> dict:
    return {"extent": extent, "name": name}


def test_controls_made_of_controls_are_expanded_all_the_way():
    f = bound(stepped, controls=[PAIR, SPAN])
    assert list(inspect.signature(f).parameters) == ["name", "low", "high", "step"]
    assert f("n", 1, 2, 3) == {"extent": Span((1, 2, 3)), "name": "n"}


def either(name: str, asked: object) -> dict:
    """One handler for several records: what `asked` is comes from the binding (`retyped`)."""
    return {"name": name, "asked": asked}


def both(bounds: tuple, extent: Span) -> dict:
    return {"bounds": bounds, "extent": extent}


def test_a_parameter_may_be_read_as_another_record_in_each_binding():
    as_pair = bound(either, controls=[PAIR, SPAN], retyped={"asked": tuple})
    as_span = bound(either, controls=[PAIR, SPAN], retyped={"asked": Span})
    assert list(inspect.signature(as_pair).parameters) == ["name", "low", "high"]
    assert list(inspect.signature(as_span).parameters) == ["name", "low", "high", "step"]
    assert as_pair("n", 1, 2)["asked"] == (1, 2) and as_span("n", 1, 2, 3)["asked"] == Span((1, 2, 3))
    assert PAIR.leaves([PAIR, SPAN]) == ("low", "high") and SPAN.leaves([PAIR, SPAN]) == ("low", "high", "step")


def test_two_values_made_of_one_control_share_it_once_on_the_api_page():
    f = bound(both, controls=[PAIR, SPAN])
    assert list(inspect.signature(f).parameters) == ["low", "high", "step"]  # where each first comes
    assert f(1, 2, 3) == {"bounds": (1, 2), "extent": Span((1, 2, 3))}


@dataclass(frozen=True)
class TwoFields(TabComponents):
    extent: gr.Textbox
    name: gr.Textbox


def test_a_result_by_field_name_is_applied_to_the_view_and_nothing_is_a_skip():
    with gr.Blocks():
        tab = TwoFields(gr.Textbox(), gr.Textbox())
    f = tab.bind(stepped)
    assert f("n", Span((1, 2, 3))) == {tab.extent: Span((1, 2, 3)), tab.name: "n"}
    assert bound(lambda: {}, tab=tab)() == gr.skip()  # Gradio reads an empty dict as a value


def counting(n: int):
    for i in range(n):
        yield {"name": str(i)}


def test_each_update_of_a_bound_generator_is_applied_to_the_view():
    with gr.Blocks():
        tab = TwoFields(gr.Textbox(), gr.Textbox())
    f = tab.bind(counting)
    assert inspect.isgeneratorfunction(f)
    assert list(f(2)) == [{tab.name: "0"}, {tab.name: "1"}]


@pytest.fixture(scope="module")
def app_config(tiny_checkpoint, tmp_path_factory) -> dict:
    import ui
    from explorer.catalog import ModelCatalog

    return ui.build_demo(ModelCatalog(tiny_checkpoint, tmp_path_factory.mktemp("runs"))).config


@pytest.mark.parametrize(
    "api_name",
    [
        "train_start",
        "lesson_compare",
        "lesson_token_norms",
        "lesson_heads_off",
        "lesson_head_ranking",
        "lesson_words",
    ],
)
def test_a_refusing_step_has_no_outputs_so_no_bare_error_badge_is_left(app_config, api_name):
    """Train's Start with an empty folder box left six red "Error" badges with no words (status,
    progress, curves, probe, ...), lesson 3's "7.2, 3.9, banana" one on the top-5 box: Gradio
    marks every output of a step that raises. The page checks first, in a step with no outputs;
    the named event, which API clients call alone, follows it on success."""
    by_id = {d["id"]: d for d in app_config["dependencies"]}
    named = next(d for d in by_id.values() if d["api_name"] == api_name)
    check = by_id[named["trigger_after"]]
    assert named["trigger_only_on_success"] and named["outputs"]
    assert check["outputs"] == [] and check["api_visibility"] == "private"
    assert check["targets"] and check["targets"][0][1] == "click"  # the button's click runs the check first


def test_an_analysis_that_fails_after_its_check_writes_its_outputs_again(app_config):
    """A truncated file passes the header's check and fails in the analysis: a step on its
    failure writes every output of the analysis again (as they were) and the image back."""
    by_id = {d["id"]: d for d in app_config["dependencies"]}
    page = [d for d in by_id.values() if d["api_name"].startswith("analyze_page_") and d["trigger_after"] is not None]
    after_upload = next(d for d in page if by_id[d["trigger_after"]]["api_name"] == "check_new_image")
    failed = [d for d in by_id.values() if d["trigger_after"] == after_upload["id"] and d["trigger_only_on_failure"]]
    assert len(failed) == 1 and set(after_upload["outputs"]) < set(failed[0]["outputs"])


def test_a_bound_check_with_no_outputs_returns_none():
    """A check step (ui.binding.checked_first) has no outputs: its None passes through the view."""
    with gr.Blocks():
        tab = TwoFields(gr.Textbox(), gr.Textbox())
    assert tab.bind(nothing)(3) is None


def nothing(layer: int) -> None:
    """A check that lets its event go on."""


@dataclass(frozen=True)
class Tab(TabComponents):
    name: gr.Textbox
    low: gr.Number
    high: gr.Number
    out: gr.Markdown
    controls = (PAIR,)


def described(catalog: object, name: str, bounds: tuple, request: gr.Request | None = None) -> dict:
    return {"out": (catalog, name, bounds, request)}


def test_an_events_inputs_are_read_from_the_handlers_signature_not_written_by_hand():
    with gr.Blocks():
        tab = Tab(gr.Textbox(), gr.Number(), gr.Number(), gr.Markdown())
    event = tab.event(described, "C")
    assert event["inputs"] == [tab.name, tab.low, tab.high]  # the pair's two controls; no box for the request
    assert event["fn"]("n", 1, 2) == {tab.out: ("C", "n", (1, 2), None)}


def unwired(server: object, name: str, column: int) -> dict:
    return {}


def test_a_parameter_no_component_answers_fails_when_the_page_is_built():
    with gr.Blocks():
        tab = Tab(gr.Textbox(), gr.Number(), gr.Number(), gr.Markdown())
    with pytest.raises(TypeError, match="unwired: no component of Tab is called column"):
        tab.event(unwired, "S")


def test_a_parameter_another_field_answers_is_named_at_the_event():
    """Two pickers that are one API parameter (`name`) in two events: each event names its field."""
    with gr.Blocks():
        tab = Tab(gr.Textbox(), gr.Number(), gr.Number(), gr.Markdown())
    assert tab.event(unwired, "S", column="low")["inputs"] == [tab.name, tab.low]
    with pytest.raises(TypeError, match="unwired has no parameter row"):
        tab.event(unwired, "S", column="low", row="high")
