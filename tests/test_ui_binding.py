"""bound(): a handler tied to its tab keeps the signature and hints Gradio reads."""

import inspect

import gradio as gr
from gradio import utils

from ui.binding import bound


def handler(view: object, catalog: object, layer: float, evt: gr.SelectData) -> dict:
    """Docstring for the API page."""
    return {"view": view, "catalog": catalog, "layer": layer, "evt": evt}


def test_bound_handler_hides_its_context_and_keeps_names_hints_and_docs():
    f = bound(handler, "V", "C")
    assert list(inspect.signature(f).parameters) == ["layer", "evt"]
    assert utils.get_type_hints(f)["evt"] is gr.SelectData  # so Gradio fills in the click event
    assert f.__name__ == "handler" and f.__doc__ == handler.__doc__
    assert f(3, evt="e") == {"view": "V", "catalog": "C", "layer": 3, "evt": "e"}


def steps(view: object, n: int):
    yield from ((view, i) for i in range(n))


def test_a_bound_generator_stays_a_generator_function():
    f = bound(steps, "V")
    assert inspect.isgeneratorfunction(f)  # how Gradio decides to stream each update
    assert list(f(2)) == [("V", 0), ("V", 1)]
