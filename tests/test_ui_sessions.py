"""ui/sessions.py: which session goes when Gradio's are full, and what a dropped one gets back
(issue 43: 510 fresh sessions, one cheap request each, pushed every idle student's analysis out)."""

import gradio
import gradio as gr
import httpx
import pytest
from app_helpers import analyze
from gradio.state_holder import StateHolder
from gradio_client import Client

import ui
import ui.app
from bench.attacks import VIEWS
from bench.serving import free_port
from explorer.catalog import ModelCatalog
from explorer.explain import ExplanationKey
from ui.app import served_limits
from ui.sessions import ParkedValues, SessionShares, WaitingSessionsKept, worth_parking
from ui.settings import ServerSettings

pytestmark = pytest.mark.filterwarnings("ignore::pandas.errors.Pandas4Warning")
STYLE = ("inferno", 0.6, "nearest", "overlay", "layer")
CHEETAH = gradio.media.get_image("cheetah1.jpg")


def key(n: int) -> ExplanationKey:
    return ExplanationKey(f"/tmp/gradio/{n}.png", "bundled", 1, "crop", f"{n:064x}")


@pytest.fixture()
def holder():
    """Gradio's own session store over a page with one analysis key and one picture per session."""
    with gr.Blocks() as demo:
        analysis, picture = gr.State(None), gr.State(None)
    store = StateHolder()
    store.set_blocks(demo)
    store.capacity = 10_000  # the backstop: only SessionShares drops here
    return store, analysis._id, picture._id


def open_session(shares: SessionShares, store: StateHolder, session: str, network: str | None, *values) -> None:
    """A request of `session` from `network` as the middleware and then Gradio see it."""
    shares.admit(session, network)
    state = store[session]
    for component, value in values:
        state[component] = value


def test_a_flood_from_one_network_drops_its_own_sessions_not_a_class(holder):
    store, analysis, _ = holder
    shares = SessionShares(lambda: store, capacity=20, share=0.25)  # 5 sessions per network before its own go
    for n in range(4):
        open_session(shares, store, f"student-{n}", "school", (analysis, key(n)))
    for n in range(60):  # the flood: each request a new session, all from one network
        open_session(shares, store, f"flood-{n}", "attacker")
    assert len(store.session_data) == 20
    assert {f"student-{n}" for n in range(4)} <= set(store.session_data)  # Gradio's LRU dropped all four
    assert all(store[f"student-{n}"][analysis] == key(n) for n in range(4))


def test_sessions_no_request_named_go_first(holder):
    """Gradio's one-shot API calls make sessions the middleware never saw: dropped before anyone's."""
    store, analysis, _ = holder
    shares = SessionShares(lambda: store, capacity=4, share=0.5)
    for n in range(3):
        open_session(shares, store, f"student-{n}", f"home-{n}", (analysis, key(n)))
    store["one-shot"]  # made by Gradio alone: over the cap until the next request
    open_session(shares, store, "student-3", "home-3")
    assert set(store.session_data) == {f"student-{n}" for n in range(4)}


def test_a_dropped_session_gets_its_analysis_back_and_nothing_large(holder):
    """Many networks, one session each, still push a student out: its next request puts back the
    key of its analysis (the store is keyed by content), not its pictures."""
    store, analysis, picture = holder
    shares = SessionShares(lambda: store, capacity=8, share=0.25)
    open_session(shares, store, "student", "school", (analysis, key(7)), (picture, bytearray(2**20)))
    for n in range(20):
        open_session(shares, store, f"visitor-{n}", f"network-{n}")
    assert "student" not in store.session_data
    shares.admit("student", "school")
    assert store["student"][analysis] == key(7)
    assert store["student"][picture] is None  # a megabyte is not parked: it is drawn again on request
    shares.admit("stranger", "school")
    assert store["stranger"][analysis] is None  # a session gets back only its own values


def test_parked_values_stay_within_their_budget():
    parked = ParkedValues(max_bytes=4096)
    for n in range(100):
        parked.put(f"session-{n}", {1: key(n), 2: "bundled", 3: (2, 5)})
    assert 0 < parked.nbytes <= 4096 and "session-99" in parked.values and "session-0" not in parked.values
    assert worth_parking((1, 2)) and worth_parking(key(1)) and not worth_parking("x" * 10_000)
    assert not worth_parking((key(1), bytearray(10)))


def test_a_students_next_click_works_after_a_flood_of_new_sessions(tiny_checkpoint, tmp_path, monkeypatch):
    """End to end, with the cap at 12: a student analyses, 30 new sessions each send one cheap
    request (all from this machine, so the student's network is the flood's), and the student's
    next click draws the heads: it said "No image analysed yet in this session"."""
    monkeypatch.setattr(ui.app, "SESSIONS", 12)
    demo = ui.build_demo(ModelCatalog(tiny_checkpoint, tmp_path, scan_runs=False), ServerSettings(public=True))
    port = free_port()
    demo.launch(**served_limits(demo), server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        url = f"http://127.0.0.1:{port}/"
        student = Client(url, verbose=False)
        analyze(student, CHEETAH)
        for n in range(30):
            body = {"data": [None, "bundled", "crop", *VIEWS], "session_hash": f"flood-{n}"}
            event = httpx.post(f"{url}gradio_api/call/analyze", json=body, timeout=60).json()["event_id"]
            assert "event: complete" in httpx.get(f"{url}gradio_api/call/analyze/{event}", timeout=60).text
        assert len(demo.state_holder.session_data) <= 12
        assert student.session_hash not in demo.state_holder.session_data  # dropped...
        assert student.predict(1, *STYLE, api_name="/heads")  # ...and its analysis found again
        assert isinstance(demo._queue.pending_messages_per_session, WaitingSessionsKept)
    finally:
        demo.close()


def test_a_waiting_events_session_keeps_its_messages_and_the_queue_goes_on():
    """Gradio's queue drops the least recently used of its sessions' message queues past 2,000
    (10 here), even one whose event waits: the next estimate sent to it raised KeyError in the
    queue's processing task, and from then on no event ran (the soak stopped at minute 13)."""
    import threading

    from ui.sessions import keep_waiting_sessions

    release = threading.Event()
    with gr.Blocks() as demo:
        box = gr.Textbox()
        slow, fast = gr.Button(), gr.Button()
        one_at_a_time = {"concurrency_limit": 1, "concurrency_id": "slow"}
        slow.click(lambda: "slow done" if release.wait(60) else "", None, box, api_name="slow", **one_at_a_time)
        fast.click(lambda: "fast", None, box, api_name="fast", concurrency_limit=4, concurrency_id="fast")
    demo.queue(max_size=64)
    keep_waiting_sessions(demo)
    demo._queue.pending_messages_per_session.max_size = 10
    port = free_port()
    demo.launch(server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        url = f"http://127.0.0.1:{port}/"
        running = Client(url, verbose=False).submit(api_name="/slow")
        waiting = Client(url, verbose=False).submit(api_name="/slow")  # behind it: sent estimates
        for n in range(15):  # new sessions, each one quick event
            body = {"data": [], "session_hash": f"passer-by-{n}"}
            event = httpx.post(f"{url}gradio_api/call/fast", json=body, timeout=30).json()["event_id"]
            assert "event: complete" in httpx.get(f"{url}gradio_api/call/fast/{event}", timeout=30).text
        last = Client(url, verbose=False).submit(api_name="/slow")  # its arrival sends estimates to `waiting`
        release.set()
        assert [job.result(timeout=60) for job in (running, waiting, last)] == ["slow done"] * 3
        event = httpx.post(f"{url}gradio_api/call/fast", json={"data": []}, timeout=30).json()["event_id"]
        assert "event: complete" in httpx.get(f"{url}gradio_api/call/fast/{event}", timeout=30).text
    finally:
        release.set()
        demo.close()


def test_a_fault_of_the_session_policy_never_fails_the_request(tmp_path, capsys):
    """The policy only chooses what to drop: if it fails, the click still reaches Gradio, and the
    log says why in one line (issue 43's soak: one HTTP 500 on a class's click)."""
    from starlette.testclient import TestClient

    from ui.limits import RequestLimits
    from ui.uploads import UploadBudget

    async def gradio(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"queued"})

    class Broken(SessionShares):
        def admit(self, session: str, network: str | None) -> None:
            raise RuntimeError("OrderedDict mutated during iteration")

    limits = RequestLimits(gradio, uploads=UploadBudget(lambda: tmp_path, 10**6), sessions=Broken(lambda: None, 5))
    reply = TestClient(limits).post("/gradio_api/queue/join", json={"data": [1, 2], "session_hash": "student"})
    assert reply.status_code == 200 and reply.text == "queued"
    assert "sessions: could not make room or restore a session: RuntimeError" in capsys.readouterr().out
