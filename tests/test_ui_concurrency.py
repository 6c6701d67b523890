"""One pool of slots for all heavy work, whoever asks for it and through whichever event."""

import threading
import time

import gradio as gr
from app_helpers import served
from gradio_client import Client

import ui
from explorer.catalog import ModelCatalog
from ui import live
from ui.concurrency import HEAVY, HEAVY_LIMIT
from ui.settings import ServerSettings

HEAVY_EVENTS = {
    "analyze",  # API clients' (the page's are below)
    "load_model",
    "upload_checkpoint",
    "relevance",
    "patch_pca",  # the PCA tab's controls and the tab itself: a forward pass up to the layer per image
    "pca_tab",
    "logit_lens",  # the logit lens tab: a forward pass
    "analyze_page",  # the page's own analyses: a resize policy, a new image (its header checked), a model switch
    "analyze_page_1",
    "analyze_page_2",
    "export_png",
    "export_gif",
    "export_page_png",  # the page's exports, of the query it shows
    "export_page_gif",
    "train_open_in_explore",
    "lesson_compare",
    "lesson_token_norms",
    "lesson_heads_off",
    "lesson_norms_models",  # a lesson's model pickers load the models they name
    "lesson_heads_model",
    "live_model",
}
# A CLIP model's words, a backward pass per word (issue 43: two visitors' words took both heavy
# slots for 30 s): Explore's button and box, the words after each analysis (after /analyze and the
# page's three), the words lesson.
WORDS_EVENTS = {"zero_shot", "compare_words", "words_after", "words_after_1", "words_after_2", "words_after_3"}
WORDS_EVENTS |= {"lesson_words"}
# Events with their own slots, each for a reason: Gradio's example loader and the picker's
# rollback do no work; the Train tab's events start,
# poll and stop a run whose training runs in its own thread, bounded by --max-runs.
# Live webcam frames have their own slots (ui.streams.StreamSlots bounds the streams);
# opening the Live tab and listing its models run nothing heavy; closing "More views" only
# forgets which of its tabs is on screen.
OWN_SLOTS = {
    "live_frame",
    "open_live",
    "live_choices",
    "load_example",
    "keep_model",
    "train_start",
    "train_start_new",  # Start's other wording, shown with a saved run (issue 60)
    "train_continue",  # starts a stopped run again from its save, as train_start starts one
    "train_status",
    "train_stop",
    "hide_more",
}


def test_every_heavy_event_shares_one_pool_and_every_other_event_is_placed(tmp_path):
    """Every event that runs a model is in one pool of its kind; the others are placed by name."""
    demo = ui.build_demo(ModelCatalog(runs_dir=tmp_path))
    heavy, views, other, ranking, words = set(), set(), set(), set(), set()
    for fn in demo.fns.values():
        if fn.fn is None:  # a button that only cancels (Stop the ranking) runs nothing
            continue
        if fn.concurrency_id == "heavy":
            heavy.add(fn.api_name)
            assert fn.concurrency_limit == HEAVY_LIMIT
        elif fn.concurrency_id == "views":
            views.add(fn.api_name)
        elif fn.concurrency_id in ("ranking", "video"):  # up to minutes long: one slot of its own each
            ranking.add(fn.api_name)
            assert fn.concurrency_limit == 1
        elif fn.concurrency_id == "words":  # seconds of a core a word: one slot of their own
            words.add(fn.api_name)
            assert fn.concurrency_limit == 1
        else:
            other.add(fn.api_name.rstrip("_0123456789"))
    # after opening the Lessons tab and each lesson, its pickers follow the catalogue: they may load a model
    followed = {name for name in heavy if name.rstrip("_0123456789") == "follow_lessons"}
    assert (
        "follow_lessons" in followed
        and heavy - followed == HEAVY_EVENTS
        and ranking == {"lesson_head_ranking", "attention_video"}
    )
    assert words == WORDS_EVENTS
    # Page-only events that run no model: the Train tab's timer, Stop's confirmation, its "First
    # step" note and its jump to Explore, the Lessons tab's clearing of old results and its opening
    # (Explore's image and the visitor's models in its pickers), Explore's
    # once-per-upload note, its keep slider's visibility, the refused upload's box put back (with
    # the views of a failed analysis written again as they were), and the Live tab's patch sliders'.
    # (Explore's clicks, keys, layer, style and Play run in the page: no fn.)
    page_only = {"keep_polling", "ask_to_stop", "keep_training", "first_step", "show_explore", "new_image"}
    page_only |= {"open_lessons", "lesson_models"}  # and after each lesson, what the lessons say about models
    page_only |= {"note_image", "keep_slider", "keep_image", "keep_analysis", "patch_sliders"}
    page_only |= {"model_choices"}  # Explore's picker after a model loads: the catalogue as it is now
    page_only |= {"train_models"}  # the Train tab's picker on opening it: the catalogue as it is now
    page_only |= {"train_page_closed"}  # a closed page gives its queue place and run slot up (a registry's dict)
    assert other <= OWN_SLOTS | page_only, other - OWN_SLOTS
    assert {"heads", "query_patch", "query_token", "restyle_shown", "restyle_relevance"} <= views
    # "More views" draws from the cached forward pass when a tab opens: redraws, not analyses.
    assert {"overview", "distance", "similarity", "show_more"} <= views


def test_a_shared_concurrency_id_bounds_all_its_events_together():
    """What the pool relies on: Gradio runs at most HEAVY_LIMIT of the group's events at once,
    summed over different events (each alone has slots of its own)."""
    running, most, lock = [0], [0], threading.Lock()

    def work(x: float) -> float:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.3)
        with lock:
            running[0] -= 1
        return x

    with gr.Blocks() as demo:
        number = gr.Number()
        for name in ("first", "second", "third"):
            gr.Button().click(work, number, number, api_name=name, **HEAVY)
    demo.queue(default_concurrency_limit=HEAVY_LIMIT)
    with served(demo) as url:
        client = Client(url, verbose=False)
        jobs = [client.submit(1, api_name=f"/{name}") for name in ("first", "second", "third") * 3]
        assert [job.result() for job in jobs] == [1] * 9
    assert most[0] == HEAVY_LIMIT


def test_the_docs_say_the_heavy_limit():
    from conftest import REPO

    assert f"{HEAVY_LIMIT} heavy requests at a time" in (REPO / "docs" / "app.md").read_text()


def test_a_silent_live_stream_holds_its_worker_seconds_not_a_whole_turn(tmp_path):
    # Gradio waits for a stream's next frame until the event's time limit: with the turn (180 s)
    # as the limit, streams that sent one frame held Live's workers for minutes and the streams
    # queued behind them filled the server's one queue, refusing Explore's analyses.
    demo = ui.build_demo(ModelCatalog(runs_dir=tmp_path))
    stream = next(fn for fn in demo.fns.values() if fn.api_name == "live_frame")
    assert stream.time_limit == live.STREAM_EVENT_S <= 10 < ServerSettings().live_turn_s
