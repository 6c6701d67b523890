"""The Explore tab's handlers called directly (no server, no page): outputs by field name, query
moves, export names, the page's questions (a layer's numbers, its query), and the examples the tab
offers. Playing through the layers is the page's own: tests/test_ui_page_maps.py."""

import tarfile
from dataclasses import replace
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
import torch
from app_helpers import asked
from conftest import SHARED
from PIL import Image

import vit
from explorer import controls, texts
from explorer.canvas import TEXT_PX, MapStyle
from explorer.catalog import BUNDLED, ModelCatalog
from explorer.controls import Drawing, Fusion, Showing
from explorer.explain import ExplanationKey, explain
from explorer.loaded import LoadedModel
from explorer.more_views import NoControls, relevance
from explorer.more_views.pca import PcaChoice
from ui import common
from ui import explore_handlers as h
from ui import explore_views as ev
from ui.common import EXAMPLES_DIR, Server
from ui.explore import ExploreTab, layout
from vit.preprocessing import CIFAR10, CIFAR10_CLASSES

STYLE = MapStyle()  # inferno at opacity 0.6, nearest upsampling, overlay, one scale per layer
ARCHIVE = SHARED / "data" / "cifar10-jpeg.tar.gz"


@pytest.fixture(scope="module")
def tab(tiny_checkpoint, tmp_path_factory) -> Server:
    """The server's context the tab's handlers are bound to."""
    return Server(ModelCatalog(tiny_checkpoint, tmp_path_factory.mktemp("runs")))


@pytest.fixture(scope="module")
def explanation_key(tab):
    """The key a session's state holds: its explanation lives in the server-wide store."""
    loaded = tab.catalog.get(BUNDLED)
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (32, 32, 3), np.uint8))
    key = ExplanationKey("random.png", BUNDLED, id(loaded.model), "crop", "random")
    tab.store.get(key, lambda: explain(loaded.model, loaded.meta.class_names, loaded.preprocessing, image))
    return key


def test_a_handler_returns_its_pictures_by_component(tab, explanation_key):
    server = tab
    most = asked(ev.StyleAsked, Drawing(Fusion("max", 0.5)))
    out = h.restyle(server, explanation_key, "rollout", None, 3, most, STYLE)
    assert set(out) == {"heads_img", "overview", "rollout"}
    assert out["overview"] is None  # closed: drawn when opened (tests/test_ui_explore_lazy.py)
    mean = h.restyle(server, explanation_key, "rollout", None, 3, asked(ev.StyleAsked, Drawing(Fusion())), STYLE)
    # the fusion changes the rollout and leaves the head maps as they were
    assert pixels(out["heads_img"]).shape == pixels(mean["heads_img"]).shape
    assert np.array_equal(pixels(out["heads_img"]), pixels(mean["heads_img"]))
    assert not np.array_equal(pixels(out["rollout"]), pixels(mean["rollout"]))


def opened(picture: gr.Image) -> str:
    """The file of a picture a handler returned (with its alt text) as its component's value."""
    return picture.value["path"]


def pixels(picture: gr.Image) -> np.ndarray:
    """The RGB pixels of a picture a handler returned."""
    return np.asarray(Image.open(opened(picture)).convert("RGB"))


def test_every_picture_says_what_it_shows_view_layer_query_and_model(tab, explanation_key):
    server = tab
    out = h.choose_patch(server, explanation_key, 3, 5, 4, STYLE)
    assert out["heads_img"].alt_text == (
        "Attention maps of the 4 heads of layer 4 of 6, one tile each, for the query patch (3, 5): where it looks "
        "over the image, with a colour bar; model: the bundled model, on the 8 × 8 patch grid (rows × columns)."
    )
    assert "the query, patch (3, 5), is outlined; model: the bundled model" in out["input_img"].alt_text
    drawing = Drawing(Fusion("max", 0.5), STYLE, Showing("top mass", 0.3))
    rollout = h.show_view(server, "rollout", explanation_key, BUNDLED, drawing)["rollout"].alt_text
    assert "rollout of the query CLS" in rollout and "max over heads, discard ratio 0.50" in rollout
    assert "top 30% of its mass" in rollout and "model: the bundled model" in rollout


def test_arrow_moves_start_at_the_centre_and_stop_at_the_edges(tab, explanation_key):
    server = tab
    for step in ((-1, 0), (1, 0), (0, -1), (0, 1)):  # from CLS every arrow goes to row 1, column 1
        assert h.move_query(server, step, explanation_key, None, 6, STYLE)["query"] == (0, 0)
    assert h.move_query(server, (0, 1), explanation_key, (2, 3), 6, STYLE)["query"] == (2, 4)
    assert h.move_query(server, (-1, 0), explanation_key, (0, 5), 6, STYLE)["query"] == (0, 5)
    moved = h.move_query(server, (1, 0), explanation_key, (2, 3), 6, STYLE)
    assert "row 4, column 4" in moved["query_md"]  # 0-based (3, 3) is row 4, column 4 for people


def test_a_refused_upload_puts_back_the_image_the_views_belong_to(tab, explanation_key):
    """After a refused file the upload box showed it (or a broken icon) beside the
    previous image's maps. It shows that image again, marked as seen so no analysis runs."""
    server, request = tab, gr.Request(session_hash="refused-upload")
    server.seen_uploads.is_new(common.visitor_of(request), "/uploads/strip.png")  # the refused file, taken up
    assert h.keep_image(server, explanation_key, request) == explanation_key.path
    assert not server.seen_uploads.is_new(common.visitor_of(request), explanation_key.path)  # put back: not new
    assert h.keep_image(server, None, request) is None  # no image before: the box is emptied
    kept = h.keep_analysis(server, explanation_key, request)  # after an analysis that failed (a truncated file)
    assert kept.pop("image") == explanation_key.path
    assert kept == dict.fromkeys(h.PAGE_ANALYSIS_OUTPUTS, gr.skip())  # each view written again as it was


def test_the_gif_offers_each_layers_own_scale_by_default_or_one_scale_for_all(tab, explanation_key, monkeypatch):
    """The GIF put every frame on one scale, so it did not look like the screen
    (tests/test_explorer_render.py checks the frames themselves)."""
    server = tab
    asked, real = [], h.views.layer_frames
    monkeypatch.setattr(h.views, "layer_frames", lambda *a, **k: asked.append(k["one_scale"]) or real(*a, **k))
    own = h.make_gif(server, explanation_key, "cat-bundled", None, STYLE)["export_file"]
    one = h.make_gif(server, explanation_key, "cat-bundled", None, STYLE, "all layers")["export_file"]
    assert asked == [False, True]  # the screen's choice by default
    assert (
        Path(own).name == "cat-bundled_layers1-6_cls.gif"
        and Path(one).name == "cat-bundled_layers1-6_cls_one-scale.gif"
    )
    with pytest.raises(gr.Error, match="unknown GIF scale 'sideways'; choose one of 'each layer', 'all layers'"):
        h.make_gif(server, explanation_key, "cat-bundled", None, STYLE, "sideways")


def test_export_names_say_image_model_layer_and_query(tab):
    catalog = tab.catalog
    payload = {"path": "/tmp/gradio/abc/photo 1.jpg", "orig_name": "My cat (1).jpg"}
    assert common.export_stem(payload, BUNDLED, catalog) == "My-cat-1-tiny"
    assert common.export_stem(payload, "checkpoint:/runs/a/model.safetensors", catalog) == "My-cat-1-model"
    assert common.export_stem(payload, "pretrained:vit_b_16.tv_in1k", catalog) == "My-cat-1-vit_b_16.tv_in1k"
    assert common.query_name(None) == "cls" and common.query_name((0, 6)) == "row1-col7"


def test_an_upload_with_a_long_name_still_exports(tab, explanation_key):
    """A 240-character upload name: the analysis worked, but every export failed with a bare
    "Error" (the file name was longer than the file system takes)."""
    server = tab
    catalog = server.catalog
    name = common.export_stem({"path": "/tmp/gradio/abc/x.png", "orig_name": "a" * 240 + ".png"}, BUNDLED, catalog)
    assert name == f"{'a' * common.SLUG_CHARS}-tiny"
    exports = [
        h.make_png(server, explanation_key, name, (0, 6), 1, STYLE)["export_file"],
        h.make_gif(server, explanation_key, name, None, STYLE)["export_file"],
        opened(h.show_relevance(server, explanation_key, name, h.PREDICTED, STYLE, Showing())["relevance"]),
    ]
    assert [Path(p).name for p in exports] == [
        f"{name}_layer1_row1-col7.png",
        f"{name}_layers1-6_cls.gif",
        f"{name}_relevance_predicted-class.png",
    ]


def test_the_page_lists_the_models_classes():
    model = vit.create_model("vit_cifar_nano", num_classes=30)
    names = [f"class{i}" for i in range(30)]
    note = h.classes_note(LoadedModel("k", "label", model, vit.ModelMeta(names, CIFAR10)))
    assert note.startswith("**30 classes:** class0, class1") and "… (10 more)" in note and "class20" not in note
    assert "always answers with one of them" in note


@pytest.mark.parametrize(
    ("style", "message"),
    [
        (("jet2", 0.5, "nearest", "raw", "layer"), "unknown colour map 'jet2'"),
        (("gray", True, "nearest", "raw", "layer"), "opacity must be a number from 0.0 to 1.0, got True"),
        (("gray", float("inf"), "nearest", "raw", "layer"), "opacity must be a number from 0.0 to 1.0, got inf"),
        (("gray", 0.5, "Nearest", "raw", "layer"), "unknown upsampling 'Nearest'"),
    ],
)
def test_map_style_refuses_what_the_controls_cannot_send(style, message):
    with pytest.raises(gr.Error, match=message):
        common.map_style(*style)


def test_one_example_per_cifar10_class():
    for name in CIFAR10_CLASSES:
        with Image.open(EXAMPLES_DIR / f"{name}.jpg") as im:
            assert im.size == (32, 32) and im.format == "JPEG"


@pytest.mark.skipif(not ARCHIVE.exists(), reason=f"the CIFAR-10 archive is not at {ARCHIVE} (../shared is absent)")
def test_examples_are_the_first_test_image_of_each_class():
    """The rule of examples/cifar10/pick.py, checked independently: test/<class>/ sorted by name."""
    with tarfile.open(ARCHIVE) as archive:
        members = sorted(m.name for m in archive.getmembers() if m.isfile() and m.name.startswith("test/"))
        for name in CIFAR10_CLASSES:
            first = next(m for m in members if m.startswith(f"test/{name}/"))
            assert archive.extractfile(first).read() == (EXAMPLES_DIR / f"{name}.jpg").read_bytes(), name


def test_a_model_without_a_classifier_is_explained_and_says_it_predicts_nothing(tab, tmp_path):
    catalog = tab.catalog
    headless = vit.create_model("vit_cifar_nano", num_classes=0)
    vit.save_checkpoint(headless, tmp_path / "dino-like.safetensors", preprocessing=CIFAR10)
    loaded = catalog.get(catalog.register(tmp_path / "dino-like.safetensors", "alice"))
    assert "makes no predictions" in h.classes_note(loaded)
    image = tmp_path / "green.png"
    Image.new("RGB", (32, 32), (10, 200, 30)).save(image)
    pictures = h.full_analysis(loaded, str(image), "crop", 6, TEXT_PX, STYLE, store=None)
    classified = h.full_analysis(catalog.get(BUNDLED), str(image), "crop", 6, TEXT_PX, STYLE, store=None)
    # only the model with a classifier predicts; the other's "Top predictions" box says why it is
    # empty, in words a class reads on a projector (an empty box looked broken)
    assert pictures["label"] == h.NO_CLASSES and isinstance(classified["label"], dict) and classified["label"]
    assert "no classes" in h.NO_CLASSES and "attention is still shown" in h.NO_CLASSES
    # the same architecture draws the same grid of head maps, its own weights' maps in it
    assert pixels(pictures["heads_img"]).shape == pixels(classified["heads_img"]).shape
    assert not np.array_equal(pixels(pictures["heads_img"]), pixels(classified["heads_img"]))


@pytest.fixture(scope="module")
def prefixed(tmp_path_factory) -> tuple[ExploreTab, Server, ExplanationKey]:
    """A tab (its page and its server's context) over a model with CLS, a distillation token and two
    registers, and the key of one analysis."""
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("models") / "prefixed.safetensors"
    model = vit.create_model("vit_cifar_nano", distill_token=True, register_tokens=2)
    vit.save_checkpoint(model, path, class_names=CIFAR10_CLASSES, preprocessing=CIFAR10)
    catalog = ModelCatalog(path, tmp_path_factory.mktemp("runs"))
    with gr.Blocks():
        explore = layout(catalog)
    loaded = catalog.get(BUNDLED)
    image = Image.fromarray(np.random.default_rng(1).integers(0, 256, (32, 32, 3), np.uint8))
    key = ExplanationKey("random.png", BUNDLED, id(loaded.model), "crop", "random")
    server = Server(catalog)
    server.store.get(key, lambda: explain(loaded.model, loaded.meta.class_names, loaded.preprocessing, image))
    return explore, server, key


def test_the_query_token_picker_lists_every_prefix_token_of_the_model(prefixed):
    explore, _, key = prefixed
    choices = explore.token.choices
    assert [value for _, value in choices] == ["cls", "dist", "reg1", "reg2", "patch"]
    assert ("register 1", "reg1") in choices and ("distillation token", "dist") in choices  # 1-based for people


def test_each_prefix_token_can_be_the_query(prefixed):
    _, server, key = prefixed
    cls = h.choose_token(server, key, "cls", None, 6, STYLE)
    reg2 = h.choose_token(server, key, "reg2", None, 6, STYLE)
    assert cls["query"] is None and reg2["query"] == "reg2" and reg2["token"] == "reg2"
    assert "register 2" in reg2["query_md"]
    assert not np.array_equal(
        np.asarray(Image.open(opened(cls["heads_img"]))), np.asarray(Image.open(opened(reg2["heads_img"])))
    )
    assert "for the query reg2:" in reg2["heads_img"].alt_text and "for the query CLS:" in cls["heads_img"].alt_text
    assert common.query_name("reg2") == "reg2"


def test_the_patch_token_keeps_a_patch_query_or_starts_at_the_centre(prefixed):
    _, server, key = prefixed
    assert h.choose_token(server, key, "patch", "dist", 6, STYLE)["query"] == (4, 4)
    assert h.choose_token(server, key, "patch", (1, 2), 6, STYLE)["query"] == (1, 2)
    assert h.move_query(server, (0, 1), key, "reg1", 6, STYLE)["query"] == (0, 0)  # arrows from a register
    clicked = h.choose_patch(server, key, 2, 3, 6, STYLE)
    assert clicked["token"] == "patch"  # the picker follows a click


def test_unknown_query_tokens_are_refused_naming_the_models_tokens(prefixed, tab, explanation_key):
    _, server, key = prefixed
    with pytest.raises(gr.Error, match=r"unknown query token 'reg3'; choose one of 'cls', 'dist', 'reg1', 'reg2'"):
        h.choose_token(server, key, "reg3", None, 6, STYLE)
    plain = tab
    with pytest.raises(gr.Error, match=r"unknown query token 'dist'; choose one of 'cls', 'patch'"):
        h.choose_token(plain, explanation_key, "dist", None, 6, STYLE)


def test_head_tiles_and_captions_name_every_prefix_token(prefixed):
    _, server, key = prefixed
    ex = server.store.peek(key)
    assert "the 4 prefix tokens (CLS, dist, reg1, reg2)" in texts.left_out(ex)
    assert ex.prefix_attention(None).shape[-1] == 4
    shares = ex.rollout_prefix()
    text = texts.describe_rollout(ex, "mean", 0.0)
    assert f"its share on the prefix tokens (CLS {shares[0]:.2f}, dist {shares[1]:.2f}, reg1" in text


def test_relevance_follows_the_chosen_class(tab, explanation_key):
    server = tab
    predicted = h.show_relevance(server, explanation_key, "cat-bundled", h.PREDICTED, STYLE, Showing())["relevance"]
    top = next(iter(server.store.peek(explanation_key).probabilities))
    same = h.show_relevance(server, explanation_key, "cat-bundled", top, STYLE, Showing())["relevance"]
    other = next(c for c in CIFAR10_CLASSES if c != top)
    different = h.show_relevance(server, explanation_key, "cat-bundled", other, STYLE, Showing())["relevance"]
    pixels = [np.asarray(Image.open(opened(p))) for p in (predicted, same, different)]
    assert np.array_equal(pixels[0][80:], pixels[1][80:])  # the same map (titles differ: "predicted" or "chosen")
    assert not np.array_equal(pixels[0][80:], pixels[2][80:])
    assert Path(opened(different)).name == f"cat-bundled_relevance_{other}.png"  # image, model, what, class
    assert f"for the predicted class '{top}'" in predicted.alt_text  # the alt names the class the map explains
    assert f"for the chosen class '{other}'" in different.alt_text and "model: the bundled model" in different.alt_text


def test_relevance_follows_the_style_and_show_without_another_pass(tab, explanation_key, monkeypatch):
    """A new "Rollout and relevance show" redrew rollout and left relevance as it was."""
    server = tab
    out = h.show_relevance(server, explanation_key, "cat-bundled", h.PREDICTED, STYLE, Showing("weights", 0.6))
    kept = out["relevance_map"]
    monkeypatch.setitem(ev.GPU_TASKS, relevance.TASK, None)  # a redraw runs no model
    redrawn = h.restyle_relevance(server, explanation_key, kept, "cat-bundled", STYLE, Showing("relative", 0.6))
    picture = redrawn["relevance"]
    assert "drawn as multiples of uniform" in picture.alt_text and "weights from 0" in out["relevance"].alt_text
    assert Image.open(opened(out["relevance"])).tobytes() != Image.open(opened(picture)).tobytes()
    assert h.restyle_relevance(server, explanation_key, None, "cat-bundled", STYLE, Showing("relative", 0.6)) == {}
    other = replace(explanation_key, path="other.png", content="other")  # kept for another image: nothing to redraw
    assert h.restyle_relevance(server, other, kept, "cat-bundled", STYLE, Showing("relative", 0.6)) == {}


def test_relevance_refuses_unknown_classes_and_models_without_a_head(tab, explanation_key, tmp_path):
    server = tab
    with pytest.raises(gr.Error, match=r"unknown class 'teapot'; choose one of 'predicted class', 'airplane'"):
        h.show_relevance(server, explanation_key, "cat-bundled", "teapot", STYLE, Showing())
    path = tmp_path / "headless.safetensors"
    vit.save_checkpoint(vit.create_model("vit_cifar_nano", num_classes=0), path, class_names=[], preprocessing=CIFAR10)
    headless = Server(ModelCatalog(path, tmp_path / "runs"))
    loaded = headless.catalog.get(BUNDLED)
    image = Image.fromarray(np.zeros((32, 32, 3), np.uint8))
    key = ExplanationKey("black.png", BUNDLED, id(loaded.model), "crop", "black")
    ex = headless.store.get(key, lambda: explain(loaded.model, [], loaded.preprocessing, image))
    assert ex.probabilities == {}  # no classifier, no predictions
    assert "makes no predictions" in h.classes_note(loaded)
    with pytest.raises(gr.Error, match="this model has no classifier head, so it makes no predictions"):
        h.show_relevance(headless, key, None, h.PREDICTED, STYLE, Showing())


def test_a_new_analysis_offers_the_models_tokens_and_a_model_switch_its_classes(prefixed, tmp_path):
    _, server, _ = prefixed
    catalog = server.catalog
    path = tmp_path / "photo.png"
    Image.fromarray(np.random.default_rng(2).integers(0, 256, (32, 32, 3), np.uint8)).save(path)
    loaded = catalog.get(BUNDLED)
    out = h.full_analysis(loaded, str(path), "crop", 6, TEXT_PX, STYLE, store=None)
    picker = out["token"]
    assert picker.value == "cls" and [v for _, v in picker.choices] == ["cls", "dist", "reg1", "reg2", "patch"]
    assert out["query"] is None and out["relevance_map"] is None  # a new image: back to CLS, no stale relevance
    switched = h.load_model(server, BUNDLED, None, asked(ev.ModelAsked), None)  # closed; no request
    classes, pca_layer = switched["target"], switched["pca_layer"]
    assert classes.value == h.PREDICTED and [c for c, _ in classes.choices] == [h.PREDICTED, *CIFAR10_CLASSES]
    depth = loaded.model.config.depth
    assert (pca_layer.maximum, pca_layer.value) == (depth, depth)  # the new model's layers, its last picked


def test_rollout_shows_relative_to_uniform_or_the_top_mass_and_refuses_other_values(tab, explanation_key):
    server = tab
    drawings = {show: Drawing(Fusion(), STYLE, common.map_showing(show, 60)) for show in controls.SHOWS}
    pictures = {
        show: pixels(h.show_view(server, "rollout", explanation_key, BUNDLED, drawing)["rollout"])
        for show, drawing in drawings.items()
    }
    assert len({p.tobytes() for p in pictures.values()}) == 3  # three different pictures
    with pytest.raises(gr.Error, match="unknown show 'sideways'; choose one of 'weights', 'relative', 'top mass'"):
        common.map_showing("sideways", 60)
    with pytest.raises(gr.Error, match="keep percent must be a number from 1.0 to 100.0, got 0"):
        common.map_showing("top mass", 0)


def test_the_examples_survive_a_prune_of_the_upload_folder(monkeypatch, tmp_path, tiny_checkpoint):
    """A prune to a budget of 0 used to delete the examples' cached copies: clicking an example
    then failed with "not an upload of this app"."""
    import ui
    from ui.outputs import UPLOADS

    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))  # never prune a shared folder
    monkeypatch.setattr(UPLOADS, "keep", frozenset())
    ui.build_demo(ModelCatalog(tiny_checkpoint, tmp_path / "runs"))
    copies = [p for p in UPLOADS.keep if p.suffix == ".jpg"]
    assert sorted(p.name for p in copies) == sorted(p.name for p in EXAMPLES_DIR.glob("*.jpg"))
    visitor = tmp_path / "gradio" / "visitor" / "upload.png"
    visitor.parent.mkdir()
    visitor.write_bytes(b"x" * 100)
    monkeypatch.setattr(UPLOADS, "budget_bytes", 0)
    UPLOADS.prune()
    assert not visitor.exists() and all(p.exists() for p in copies)
    assert common.uploaded_path({"path": str(copies[0])}) == str(copies[0])


def test_a_request_that_would_compute_past_the_budget_is_refused_before_its_forward_pass(tab, tmp_path, monkeypatch):
    """Whole mode on a 4:1 image has 4 x the tokens of crop mode, 16 x its attention maps: the
    model fits the server's per-request budget in crop mode, that request does not."""
    from explorer.explain import ExplanationStore, ExplanationTooLarge

    catalog = tab.catalog
    loaded = catalog.get(BUNDLED)
    wide = tmp_path / "wide.png"
    Image.new("RGB", (128, 32), (10, 200, 10)).save(wide)
    budget = 8 * 2**20  # crop: 4 x 0.4 MiB of maps; whole (8 x 32 grid): 4 x 6.3 MiB
    store = ExplanationStore(max_request_bytes=budget)
    assert h.full_analysis(loaded, str(wide), "crop", 6, TEXT_PX, STYLE, store)["label"]
    monkeypatch.setattr(type(loaded.model), "forward", lambda *_: pytest.fail("the forward pass ran"))
    with pytest.raises(ExplanationTooLarge, match="attention maps would take 6 MiB, more than this server's 2 MiB"):
        h.full_analysis(loaded, str(wide), "whole", 6, TEXT_PX, STYLE, store)


def test_visitors_start_on_the_default_pretrained_model_or_see_why_not(tiny_checkpoint, tmp_path, monkeypatch):
    name = "deit_small_patch16_224.fb_in1k"
    imagenet = vit.create_model("vit_cifar_nano", num_classes=1000)
    meta = vit.ModelMeta([f"class {i}" for i in range(1000)], CIFAR10)
    monkeypatch.setattr(vit, "load_pretrained", lambda n, progress=None: (imagenet, meta))
    with gr.Blocks():
        explore = layout(ModelCatalog(tiny_checkpoint, tmp_path, default=f"pretrained:{name}"))
    assert explore.model_key.value == explore.current_model.value == f"pretrained:{name}"
    assert "1000 classes" in explore.model_info.value

    def offline(n, progress=None):
        raise vit.PretrainedUnavailable("the Hugging Face Hub (huggingface.co) cannot be reached from this machine")

    monkeypatch.setattr(vit, "load_pretrained", offline)
    with gr.Blocks():
        explore = layout(ModelCatalog(tiny_checkpoint, tmp_path, default=f"pretrained:{name}"))
    assert explore.model_key.value == explore.current_model.value == BUNDLED
    assert explore.model_info.value.startswith(f"⚠️ The default model `pretrained:{name}` is not available here")
    assert "10 classes" in explore.model_info.value

    cache = tmp_path / "hf-home" / "hub" / f"models--timm--{name}" / "snapshots" / "0123"

    def unreadable(n, progress=None):  # the reason named the Hub's cache folder on the first screen
        raise vit.PretrainedUnavailable(f"cannot read {cache / 'model.safetensors'}: the file is truncated")

    monkeypatch.setattr(vit, "load_pretrained", unreadable)
    with gr.Blocks():
        explore = layout(ModelCatalog(tiny_checkpoint, tmp_path, default=f"pretrained:{name}"))
    assert "cannot read model.safetensors: the file is truncated" in explore.model_info.value
    assert str(tmp_path) not in explore.model_info.value and "hf-home" not in explore.model_info.value


def test_the_upload_placeholder_is_plain_text(prefixed):
    """Gradio shows an image's placeholder as plain text, so "**Your image**" showed its asterisks."""
    explore, _, _ = prefixed
    assert explore.image.placeholder.startswith("Drop an image here or click to upload it")
    assert not set("*_`#") & set(explore.image.placeholder)  # no Markdown that would show as typed


def test_removing_the_image_clears_everything_that_described_it(tab):
    """After the upload box's ×, the predictions, pictures, caption and export stayed."""
    removed = h.Upload(None, BUNDLED, "crop")
    out = h.analyze(tab, removed, 6, STYLE)
    gone = (
        "explanation_key",
        "export_name",
        "query",
        "input_img",
        "label",
        "heads_img",
        "relevance_map",
        "export_file",
    )
    assert set(out) == {*h.ANALYSIS_OUTPUTS} - {"layer"}
    assert all(out[name] is None for name in gone)
    page = h.analyze_page(tab, "rollout", removed, 6, asked(ev.ImageAsked, Drawing(), PcaChoice()))
    assert set(page) == {*h.PAGE_ANALYSIS_OUTPUTS} - {"layer"}
    assert all(page[name] is None for name in (*ev.IMAGE_VIEWS, *ev.ON_REQUEST, "heads"))  # the "More views" too
    assert out["numbers"] == ""
    assert out["query_md"] == texts.describe_query(None, True)  # the start text: "Query: the CLS token"
    assert out["token"].value == "cls"
    assert "layer" not in out  # the slider keeps its layer for the next image


def test_a_new_image_clears_the_previous_images_export(tab, tmp_path):
    """After another image the Export box still offered the previous image's file."""
    server = tab
    catalog = server.catalog
    path = tmp_path / "dog.png"
    Image.fromarray(np.zeros((32, 32, 3), np.uint8)).save(path)
    out = h.full_analysis(catalog.get(BUNDLED), str(path), "crop", 6, TEXT_PX, STYLE, store=None)
    assert "export_file" in h.ANALYSIS_OUTPUTS and out["export_file"] is None


def test_an_upload_is_taken_up_once_per_session_and_the_memory_is_bounded():
    """Gradio's image fires .change twice per upload; the second must not analyse again."""
    from concurrent.futures import ThreadPoolExecutor

    seen = common.SeenUploads(size=2)
    assert seen.is_new("a", "/up/x.png") and not seen.is_new("a", "/up/x.png")
    assert seen.is_new("b", "/up/x.png")  # another visitor's session
    assert seen.is_new("a", None) and seen.is_new("a", "/up/x.png")  # removed, then the same file again
    assert seen.is_new("c", "/up/y.png") and list(seen.paths) == ["a", "c"]  # the oldest session forgotten
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: seen.is_new("d", "/up/z.png"), range(8)))
    assert sorted(answers) == [False] * 7 + [True]


def test_the_pca_tab_draws_the_chosen_layer_alone_or_with_the_six_animal_examples(tab, explanation_key):
    server = tab
    alone = h.show_more(server, "pca", explanation_key, BUNDLED, PcaChoice(2, False, True))["pca"]
    assert "layer 2 of 6" in alone.alt_text and "1 image(s) (this image)" in alone.alt_text
    together = h.show_view(server, "pca", explanation_key, BUNDLED, PcaChoice(6, True, True))["pca"]
    assert "7 image(s) (this image, bird, cat, deer, dog, frog, horse)" in together.alt_text
    assert Image.open(opened(together)).width > Image.open(opened(alone)).width  # a column per image
    kept = h.show_view(server, "pca", explanation_key, BUNDLED, PcaChoice(6, False, False))["pca"]
    assert "no background removed" in kept.alt_text
    with pytest.raises(gr.Error, match="layer must be a whole number from 1 to 6, got 7"):
        h.show_view(server, "pca", explanation_key, BUNDLED, PcaChoice(7, False, True))
    with pytest.raises(gr.Error, match="with the examples must be true or false, got 'yes'"):
        h.show_view(server, "pca", explanation_key, BUNDLED, PcaChoice(6, "yes", True))


def test_the_logit_lens_tab_reads_every_layer_and_a_headless_model_gets_a_sentence(tab, explanation_key, tmp_path):
    server, none = tab, NoControls()
    lens = h.show_more(server, "logit_lens", explanation_key, BUNDLED, none)["logit_lens"]
    predicted = next(iter(server.require(explanation_key).probabilities))
    assert f"layer 6: {predicted} " in lens.alt_text and "never trained" in lens.alt_text
    path = tmp_path / "headless.safetensors"
    vit.save_checkpoint(vit.create_model("vit_cifar_nano", num_classes=0), path, class_names=[], preprocessing=CIFAR10)
    headless = Server(ModelCatalog(path, tmp_path / "runs"))
    loaded = headless.catalog.get(BUNDLED)
    key = ExplanationKey("grey.png", BUNDLED, id(loaded.model), "crop", "grey")
    headless.store.get(
        key, lambda: explain(loaded.model, [], loaded.preprocessing, Image.new("RGB", (32, 32), (90,) * 3))
    )
    with pytest.warns(UserWarning, match="no classifier head .* no classes to read after each layer"):
        out = h.show_more(headless, "logit_lens", key, BUNDLED, none)
    assert out["logit_lens"] is None


def test_the_page_asks_for_a_layers_numbers_by_the_handle_it_was_sent(tab, explanation_key):
    """The page's request for a layer it was not sent (ui/js/rows.js): a handle the server
    gave out names the analysis; another handle, a layer out of range or junk get a sentence."""
    server = tab
    handle = server.pages.handle(explanation_key)
    rows = h.layer_rows(server, {"handle": handle, "layer": 2})
    assert rows["layer"] == 1 and rows["band"] == 0 and rows["deflated"]
    tokens = h.layer_rows(server, {"handle": handle, "layer": 2, "band": "tokens"})  # the layer's CLS rows
    assert tokens["layer"] == 1 and tokens["band"] == "tokens" and len(tokens["deflated"]) < len(rows["deflated"])
    dropped = "This analysis was dropped from the server's memory to make room: upload the image again."
    assert h.layer_rows(server, {"handle": "made-up", "layer": 2}) == {"error": dropped, "status": 404}
    assert h.layer_rows(server, "not a question") == {"error": dropped, "status": 404}
    out_of_range = "There is no layer 7: this model has layers 1 to 6."
    assert h.layer_rows(server, {"handle": handle, "layer": 7}) == {"error": out_of_range, "status": 400}
    assert "There is no layer True" in h.layer_rows(server, {"handle": handle, "layer": True})["error"]
    assert server.pages.handle(explanation_key) != handle  # a new handle for every analysis sent
    no_band = "There is no band 1: this analysis sends a layer in bands 0 to 0."
    assert h.layer_rows(server, {"handle": handle, "layer": 2, "band": 1}) == {"error": no_band, "status": 400}
    assert "There is no band '0'" in h.layer_rows(server, {"handle": handle, "layer": 2, "band": "0"})["error"]
    assert rows["parts"] == ["layer"]  # the page's first style's byte only, unless it asks for others
    both = h.layer_rows(server, {"handle": handle, "layer": 2, "parts": ["fine", "head"]})
    assert both["parts"] == ["head", "fine"] and len(both["deflated"]) > len(rows["deflated"])
    not_parts = "The parts asked for are not layer, head, fixed, fine, each at most once."
    refused = {"error": not_parts, "status": 400}
    for junk in (["head", "head"], [], ["colour"], "head", [1]):
        assert h.layer_rows(server, {"handle": handle, "layer": 2, "parts": junk}) == refused


def test_a_band_of_rows_is_encoded_once_however_many_ask(tab, explanation_key, monkeypatch):
    """Issue 56: each question for a layer's rows encoded the layer again (170 MB, 3.5 s apiece for
    a 48 x 48 grid, eight at once +7 GB); a band asked for again is the one encoded before."""
    from explorer import page_maps
    from ui.common import ENCODED_S

    server, encoded = tab, []
    real = page_maps.layer_rows
    monkeypatch.setattr(page_maps, "layer_rows", lambda *args: encoded.append(args) or real(*args))
    handle = server.pages.handle(explanation_key)
    first = h.layer_rows(server, {"handle": handle, "layer": 3, "band": 0})
    again = h.layer_rows(server, {"handle": server.pages.handle(explanation_key), "layer": 3, "band": 0})
    assert len(encoded) == 1 and again["deflated"] is first["deflated"]
    # the question that encoded it is told what that cost (ui.gate charges it to its network)
    assert first[ENCODED_S] >= 0 and ENCODED_S not in again
    h.layer_rows(server, {"handle": handle, "layer": 4, "band": 0})
    assert len(encoded) == 2
    fixed_asked = {"handle": handle, "layer": 3, "band": 0, "parts": ["fixed"]}  # another scale's byte
    fixed = h.layer_rows(server, fixed_asked)
    assert fixed is not first and len(encoded) == 3
    assert h.layer_rows(server, fixed_asked)["deflated"] is fixed["deflated"] and len(encoded) == 3


def test_the_page_exports_the_query_it_shows(tab, explanation_key):
    """Export PNG on the page sends the page's state: its query, 1-based, or a token."""
    server = tab
    exported = h.export_page_png(server, explanation_key, "cat", {"query": [3, 5]}, 4, STYLE)
    assert exported["export_file"].endswith("cat_layer4_row3-col5.png")
    assert h.page_query(server, explanation_key, {"query": "default"}) is None
    assert h.page_query(server, explanation_key, None) is None
    with pytest.raises(gr.Error, match="row must be"):
        h.page_query(server, explanation_key, {"query": [9, 1]})
    with pytest.raises(gr.Error, match="unknown query token"):
        h.page_query(server, explanation_key, {"query": "reg7"})
    # A phone's page wraps the head maps into fewer columns (ui/js/layout.js): the file is its picture.
    full = Image.open(exported["export_file"])
    wrapped = Image.open(
        h.export_page_png(server, explanation_key, "cat", {"query": [3, 5], "columns": 2}, 4, STYLE)["export_file"]
    )
    assert wrapped.width < full.width and wrapped.height > full.height
    assert h.page_columns(server, explanation_key, {"query": "default"}) is None
    for hostile in (0, 99, "two", 1.5):
        with pytest.raises(gr.Error, match="columns must be a whole number from 1 to"):
            h.page_columns(server, explanation_key, {"columns": hostile})


def test_a_checkpoints_class_names_are_shown_as_written_never_as_markdown():
    """A checkpoint a visitor uploads names its own classes: a name such as
    `![x](http://evil.example/p.png)` made the page fetch that address (a tracking pixel)."""
    from markdown_it import MarkdownIt

    names = ["![x](http://evil.example/p.png)", "<img src=x>", "*bold*", "cat"]
    model = vit.create_model("vit_cifar_nano", num_classes=4)
    note = h.classes_note(LoadedModel("k", "label", model, vit.ModelMeta(names, CIFAR10)))
    rendered = MarkdownIt("commonmark").render(note)
    assert "<img" not in rendered and "<em>" not in rendered and "&lt;img src=x&gt;" in rendered
    assert "![x](http://evil.example/p.png), &lt;img src=x&gt;, *bold*, cat" in rendered


def test_an_analysis_the_store_dropped_is_made_again_from_its_upload(tiny_checkpoint, tmp_path):
    """Issue 43's soak: one visitor's 249 MiB analysis took the room of the class's, and every
    student's next click said to upload again. Now the click pays a forward pass, while the
    upload is on disk with the content the session analysed; then it asks for the upload."""
    from explorer.explain import ExplanationStore, explain_file

    server = Server(ModelCatalog(tiny_checkpoint, tmp_path / "runs"), store=ExplanationStore(max_bytes=2**20))
    path = tmp_path / "cat.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (32, 32, 3), np.uint8)).save(path)
    key, first = explain_file(server.catalog.get(BUNDLED), str(path), "crop", server.store)
    server = Server(server.catalog, store=ExplanationStore(max_bytes=2**20))  # as if dropped to make room
    again = server.require(key)
    assert again is not first and again.probabilities == first.probabilities
    assert server.store.peek(key) is again  # kept for the next click
    Image.new("RGB", (32, 32)).save(path)  # the same path, other content: not the session's image
    server = Server(server.catalog, store=ExplanationStore(max_bytes=2**20))
    with pytest.raises(gr.Error, match="dropped from the server's memory to make room: upload the image again"):
        server.require(key)
    path.unlink()
    with pytest.raises(gr.Error, match="upload the image again"):
        server.require(key)


def test_a_photo_another_network_analysed_is_a_fresh_pass_and_an_example_is_shared(
    tiny_checkpoint, tmp_path, monkeypatch
):
    """Issue 56's oracle, through `/analyze`'s handler as Gradio calls it (a starlette request behind
    one trusted proxy, `--trusted-hops 1`, as on a Space): two students of one school share the
    photo's pass; a visitor from another network, even one who writes the school's address first in
    X-Forwarded-For, gets a fresh pass; the app's own example is shared by both networks."""
    import shutil

    from starlette.requests import Request

    from explorer import explain as explain_module
    from ui.app import server_for
    from ui.outputs import upload_folder
    from ui.settings import ServerSettings

    server = server_for(ModelCatalog(tiny_checkpoint, tmp_path / "runs"), ServerSettings(trusted_hops=1))
    folder = Path(upload_folder()) / f"oracle-{tmp_path.name}"
    folder.mkdir(parents=True, exist_ok=True)
    photo, example = folder / "photo.png", folder / "cat.jpg"  # an upload, and an example as Gradio caches it
    Image.fromarray(np.random.default_rng(5).integers(0, 256, (32, 32, 3), np.uint8)).save(photo)
    shutil.copy(EXAMPLES_DIR / "cat.jpg", example)
    passes = []
    real = explain_module.explain
    monkeypatch.setattr(explain_module, "explain", lambda *a, **k: passes.append(1) or real(*a, **k))

    def analyse(path: Path, forwarded: str, session: str) -> None:
        http = Request(
            {"type": "http", "client": ("10.16.3.80", 1), "headers": [(b"x-forwarded-for", forwarded.encode())]}
        )
        given = h.Upload({"path": str(path)}, BUNDLED, "crop")
        h.analyze(server, given, 6, STYLE, gr.Request(http, session_hash=session))

    analyse(photo, "198.51.100.2", "student-1")
    analyse(photo, "198.51.100.2", "student-2")
    assert len(passes) == 1  # the class's pass, shared
    analyse(photo, "198.51.100.2, 203.0.113.66", "stranger")  # the school's address written by the client
    assert len(passes) == 2  # a pass of its own: it took as long as any new picture
    analyse(example, "198.51.100.2", "student-1")
    analyse(example, "203.0.113.66", "stranger")
    assert len(passes) == 3  # public: one pass for everyone
