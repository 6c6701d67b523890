"""Public mode (a Space) and shared runs (a projector), in-process: what a visitor cannot type
and who may stop the one shared run (docs/security.md)."""

import html
import json
import time
from pathlib import Path

import pytest
from app_helpers import served
from gradio_client import Client
from gradio_client.exceptions import AppError
from markdown_helpers import unescaped
from training_helpers import write_image_folder

import ui
from explorer.catalog import ModelCatalog
from ui.settings import ServerSettings, for_visitors

pytestmark = pytest.mark.filterwarnings("ignore::pandas.errors.Pandas4Warning")


@pytest.fixture(scope="module")
def public(tiny_checkpoint, tmp_path_factory):
    """A live public app in shared-runs mode with an operator-named data folder."""
    data = write_image_folder(tmp_path_factory.mktemp("data") / "pets", per_class=8, size=16, test_per_class=2)
    runs = tmp_path_factory.mktemp("runs")
    catalog = ModelCatalog(tiny_checkpoint, runs, scan_runs=False)
    demo = ui.build_demo(catalog, ServerSettings(public=True, shared_runs=True, data_folder=data))
    with served(demo) as url:
        yield url


def test_a_visitor_cannot_type_a_server_path(public, tmp_path):
    client = Client(public, verbose=False)
    # the operator's folder first: it is the default, the source that works offline
    with pytest.raises(AppError, match="unknown data source 'folder'; choose one of 'operator', 'cifar10'"):
        client.predict("vit_cifar_nano", "folder", str(tmp_path), 1, 1e-3, 8, api_name="/train_start")
    with pytest.raises(AppError, match="pick a model from the list"):  # no typed weights file
        client.predict(str(tmp_path / "weights.pth"), "operator", "", 1, 1e-3, 8, api_name="/train_start")


def test_everyone_sees_the_shared_run_and_only_its_starter_stops_it(public):
    teacher, student = Client(public, verbose=False), Client(public, verbose=False)
    teacher.predict("vit_cifar_nano", "operator", "", 200, 1e-3, 4, api_name="/train_start")
    deadline = time.monotonic() + 60
    while ">running<" not in student.predict(api_name="/train_status")[1] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert ">running<" in student.predict(api_name="/train_status")[1]  # the student sees the run...
    assert "you have no run to stop" in student.predict(api_name="/train_stop")  # ...but cannot stop it
    assert "stopping" in teacher.predict(api_name="/train_stop")
    deadline = time.monotonic() + 60
    while ">running<" in student.predict(api_name="/train_status")[1] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert "stopped" in student.predict(api_name="/train_status")[1]


def test_messages_for_visitors_keep_only_the_last_part_of_paths_and_are_escaped():
    text = for_visitors("cannot read /srv/app/runs/abc/model.safetensors: <class 'OSError'>")
    assert text == "cannot read model.safetensors: &lt;class 'OSError'&gt;"


@pytest.mark.parametrize(
    "message",
    [
        "epoch 15/30, step 1/65",
        "cannot load timm/deit_small_patch16_224.fb_in1k: no file",
        "pretrained:facebook/dinov2-small",
        "see https://huggingface.co/timm/x/blob/main/config.json",
        "unknown data source '</script>'",
        "a folder with train/<class>/ and test/<class>/ images",
        "/tmp alone is one part, not a path worth hiding",
    ],
)
def test_messages_for_visitors_keep_fractions_model_names_and_urls_as_written(message):
    """The path filter ate every slash ("epoch 1530", "timmdeit_small…")."""
    assert for_visitors(message) == html.escape(message, quote=False)


@pytest.mark.parametrize(
    ("message", "shown"),
    [
        ("cached in /root/.cache/huggingface/hub/models--timm--x/blobs/abc.", "cached in abc."),
        ("cannot read /tmp/gradio/abc/cat.jpg: truncated", "cannot read cat.jpg: truncated"),
        ("cannot read C:\\Users\\x\\y.png", "cannot read y.png"),
        ("in ~/.cache/torch/hub (empty)", "in hub (empty)"),
        (
            "model saved to /srv/runs/abc/vit_5epochs.safetensors; epoch 5/30",
            "model saved to vit_5epochs.safetensors; epoch 5/30",
        ),
    ],
)
def test_messages_for_visitors_cut_real_server_paths_to_their_last_part(message, shown):
    assert for_visitors(message) == shown


def test_messages_echo_a_visitors_input_escaped_and_short(public):
    client = Client(public, verbose=False)
    with pytest.raises(AppError) as refused:
        client.predict("vit_cifar_nano", "<script>alert(1)</script>", "", 1, 1e-3, 8, api_name="/train_start")
    message = str(refused.value)  # quoted back as typed, escaped (a closing tag is not a path to cut)
    assert "unknown data source '&lt;script&gt;alert(1)&lt;/script&gt;'" in message and "<" not in message
    with pytest.raises(AppError) as refused:
        client.predict("vit_cifar_nano", "cifar10", "", "9" * 100_000, 1e-3, 8, api_name="/train_start")
    assert "epochs must be a whole number" in str(refused.value) and len(str(refused.value)) < 300


def test_every_error_of_the_ui_goes_through_the_one_helper():
    """ui.checks.visitor_error escapes, cuts paths and caps length; a bare gr.Error would not."""
    ui_dir = Path(ui.__file__).parent
    bare = [p.name for p in ui_dir.glob("*.py") if "gr.Error(" in p.read_text() and p.name != "checks.py"]
    assert bare == []


def test_another_visitors_checkpoint_key_is_refused_by_every_endpoint_in_one_sentence(public, tmp_path):
    """/analyze, the lessons, /live_frame and /attention_video took another visitor's
    checkpoint key (a leak away), /load_model, /live_model and /train_start refused it. One rule
    now (ModelCatalog.check_use), and one sentence: the same as for a key that does not exist."""
    import base64

    import httpx
    from gradio_client import handle_file
    from PIL import Image

    from bench.attacks import VIEWS, checkpoint
    from explorer.catalog import UNKNOWN_CHECKPOINT

    visitor, other = Client(public, verbose=False), Client(public, verbose=False)
    key = visitor.predict(
        handle_file(str(checkpoint(tmp_path / "mine.safetensors", dim=16))), api_name="/upload_checkpoint"
    )["value"]
    image = tmp_path / "cat.png"
    Image.new("RGB", (32, 32), (200, 120, 40)).save(image)
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"\0" * 100)  # refused for its key before it is opened
    picture = handle_file(str(image))
    assert visitor.predict(picture, key, "crop", 1, *VIEWS[1:], api_name="/analyze")[2]["label"]  # their own key works
    calls = {
        "/analyze": (picture, key, "crop", 1, *VIEWS[1:]),
        "/lesson_compare": (picture, [key], "inferno"),
        "/lesson_token_norms": (picture, key, "bundled", 1, "inferno"),
        "/lesson_heads_off": (picture, key, ""),
        "/lesson_head_ranking": (picture, key),
        "/attention_video": (handle_file(str(clip)), key, 1, "cls", 1, 1, "inferno", "layer"),
        "/load_model": (key,),
        "/live_model": (key,),
        "/train_start": (key, "operator", "", 1, 1e-3, 8),
    }
    for api, args in calls.items():
        for asked in (key, "checkpoint:" + "0" * 24):  # another visitor's key, and one that never was
            sent = tuple([asked] if a == [key] else asked if a == key else a for a in args)
            with pytest.raises(AppError) as refused:
                other.predict(*sent, api_name=api)
            assert refused.value.args[0] == UNKNOWN_CHECKPOINT or UNKNOWN_CHECKPOINT in str(refused.value), (
                api,
                refused.value,
            )
    controls = [key, 1, "cls", 1, 1, "inferno", "layer"]
    frame = "data:image/png;base64," + base64.b64encode(image.read_bytes()).decode()
    base = f"{public}gradio_api/call/live_frame"
    event = httpx.post(base, json={"data": [{"url": frame}, *controls], "session_hash": "another"}, timeout=60)
    with httpx.stream("GET", f"{base}/{event.json()['event_id']}", timeout=120) as replies:
        said = next(line for line in replies.iter_lines() if "Cannot draw" in line or "error" in line)
    httpx.post(f"{public}gradio_api/stream/{event.json()['event_id']}/close", timeout=60)
    # /live_frame says it in its status line, the same sentence, as Markdown that shows it as written
    assert UNKNOWN_CHECKPOINT in unescaped(str(json.loads(said.removeprefix("data: "))[-1]))


def server_paths(text: str) -> list[str]:
    """Every absolute path of this machine in `text`: its temp folders, this repository, the home
    folder, and any path from `/` into one of the machine's top folders (also inside a URL's
    `/file=/…`)."""
    import os
    import re
    import tempfile

    from conftest import REPO

    from ui.outputs import upload_folder

    named = {str(upload_folder()), tempfile.gettempdir(), str(REPO), str(REPO.resolve()), str(Path.home())}
    found = sorted(name for name in named if name in text)
    tops = "|".join(re.escape(entry) for entry in sorted(os.listdir("/")))
    found += re.findall(rf"""(?:^|[\\s"'=(:,\[])/(?:{tops})(?:/[^\s"',)]*|(?=["'\s]))""", text)
    return found


def test_the_page_and_the_api_page_name_no_server_path(public):
    """Issue 56 (open since s6): /config and /gradio_api/info showed the examples' and the
    lessons' opening picture's cached copies by their paths in Gradio's temp folder. The examples
    are inline pictures now and the lessons' picture is handed over when the tab opens."""
    import httpx

    for route in ("config", "gradio_api/info"):
        text = httpx.get(f"{public}{route}", timeout=60).text
        assert len(text) > 10_000 and server_paths(text) == [], route
    assert server_paths('{"url": "http://h/gradio_api/file=/tmp/gradio/ab/cat.jpg"}')  # the check sees them
    assert server_paths('{"path": "/etc/passwd"}') and not server_paths('{"url": "https://huggingface.co/x"}')
