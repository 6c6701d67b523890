"""The real app in a subprocess, driven through its API exactly as a user's script would."""

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gradio
import httpx
import numpy as np
import pytest
import torch
from app_helpers import analyze, save_rgb
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError
from markdown_helpers import unescaped
from picture_helpers import (
    colour_index,
    expected_ring_heights,
    gradient_runs,
    has_rising_bar,
    ring_heights,
    squares,
)
from PIL import Image

import vit
from bench.serving import file_of
from explorer import canvas, charts, render, views
from explorer.canvas import MapStyle
from explorer.explain import explain
from explorer.images import load_image
from explorer.more_views import overview as overview_view
from ui import explore_views as ev
from ui.uploads import REFUSED
from vit.preprocessing import CIFAR10

STYLE = ("inferno", 0.6, "nearest", "overlay", "layer")  # colour map, opacity, upsampling, display, scale
CHEETAH = gradio.media.get_image("cheetah1.jpg")


def pixels(picture) -> np.ndarray:
    """The pixels of an image output: a file path, or an update carrying the file and its alt text."""
    return np.asarray(Image.open(file_of(picture)).convert("RGB"))


def test_every_view_has_an_api_name(client):
    names = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    expected = {"analyze", "heads", "restyle", "rollout", "query_patch", "reset_query", "export_png", "export_gif"}
    expected |= {"analyze_page"}  # the page's analysis: the first screen's numbers (explorer/page_maps.py)
    expected |= {"query_token", "relevance", "zero_shot"}  # relevance: its button's (the "More views" record's is None)
    expected |= {more.api_name for more in ev.MORE.values() if more.api_name}  # each "More views" view's own
    expected |= {"lesson_compare", "lesson_token_norms", "lesson_heads_off", "lesson_head_ranking"}
    expected |= {"lesson_norms_models", "lesson_heads_model", "lesson_words"}  # lesson_words: CLIP
    train = {"train_start", "train_start_new", "train_status", "train_stop", "train_continue", "train_open_in_explore"}
    live = {"live_frame", "live_model", "attention_video"}
    # Exactly these: no internal helper (e.g. a per-session cache's initialiser) leaks into the API.
    assert names == {f"/{n}" for n in expected | train | live | {"load_model", "upload_checkpoint"}}


def test_one_upload_drives_every_view(client, tiny_checkpoint):
    input_view, numbers, label, layer, heads, token, caption, export = analyze(client, CHEETAH)  # the first screen
    assert "grid **8 rows × 8 columns**" in numbers and "**65 tokens**" in numbers and "256 × 256" in numbers
    assert len(label["confidences"]) == 3 and label["label"] == label["confidences"][0]["label"]
    assert layer["maximum"] == 6
    assert pixels(input_view).shape == (384, 384, 3)  # 32 px input x 12
    assert pixels(heads).shape[1] > 4 * 128  # four head tiles side by side (sized to fit the 546-px column)
    # Each "More views" view is a call of its own, with its own controls only (docs/app.md, 2026-11-28).
    assert pixels(client.predict(*STYLE, api_name="/overview")).shape[0] > 6 * 64  # six layer rows
    rollout = client.predict("mean", 0.0, *STYLE, api_name="/rollout")
    assert pixels(rollout).shape[1] == 320 and pixels(rollout).shape[0] > 320  # the map, its colour bar, the rule
    # The distance chart: each head's ring at this image's distance for it, as this process computes it.
    model, meta = vit.load_checkpoint(tiny_checkpoint)
    ex = explain(model.eval(), meta.class_names, meta.preprocessing, load_image(CHEETAH))
    expected = ex.attention_distance()
    chart = Image.fromarray(pixels(client.predict(api_name="/distance")))
    axes = charts.distance_axes(*expected.shape, ex.input.pixels.shape[:2])  # the chart's layout, drawn here
    diameter = np.sqrt(axes.dots.get_sizes()[0]) * axes.canvas.figure.dpi / 72
    drawn = ring_heights(chart, axes, expected.shape[1])
    assert np.abs(drawn - expected_ring_heights(axes, expected, chart.height)).max() < diameter / 4
    # Position similarity: a tile per slot of the 8 x 8 grid, each with its own slot outlined in black.
    tiles = Image.fromarray(pixels(client.predict(api_name="/similarity")))
    side = 8 * render._similarity_scale(8, 1)
    corners = squares(tiles, side)
    assert len(corners) == 64
    cell = side // 8
    for (row, col), (y, x) in zip(np.ndindex(8, 8), corners, strict=True):
        black = np.argwhere((np.asarray(tiles)[y : y + side, x : x + side] == canvas.OWN_SLOT_COLOUR).all(-1))
        assert black.min(0).tolist() == [row * cell, col * cell], (row, col)
        assert black.max(0).tolist() == [(row + 1) * cell - 1, (col + 1) * cell - 1], (row, col)
    assert token["value"] == "cls" and [v for _, v in token["choices"]] == ["cls", "patch"]
    assert "CLS token" in caption  # a new image starts at the default query, and the caption says so
    assert export is None  # no export of an earlier image is offered


def test_controls_change_only_what_they_should(client, tiny_checkpoint):
    _, _, _, _, heads_cls, *_ = analyze(client, CHEETAH)
    overview = client.predict(*STYLE, api_name="/overview")
    rollout_mean = client.predict("mean", 0.0, *STYLE, api_name="/rollout")
    layer1 = client.predict(1, *STYLE, api_name="/heads")
    assert not np.array_equal(pixels(layer1), pixels(heads_cls))
    assert "heads of layer 1 of 6" in layer1["alt_text"] and "heads of layer 6 of 6" in heads_cls["alt_text"]
    raw_style = ("viridis", 0.6, "smooth", "raw")
    heads_raw, *_ = client.predict(6, "mean", 0.0, *raw_style, api_name="/restyle")
    overview_raw = client.predict(*raw_style, api_name="/overview")
    rollout_raw = client.predict("mean", 0.0, *raw_style, api_name="/rollout")
    # Each restyled picture: its map tiles (sides from the views' own layout) wholly in viridis, the map
    # alone; its colour bar viridis from end to end, where the picture before had inferno's.
    model, meta = vit.load_checkpoint(tiny_checkpoint)
    ex = explain(model.eval(), meta.class_names, meta.preprocessing, load_image(CHEETAH))
    raw = MapStyle(cmap="viridis", smooth=True, raw=True)
    sides = (
        views.head_layout(ex, None, raw)[1],
        canvas.fit_to_grid(ex.input.pixels, ex.grid, overview_view.OVERVIEW_PX).shape[0],
        canvas.fit_to_grid(ex.input.pixels, ex.grid, views.ROLLOUT_PX).shape[0],
    )
    for restyled, before, side, tiles in zip(
        (heads_raw, overview_raw, rollout_raw), (heads_cls, overview, rollout_mean), sides, (4, 6 * 4, 1), strict=True
    ):
        assert not np.array_equal(pixels(restyled), pixels(before))
        shown, earlier = Image.fromarray(pixels(restyled)), Image.fromarray(pixels(before))
        corners = squares(shown, side)
        assert len(corners) == tiles, (side, corners)
        for y, x in corners:
            assert (colour_index(pixels(restyled)[y : y + side, x : x + side], "viridis") >= 0).all()
        assert gradient_runs(shown, "viridis") and not gradient_runs(shown, "inferno")
        assert gradient_runs(earlier, "inferno") and not gradient_runs(earlier, "viridis")
    rollout_max = client.predict("max", 0.5, *STYLE, api_name="/rollout")
    assert not np.array_equal(pixels(rollout_max), pixels(rollout_mean))
    assert "(max over heads, discard ratio 0.50)" in rollout_max["alt_text"]
    assert "(mean over heads, discard ratio 0.00)" in rollout_mean["alt_text"]


def test_clicking_a_patch_changes_the_query_and_reset_restores_cls(client):
    input_view, _, _, _, heads_cls, *_ = analyze(client, CHEETAH)
    marked, heads_patch, text, token = client.predict(3, 6, 6, *STYLE, api_name="/query_patch")  # 1-based
    assert "row 3, column 6" in text and token == "patch"
    assert not np.array_equal(pixels(heads_patch), pixels(heads_cls))
    assert "for the query patch (3, 6):" in heads_patch["alt_text"] and "for the query CLS:" in heads_cls["alt_text"]
    diff = np.argwhere((pixels(marked) != pixels(input_view)).any(-1))  # only the outline of row 3, column 6 changed
    assert diff.min(0).tolist() == [2 * 48, 5 * 48] and diff.max(0).tolist() == [3 * 48 - 1, 6 * 48 - 1]
    _, heads_again, text, token = client.predict(6, *STYLE, api_name="/reset_query")
    assert "CLS" in text and token == "cls" and np.array_equal(pixels(heads_again), pixels(heads_cls))


def test_query_token_and_relevance_through_the_api(client):
    heads_cls = analyze(client, CHEETAH)[4]
    _, heads_patch, text, token = client.predict("patch", 6, *STYLE, api_name="/query_token")
    assert token == "patch" and "row 5, column 5" in text and not np.array_equal(pixels(heads_patch), pixels(heads_cls))
    assert "for the query patch (5, 5):" in heads_patch["alt_text"]
    _, heads_again, text, token = client.predict("cls", 6, *STYLE, api_name="/query_token")
    assert token == "cls" and np.array_equal(pixels(heads_again), pixels(heads_cls))
    relevance = client.predict("cat", *STYLE, api_name="/relevance")
    assert Path(file_of(relevance)).name == "cheetah1-tiny_relevance_cat.png" and pixels(relevance).shape[1] == 320


def test_patch_features_in_colour_and_the_logit_lens_through_the_api(client):
    label = analyze(client, CHEETAH)[2]
    info = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    names = [p["parameter_name"] for p in info["/patch_pca"]["parameters"]]
    assert names == ["pca_layer", "pca_examples", "pca_background"]  # named as the handler names them
    alone = client.predict(3, False, True, api_name="/patch_pca")
    together = client.predict(3, True, True, api_name="/patch_pca")
    assert pixels(together).shape[1] > pixels(alone).shape[1]  # a column for each of the six animal examples
    assert "layer 3 of 6" in alone["alt_text"] and "bird, cat, deer, dog, frog, horse" in together["alt_text"]
    lens = client.predict(api_name="/logit_lens")
    assert "never trained" in lens["alt_text"]
    assert f"layer 6: {label['label']} " in lens["alt_text"]  # the last layer reads what the model predicts
    assert has_rising_bar(pixels(lens), charts.LOGIT_LENS_CMAP)  # the probability's colour bar, 0 to 1
    with pytest.raises(AppError, match=re.escape("layer must be a whole number from 1 to 6, got 9")):
        client.predict(9, False, True, api_name="/patch_pca")


def test_exports_png_of_the_grid_and_gif_through_the_layers(client):
    heads = analyze(client, CHEETAH)[4]
    png = client.predict(6, *STYLE, api_name="/export_png")
    assert np.array_equal(pixels(png), pixels(heads))
    assert Path(png).name == "cheetah1-tiny_layer6_cls.png"  # image, model, layer, query
    gif = client.predict(*STYLE, api_name="/export_gif")
    with Image.open(gif) as im:
        assert im.n_frames == 6
    client.predict(2, 7, 6, *STYLE, api_name="/query_patch")
    assert Path(client.predict(3, *STYLE, api_name="/export_png")).name == "cheetah1-tiny_layer3_row2-col7.png"
    assert Path(client.predict(*STYLE, api_name="/export_gif")).name == "cheetah1-tiny_layers1-6_row2-col7.gif"


def test_the_three_lessons_through_the_api(client):
    image = handle_file(CHEETAH)
    picture, note = client.predict(image, ["bundled", "pretrained:nonexistent"], "inferno", api_name="/lesson_compare")
    assert pixels(picture).shape[1] > 4 * 100 and "pretrained:nonexistent" in unescaped(note)
    norms, table = client.predict(image, "bundled", "bundled", 6, "inferno", api_name="/lesson_token_norms")
    assert Path(file_of(norms)).name == "lesson-token-norms-layer6.png" and "median patch norm" in table
    top5, note = client.predict(image, "bundled", "1.1, 6.4", api_name="/lesson_heads_off")
    assert len(top5["confidences"]) == 5 and "Heads off: **1.1, 6.4**" in note
    ranking, note = client.predict(image, "bundled", api_name="/lesson_head_ranking")
    assert ranking["headers"] == ["rank", "layer.head", "drop in probability"] and len(ranking["data"]) == 10
    with pytest.raises(AppError, match=re.escape("head 9 in '2.9' is out of range; each layer has heads 1 to 4")):
        client.predict(image, "bundled", "2.9", api_name="/lesson_heads_off")
    with pytest.raises(AppError, match=re.escape("layer must be a whole number from 1 to 6, got 24")):
        client.predict(image, "bundled", "bundled", 24, "inferno", api_name="/lesson_token_norms")


BAD_VALUES = [
    # (endpoint, arguments, what the message says)
    ("/heads", (0, *STYLE), "layer must be a whole number from 1 to 6, got 0"),
    ("/heads", (7, *STYLE), "layer must be a whole number from 1 to 6, got 7"),
    ("/heads", (2.5, *STYLE), "layer must be a whole number from 1 to 6, got 2.5"),
    ("/heads", (6, "rainbow", 0.6, "nearest", "overlay"), "unknown colour map 'rainbow'; choose one of 'inferno'"),
    ("/heads", (6, "inferno", 1.5, "nearest", "overlay"), "opacity must be a number from 0.0 to 1.0, got 1.5"),
    ("/heads", (6, "inferno", 0.6, "bicubic", "overlay"), "unknown upsampling 'bicubic'; choose one of 'nearest'"),
    ("/heads", (6, "inferno", 0.6, "nearest", "side"), "unknown display 'side'; choose one of 'overlay', 'raw'"),
    ("/restyle", (0, "mean", 0.0, *STYLE), "layer must be a whole number from 1 to 6"),
    ("/rollout", ("median", 0.0, *STYLE), "unknown head fusion 'median'; choose one of 'mean', 'max', 'min'"),
    ("/rollout", ("mean", 0.99, *STYLE), "discard ratio must be a number from 0.0 to 0.95, got 0.99"),
    ("/rollout", ("mean", 0.0, *STYLE, "sideways", 60), "unknown show 'sideways'; choose one of 'weights', 'relative'"),
    ("/rollout", ("mean", 0.0, *STYLE, "top mass", 0), "keep percent must be a number from 1.0 to 100.0, got 0"),
    ("/query_patch", (0, 1, 6, *STYLE), "row must be a whole number from 1 to 8, got 0"),
    ("/query_patch", (9, 1, 6, *STYLE), "row must be a whole number from 1 to 8, got 9"),
    ("/query_patch", (1, 9, 6, *STYLE), "column must be a whole number from 1 to 8, got 9"),
    ("/query_patch", (1, 1, 0, *STYLE), "layer must be a whole number from 1 to 6, got 0"),
    ("/reset_query", (9, *STYLE), "layer must be a whole number from 1 to 6, got 9"),
    ("/export_png", (0, *STYLE), "layer must be a whole number from 1 to 6, got 0"),
    ("/export_gif", ("inferno", -0.1, "nearest", "overlay"), "opacity must be a number from 0.0 to 1.0, got -0.1"),
    ("/query_token", ("reg1", 6, *STYLE), "unknown query token 'reg1'; choose one of 'cls', 'patch'"),
    ("/relevance", ("teapot", *STYLE), "unknown class 'teapot'; choose one of 'predicted class', 'airplane'"),
]


@pytest.mark.parametrize(("endpoint", "args", "message"), BAD_VALUES, ids=[f"{e}-{m[:20]}" for e, _, m in BAD_VALUES])
def test_out_of_range_and_malformed_values_get_a_message_naming_what_is_allowed(client, endpoint, args, message):
    analyze(client, CHEETAH)
    with pytest.raises(AppError, match=re.escape(message)):
        client.predict(*args, api_name=endpoint)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"mode": "stretch"}, "unknown resize mode 'stretch'; choose one of 'crop', 'whole'"),
        ({"layer": 0}, "layer must be a whole number from 1 to 6, got 0"),
        ({"layer": 12}, "layer must be a whole number from 1 to 6, got 12"),
        ({"cmap": "hsv"}, "unknown colour map 'hsv'"),
        ({"opacity": "0.5"}, "opacity must be a number from 0.0 to 1.0, got '0.5'"),
    ],
)
def test_analyze_checks_every_setting(client, change, message):
    with pytest.raises(AppError, match=re.escape(message)):
        analyze(client, CHEETAH, **change)


@pytest.mark.parametrize(
    ("endpoint", "position", "name"), [("analyze_page", 5, "discard ratio"), ("analyze", 5, "opacity")]
)
def test_nan_is_refused_with_the_allowed_range(server, endpoint, position, name):
    """gradio_client cannot send NaN (strict JSON), but a hand-written request can."""
    with open(CHEETAH, "rb") as f:
        uploaded = httpx.post(f"{server}gradio_api/upload", files={"files": f}, timeout=30).json()[0]
    image = {"path": uploaded, "orig_name": "cheetah1.jpg", "meta": {"_type": "gradio.FileData"}}
    views = ("mean", 0.0, *STYLE, "weights", 60, 6, False, True) if endpoint == "analyze_page" else STYLE
    data = [image, "bundled", "crop", 6, *views]
    data[position] = float("nan")
    body = json.dumps({"data": data})  # Python writes NaN, as a careless client would
    base = f"{server}gradio_api/call/{endpoint}"
    event = httpx.post(base, content=body, headers={"content-type": "application/json"}, timeout=30).json()
    reply = httpx.get(f"{base}/{event['event_id']}", timeout=60).text
    assert "event: error" in reply and f"{name} must be a number from 0.0 to" in reply and "got nan" in reply


API_PAGE = Path(__file__).with_name("api_named_endpoints.json")
PARAMETER_FIELDS = (
    "parameter_name",
    "label",
    "parameter_has_default",
    "parameter_default",
    "type",
    "python_type",
    "component",
)


def api_page(client) -> dict:
    """What a script sees of each named endpoint: every parameter's name, label, default and type,
    every return's label and component. A file default keeps only its name (its path is this
    server's upload folder)."""

    def parameter(p: dict) -> dict:
        kept = {k: p[k] for k in PARAMETER_FIELDS}
        if isinstance(kept["parameter_default"], dict) and "orig_name" in kept["parameter_default"]:
            kept["parameter_default"] = {"orig_name": kept["parameter_default"]["orig_name"]}
        return kept

    endpoints = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    return {
        name: {
            "parameters": [parameter(p) for p in e["parameters"]],
            "returns": [{k: r[k] for k in ("label", "component")} for r in e["returns"]],
        }
        for name, e in endpoints.items()
    }


def test_the_api_page_is_the_recorded_one(client):
    """The named API as recorded before the ui/ redesign: a refactor that renames,
    drops, reorders or retypes a parameter, or relabels a return, breaks users' scripts."""
    recorded = json.loads(API_PAGE.read_text())
    served = api_page(client)
    assert sorted(served) == sorted(recorded)
    for name in recorded:
        assert served[name] == recorded[name], name


def test_every_api_parameter_and_return_has_a_real_name(client):
    auto = re.compile(r"^(param|parameter|value)_\d+$")
    endpoints = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    for name, endpoint in endpoints.items():
        assert endpoint["description"], f"{name} has no description"
        for p in endpoint["parameters"]:
            assert not auto.match(p["parameter_name"]) and not auto.match(p["label"]), f"{name}: {p}"
        for r in endpoint["returns"]:
            assert not auto.match(r["label"]), f"{name}: {r}"
    query = endpoints["/query_patch"]
    assert [p["parameter_name"] for p in query["parameters"][:3]] == ["row", "column", "layer"]
    assert "count from 1" in query["description"]


def test_views_before_any_upload_ask_for_an_image(client):
    with pytest.raises(AppError, match="upload an image first"):
        client.predict(1, *STYLE, api_name="/heads")


def test_non_square_whole_image_is_never_transposed(client, tmp_path):
    image = np.zeros((32, 64, 3), np.uint8)  # H x W: 8 x 16 patches of 4 px
    image[8:12, 44:48] = 255  # the patch at row 2, column 11
    path = save_rgb(tmp_path / "wide.png", image)
    input_view, numbers, *_ = analyze(client, path, mode="whole")
    assert "grid **8 rows × 16 columns**" in numbers and "uploaded **64 × 32** px" in numbers  # width × height
    view = pixels(input_view)
    assert view.shape == (32 * 6, 64 * 6, 3)
    lit = np.argwhere(view.min(-1) > 200)  # white: the bright patch (grid lines are 1 px, so skip them)
    blocks = {(y // 24, x // 24) for y, x in lit if y % 24 and x % 24}
    assert blocks == {(2, 11)}
    client.predict(8, 16, 6, *STYLE, api_name="/query_patch")  # the bottom-right patch exists
    _, crop_numbers, *_ = analyze(client, path, mode="crop")
    assert "grid **8 rows × 8 columns**" in crop_numbers and "cut off" in crop_numbers


def test_offline_pretrained_model_fails_clearly_and_the_app_keeps_working(client):
    """The server runs offline (HF_HUB_OFFLINE, tests/conftest.py): torchvision's weights too."""
    with pytest.raises(AppError, match="is not on this machine, and this machine has no internet") as refused:
        client.predict("pretrained:vit_b_16.tv_in1k", api_name="/load_model")
    assert "\n" not in str(refused.value) and "Error:" not in str(refused.value)  # one line, no Python
    assert analyze(client, CHEETAH)[2]["confidences"]


def test_a_server_path_smuggled_into_the_image_payload_is_refused(server, client, tmp_path):
    """preprocess=False hands the app whatever path the client put in the payload: a file
    outside the upload folder is refused, with the same reply whether or not it exists. As a
    file payload it is refused before Gradio reads it (ui.limits: Gradio wrote a traceback for
    each); as a bare path, by the handler."""
    secret = save_rgb(tmp_path / "not_uploaded.png", np.zeros((32, 32, 3), np.uint8))  # a valid image
    in_repo = Path(__file__).resolve().parents[1] / "docs" / "bundled-model-confusion.png"  # under the server's cwd
    base = f"{server}gradio_api/call/analyze"
    refused, replies = [], []
    for path in (secret, tmp_path / "missing.png", in_repo, in_repo.with_name("missing.png")):
        for payload in ({"path": str(path), "meta": {"_type": "gradio.FileData"}}, {"path": str(path)}):
            data = [payload, "bundled", "crop", 6, *STYLE]
            reply = httpx.post(base, json={"data": data}, timeout=30)
            if "meta" in payload:
                refused.append((reply.status_code, reply.text))
            else:
                replies.append(httpx.get(f"{base}/{reply.json()['event_id']}", timeout=30).text)
    assert refused == [(400, REFUSED)] * 4
    assert all("event: error" in r and "complete" not in r and REFUSED in r for r in replies)
    assert len(set(replies)) == 1 and str(tmp_path) not in replies[0]
    assert analyze(client, CHEETAH)[2]["confidences"]


def test_unknown_model_keys_are_refused(client):
    # The handler checks the value against this visitor's picker choices.
    with pytest.raises(AppError, match="unknown model 'resnet': pick one from the list"):
        client.predict("resnet", api_name="/load_model")
    # A checkpoint key that is not this visitor's gets the one sentence of ModelCatalog.check_use,
    # whatever it holds: nothing of it is quoted back (a path filter once made it 'checkpoinpasswd').
    with pytest.raises(AppError, match="^unknown checkpoint: pick one from the list or upload it$"):
        client.predict("checkpoint:/etc/passwd", api_name="/load_model")
    with pytest.raises(AppError, match="unknown model"):  # not a text at all
        client.predict({"path": "/etc/passwd"}, api_name="/load_model")
    with pytest.raises(AppError) as refused:  # a long key is not echoed back (Gradio's own check did)
        client.predict("k" * 4000, api_name="/load_model")
    assert len(str(refused.value)) < 200
    with pytest.raises(httpx.HTTPStatusError, match="413"):  # a 1 MB one is refused before the queue
        client.predict("k" * 2**20, api_name="/load_model")


@pytest.mark.parametrize("api_name", ["/load_model", "/live_model"])
def test_every_model_picker_refuses_a_bad_key_in_a_short_escaped_message(client, api_name):
    """/live_model answered through Gradio's own choice check: a 10 MB key came back whole
    (10,001,099 characters), and HTML in it unescaped. Such a key is now refused before the
    queue (ui/limits.py); one that fits a request gets the app's message."""
    for key in ("k" * 6000, "<img src=x onerror=alert(1)>"):
        with pytest.raises(AppError, match="unknown model .*: pick one from the list") as refused:
            client.predict(key, api_name=api_name)
        assert len(str(refused.value)) < 300 and "<img" not in str(refused.value)
    assert "&lt;img src=x onerror=alert(1)&gt;" in str(refused.value)
    with pytest.raises(httpx.HTTPStatusError, match="413"):
        client.predict("k" * 10 * 2**20, api_name=api_name)


def test_no_event_with_a_choice_among_its_inputs_lets_gradio_check_it(tiny_checkpoint, tmp_path):
    """Gradio's check of a Dropdown's, Radio's or CheckboxGroup's value echoes the value whole
    and unescaped: every event taking one runs with preprocess=False and checks it itself."""
    import ui
    from explorer.catalog import ModelCatalog
    from ui.settings import ServerSettings

    demo = ui.build_demo(ModelCatalog(tiny_checkpoint, tmp_path, scan_runs=False), ServerSettings())
    choices = (gradio.Dropdown, gradio.Radio, gradio.CheckboxGroup)
    checked_by_gradio = [
        fn.api_name or fn.name
        for fn in demo.fns.values()
        if fn.preprocess and any(isinstance(block, choices) for block in fn.inputs)
    ]
    assert checked_by_gradio == []


def test_uploaded_checkpoint_brings_its_own_class_names(client, tmp_path):
    torch.manual_seed(1)
    names = ["cat", "dog", "teapot"]
    path = tmp_path / "three.safetensors"
    model = vit.create_model("vit_cifar_nano", num_classes=3)
    vit.save_checkpoint(model, path, class_names=names, preprocessing=CIFAR10)
    picker = client.predict(handle_file(str(path)), api_name="/upload_checkpoint")
    key = picker["value"]
    assert key.startswith("checkpoint:") and key in [value for _, value in picker["choices"]]
    label = analyze(client, CHEETAH, model=key)[2]
    assert {c["label"] for c in label["confidences"]} == set(names)
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a safetensors file")
    with pytest.raises(AppError, match="not a readable safetensors"):
        client.predict(handle_file(str(bad)), api_name="/upload_checkpoint")


def most_common_colour(path) -> tuple[int, ...]:
    """The most frequent colour of a picture, white (the background) left out."""
    rgb = pixels(path).reshape(-1, 3)
    colours, counts = np.unique(rgb[(rgb != 255).any(-1)], axis=0, return_counts=True)
    return tuple(int(c) for c in colours[counts.argmax()])


def test_eight_concurrent_clients_each_get_their_own_pictures(server, tmp_path):
    """Each client analyses an image of its own colour, then asks for head maps at opacity 0
    (the picture under the maps): a mixed-up session or a failed request shows here."""
    colours = [(30 * i, 200 - 20 * i, 90) for i in range(8)]
    paths = [save_rgb(tmp_path / f"colour{i}.png", np.full((32, 32, 3), c, np.uint8)) for i, c in enumerate(colours)]

    def session(i: int) -> list[tuple[int, ...]]:
        c = Client(server, verbose=False)
        seen = []
        for j in range(5):
            if j % 2 == 0:
                seen.append(tuple(int(v) for v in pixels(analyze(c, paths[i])[0])[20, 20]))
            else:
                heads = c.predict(1 + (i + j) % 6, "inferno", 0.0, "nearest", "overlay", api_name="/heads")
                seen.append(most_common_colour(heads))
        return seen

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(session, range(8)))  # a failed request raises here
    assert results == [[colour] * 5 for colour in colours]


def test_the_colour_scale_is_a_choice_and_unknown_ones_are_refused(client):
    analyze(client, CHEETAH)
    shared = pixels(client.predict(6, *STYLE, api_name="/heads"))
    stretched = pixels(client.predict(6, *STYLE[:4], "head", api_name="/heads"))
    assert stretched.shape != shared.shape or (stretched != shared).any()  # each head drawn to its own max
    with pytest.raises(AppError, match="unknown colour scale 'minmax'; choose one of 'layer', 'head', 'fixed'"):
        client.predict(6, *STYLE[:4], "minmax", api_name="/heads")
