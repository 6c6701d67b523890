"""ui/streams.py: the server-wide limit on live streams, turns, and frames in flight,
on a clock the test moves by hand."""

import pytest

from ui.streams import StreamSlots


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def slots(limit: int = 1, turn_s: float = 60.0, idle_s: float = 3.0) -> tuple[StreamSlots, Clock]:
    clock = Clock()
    return StreamSlots(limit=limit, turn_s=turn_s, idle_s=idle_s, clock=clock), clock


def stream(s: StreamSlots, clock: Clock, visitor: str, seconds: int) -> None:
    """`visitor` streams for `seconds`, a frame a second."""
    for _ in range(seconds):
        clock.now += 1
        frame(s, visitor)


def frame(s: StreamSlots, visitor: str) -> bool:
    """One frame drawn start to end; True if it was admitted."""
    admitted = s.begin(visitor).admitted
    if admitted:
        s.end(visitor)
    return admitted


def test_one_stream_at_a_time_and_the_next_visitor_is_told_how_long_to_wait():
    s, clock = slots(limit=1, turn_s=60)
    assert frame(s, "a")
    stream(s, clock, "a", 20)
    waiting = s.begin("b")
    assert not waiting.admitted and not waiting.skip
    assert waiting.wait_s == 40 and waiting.position == 1  # a's turn ends 60 s after it began
    third = s.begin("c")
    assert third.position == 2 and third.wait_s == 40 + 60  # one more turn: only one slot
    assert s.active() == 1


def test_two_slots_serve_two_visitors():
    s, _ = slots(limit=2)
    assert frame(s, "a") and frame(s, "b")
    assert not s.begin("c").admitted


def test_a_frame_arriving_while_the_previous_one_is_drawn_is_skipped_not_queued():
    s, _ = slots()
    assert s.begin("a").admitted
    second = s.begin("a")
    assert second.skip and not second.admitted
    s.end("a")
    assert s.begin("a").admitted


def test_a_stopped_stream_frees_its_slot_and_the_waiter_gets_it():
    s, clock = slots(idle_s=3)
    assert frame(s, "a")
    assert not s.begin("b").admitted
    clock.now += 2.0
    assert not s.begin("b").admitted  # a has not been silent long enough
    clock.now += 1.5  # a sent nothing for 3.5 s: it pressed Stop or left
    assert frame(s, "b")
    assert not s.begin("a").admitted  # a's next stream waits behind b


def test_a_slow_frame_keeps_its_slot_however_long_it_takes():
    s, clock = slots(idle_s=3)
    assert s.begin("a").admitted
    clock.now += 10  # a big model on a busy machine
    assert not s.begin("b").admitted
    s.end("a")
    assert not s.begin("b").admitted


def test_when_a_turn_ends_the_visitor_who_waited_longest_goes_first():
    s, clock = slots(turn_s=60, idle_s=3)
    assert frame(s, "a")
    for _ in range(59):  # a keeps streaming; b and c keep asking, b first
        clock.now += 1
        frame(s, "a")
        assert not s.begin("b").admitted
        assert not s.begin("c").admitted
    clock.now += 1  # a's turn is over
    assert s.seconds_left("a") == 0
    assert not s.begin("a").admitted  # back of the line
    assert not s.begin("c").admitted  # c asked after b
    assert frame(s, "b")


def test_nobody_waiting_means_a_new_turn_at_once():
    s, clock = slots(turn_s=60)
    assert frame(s, "a")
    clock.now += 61
    assert frame(s, "a")


def test_waiters_who_stop_asking_are_forgotten():
    s, clock = slots(idle_s=3)
    assert frame(s, "a")
    assert s.begin("b").position == 1
    clock.now += 2
    frame(s, "a")
    clock.now += 2  # b has left the page; c is first in line, not second
    frame(s, "a")
    assert s.begin("c").position == 1


def test_frames_per_second_is_the_rate_at_which_frames_are_shown():
    s, clock = slots()
    s.begin("a")
    assert s.end("a") is None  # one frame: no rate yet
    for _ in range(30):
        clock.now += 0.1
        s.begin("a")
        rate = s.end("a")
    assert rate == pytest.approx(10.0)
    assert s.seconds_left("a") == 57 and s.seconds_left("b") == 0


def test_a_limit_below_one_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        StreamSlots(limit=0)
