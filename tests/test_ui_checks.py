"""ui/checks.py: what a person or script typed, accepted or refused with a message naming the range."""

import gradio as gr
import pytest

from ui.checks import number, one_of, whole_number, yes_no


def test_whole_numbers_in_range_pass_as_ints():
    assert whole_number("layer", 3.0, 1, 6) == 3 and isinstance(whole_number("layer", 3.0, 1, 6), int)
    assert whole_number("epochs", 500, 1) == 500


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "layer must be a whole number from 1 to 6, got 0"),
        (7, "got 7"),
        (2.5, "got 2.5"),
        (float("nan"), "got nan"),
        (True, "got True"),
        ("3", "got '3'"),
        (None, "got None"),
    ],
)
def test_bad_whole_numbers_are_named_with_their_range(value, message):
    with pytest.raises(gr.Error, match=message):
        whole_number("layer", value, 1, 6)


def test_numbers_and_choices():
    assert number("opacity", 1, 0.0, 1.0) == 1.0
    with pytest.raises(gr.Error, match="learning rate must be a number of at least 0.0, got -1"):
        number("learning rate", -1, 0.0)
    with pytest.raises(gr.Error, match="opacity must be a number from 0.0 to 1.0, got inf"):
        number("opacity", float("inf"), 0.0, 1.0)
    assert one_of("fusion", "max", ("mean", "max")) == "max"
    with pytest.raises(gr.Error, match="unknown fusion 'sum'; choose one of 'mean', 'max'"):
        one_of("fusion", "sum", ("mean", "max"))


def test_a_refusal_writes_no_traceback_to_the_log():
    """Every refused request wrote a 2.4 KB traceback to the server's log; a refusal is the visitor's."""
    from ui.checks import visitor_error

    assert visitor_error("epochs must be a whole number").print_exception is False
    assert visitor_error("busy", duration=None).print_exception is False


def test_yes_no_takes_a_checkboxs_true_or_false_only():
    assert yes_no("with the examples", True) is True and yes_no("x", False) is False
    for value in ("yes", 1, None):
        with pytest.raises(gr.Error, match="with the examples must be true or false, got"):
            yes_no("with the examples", value)
