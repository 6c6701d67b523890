"""The Lessons tab's handlers called directly (no server): outputs by field name, 1-based heads
and layers, models that cannot be loaded named while the others are compared, clear refusals."""

from types import SimpleNamespace

import gradio as gr
import numpy as np
import pytest
import torch
from markdown_helpers import HOSTILE_NAMES, hostile_checkpoint, planted, read, rendered, shows_as_written, unescaped
from PIL import Image

import ui
import vit
from explorer import lessons
from explorer.catalog import BUNDLED, ModelCatalog
from ui import lessons_handlers as h
from ui.common import Server, visitor_of
from ui.lessons import LessonsTab, layout
from ui.outputs import cache_path
from vit.preprocessing import CIFAR10, CIFAR10_CLASSES


@pytest.fixture(scope="module")
def tab(tiny_checkpoint, tmp_path_factory) -> tuple[LessonsTab, Server]:
    """The tab's page (what its controls start with) and the server's context its handlers are bound to."""
    server = Server(ModelCatalog(tiny_checkpoint, tmp_path_factory.mktemp("runs")))
    with gr.Blocks():
        lessons_tab = layout(server.catalog, gr.Image())
    return lessons_tab, server


@pytest.fixture(scope="module")
def registers(tab, tmp_path_factory) -> str:
    """The key of a headless model with 4 registers, registered in the tab's catalogue."""
    catalog = tab[1].catalog
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("models") / "registers.safetensors"
    model = vit.create_model("vit_cifar_nano", register_tokens=4, pos_embed_prefix=False, num_classes=0)
    vit.save_checkpoint(model, path, class_names=[], preprocessing=CIFAR10)
    return catalog.register(path, "*")


@pytest.fixture
def image() -> dict:
    """An upload payload, as the browser sends it (the file lies in Gradio's upload folder)."""
    path = cache_path("lesson.png")
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (32, 32, 3), np.uint8)).save(path)
    return {"path": str(path), "orig_name": "lesson.png"}


def picture(update: gr.Image) -> np.ndarray:
    """The RGB pixels of a picture a handler returned (with its alt text)."""
    return np.asarray(Image.open(update.value["path"]).convert("RGB"))


def width(update: gr.Image) -> int:
    return picture(update).shape[1]


def test_the_comparison_names_models_it_cannot_load_and_compares_the_rest(tab, registers, image):
    server = tab[1]
    catalog = server.catalog
    out = h.compare_models(server, image, [BUNDLED, registers, "pretrained:nonexistent"], h.colour_map("viridis"))
    assert out["compare_picture"].alt_text == lessons.compare_alt([catalog.get(BUNDLED), catalog.get(registers)])
    note = unescaped(out["compare_note"])  # the catalogue's sentence shown as written (it names the key sent)
    assert "Not available here" in note and "'pretrained:nonexistent'" in note
    clean = h.compare_models(server, image, [BUNDLED], h.colour_map("viridis"))
    assert clean["compare_note"] == ""
    # two models loaded: a column of maps more than one model's (the one that failed takes none)
    assert width(out["compare_picture"]) > width(clean["compare_picture"])


def test_the_comparison_refuses_no_models_too_many_or_none_loadable(tab, image):
    server = tab[1]
    with pytest.raises(gr.Error, match=r"pick 1 to 3 models to compare \(got \[\]\)"):
        h.compare_models(server, image, [], h.colour_map("inferno"))
    with pytest.raises(gr.Error, match=r"pick 1 to 3 models to compare \(got \['bundled'"):
        h.compare_models(server, image, [BUNDLED] * 4, h.colour_map("inferno"))
    with pytest.raises(gr.Error, match="none of these models can be loaded here"):
        h.compare_models(server, image, ["pretrained:nonexistent"], h.colour_map("inferno"))
    with pytest.raises(gr.Error, match="upload an image at the top of the Lessons tab first"):
        h.compare_models(server, None, [BUNDLED], h.colour_map("inferno"))


def test_token_norms_of_a_model_with_and_without_registers(tab, registers, image):
    server = tab[1]
    out = h.compare_token_norms(server, image, h.RegisterPair(registers, BUNDLED), 3, h.colour_map("inferno"))
    first = h.compare_token_norms(server, image, h.RegisterPair(registers, BUNDLED), 1, h.colour_map("inferno"))
    assert picture(out["norms_picture"]).shape == picture(first["norms_picture"]).shape
    assert not np.array_equal(picture(out["norms_picture"]), picture(first["norms_picture"]))  # another layer
    table = out["norms_table"]
    assert "median patch norm" in table and "reg4" in table  # the registers' norms are listed by name
    with pytest.raises(gr.Error, match="layer must be a whole number from 1 to 6, got 7"):
        h.compare_token_norms(server, image, h.RegisterPair(registers, BUNDLED), 7, h.colour_map("inferno"))


def test_lesson_2_names_each_row_by_role_and_says_when_the_rows_cannot_differ(tab, registers, image):
    lessons_tab, server = tab
    catalog = server.catalog
    out = h.compare_token_norms(server, image, h.RegisterPair(BUNDLED, BUNDLED), 6, h.colour_map("inferno"))
    label = catalog.get(BUNDLED).label
    assert f"**no registers: {label}**" in unescaped(out["norms_table"])  # it said "with registers"
    assert "with registers" not in out["norms_table"] + out["norms_picture"].alt_text
    assert f"no registers: {label} (" in out["norms_picture"].alt_text
    same = h.norms_models(server, h.RegisterPair(BUNDLED, BUNDLED), [BUNDLED, BUNDLED])["norms_note"]
    assert same.startswith("**Both rows show the same model**") and "No model with registers is on this" in same
    assert "python -m vit.download" not in same  # said once, in "Better models for this lesson"
    named = h.compare_token_norms(server, image, h.RegisterPair(registers, BUNDLED), 6, h.colour_map("inferno"))[
        "norms_table"
    ]
    assert "**with 4 registers: checkpoint" in unescaped(named)
    assert lessons_tab.norms_note.value.startswith("**Both rows show the same model**")  # offline, as the tab opens
    assert (
        "**Neither row has registers**"
        in h.norms_models(server, h.RegisterPair(BUNDLED, registers), [BUNDLED, BUNDLED])["norms_note"]
    )
    assert h.norms_models(server, h.RegisterPair(registers, BUNDLED), [BUNDLED, BUNDLED])["norms_note"] == ""


def test_heads_off_by_1_based_layer_dot_head(tab, image):
    server = tab[1]
    on = h.switch_heads_off(server, image, BUNDLED, "")
    every = ", ".join(f"{layer}.{head}" for layer in range(1, 7) for head in range(1, 5))
    off = h.switch_heads_off(server, image, BUNDLED, every)
    assert set(on["top5"]) <= set(CIFAR10_CLASSES) and len(on["top5"]) == 5
    assert off["top5"] != on["top5"]
    assert "Heads off: **none**" in on["heads_note"] and "Heads off: **1.1, 1.2" in off["heads_note"]
    with pytest.raises(gr.Error, match="head 5 in '1.5' is out of range; each layer has heads 1 to 4"):
        h.switch_heads_off(server, image, BUNDLED, "1.5")
    with pytest.raises(gr.Error, match="layer 7 in '7.1' is out of range; this model has layers 1 to 6"):
        h.switch_heads_off(server, image, BUNDLED, "7.1")


def test_the_ranking_and_its_refusal_for_a_model_without_a_head(tab, registers, image):
    server = tab[1]
    out = list(h.rank_heads(server, image, BUNDLED, None))[-1]
    rows = out["ranking"]
    assert [r[0] for r in rows] == list(range(1, 11)) and "6 × 4 = 24 forward passes" in out["heads_note"]
    assert "The table shows the top 10 of the 24 heads ranked." in out["heads_note"]
    with pytest.raises(gr.Error, match="has no classifier head, so it makes no predictions"):
        next(h.rank_heads(server, image, registers, None))
    with pytest.raises(gr.Error, match="pretrained:nonexistent"):
        next(h.rank_heads(server, image, "pretrained:nonexistent", None))


def test_one_ranking_at_a_time_per_visitor_and_stop_ends_it(tab, image):
    server = tab[1]
    alice, bob = SimpleNamespace(session_hash="alice"), SimpleNamespace(session_hash="bob")
    first = h.rank_heads(server, image, BUNDLED, alice)
    assert "4 of 24 heads ranked so far" in next(first)["heads_note"]  # after layer 1 of 6
    with pytest.raises(gr.Error, match="you already have a ranking running"):
        next(h.rank_heads(server, image, BUNDLED, alice))
    assert "ranked so far" in next(h.rank_heads(server, image, BUNDLED, bob))["heads_note"]
    first.close()  # what Gradio's cancel (Stop, or the visitor leaving) does between two steps
    assert "24 forward passes" in list(h.rank_heads(server, image, BUNDLED, alice))[-1]["heads_note"]


def test_the_stop_button_cancels_the_ranking(tiny_checkpoint, tmp_path):
    import inspect

    demo = ui.build_demo(ModelCatalog(tiny_checkpoint, tmp_path))
    ranking = next(fn for fn in demo.fns.values() if fn.api_name == "lesson_head_ranking")
    assert inspect.isgeneratorfunction(ranking.fn)  # Gradio stops a generator between steps
    stops = [d for d in demo.config["dependencies"] if ranking._id in d["cancels"]]
    assert len(stops) == 1 and stops[0]["backend_fn"] is False


@pytest.mark.filterwarnings("ignore::pandas.errors.Pandas4Warning")  # Gradio's queue, as in test_ui_public.py
def test_a_cancelled_ranking_stops_between_steps_and_frees_its_visitor(tiny_checkpoint, tmp_path, monkeypatch, image):
    """What Stop (and a visitor leaving) does to a ranking on a real server: Gradio stops
    iterating the generator, so no more forward passes run, and the visitor may rank again."""
    import threading
    import time

    from app_helpers import served
    from gradio_client import Client, handle_file

    from explorer import lessons

    steps, release = [], threading.Event()

    def endless(loaded, picture, shown=10, seconds=lessons.MAX_RANKING_S):
        while not release.is_set():  # one "forward pass" per step, forever
            steps.append(1)
            time.sleep(0.05)
            yield lessons.Ranking("cat", [], len(steps), 10**6)

    from ui import zerogpu

    monkeypatch.setattr(zerogpu.RANKING, "task", endless)  # the GPU task the handler runs
    demo = ui.build_demo(ModelCatalog(tiny_checkpoint, tmp_path))
    with served(demo) as url:
        try:
            client = Client(url, verbose=False)
            job = client.submit(handle_file(image["path"]), BUNDLED, api_name="/lesson_head_ranking")
            deadline = time.monotonic() + 60
            while len(steps) < 5 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(steps) >= 5
            job.cancel()
            counts = [len(steps)]
            while time.monotonic() < deadline and (len(counts) < 3 or counts[-1] != counts[-3]):
                time.sleep(0.5)  # until no step ran for a second (under load the cancel takes a moment)
                counts.append(len(steps))
            assert counts[-1] == counts[-3] and counts[-1] < 1000  # stopped, long before the budget
            again = client.submit(handle_file(image["path"]), BUNDLED, api_name="/lesson_head_ranking")
            while len(steps) == counts[-1] and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(steps) > counts[-1]  # the same visitor may rank again: the cancel freed them
            again.cancel()
        finally:
            release.set()


def test_a_fresh_offline_app_opens_every_lesson_on_models_it_has_and_runs_each_with_its_defaults(
    tiny_checkpoint, tmp_path, monkeypatch, image
):
    """Nothing downloaded (the old tab opened on ViT-L/14 pairs it could not load, lesson 2's
    slider at layer 24 of a 6-layer model): every lesson opens on the bundled model, says which
    models it is about and how to get them, and runs with the values its controls start with."""
    for cache in ("HF_HOME", "TORCH_HOME"):  # empty caches: nothing downloaded yet
        monkeypatch.setenv(cache, str(tmp_path / cache))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    server = Server(ModelCatalog(tiny_checkpoint, tmp_path))
    with gr.Blocks():
        lessons_tab = layout(server.catalog, gr.Image())
    assert lessons_tab.models.value == [BUNDLED] and lessons_tab.heads_model.value == BUNDLED
    assert lessons_tab.layer.maximum == lessons_tab.layer.value == 6  # the bundled model's depth
    assert (
        "python -m vit.download deit_small_patch16_224.fb_in1k vit_small_patch16_224.dino"
        in lessons_tab.compare_better.value
    )
    assert lessons_tab.compare_better.value.startswith("**Only one model is on this machine**, so this lesson shows it")
    assert "vit_large_patch14_reg4_dinov2.lvd142m vit_large_patch14_dinov2.lvd142m" in lessons_tab.norms_better.value
    assert "layers 1 to 6, heads 1 to 4" in lessons_tab.heads.label
    h.compare_models(server, image, lessons_tab.models.value, h.colour_map(lessons_tab.cmap.value))
    h.compare_token_norms(
        server,
        image,
        h.RegisterPair(lessons_tab.with_registers.value, lessons_tab.without_registers.value),
        lessons_tab.layer.value,
        h.colour_map("inferno"),
    )
    h.switch_heads_off(server, image, lessons_tab.heads_model.value, lessons_tab.heads.value)
    list(h.rank_heads(server, image, lessons_tab.heads_model.value, None))


def test_lessons_open_on_the_models_they_are_about_once_downloaded(tiny_checkpoint, tmp_path, monkeypatch):
    monkeypatch.setattr(vit, "is_pretrained_cached", lambda name: "dinov2" in name or "deit" in name)
    fakes = {
        "vit_large_patch14_reg4_dinov2.lvd142m": vit.create_model("vit_cifar_nano", depth=5, register_tokens=4),
        "vit_large_patch14_dinov2.lvd142m": vit.create_model("vit_cifar_nano", depth=7),
        "deit_small_patch16_224.fb_in1k": vit.create_model("vit_cifar_nano", depth=3, heads=2, dim=32),
    }
    monkeypatch.setattr(
        vit, "load_pretrained", lambda name, progress=None: (fakes[name], vit.ModelMeta(list(CIFAR10_CLASSES), CIFAR10))
    )
    catalog = ModelCatalog(tiny_checkpoint, tmp_path)
    with gr.Blocks():
        lessons_tab = layout(catalog, gr.Image())
    assert lessons_tab.models.value == [
        "pretrained:deit_small_patch16_224.fb_in1k",
        "pretrained:vit_small_patch14_dinov2.lvd142m",
    ]
    assert "vit_small_patch16_224.dino" in lessons_tab.compare_better.value and lessons_tab.norms_better.value == ""
    assert lessons_tab.with_registers.value == "pretrained:vit_large_patch14_reg4_dinov2.lvd142m"
    assert lessons_tab.layer.maximum == lessons_tab.layer.value == 5  # the shallower of 5 and 7 layers
    assert "layers 1 to 3, heads 1 to 2" in lessons_tab.heads.label and lessons_tab.heads_better.value == ""
    assert {
        "pretrained:vit_large_patch14_dinov2.lvd142m",
        "pretrained:deit_small_patch16_224.fb_in1k",
    } <= catalog.pinned


def test_the_controls_follow_the_chosen_models(tab, registers):
    server = tab[1]
    slider = h.norms_models(server, h.RegisterPair(registers, BUNDLED), [BUNDLED, BUNDLED])["layer"]
    assert slider.maximum == slider.value == 6
    out = h.heads_model(server, h.HeadsPick(BUNDLED, BUNDLED))
    assert "layers 1 to 6, heads 1 to 4" in out["heads"].label and out["heads_note"] == ""
    assert out["heads"].placeholder == "1.1, 6.4"  # an example this model accepts
    headless = h.heads_model(server, h.HeadsPick(registers, BUNDLED))
    assert "has no classifier head" in headless["heads_note"]
    back = h.norms_models(server, h.RegisterPair(registers, "pretrained:nonexistent"), [registers, BUNDLED])
    assert (back["with_registers"], back["without_registers"]) == (registers, BUNDLED)  # no Error badge
    assert unescaped(back["norms_note"]) == "⚠️ unknown model 'pretrained:nonexistent': pick one from the list"


def test_a_download_a_lesson_waits_for_is_shown_in_bytes_and_percent(tab, monkeypatch):
    server = tab[1]
    monkeypatch.setattr(vit, "list_pretrained", lambda: ["deit_small_patch16_224.fb_in1k"])

    def downloading(name, progress=None):
        progress(0, 88_300_000)
        progress(44_150_000, 88_300_000)
        return vit.create_model("vit_cifar_nano"), vit.ModelMeta(list(CIFAR10_CLASSES), CIFAR10)

    monkeypatch.setattr(vit, "load_pretrained", downloading)
    shown = []
    h.heads_model(
        server,
        h.HeadsPick("pretrained:deit_small_patch16_224.fb_in1k", BUNDLED),
        lambda p, desc, **kw: shown.append((p, desc)),
    )
    assert shown[-1] == (0.5, "downloading deit_small_patch16_224.fb_in1k: 44.1 of 88.3 MB (50%)")


def test_lesson_3s_picker_returns_to_its_model_when_a_pick_cannot_be_had(tab, monkeypatch, tmp_path):
    """Offline, the picker stayed on the failed model and an Error badge hid the heads
    box and the top-5; now the note says why in plain words and the picker goes back."""
    server = tab[1]
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    out = h.heads_model(
        server, h.HeadsPick("pretrained:vit_small_patch16_224.dino", BUNDLED)
    )  # loaded by no other test
    assert out["heads_model"] == out["heads_current"] == BUNDLED
    assert unescaped(out["heads_note"]).startswith("⚠️ vit_small_patch16_224.dino is not on this machine")
    assert "HF_HUB_OFFLINE" not in out["heads_note"] and str(tmp_path) not in out["heads_note"]
    assert isinstance(out["heads"], type(gr.skip()))  # the box still describes the bundled model


def test_lesson_1_names_an_offline_model_by_its_name_in_a_teachers_words(tab, image, monkeypatch, tmp_path):
    """The note listed "pretrained:…" keys and the Hub's cache path."""
    server = tab[1]
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    note = h.compare_models(
        server, image, [BUNDLED, "pretrained:vit_small_patch14_dinov2.lvd142m"], h.colour_map("inferno")
    )
    said = unescaped(note["compare_note"])
    assert "\n- vit_small_patch14_dinov2.lvd142m is not on this machine, and this machine has no internet" in said
    assert "pretrained:" not in said and str(tmp_path) not in said


def test_opening_the_tab_takes_explores_new_image_once_and_lists_the_visitors_models(tab, tiny_checkpoint):
    """The lessons kept their own 32 px cat beside the teacher's photo on Explore,
    and lesson 1 suggested a Train checkpoint that its picker never listed."""
    server = tab[1]
    catalog = server.catalog
    alice = SimpleNamespace(session_hash="alice")
    example = "/cache/cat.jpg"  # the lessons' own, as Gradio cached it
    opened = h.open_lessons(server, "/cache/photo.jpg", None, example, request=alice)
    assert opened["image"] == opened["followed"] == "/cache/photo.jpg"
    again = h.open_lessons(server, "/cache/photo.jpg", "/cache/photo.jpg", example, request=alice)  # the same photo
    assert isinstance(again["image"], type(gr.skip()))  # an image uploaded in the lessons stays
    first = h.open_lessons(server, None, None, example, request=alice)  # Explore empty: the lessons' example, once
    assert (first["image"], first["followed"]) == (example, "")
    assert isinstance(h.open_lessons(server, None, "", example, request=alice)["image"], type(gr.skip()))
    assert h.open_lessons(server, "/cache/photo.jpg", "", example, request=alice)["image"] == "/cache/photo.jpg"
    key = catalog.register(tiny_checkpoint, visitor_of(alice), label="my run, 3 epochs")
    for picker in ("models", "with_registers", "without_registers", "heads_model"):
        assert ("checkpoint: my run, 3 epochs", key) in h.open_lessons(server, None, "", example, request=alice)[
            picker
        ].choices


def test_a_lessons_first_step_refuses_a_file_that_is_no_image_and_heads_out_of_range(tab, image):
    """Lesson 3 with "7.2, 3.9, banana" left a bare "Error" badge on the top-5 box, a file that
    is no image one on the lesson's picture: the first step, with no outputs, refuses them."""
    server = tab[1]
    request = SimpleNamespace(session_hash="visitor")
    with pytest.raises(gr.Error, match=r"heads off: layer 7 in '7.2' is out of range; this model has layers 1 to 6"):
        h.check_heads_off(server, image, BUNDLED, "7.2, 3.9, banana", request)
    h.check_heads_off(server, image, BUNDLED, "6.4, 1.1", request)  # in range: on to the lesson
    notes = cache_path("notes.png")  # in Gradio's upload folder, as a browser's upload
    notes.write_text("not an image")
    with pytest.raises(gr.Error, match="not an image format this app can read"):
        h.check_lesson_image({"path": str(notes)})
    clip = f"pretrained:{lessons.WORDS[0]}"
    with pytest.raises(gr.Error, match="No lesson image yet"):
        h.check_words(server, None, clip, "a cat, a dog")
    with pytest.raises(gr.Error, match="type at least two words"):
        h.check_words(server, image, clip, "a cat")


def test_lesson_4_offline_with_no_clip_model_says_none_is_here_and_what_to_do(
    tiny_checkpoint, tmp_path, monkeypatch, image
):
    """It said "Pick one of the models at the top of the list: they are on this machine" when
    the list held CLIP models only and none was on this machine."""
    for cache in ("HF_HOME", "TORCH_HOME"):  # empty caches: nothing downloaded
        monkeypatch.setenv(cache, str(tmp_path / cache))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    server = Server(ModelCatalog(tiny_checkpoint, tmp_path / "runs"))
    clip = f"pretrained:{lessons.WORDS[0]}"
    server.catalog.check_downloads()  # as app.py does: this machine is offline, and the catalogue knows
    assert server.catalog.online is False
    # Refused in the check, before the step that writes the results: its refusal had marked them
    # "Error" with no words once the toast faded. The toast is plain words: it showed "**" and "`".
    for step in (
        lambda: h.check_words(server, image, clip, "a cat, a dog"),
        lambda: h.compare_words(server, image, clip, "a cat, a dog", h.colour_map("inferno")),
    ):
        with pytest.raises(gr.Error) as info:
            step()
        said = info.value.message
        assert "No CLIP model is on this machine" in said and "they are on this machine" not in said
        assert f'"python -m vit.download {lessons.WORDS[0]}"' in said and not set("*`") & set(said)


def test_what_the_lessons_say_about_models_follows_the_catalogue_when_drawn(tiny_checkpoint, tmp_path, monkeypatch):
    """After lesson 1 had downloaded DeiT-S, DINO and DINOv2 it still said "Only one model is on
    this machine … not downloaded on this server", lesson 3 called DeiT-S "not downloaded" while
    using it, and the pickers kept "(pretrained, downloads once)": those words were drawn once,
    when the server started. They are drawn again on opening the tab and after each lesson."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    downloaded: set[str] = set()
    monkeypatch.setattr(vit, "is_pretrained_cached", lambda name: name in downloaded)
    server = Server(ModelCatalog(tiny_checkpoint, tmp_path / "runs"))
    server.catalog.online = True  # downloads would work: none has happened yet
    alice = SimpleNamespace(session_hash="alice")
    deit = lessons.COMPARED[0]
    before = h.lesson_models(server, request=alice)
    assert "Only one model is on this machine" in before["compare_better"] and deit in before["heads_better"]
    assert (f"{deit} (pretrained, downloads once)", f"pretrained:{deit}") in before["heads_model"].choices
    downloaded |= set(lessons.COMPARED)  # what lesson 1's Compare downloads
    after = h.lesson_models(server, request=alice)
    assert "Only one model" not in after["compare_better"] and "not downloaded" not in after["compare_better"]
    assert after["heads_better"] == ""  # lesson 3's DeiT-S is here now
    assert (f"{deit} (pretrained)", f"pretrained:{deit}") in after["heads_model"].choices
    opened = h.open_lessons(server, None, None, None, request=alice)
    assert opened["compare_better"] == after["compare_better"]  # also after a reload, on opening the tab


def test_after_each_lesson_and_each_model_load_the_pickers_are_drawn_again(tiny_checkpoint, tmp_path):
    from ui.lessons import MODEL_WORDS

    demo = ui.build_demo(ModelCatalog(tiny_checkpoint, tmp_path))
    by_id = {d["id"]: d for d in demo.config["dependencies"]}
    refreshes = {d["trigger_after"]: d for d in by_id.values() if d["api_name"].startswith("lesson_models")}
    named = {"lesson_compare", "lesson_norms_models", "lesson_heads_model", "lesson_token_norms", "lesson_heads_off"}
    named |= {"lesson_head_ranking", "lesson_words"}
    assert {d["id"] for d in by_id.values() if d["api_name"] in named} <= set(refreshes)
    assert all(len(d["outputs"]) == len(MODEL_WORDS) for d in refreshes.values())
    # then the pickers left where their lesson opened follow the catalogue: after each refresh and the tab's opening
    follows = {d["trigger_after"] for d in by_id.values() if d["api_name"].startswith("follow_lessons")}
    opening = next(d["id"] for d in by_id.values() if d["api_name"] == "open_lessons")
    assert {d["id"] for d in refreshes.values()} | {opening} <= follows
    load = next(d for d in by_id.values() if d["api_name"] == "load_model")
    choices = next(d for d in by_id.values() if d["api_name"] == "model_choices")
    assert choices["trigger_after"] == load["id"] and choices["outputs"] == [load["targets"][0][0]]


@pytest.fixture(scope="module")
def hostile(tab, tmp_path_factory) -> str:
    """The key of a checkpoint whose class names are Markdown and HTML (HOSTILE_NAMES), as a visitor uploads it."""
    path = hostile_checkpoint(tmp_path_factory.mktemp("models") / "![x](p.png)*b*<i>.safetensors")
    return tab[1].catalog.register(path, "*", label=f"upload {path.name}")


def test_a_checkpoints_class_names_are_shown_as_written_in_the_heads_notes(tab, hostile, image):
    """Issue 56: lesson 3's notes said "says **<img src=… onerror=…>**" and "Predicted class
    ![p](…)": a checkpoint's class names made the page fetch from a third host and plant a link."""
    server = tab[1]
    off = h.switch_heads_off(server, image, hostile, "1.1")["heads_note"]
    assert shows_as_written(off) and sum(f"says {name}; its" in read(rendered(off)) for name in HOSTILE_NAMES) == 1
    ranked = list(h.rank_heads(server, image, hostile, None))[-1]["heads_note"]
    shown = read(rendered(ranked))
    assert not planted(ranked) and sum(f"Predicted class {name}. Ranked" in shown for name in HOSTILE_NAMES) == 1
    for name in HOSTILE_NAMES:
        note = h.ranking_note(lessons.Ranking(name, [], 2, 24), 6, 4)
        assert shows_as_written(note, f"Predicted class {name}. Ranked"), note


def test_a_visitors_key_and_a_checkpoints_file_name_are_shown_as_written_in_the_lessons_notes(tab, hostile, image):
    server = tab[1]
    for name in HOSTILE_NAMES:
        sent = f"checkpoint:{name}"  # a key no picker listed: the refusal quotes it
        norms = h.norms_models(server, h.RegisterPair(sent, BUNDLED), [BUNDLED, BUNDLED])["norms_note"]
        heads = h.heads_model(server, h.HeadsPick(sent, BUNDLED))["heads_note"]
        compared = h.compare_models(server, image, [BUNDLED, f"pretrained:{name}"], h.colour_map("inferno"))
        for note in (norms, heads, compared["compare_note"]):
            assert not planted(note) and "unknown" in note, note
    label = server.catalog.get(hostile).label
    assert label.endswith("upload ![x](p.png)*b*<i>.safetensors")  # the visitor's file name
    same = h.norms_models(server, h.RegisterPair(hostile, hostile), [BUNDLED, BUNDLED])["norms_note"]
    assert shows_as_written(same, f"({label})"), same
    table = h.compare_token_norms(server, image, h.RegisterPair(hostile, BUNDLED), 1, h.colour_map("inferno"))
    assert shows_as_written(table["norms_table"], f"no registers: {label}:"), table["norms_table"]


def test_lesson_2_opens_on_a_model_with_registers_once_one_is_on_this_machine(tiny_checkpoint, tmp_path, monkeypatch):
    """A register model downloaded on the Explore tab: lesson 2 still opened on the bundled model
    twice and said "No model with registers is on this machine yet" (its pickers' values were the
    page's, set when the server started). Opening the tab (then `follow_lessons`) moves pickers the
    visitor left where the lesson opened to the models it opens on now, with the slider and the
    note; a choice stays."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    downloaded: set[str] = set()
    monkeypatch.setattr(vit, "is_pretrained_cached", lambda name: name in downloaded)
    reg = "vit_small_patch14_reg4_dinov2.lvd142m"
    fake = vit.create_model("vit_cifar_nano", depth=5, register_tokens=4, pos_embed_prefix=False, num_classes=0)
    monkeypatch.setattr(vit, "load_pretrained", lambda name, progress=None: (fake, vit.ModelMeta([], CIFAR10)))
    server = Server(ModelCatalog(tiny_checkpoint, tmp_path / "runs"))
    with gr.Blocks():
        lessons_tab = layout(server.catalog, gr.Image())
    assert (lessons_tab.with_registers.value, lessons_tab.without_registers.value) == (BUNDLED, BUNDLED)
    assert "No model with registers is on this machine yet" in lessons_tab.norms_note.value
    alice = SimpleNamespace(session_hash="alice")
    left = (
        lessons_tab.opened.value,
        lessons_tab.models.value,
        lessons_tab.norms_current.value,
        lessons_tab.heads_current.value,
    )
    downloaded.add(reg)  # what Explore's picker downloaded
    opened = h.lesson_models(server, request=alice) | h.follow_lessons(server, *left, request=alice)
    assert opened["with_registers"].value == f"pretrained:{reg}" and opened["without_registers"].value == BUNDLED
    assert opened["norms_current"] == [f"pretrained:{reg}", BUNDLED]
    assert opened["layer"].maximum == opened["layer"].value == 5  # the shallower of 5 and 6 layers
    assert opened["norms_note"] == ""  # the rows can differ now: no warning
    assert opened["models"].value == [f"pretrained:{reg}", BUNDLED]  # lesson 1 compares the two models here
    assert "Only one model" not in opened["compare_better"]
    assert "heads_current" not in opened  # lesson 3's DeiT-S is still away: it stays on the bundled model
    assert opened["opened"]["norms"] == [f"pretrained:{reg}", BUNDLED]
    # a pair the visitor chose stays, and after the move nothing moves again
    chose = h.follow_lessons(server, left[0], left[1], [BUNDLED, f"pretrained:{reg}"], BUNDLED, request=alice)
    assert "norms_current" not in chose and "norms_note" not in chose
    moved = (opened["opened"], opened["models"].value, opened["norms_current"], BUNDLED)
    assert h.follow_lessons(server, *moved, request=alice) == {}
