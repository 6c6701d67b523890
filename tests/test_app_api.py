"""The real app in a subprocess, driven through its API exactly as a user's script would."""

import socket
from concurrent.futures import ThreadPoolExecutor

import gradio
import httpx
import numpy as np
import pytest
import torch
from app_helpers import analyze, save_rgb
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError
from PIL import Image

import vit
from vit.preprocessing import CIFAR10

STYLE = ("inferno", 0.6, "nearest", "overlay")
CHEETAH = gradio.media.get_image("cheetah1.jpg")


def pixels(path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB"))


def test_every_view_has_an_api_name(client):
    names = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    expected = {"analyze", "heads", "restyle", "rollout", "query_patch", "reset_query", "export_png", "export_gif"}
    train = {"train_start", "train_status", "train_stop", "train_open_in_explore"}
    # Exactly these: no internal helper (e.g. a per-session cache's initialiser) leaks into the API.
    assert names == {f"/{n}" for n in expected | train | {"load_model", "upload_checkpoint"}}


def test_one_upload_drives_every_view(client):
    input_view, numbers, label, layer, heads, overview, rollout, distance = analyze(client, CHEETAH)
    assert "grid **8 rows × 8 columns**" in numbers and "**65 tokens**" in numbers and "256 × 256" in numbers
    assert len(label["confidences"]) == 5 and label["label"] == label["confidences"][0]["label"]
    assert layer["maximum"] == 6
    assert pixels(input_view).shape == (384, 384, 3)  # 32 px input x 12
    assert pixels(heads).shape[1] > 4 * 160  # four head tiles side by side
    assert pixels(overview).shape[0] > 6 * 64  # six layer rows
    assert pixels(rollout).shape[1] == 320 and pixels(rollout).shape[0] > 320  # the map, its colour bar, the rule
    assert pixels(distance).std() > 10


def test_controls_change_only_what_they_should(client):
    _, _, _, _, heads_cls, overview, rollout_mean, _ = analyze(client, CHEETAH)
    layer1 = client.predict(1, *STYLE, api_name="/heads")
    assert not np.array_equal(pixels(layer1), pixels(heads_cls))
    raw = client.predict(6, "mean", 0.0, "viridis", 0.6, "smooth", "raw", api_name="/restyle")
    for restyled, before in zip(raw, (heads_cls, overview, rollout_mean), strict=True):
        assert not np.array_equal(pixels(restyled), pixels(before))
    rollout_max = client.predict("max", 0.5, *STYLE, api_name="/rollout")
    assert not np.array_equal(pixels(rollout_max), pixels(rollout_mean))


def test_clicking_a_patch_changes_the_query_and_reset_restores_cls(client):
    input_view, _, _, _, heads_cls, _, _, _ = analyze(client, CHEETAH)
    marked, heads_patch, text = client.predict(2, 5, 6, *STYLE, api_name="/query_patch")
    assert "row 3, column 6" in text
    assert not np.array_equal(pixels(heads_patch), pixels(heads_cls))
    diff = np.argwhere((pixels(marked) != pixels(input_view)).any(-1))  # only the outline of patch (2, 5) changed
    assert diff.min(0).tolist() == [2 * 48, 5 * 48] and diff.max(0).tolist() == [3 * 48 - 1, 6 * 48 - 1]
    with pytest.raises(AppError, match="outside the 8x8 grid"):
        client.predict(8, 0, 6, *STYLE, api_name="/query_patch")
    _, heads_again, text = client.predict(6, *STYLE, api_name="/reset_query")
    assert "CLS" in text and np.array_equal(pixels(heads_again), pixels(heads_cls))


def test_exports_png_of_the_grid_and_gif_through_the_layers(client):
    heads = analyze(client, CHEETAH)[4]
    png = client.predict(6, *STYLE, api_name="/export_png")
    assert np.array_equal(pixels(png), pixels(heads))
    gif = client.predict(*STYLE, api_name="/export_gif")
    with Image.open(gif) as im:
        assert im.n_frames == 6


def test_views_before_any_upload_ask_for_an_image(client):
    with pytest.raises(AppError, match="upload an image first"):
        client.predict(1, *STYLE, api_name="/heads")


def test_non_square_whole_image_is_never_transposed(client, tmp_path):
    image = np.zeros((32, 64, 3), np.uint8)  # H x W: 8 x 16 patches of 4 px
    image[8:12, 44:48] = 255  # the patch at row 2, column 11
    path = save_rgb(tmp_path / "wide.png", image)
    input_view, numbers, *_ = analyze(client, path, mode="whole")
    assert "grid **8 rows × 16 columns**" in numbers and "uploaded **32 × 64** px" in numbers  # height × width
    view = pixels(input_view)
    assert view.shape == (32 * 6, 64 * 6, 3)
    lit = np.argwhere(view.min(-1) > 200)  # white: the bright patch (grid lines are 1 px, so skip them)
    blocks = {(y // 24, x // 24) for y, x in lit if y % 24 and x % 24}
    assert blocks == {(2, 11)}
    client.predict(7, 15, 6, *STYLE, api_name="/query_patch")  # the bottom-right patch exists
    _, crop_numbers, *_ = analyze(client, path, mode="crop")
    assert "grid **8 rows × 8 columns**" in crop_numbers and "cut off" in crop_numbers


def offline() -> bool:
    try:
        socket.create_connection(("download.pytorch.org", 443), timeout=3).close()
    except OSError:
        return True
    return False


@pytest.mark.skipif(not offline(), reason="this machine is online: the weights would really be downloaded")
def test_offline_pretrained_model_fails_clearly_and_the_app_keeps_working(client):
    with pytest.raises(AppError, match="offline"):
        client.predict("pretrained:vit_b_16.tv_in1k", api_name="/load_model")
    assert analyze(client, CHEETAH)[2]["confidences"]


def test_a_server_path_smuggled_into_the_image_payload_is_refused(server, client, tmp_path):
    """preprocess=False hands the app the upload's path, so check Gradio still refuses paths
    that were not uploaded (the app must never open arbitrary server files)."""
    secret = save_rgb(tmp_path / "not_uploaded.png", np.zeros((32, 32, 3), np.uint8))  # a valid image
    smuggled = {"path": str(secret), "meta": {"_type": "gradio.FileData"}}
    data = [smuggled, "bundled", "crop", 6, "mean", 0.0, *STYLE]
    base = f"{server}gradio_api/call/analyze"
    event = httpx.post(base, json={"data": data}, timeout=30).json()["event_id"]
    reply = httpx.get(f"{base}/{event}", timeout=30).text
    assert "event: error" in reply and "complete" not in reply
    assert analyze(client, CHEETAH)[2]["confidences"]


def test_unknown_model_keys_are_refused(client):
    with pytest.raises(AppError):
        client.predict("checkpoint:/etc/passwd", api_name="/load_model")


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


def test_eight_concurrent_clients_five_requests_each_without_errors(server):
    def session(i: int) -> int:
        c = Client(server, verbose=False)
        for j in range(5):
            if j % 2 == 0:
                analyze(c, CHEETAH)
            else:
                c.predict(1 + (i + j) % 6, *STYLE, api_name="/heads")
        return 5

    with ThreadPoolExecutor(8) as pool:
        assert sum(pool.map(session, range(8))) == 40  # any error would have raised
