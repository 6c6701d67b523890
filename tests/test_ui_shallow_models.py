"""Models with one layer or one head, served for real: every view works (a slider from 1 to 1
is refused by Gradio, so the layer slider of a one-layer model is hidden)."""

import dataclasses

import pytest
from app_helpers import analyze, save_rgb, served
from gradio_client import Client, handle_file

import ui
import vit
from explorer.catalog import ModelCatalog
from vit.preprocessing import CIFAR10, CIFAR10_CLASSES

pytestmark = pytest.mark.filterwarnings("ignore::pandas.errors.Pandas4Warning")
STYLE = ("inferno", 0.6, "nearest", "overlay", "layer")


@pytest.fixture(scope="module")
def shallow(tmp_path_factory):
    """A live app whose default model has one layer of one head; yields (client, images folder)."""
    folder = tmp_path_factory.mktemp("shallow")
    config = dataclasses.replace(vit.create_model("vit_cifar_nano").config, depth=1, heads=1)
    path = folder / "one_layer_one_head.safetensors"
    vit.save_checkpoint(vit.VisionTransformer(config), path, class_names=CIFAR10_CLASSES, preprocessing=CIFAR10)
    demo = ui.build_demo(ModelCatalog(path, folder / "runs", scan_runs=False))  # a depth-1 page at start
    with served(demo) as url:
        yield Client(url, verbose=False), folder


def test_every_view_of_a_one_layer_one_head_model(shallow):
    import numpy as np

    client, folder = shallow
    image = save_rgb(folder / "noise.png", np.random.default_rng(0).integers(0, 256, (32, 32, 3), np.uint8))
    assert analyze(client, image, layer=1)[2]["confidences"]
    assert analyze(client, image, mode="whole", layer=1)[2]["confidences"]
    client.predict(1, *STYLE, api_name="/heads")
    client.predict(1, "max", 0.5, *STYLE, api_name="/restyle")
    client.predict(2, 3, 1, *STYLE, api_name="/query_patch")
    client.predict("cls", 1, *STYLE, api_name="/query_token")
    client.predict("predicted class", *STYLE, api_name="/relevance")
    client.predict(1, *STYLE, api_name="/export_png")
    client.predict(*STYLE, api_name="/export_gif")
    assert "1 layers x 1 heads" in client.predict("bundled", api_name="/load_model")[0]
    lesson = handle_file(str(image))
    client.predict(lesson, ["bundled"], "inferno", api_name="/lesson_compare")
    client.predict(lesson, "bundled", "bundled", 1, "inferno", api_name="/lesson_token_norms")
    client.predict(lesson, "bundled", "1.1", api_name="/lesson_heads_off")
    client.predict(lesson, "bundled", api_name="/lesson_head_ranking")


def test_switching_between_a_deep_and_a_one_layer_model(shallow, tiny_checkpoint):
    import numpy as np

    client, folder = shallow
    image = save_rgb(folder / "noise.png", np.random.default_rng(1).integers(0, 256, (32, 32, 3), np.uint8))
    deep = client.predict(handle_file(str(tiny_checkpoint)), api_name="/upload_checkpoint")["value"]
    assert "6 layers x 4 heads" in client.predict(deep, api_name="/load_model")[0]
    assert analyze(client, image, model=deep, layer=6)[2]["confidences"]
    assert "1 layers x 1 heads" in client.predict("bundled", api_name="/load_model")[0]
    assert analyze(client, image, layer=1)[2]["confidences"]
