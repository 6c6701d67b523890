"""The pure parts of bench/class_mode.py, and a small class on a real server (the 30-student run
is the benchmark, docs/benchmarks-app.md)."""

import math
import re

import numpy as np
from PIL import Image

from bench import class_mode
from bench.class_mode import Follower, Push, calls_in, picture, spread, sse_events, verdict
from ui.class_route import sse
from ui.zerogpu import CALL_LINE


def test_an_event_stream_is_cut_into_its_events_and_the_one_begun_is_kept():
    state = sse("state", {"version": 3, "view": {"handle": "h"}}).encode()
    comment, end = b": still here\n\n", sse("end", {"message": "The teacher ended the class."}).encode()
    events, rest = sse_events((state + comment + end)[:-5])
    assert [(e.name, e.data) for e in events] == [("state", {"version": 3, "view": {"handle": "h"}}), ("", None)]
    assert [e.size for e in events] == [len(state), len(comment)] and rest == end[:-5]
    more, rest = sse_events(rest + end[-5:])
    assert [e.name for e in more] == ["end"] and more[0].data["message"].startswith("The teacher") and rest == b""


def test_a_follower_has_a_version_from_the_first_event_that_brought_it_or_a_later_one():
    f = Follower("token")
    assert f.got({"version": 2, "view": None}, 1.0, 300) is None  # no image yet: nothing to read
    assert f.got({"version": 5, "view": {"handle": "a"}}, 2.0, 310) == "a"
    assert f.arrived(2) == 1.0 and f.arrived(3) == 2.0 and f.arrived(6) is None
    assert f.event_bytes(4) == 310
    assert f.pictured(5) is None  # the event came, the analysis not yet
    f.fetched["a"] = (2.5, 17_000)
    assert f.pictured(4) == (2.5, 17_000) and f.got({"version": 6, "view": {"handle": "a"}}, 3.0, 300) is None


def test_a_push_reaches_the_class_when_its_last_follower_has_it_and_an_image_once_read():
    quick, slow = Follower("q"), Follower("s")
    click, image = Push(1.0, 1.0, 4, image=False), Push(0.5, 1.0, 4, image=True)
    quick.got({"version": 4, "view": {"handle": "h"}}, 1.01, 300)
    assert click.last([quick, slow]) is None
    slow.got({"version": 4, "view": {"handle": "h"}}, 1.04, 300)
    assert click.last([quick, slow]) == 1.04 and image.last([quick, slow]) is None
    quick.fetched["h"], slow.fetched["h"] = (1.1, 9), (1.2, 9)
    assert image.last([quick, slow]) == 1.2


def test_model_calls_are_counted_from_the_servers_log_lines():
    log = f"Running on local URL\n{CALL_LINE}forward_maps\nheap: 3 MiB\n{CALL_LINE}cls_heads\n{CALL_LINE}forward_maps\n"
    assert calls_in(log) == 3 and calls_in(log, "forward_maps") == 2 and calls_in("nothing\n") == 0


def test_goals_are_judged_with_their_ratio_and_nothing_measured_is_said():
    assert verdict(0.15, 0.3, " s") == "0.15 s (0.50x the goal of 0.3 s): met"
    assert verdict(1.5, 1.2, "x").endswith("MISSED") and verdict(math.nan, 0.3) == "not measured"
    assert spread([0.1, 0.2, 0.3], scale=1e3, digits=0) == "200 / 290" and spread([]) == "-"


def test_each_picture_is_an_image_the_server_has_not_seen(tmp_path):
    first, second = picture(tmp_path, 1), picture(tmp_path, 2)
    a, b = (np.asarray(Image.open(p)) for p in (first, second))
    assert a.shape == b.shape and not np.array_equal(a, b)


def test_a_new_action_is_one_entry_naming_its_count_argument():
    names = {a.count for a in class_mode.ACTIONS}
    assert names == {"clicks", "images"} and [a.calls for a in class_mode.ACTIONS] == [0, 1]


def test_a_small_class_gets_every_push_with_one_model_call_per_image():
    out = class_mode.main(  # --client-nice 0: lowering this thread would slow every test after this one
        ["--students", "3", "--clicks", "4", "--images", "2", "--visitor-analyses", "2", "--rows-rounds", "1"]
        + ["--memory-students", "4", "--client-nice", "0", "--pause", "0.2"]
    )
    assert "click (layer or query): 0 model call per action whatever the class's size: met" in out, out
    assert "new image: 1 model call per action whatever the class's size: met" in out, out
    rows = [line for line in out.splitlines() if line.startswith("| click") or line.startswith("| new image")]
    assert len(rows) == 2 and all(row.endswith("| 0 |") for row in rows), out  # no push lost
    assert re.search(r"\+ \d+\.\d kB \(/class/analysis\)", out), out
    assert re.search(r"had them after \d+\.\d\d s", out) and "MiB after it ended" in out, out
