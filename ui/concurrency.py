"""Which events share which worker slots (docs/app.md, "Queue").

Gradio gives every event its own `default_concurrency_limit` slots unless events name the
same `concurrency_id`; then the group as a whole runs at most `concurrency_limit` at once.
Without these groups, eight heavy requests spread over /analyze and the three lessons ran
at once (837 -> 8,902 MiB, issue 17).
"""

from __future__ import annotations

# Everything that runs a model or loads one: analyses, model loads and uploads, relevance,
# exports, the lessons but the ranking and the words (below). Two at a time on the whole server, one per
# core (each request uses one torch thread, app.py --torch-threads).
HEAVY_LIMIT = 2
HEAVY = {"concurrency_id": "heavy", "concurrency_limit": HEAVY_LIMIT}
# A head ranking may hold its slot for minutes (explorer.lessons.MAX_RANKING_S): rankings get one
# slot of their own, so two of them never take both heavy slots from every analysis.
RANKING = {"concurrency_id": "ranking", "concurrency_limit": 1}
# The attention video: a clip's passes may hold a core for a minute (explorer.video.CLIP_FLOPS) and
# 0.5 GiB (CLIP_INPUT_BYTES). In the heavy pool, two exports at crop 1,024 made a nano /analyze
# wait 92 s (issue 28): exports have one slot of their own, and wait for it in their own queue.
VIDEO = {"concurrency_id": "video", "concurrency_limit": 1}
# A CLIP model's word maps (Explore's and the words lesson's): a backward pass per word, seconds of a
# core each (8 words of CLIP B/16 at 224 × 768: 22 CPU-s) and up to a request's memory
# (explorer.prompts.words_bytes). In the heavy pool two visitors' words took both slots (+2,312 MiB)
# and a class's /analyze waited 31.8 s (issue 43): words have one slot of their own, as exports do.
WORDS = {"concurrency_id": "words", "concurrency_limit": 1}
# Clicks, slider moves and restyles redraw one to three small pictures from the cached forward
# pass (~10 ms of drawing). They share one pool of two of their own, so clicks, the most frequent
# action, never wait behind an analysis, and at most four requests run at once on two cores
# (docs/benchmarks-app.md, "A class at once"). "Play" holds a slot for seconds: not here.
CHEAP = {"concurrency_id": "views", "concurrency_limit": 2}
# The webcam streams' queue (ui/live.py): Live's workers and the stream events waiting for one.
# Gradio has one queue for the whole server (max_size in ui/app.py): silent webcam streams that
# joined and waited filled it, and every /analyze got "Queue is full" (issue 28). At most
# LIVE_WAITING stream events wait; a webcam joining beyond them is told Live is busy at once
# (ui.limits.RequestLimits), so Live never holds more than LIVE_WAITING of the queue's places.
LIVE_ID = "live"
LIVE_WAITING = 4
