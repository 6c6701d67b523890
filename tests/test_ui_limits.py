"""ui/limits.py: what one request may bring and what a session may keep, on a live public app
launched with the app's own limits (ui.app.served_limits), in-process so its sessions can be read."""

import base64
import io
import json
import re
import time
from collections import OrderedDict

import httpx
import numpy as np
import pytest
from PIL import Image

import ui
from bench.attacks import PAGE_VIEWS, VIEWS
from bench.serving import free_port
from explorer.catalog import ModelCatalog
from ui import limits
from ui.app import holdings, served_limits
from ui.common import EXAMPLES_DIR, Server
from ui.concurrency import LIVE_WAITING
from ui.limits import (
    LIVE_BUSY,
    MAX_EVENT_BYTES,
    REFUSALS,
    SESSIONS,
    SESSIONS_SPARE,
    WEB_FILE,
    RefusalLog,
    RequestLimits,
    event_files,
    live_waiting,
    malformed_file,
    sender,
)
from ui.outputs import UPLOADS, forget_deleted_files, upload_folder
from ui.settings import ServerSettings
from ui.uploads import REFUSED, SENDER_SHARE, UPLOAD_SHARE, UploadBudget

pytestmark = pytest.mark.filterwarnings("ignore::pandas.errors.Pandas4Warning")


@pytest.fixture(scope="module")
def server(tiny_checkpoint, tmp_path_factory) -> Server:
    """What the public app holds for its visitors."""
    catalog = ModelCatalog(tiny_checkpoint, tmp_path_factory.mktemp("runs"), scan_runs=False)
    return ui.server_for(catalog, ServerSettings(public=True))


@pytest.fixture(scope="module")
def app(server):
    """(URL, the launched Blocks) of the public app with the limits `ui.launch` gives it."""
    demo = ui.build_page(server)
    port = free_port()
    demo.launch(**served_limits(demo), server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/", demo
    finally:
        demo.close()


def call(url: str, api: str, data: list, session: str) -> tuple[int, str]:
    """(HTTP status of the request, the event's stream of replies when it was queued)."""
    base = f"{url}gradio_api/call/{api}"
    reply = httpx.post(base, json={"data": data, "session_hash": session}, timeout=60)
    if reply.status_code != 200:
        return reply.status_code, reply.text
    return 200, httpx.get(f"{base}/{reply.json()['event_id']}", timeout=120).text


def kept(demo, session: str) -> dict:
    """The last value of each input Gradio keeps for `session`, by component: what it holds."""
    state = demo.state_holder.session_data[session]
    return {key: config.get("props", {}).get("value") for key, config in state.config_values.items()}


def test_a_request_over_the_limit_is_refused_before_a_session_keeps_it(app):
    """60 /analyze requests from new sessions, each with a 1 MB resize mode, kept +82 MiB: the
    request is now refused before Gradio reads it, and no session is made for it."""
    url, demo = app
    status, text = call(url, "analyze", [None, "bundled", "m" * 2**20, *VIEWS], "big-mode")
    assert status == 413 and f"larger than this server takes ({MAX_EVENT_BYTES:,} bytes)" in text
    assert "big-mode" not in demo.state_holder.session_data
    status, text = call(url, "analyze", [None, "bundled", "m" * 1000, *VIEWS], "small-mode")
    assert status == 200 and "event: complete" in text  # no image: the views are cleared...
    assert "m" * 1000 in kept(demo, "small-mode").values()  # ...and Gradio keeps what the session sent
    join = {"data": [None, "bundled", "m" * 2**20, *VIEWS], "fn_index": 0, "session_hash": "joined"}
    assert httpx.post(f"{url}gradio_api/queue/join", json=join, timeout=60).status_code == 413


def test_gradio_keeps_at_most_the_sessions_the_budget_allows(app):
    """SESSIONS, which to drop chosen by ui.sessions (tests/test_ui_sessions.py); Gradio's own cap,
    a few above, is the backstop for sessions no request named."""
    _, demo = app
    assert demo.state_holder.capacity == SESSIONS + SESSIONS_SPARE <= 520  # Gradio's default: 10,000 (~0.4 MiB each)
    shares = served_limits(demo)["app_kwargs"]["middleware"][0].kwargs["sessions"]
    assert shares.capacity == SESSIONS and shares.holder() is demo.state_holder


def test_the_operators_log_line_counts_what_the_server_holds(app, server):
    """The public server prints this every minute (ui.app.keep_within_budgets): the sessions
    Gradio keeps and the analyses cached, against their budgets, so a soak can say what grew."""
    url, demo = app
    before = len(demo.state_holder.session_data)
    for n in range(3):
        status, _ = call(url, "analyze", [None, "bundled", "crop", *VIEWS], f"counted-{n}")
        assert status == 200
    line = holdings(demo, server)
    assert line.startswith(f"holding: {before + 3} sessions (at most {SESSIONS}), ")
    assert f"MiB of analyses (at most {server.store.max_bytes // 2**20} MiB), " in line
    models = re.search(r", (\d+) MiB of models \((\d+) loaded\), 0 training runs running, ", line)
    assert line.endswith(", 0 classes (0 students, 0 streams open, 0 gallery pictures)"), line
    assert models and int(models[2]) == len(server.catalog.loaded_keys()) >= 1, line
    assert int(models[1]) == round(server.catalog.loaded_bytes() / 2**20) > 0, line


def test_gradio_keeps_no_monitoring_records_and_serves_no_monitoring_page(app):
    """Gradio's default records 10,000 events and summarises them all after each one (ui.app's
    QUIET_MONITORING): here three events leave one record, and /monitoring is not served."""
    url, demo = app
    for n in range(3):
        assert call(url, "analyze", [None, "bundled", "crop", *VIEWS], f"recorded-{n}")[0] == 200
    assert demo._queue.events_recorded >= 3 and len(demo._queue.event_analytics) <= 1
    assert demo._queue.cached_event_analytics_summary == {"functions": {}}  # never summarised
    for page in ("monitoring", "monitoring/summary"):
        assert httpx.get(f"{url}{page}", timeout=60).status_code == 403, page


def test_gradio_forgets_the_files_the_budget_deleted(app, tmp_path):
    """Gradio keeps a path for every file it served (Block.move_resource_to_block_cache) and
    forgets one only when it deletes the file itself: the budget's prunes left them for good."""
    _, demo = app
    pruned, kept = tmp_path / "pruned.webp", tmp_path / "kept.webp"
    for view in (pruned, kept):
        view.write_bytes(b"view")
    served = demo.temp_file_sets[-1]
    served.update({str(pruned), str(kept)})
    pruned.unlink()  # as UPLOADS.prune deletes an old view
    assert forget_deleted_files(demo) >= 1
    assert str(pruned) not in served and str(kept) in served
    served.discard(str(kept))


def jpeg_data_url(side: int) -> str:
    pixels = np.random.default_rng(0).integers(0, 256, (side, side, 3), np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "JPEG", quality=92)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode()


def test_a_webcam_frame_may_be_large_and_the_session_does_not_keep_it(app):
    url, demo = app
    frame = jpeg_data_url(160)
    assert len(frame) > MAX_EVENT_BYTES
    controls = ["bundled", 6, "cls", 4, 4, "inferno", "layer"]
    base = f"{url}gradio_api/call/live_frame"
    event = httpx.post(base, json={"data": [{"url": frame}, *controls], "session_hash": "streamer"}, timeout=60)
    event_id = event.raise_for_status().json()["event_id"]
    with httpx.stream("GET", f"{base}/{event_id}", timeout=120) as replies:  # a stream: its first reply
        assert any('"rollout"' in line for line in replies.iter_lines())  # the frame's numbers (frame_numbers)
    httpx.post(f"{url}gradio_api/stream/{event_id}/close", timeout=60)
    values = kept(demo, "streamer")
    assert "bundled" in values.values()  # the model key is kept as Gradio keeps every input...
    assert not any(isinstance(v, dict) and v.get("url") == frame for v in values.values())  # ...not the frame
    live_frame = next(fn._id for fn in demo.fns.values() if fn.api_name == "live_frame")
    join = {"data": [{"url": frame}, *controls], "fn_index": live_frame, "session_hash": "browser"}
    assert httpx.post(f"{url}gradio_api/queue/join", json=join, timeout=60).status_code == 200  # the browser's way
    join["fn_index"] = 0  # the same bytes to another event
    assert httpx.post(f"{url}gradio_api/queue/join", json=join, timeout=60).status_code == 413


def test_a_frame_request_may_be_large_only_in_the_frame(app):
    """A webcam request could carry 16 MiB in any input (a query, a model key, a field beside the
    frame's URL), which the session kept after the frame was dropped: 8 GiB over 500 sessions."""
    url, demo = app
    small, large = jpeg_data_url(8), "x" * 100_000
    live_frame = next(fn._id for fn in demo.fns.values() if fn.api_name == "live_frame")
    controls = ["bundled", 6, "cls", 4, 4, "inferno", "layer"]
    for data in (
        [{"url": small}, "bundled", 6, large, 4, 4, "inferno", "layer"],  # a 100 kB query
        [{"url": small, "path": large}, *controls],  # beside the frame's URL
        [{"url": [large]}, *controls],  # a frame that is no data: URL
    ):
        join = {"data": data, "fn_index": live_frame, "session_hash": "hoarder"}
        assert httpx.post(f"{url}gradio_api/queue/join", json=join, timeout=60).status_code == 413
        call = httpx.post(f"{url}gradio_api/call/live_frame", json={"data": data}, timeout=60)
        assert call.status_code == 413
        assert httpx.post(f"{url}gradio_api/stream/no-such-event", json=join, timeout=60).status_code == 413
    assert "hoarder" not in demo.state_holder.session_data  # refused before Gradio made a session
    # The browser sends a stream's frame twice, as the camera's value and as the event's data
    # (which no session keeps): that is still one frame. Another large event value is not.
    frame = jpeg_data_url(160)
    for event, code in (({"url": frame}, 200), ({"url": "y" * 100_000}, 413)):
        join = {
            "data": [{"url": frame}, *controls],
            "event_data": {"value": event, "is_value_data": True},
            "fn_index": live_frame,
            "session_hash": f"browser-{code}",
        }
        reply = httpx.post(f"{url}gradio_api/queue/join", json=join, timeout=60)
        assert reply.status_code == code
        if code == 200:
            httpx.post(f"{url}gradio_api/stream/{reply.json()['event_id']}/close", timeout=60)


def test_an_upload_that_does_not_fit_the_budget_is_refused_before_it_is_stored(app, monkeypatch):
    """Gradio's upload route needs no event: 177 uploads of 19 MB went up in 6.2 s, the folder
    held 3,382 MB against a 30 MB budget until the next prune."""
    url, _ = app
    before = sorted(p for p in upload_folder().rglob("*") if p.is_file())
    # 100 kB beside what is there, all of it young when the earlier tests just wrote it: young
    # files are never pruned to make room, and they and an upload may take UPLOAD_SHARE of it
    room = int((sum(f.stat().st_size for f in before if f not in UPLOADS.keep) + 100_000) / UPLOAD_SHARE)
    monkeypatch.setattr(UPLOADS, "budget_bytes", sum(f.stat().st_size for f in UPLOADS.keep) + room)
    big = {"files": ("big.bin", b"\0" * (room + 1))}  # more than the budget leaves even an empty folder
    reply = httpx.post(f"{url}gradio_api/upload", files=big, timeout=60)
    assert reply.status_code == 507 and "space for uploads is full" in reply.text
    assert sorted(p for p in upload_folder().rglob("*") if p.is_file()) == before  # nothing stored
    small = httpx.post(f"{url}gradio_api/upload", files={"files": ("small.bin", b"\1" * 1000)}, timeout=60)
    assert small.status_code == 200
    chunked = httpx.post(f"{url}gradio_api/upload", content=iter([b"--x\r\n"]), timeout=60)  # no Content-Length
    assert chunked.status_code == 411


def stored_upload():
    """Gradio's upload route, reduced to reading the body (as an ASGI app)."""

    async def stored(scope, receive, send):
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"stored"})

    return stored


def test_an_upload_its_client_left_is_one_line_and_frees_its_reservation(tmp_path, capsys, monkeypatch):
    """The quiet soak on 26cc0c5: each class upload its client gave up on (gradio_client's 5 s)
    left a 75-line ClientDisconnect traceback in the log. Now one line, counted past the
    log's share, and the bytes reserved for it are given back."""
    import asyncio

    from starlette.requests import ClientDisconnect

    async def gradio_upload(scope, receive, send):  # Gradio's route, reading a body that stops coming
        while (await receive())["type"] != "http.disconnect":
            pass
        raise ClientDisconnect()

    budget = UploadBudget(lambda: tmp_path, 10**7)
    lines = RefusalLog(says=limits.UPLOAD_LINES.says, counts=limits.UPLOAD_LINES.counts)
    gate = RequestLimits(gradio_upload, uploads=budget, upload_lines=lines)
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/gradio_api/upload",
        "headers": [(b"content-length", b"30000")],
        "client": ("203.0.113.66", 5000),
    }

    async def left(*_):
        return {"type": "http.disconnect"}

    async def never(_):
        raise AssertionError("nothing is sent to a client that left")

    for _ in range(3):
        asyncio.run(gate(scope, left, never))
    out = capsys.readouterr().out
    assert out.count("an upload from 203.0.113.66 of 30,000 bytes was left by its client") == 1, out
    assert "Traceback" not in out
    assert lines.said() == "not written: 2 more lines about uploads (one a minute per network)"
    assert budget._arriving == 0  # each reservation given back: the next 30,000 bytes still fit
    monkeypatch.setattr(limits, "SLOW_RESERVE_S", 0.0)  # every wait for room is now worth a line
    asyncio.run(RequestLimits(gradio_upload, uploads=budget)(scope | {"client": ("198.51.100.2", 1)}, left, never))
    assert "an upload from 198.51.100.2 of 30,000 bytes waited" in capsys.readouterr().out


def test_one_network_is_refused_past_its_share_of_the_room_for_uploads(tmp_path):
    """The soak: the attacker's admitted 19 MB uploads filled the room young uploads may take, and
    every visitor's upload was refused for two minutes. One network now gets SENDER_SHARE of it,
    counted before the body is read; another network still uploads."""
    from starlette.testclient import TestClient

    budget = UploadBudget(lambda: tmp_path, 40_000)  # the room 30,000 (UPLOAD_SHARE), a network's share
    share = int(SENDER_SHARE * UPLOAD_SHARE * 40_000)
    client = TestClient(RequestLimits(stored_upload(), uploads=budget, trusted_hops=1))

    def upload(network: str, size: int):
        return client.post("/gradio_api/upload", content=b"x" * size, headers={"X-Forwarded-For": network})

    assert upload("203.0.113.66", share - 1000).status_code == 200
    refused = upload("203.0.113.66", 2000)
    assert refused.status_code == 507 and "your network has uploaded" in refused.text, refused.text
    assert upload("198.51.100.2", share - 1000).status_code == 200  # a class behind another router


def test_invented_first_forwarded_addresses_do_not_buy_more_upload_shares(tmp_path):
    """Issue 43: a flood of uploads, each under a new invented first X-Forwarded-For entry, took
    a share apiece and refused 27 of a visitor's 36 photos. Behind one proxy the network is the
    entry that proxy appended, the last: the flood is one network, and the visitor uploads."""
    from starlette.testclient import TestClient

    budget = UploadBudget(lambda: tmp_path, 40_000)
    share = int(SENDER_SHARE * UPLOAD_SHARE * 40_000)
    client = TestClient(RequestLimits(stored_upload(), uploads=budget, trusted_hops=1))
    codes = [
        client.post(
            "/gradio_api/upload",
            content=b"x" * (share // 2),
            headers={"X-Forwarded-For": f"198.18.0.{i}, 203.0.113.66"},
        ).status_code
        for i in range(8)
    ]
    assert codes == [200, 200] + [507] * 6  # the attacker's share, whatever it wrote first
    for _ in range(2):
        photo = client.post(
            "/gradio_api/upload", content=b"p" * (share // 2), headers={"X-Forwarded-For": "198.51.100.2"}
        )
        assert photo.status_code == 200


def test_the_sender_is_the_address_the_outermost_trusted_proxy_saw():
    """X-Forwarded-For grows to the right: each proxy appends the address it saw. Only the
    entries the trusted proxies wrote name the visitor; anything left of them the client wrote."""
    chain = [(b"x-forwarded-for", b"6.6.6.6, 203.0.113.66, 10.0.0.1")]  # forged, the visitor, an inner proxy
    scope = {"headers": chain, "client": ("10.16.3.80", 5000)}
    assert sender(scope, trusted_hops=0) == "10.16.3.80"  # no proxy: the connection's address
    assert sender(scope, trusted_hops=1) == "10.0.0.1"
    assert sender(scope, trusted_hops=2) == "203.0.113.66"  # two proxies: the outer one saw the visitor
    forged = {"headers": [(b"x-forwarded-for", b"6.6.6.6, 203.0.113.66")], "client": ("10.16.3.80", 5000)}
    assert sender(forged, trusted_hops=1) == "203.0.113.66"  # a forged first entry changes nothing
    again = {"headers": [(b"x-forwarded-for", b"6.6.6.6"), (b"x-forwarded-for", b"203.0.113.66")], "client": None}
    assert sender(again, trusted_hops=1) == "203.0.113.66"  # the header sent twice is one list
    # Fewer entries than proxies: the request did not come through them all, so the peer is the sender.
    assert sender({"headers": [(b"x-forwarded-for", b"203.0.113.66")], "client": ("10.16.3.80", 1)}, 2) == "10.16.3.80"
    assert sender({"headers": [], "client": ("127.0.0.1", 1)}, trusted_hops=1) == "127.0.0.1"
    assert sender({"headers": []}, trusted_hops=0) is None


def test_a_space_trusts_one_proxy_and_any_server_may_say_how_many(app, monkeypatch):
    """`--trusted-hops` (or VIT_EXPLORER_TRUSTED_HOPS): 1 on a Space, whose Hub proxy names the
    visitor, else 0; it reaches the middleware that counts a network's uploads."""
    import app as app_py

    monkeypatch.delenv("VIT_EXPLORER_TRUSTED_HOPS", raising=False)
    monkeypatch.setenv("SPACE_ID", "someone/vit-explorer")
    assert ServerSettings.from_args(app_py.parse_args([])).trusted_hops == 1
    monkeypatch.delenv("SPACE_ID")
    assert ServerSettings.from_args(app_py.parse_args([])).trusted_hops == 0
    assert app_py.parse_args(["--trusted-hops", "2"]).trusted_hops == 2
    monkeypatch.setenv("VIT_EXPLORER_TRUSTED_HOPS", "3")
    assert app_py.parse_args([]).trusted_hops == 3
    with pytest.raises(SystemExit):
        app_py.parse_args(["--trusted-hops", "-1"])
    _, demo = app
    for hops in (0, 2):
        assert served_limits(demo, hops)["app_kwargs"]["middleware"][0].kwargs["trusted_hops"] == hops


def test_a_file_named_by_a_web_address_is_refused_before_gradio_fetches_it(app):
    """Gradio downloads an input file whose path is a web address into its upload folder before
    any handler runs, whole in memory and with no size limit: past the upload budget."""
    url, _ = app
    web = {"path": "https://example.com/cat.png", "meta": {"_type": "gradio.FileData"}}
    for api, data in (
        ("analyze", [web, "bundled", "crop", *VIEWS]),
        ("lesson_compare", [web, ["bundled"], "inferno"]),
    ):
        reply = httpx.post(f"{url}gradio_api/call/{api}", json={"data": data}, timeout=60)
        assert (reply.status_code, reply.text) == (400, WEB_FILE)


def file_payload(path: str) -> dict:
    return {"path": path, "meta": {"_type": "gradio.FileData"}}


def test_a_file_that_is_no_upload_is_refused_in_the_apps_words_with_one_log_line(app, capsys, monkeypatch):
    """Issue 43: Gradio refused these itself, answered a bare "Error" and wrote a 1.7 KB traceback
    each (1,000 requests in 32 s: 187 MB of log an hour). Now each gets the app's sentence, and
    one network's refusals write one line a minute; the rest are counted for the minute's line."""
    url, _ = app
    monkeypatch.setattr(REFUSALS, "written", OrderedDict())  # other tests' refusals are not this one's
    monkeypatch.setattr(REFUSALS, "unwritten", 0)
    capsys.readouterr()
    paths = ["/etc/passwd", "../../../../etc/passwd", "file:///etc/passwd", "data:image/png;base64,iVBORw0KGgo="]
    for n in range(40):
        data = [file_payload(paths[n % 4]), "bundled", "crop", *VIEWS]
        reply = httpx.post(f"{url}gradio_api/call/analyze", json={"data": data}, timeout=60)
        assert (reply.status_code, reply.text) == (400, REFUSED), paths[n % 4]
    upper = httpx.post(f"{url}gradio_api/call/analyze", json={"data": [file_payload("HTTPS://x.org/a.png")]})
    assert (upper.status_code, upper.text) == (400, WEB_FILE)  # Gradio took it for a path: a traceback
    join = {"data": [file_payload("/etc/passwd"), "bundled", "crop", *VIEWS], "fn_index": 0, "session_hash": "s"}
    assert httpx.post(f"{url}gradio_api/queue/join", json=join, timeout=60).text == REFUSED  # the page's route
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    lines = [line for line in out.splitlines() if line.startswith("refused a request from")]
    assert lines == ["refused a request from 127.0.0.1: it names the file '/etc/passwd': " + REFUSED]
    assert REFUSALS.said() == "refused and not written: 41 more requests naming a file (one line a minute per network)"


def test_uploads_examples_and_files_gone_from_the_upload_folder_still_reach_the_app(app):
    """What the page and gradio_client send: a file in Gradio's upload folder (an upload, an
    example's cached copy). A file deleted from there meanwhile is the handler's to explain."""
    url, _ = app
    with io.BytesIO() as png:
        Image.new("RGB", (32, 32), (200, 120, 40)).save(png, "PNG")
        sent = httpx.post(f"{url}gradio_api/upload", files={"files": ("cat.png", png.getvalue())}, timeout=60)
    uploaded = sent.json()[0]
    # An example's cached copy, by its name: another test's upload (a truncated.jpg) may be there too.
    examples = {path.name for path in EXAMPLES_DIR.glob("*.jpg")}
    example = next(path for path in upload_folder().rglob("*.jpg") if path.name in examples)
    for path in (uploaded, str(example)):
        status, text = call(url, "analyze", [file_payload(path), "bundled", "crop", *VIEWS], "uploader")
        assert status == 200 and "event: complete" in text and "label" in text, path
    gone = str(upload_folder() / "deleted-an-hour-ago" / "cat.png")
    status, text = call(url, "analyze", [file_payload(gone), "bundled", "crop", *VIEWS], "uploader")
    assert status == 200 and "upload the file again" in text


def test_a_file_payload_gradio_would_fail_on_is_refused_before_it(tmp_path):
    """Every file payload Gradio would refuse with a traceback (a NUL byte, a symlink's way out,
    a `meta` that is no object) gets the app's sentence; a webcam frame's data: URL is no file."""
    from starlette.testclient import TestClient

    folder = upload_folder()
    (folder / "limits-test").mkdir(exist_ok=True)
    out = folder / "limits-test" / "out"
    out.unlink(missing_ok=True)
    out.symlink_to("/etc", target_is_directory=True)
    client = TestClient(RequestLimits(stored_upload(), uploads=UploadBudget(lambda: tmp_path, 40_000)))
    for payload in (
        file_payload("cat\x00.png"),
        file_payload(str(out / "passwd")),
        file_payload(f"{folder}/../etc/passwd"),
        file_payload(""),
        {"path": "/etc/passwd", "meta": "gradio.FileData"},
        [[{"nested": file_payload("/etc/passwd")}]],
    ):
        reply = client.post("/gradio_api/queue/join", json={"data": [payload], "fn_index": 0})
        assert (reply.status_code, reply.text) == (400, REFUSED), payload
    for payload in ({"url": jpeg_data_url(8)}, {"path": "/etc/passwd"}, file_payload(str(folder / "a" / "b.png"))):
        assert client.post("/gradio_api/queue/join", json={"data": [payload], "fn_index": 0}).status_code == 200


def test_a_class_action_or_a_rows_question_is_read_no_further_than_an_event_may_be(tmp_path, monkeypatch):
    """`bench.attacks` ("oversized bodies on /class/join"): a class's action was read up to a webcam
    frame's 16 MiB and parsed before its 413, +1,063 MiB and 46 s of CPU for 64 bodies of nested
    lists (on Gradio's /queue/join, +1,920 MiB and 47 s). Now a class's action or a rows question is
    read to MAX_EVENT_BYTES and no further, and no request larger than that is parsed unless what is
    not a frame's data: URL in it fits MAX_EVENT_BYTES; a frame still may be large."""
    import asyncio

    from ui.gate import CLASS_ROUTE, ROUTE

    parsed = []
    monkeypatch.setattr(limits, "_fields", lambda body: parsed.append(len(body)) or {})
    guarded = RequestLimits(stored_upload(), uploads=UploadBudget(lambda: tmp_path, 40_000))

    def posted(path: str, body: bytes) -> tuple[int, int]:
        """(the reply's status, the bytes the server read) of a POST of `body` in 64 KiB chunks."""
        read, replies = [0], []

        async def receive() -> dict:
            chunk = body[read[0] : read[0] + 2**16]
            read[0] += len(chunk)
            return {"type": "http.request", "body": chunk, "more_body": read[0] < len(body)}

        async def send(message: dict) -> None:
            replies.append(message.get("status"))

        scope = {"type": "http", "method": "POST", "path": path, "headers": [], "client": ("198.51.100.2", 1)}
        asyncio.run(guarded(scope, receive, send))
        return replies[0], read[0]

    nested = b'{"data":[' + b"[]," * (16 * 2**20 // 3 - 10) + b"[]]}"  # bench.class_attacks.nested_lists
    for path in (f"{CLASS_ROUTE}/join", ROUTE):
        status, read = posted(path, nested)
        assert status == 413 and read <= MAX_EVENT_BYTES + 2**16, (path, status, read)  # the rest never read
    status, read = posted("/gradio_api/queue/join", nested)
    assert status == 413 and read == len(nested) and not parsed  # read (it might be a frame's), never parsed
    frame = json.dumps({"data": [{"url": jpeg_data_url(8) + "A" * 2**20}], "fn_index": 0}).encode()
    status, read = posted("/gradio_api/call/live_frame", frame)  # a frame's request is read whole and parsed
    assert status == 200 and read == len(frame) and parsed


def test_the_log_writes_one_line_a_minute_per_network_and_counts_the_rest():
    clock = [0.0]
    log = RefusalLog(every_s=60, most=2, clock=lambda: clock[0])
    assert log.line("203.0.113.66", "x") == "refused a request from 203.0.113.66: x"
    assert log.line("203.0.113.66", "x") is None  # the same network within the minute
    assert log.line(None, "x") == "refused a request from an unknown address: x"
    assert log.line("198.51.100.2", "x") is None  # two lines this minute: all networks together
    clock[0] = 61.0
    assert log.line("198.51.100.2", "x") is not None and log.line("203.0.113.66", "x") is not None
    assert log.said() == "refused and not written: 2 more requests naming a file (one line a minute per network)"
    assert log.said() is None


def test_an_empty_session_hash_is_refused_in_one_line(app):
    """Gradio answered an empty session hash with HTTP 500 and a KeyError's traceback."""
    url, _ = app
    data = [None, "bundled", "crop", *VIEWS]
    for route, body in (("call/analyze", {"data": data}), ("queue/join", {"data": data, "fn_index": 0})):
        reply = httpx.post(f"{url}gradio_api/{route}", json=body | {"session_hash": ""}, timeout=60)
        assert (reply.status_code, reply.text) == (400, "session_hash must not be empty")


def test_silent_webcam_joins_cannot_fill_the_queue_explore_needs(app):
    """64 webcam streams that joined and sent nothing more filled Gradio's one queue,
    and every /analyze got HTTP 503 "Queue is full". Live now keeps at most LIVE_WAITING events
    waiting; a stream joining beyond them is told Live is busy at once, and /analyze still works."""
    url, demo = app
    live = next(fn._id for fn in demo.fns.values() if fn.api_name == "live_frame")
    frame, controls = jpeg_data_url(32), ["bundled", 6, "cls", 4, 4, "inferno", "layer"]
    replies, most = [], 0
    for i in range(70):
        join = {"data": [{"url": frame}, *controls], "fn_index": live, "session_hash": f"silent{i}"}
        replies.append(httpx.post(f"{url}gradio_api/queue/join", json=join, timeout=60))
        most = max(most, live_waiting(demo))
    busy = [r for r in replies if r.status_code == 503]
    assert most <= LIVE_WAITING  # Live's share of the server's queue, whatever the joins
    assert len(busy) >= 40 and all(r.text == LIVE_BUSY for r in busy)  # told at once, not queued
    status, text = call(url, "analyze", [None, "bundled", "crop", *VIEWS], "explore-visitor")
    assert status == 200 and "event: complete" in text  # Explore's request was queued and answered
    deadline = time.monotonic() + 60
    while live_waiting(demo) and time.monotonic() < deadline:  # the silent streams end (STREAM_EVENT_S)
        time.sleep(0.5)


def test_webcam_joins_sent_together_are_held_to_lives_share_of_the_queue(app):
    """The share was checked against Gradio's queue before Gradio queued the event (it checks the
    session in a thread first), so joins sent at the same moment all passed the look."""
    from concurrent.futures import ThreadPoolExecutor

    url, demo = app
    deadline = time.monotonic() + 60
    while live_waiting(demo) and time.monotonic() < deadline:  # another test's streams end first
        time.sleep(0.5)
    fn = next(fn for fn in demo.fns.values() if fn.api_name == "live_frame")
    frame, controls = jpeg_data_url(32), ["bundled", 6, "cls", 4, 4, "inferno", "layer"]

    def join(i: int) -> int:
        body = {"data": [{"url": frame}, *controls], "fn_index": fn._id, "session_hash": f"together{i}"}
        return httpx.post(f"{url}gradio_api/queue/join", json=body, timeout=60).status_code

    with ThreadPoolExecutor(32) as pool:
        codes = list(pool.map(join, range(64)))
    # Live's workers take fn.concurrency_limit events, LIVE_WAITING more may wait; a silent stream
    # holds its place for STREAM_EVENT_S (10 s), longer than these joins take.
    assert codes.count(200) <= fn.concurrency_limit + LIVE_WAITING
    assert codes.count(503) >= 64 - fn.concurrency_limit - LIVE_WAITING


# Malformed file inputs (issue 56): Gradio refused each with a 1,303-byte traceback and a bare "Error"
NOT_FILE_PAYLOADS = (
    "/etc/passwd",
    7,
    ["/etc/passwd"],
    {"path": 5},
    {"path": ["/etc/passwd"], "meta": {"_type": "gradio.FileData"}},
    {"url": 5},
    True,
)


def test_a_file_input_that_is_no_file_payload_is_refused_in_a_sentence_with_one_log_line(app, capsys, monkeypatch):
    """A bare path, a number, a list, a dict whose path is no string, on every route an API
    client may call an event by: HTTP 400 naming the parameter, one log line a minute per network,
    no traceback. A dict Gradio reads (no path: the handler says it is no upload) and null pass."""
    url, demo = app
    index = next(fn._id for fn in demo.fns.values() if fn.api_name == "analyze")  # as the page sends it
    monkeypatch.setattr(REFUSALS, "written", OrderedDict())  # other tests' refusals are not this one's
    monkeypatch.setattr(REFUSALS, "unwritten", 0)
    capsys.readouterr()
    for shape in NOT_FILE_PAYLOADS:
        for route, body in (
            ("call/analyze_page", {"data": [None, shape, "bundled", "crop", *PAGE_VIEWS]}),  # the tab on screen first
            ("call/analyze", {"data": [shape, "bundled", "crop", *VIEWS]}),  # an event without the session's state
            ("call/v2/analyze", {"image": shape, "model_key": "bundled"}),
            ("run/analyze", {"data": [shape, "bundled", "crop", *VIEWS]}),
            ("queue/join", {"data": [shape, "bundled", "crop", *VIEWS], "fn_index": index, "session_hash": "s"}),
            ("call/lesson_heads_off", {"data": [shape, "bundled", ""]}),
            ("call/upload_checkpoint", {"data": [shape]}),
        ):
            reply = httpx.post(f"{url}gradio_api/{route}", json=body, timeout=60)
            name = "checkpoint" if "checkpoint" in route else "image"
            assert (reply.status_code, reply.text) == (400, malformed_file(name)), (route, shape)
    no_meta = httpx.post(f"{url}gradio_api/call/upload_checkpoint", json={"data": [{"path": "/x.safetensors"}]})
    assert (no_meta.status_code, no_meta.text) == (400, malformed_file("checkpoint"))  # gr.File's needs its meta
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    lines = [line for line in out.splitlines() if line.startswith("refused a request from")]
    assert lines == ["refused a request from 127.0.0.1: its image is no file payload: '/etc/passwd'"]
    for fine in ({"x": 1}, None):
        status, text = call(url, "analyze", [fine, "bundled", "crop", *VIEWS], "fine")
        assert status == 200 and "Traceback" not in text, fine


def test_a_file_payloads_fields_of_the_wrong_type_are_refused_in_any_input(tmp_path):
    """Gradio reads every file payload of a request into its FileData before the event runs, the
    model picker's as much as the image's: a size that is no number was a traceback."""
    from starlette.testclient import TestClient

    client = TestClient(RequestLimits(stored_upload(), uploads=UploadBudget(lambda: tmp_path, 40_000)))
    inside = str(upload_folder() / "a" / "b.png")
    for payload in (file_payload(inside) | {"size": "big"}, {"path": inside, "meta": "gradio.FileData"}):
        reply = client.post("/gradio_api/queue/join", json={"data": [None, None, payload], "fn_index": 0})
        assert (reply.status_code, reply.text) == (400, malformed_file("a file")), payload


def test_each_events_file_inputs_are_found_by_index_and_by_name(app):
    _, demo = app
    files = event_files(demo)
    page = files["analyze_page"]
    assert page.inputs == page.api_inputs + 1  # the "More views" tab on screen: the session's, not the API's
    assert [(f.position, f.api_position, f.name) for f in page.files] == [(1, 0, "image")]
    analyze = files["analyze"]
    assert analyze.inputs == analyze.api_inputs and [(f.position, f.name) for f in analyze.files] == [(0, "image")]
    assert files["upload_checkpoint"].files[0].name == "checkpoint" and files["attention_video"].files[0].name == "clip"
    assert files[next(fn._id for fn in demo.fns.values() if fn.api_name == "analyze")] is analyze
    assert not {"load_model", "heads", "train_start"} & set(files)  # no file input
