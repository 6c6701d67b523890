"""The three lessons without Gradio: shared-scale comparison, token norms with high-norm patches
found by the stated rule, heads switched off by 1-based "layer.head" and the head ranking."""

import numpy as np
import pytest
import torch
from markdown_helpers import HOSTILE_NAMES, shows_as_written
from PIL import Image
from tolerance import rounding_tolerance

import vit
from explorer import lessons
from explorer.canvas import MapStyle
from explorer.catalog import BUNDLED, ModelCatalog
from explorer.loaded import LoadedModel
from vit import VisionTransformer, ViTConfig
from vit.preprocessing import CIFAR10, CIFAR10_CLASSES, Preprocessing


def loaded(label: str, **config) -> LoadedModel:
    model = vit.create_model("vit_cifar_nano", **config).eval()
    names = list(CIFAR10_CLASSES) if model.config.num_classes else []
    return LoadedModel(label, label, model, vit.ModelMeta(names, CIFAR10))


def photo(seed: int = 0) -> Image.Image:
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (32, 32, 3), np.uint8))


def compare(models: list[LoadedModel], image: Image.Image) -> Image.Image:
    """Lesson 1's picture as the handler makes it: each model's task, then one drawing."""
    return lessons.compare_cls_heads(models, [lessons.cls_heads(m, image) for m in models], MapStyle())


def test_the_comparison_has_one_row_per_model_on_one_colour_bar():
    models = [loaded("plain"), loaded("registers", register_tokens=4, num_classes=0), loaded("two heads", heads=2)]
    one = compare(models[:1], photo())
    three = compare(models, photo())
    assert three.height > one.height + 2 * lessons.TILE_PX  # two more rows of tiles, not two more colour bars
    assert lessons.compare_alt(models) == (
        "Last-layer attention of every head on one colour scale, one row per model: plain (query CLS, layer 6 of 6, "
        "4 heads), registers (query CLS, layer 6 of 6, 4 heads), two heads (query CLS, layer 6 of 6, 2 heads)."
    )


def test_the_comparison_title_says_the_models_real_head_count(monkeypatch):
    titles = []
    monkeypatch.setattr(
        lessons.render, "shared_scale_rows", lambda _rows, _style, title, _unit, **_: titles.append(title)
    )
    compare([loaded("four")], photo())  # 4 heads: one row, not "rows of 6"
    assert titles[-1].endswith("4 heads per model, one row each")
    compare([loaded("four"), loaded("eight", heads=8)], photo())
    assert titles[-1].endswith("4 or 8 heads per model, in rows of 6")


def test_high_norm_patches_follow_the_stated_rule():
    model = loaded("bright", register_tokens=2, pos_embed_prefix=False)
    with torch.no_grad():
        model.model.patch_embed.proj.weight.mul_(50.0)  # a bright patch gets a far longer token than black ones
    pixels = np.zeros((32, 32, 3), np.uint8) + np.round(np.array(CIFAR10.mean) * 255).astype(np.uint8)  # input ~0
    pixels[8:12, 20:24] = 255  # the patch at 0-based row 2, column 5 of the 8 x 8 grid
    report = lessons.norm_report(model, Image.fromarray(pixels), 0)
    expected = vit.probes.token_norms(model.model, lessons._input(model, Image.fromarray(pixels)).tensor, 0)[0]
    np.testing.assert_allclose(report.norms, expected[3:].reshape(8, 8).numpy())
    assert report.high == [(2, 5)] and report.norms[2, 5] > lessons.HIGH_NORM_FACTOR * report.median
    assert list(report.prefix) == ["cls", "reg1", "reg2"]
    assert report.cls_share.shape == (8, 8) and 0 < report.cls_share.sum() <= 1
    text = lessons.describe_norms([report])
    assert "| 3 | 6 |" in text and "1 high-norm patches (> 2 × median)" in text  # 1-based for people
    picture = lessons.token_norm_maps([report, lessons.norm_report(loaded("plain"), photo(), 5)], 0, MapStyle())
    assert picture.width > 2 * lessons.TILE_PX
    assert lessons.norms_alt([report], 0) == (
        "Norm of each patch token after layer 1 on one colour scale, one row per model: "
        "bright (1 high-norm patches outlined)."
    )


def test_a_layer_past_the_models_depth_is_refused():
    with pytest.raises(lessons.LessonError, match="layer must be from 1 to 6 for plain, got 7"):
        lessons.norm_report(loaded("plain"), photo(), 6)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0.1", "layer 0 in '0.1' is out of range; this model has layers 1 to 6"),
        ("7.1", "layer 7 in '7.1' is out of range; this model has layers 1 to 6"),
        ("2.5", "head 5 in '2.5' is out of range; each layer has heads 1 to 4"),
        ("2", "'2' is not layer.head"),
        ("1.2, x", "'x' is not layer.head"),
    ],
)
def test_bad_head_lists_are_refused_naming_the_item(text, message):
    with pytest.raises(lessons.LessonError, match=message):
        lessons.parse_heads(text, 6, 4)


def test_head_lists_read_1_based_layer_dot_head():
    assert lessons.parse_heads("1.2, 3.4 3.4;6.1", 6, 4) == [(0, 1), (2, 3), (5, 0)]
    assert lessons.parse_heads("  ", 6, 4) == []


def test_switching_heads_off_changes_the_predictions_and_nothing_off_changes_nothing():
    model = loaded("plain")
    before, same = lessons.predictions_with_heads_off(model, photo(), [])
    assert before == same and len(before) == 5
    every_head = [(layer, head) for layer in range(6) for head in range(4)]
    _, after = lessons.predictions_with_heads_off(model, photo(), every_head)
    assert after != before


def test_the_ranking_lists_the_largest_drops_first_and_matches_switching_that_head_off():
    model = loaded("plain")
    ranking = lessons.head_ranking(model, photo(), shown=5)
    predicted, rows = ranking.predicted, ranking.rows
    assert ranking.done == ranking.total == 24
    assert [r[0] for r in rows] == [1, 2, 3, 4, 5]
    drops = [r[2] for r in rows]
    assert drops == sorted(drops, reverse=True)
    layer, head = (int(n) - 1 for n in rows[0][1].split("."))
    tensor = lessons._input(model, photo()).tensor
    index = CIFAR10_CLASSES.index(predicted)
    with torch.inference_mode():
        p = model.model(tensor).softmax(-1)[0, index]
        with vit.probes.heads_off(model.model, [(layer, head)]):
            q = model.model(tensor).softmax(-1)[0, index]
    # The table rounds to 4 decimals; the test runs head_importance's own passes in its order.
    assert rows[0][2] == pytest.approx(float(p - q), abs=0.5e-4 + rounding_tolerance(torch.float64, 1))


def test_lessons_refuse_models_without_a_head_and_rankings_past_the_cost_cap(monkeypatch):
    with pytest.raises(lessons.LessonError, match="has no classifier head, so it makes no predictions"):
        lessons.predictions_with_heads_off(loaded("dino-like", num_classes=0), photo(), [])
    monkeypatch.setattr(lessons, "MAX_RANKING_FLOPS", 1e6)
    with pytest.raises(lessons.LessonError, match=r"6 x 4 = 24 heads needs as many forward passes, about .* TFLOP"):
        lessons.head_ranking(loaded("plain"), photo())


def test_a_ranking_that_costs_half_an_hour_is_refused_before_any_pass(monkeypatch):
    """20 layers x 20 heads on a 64 x 64 grid passes every checkpoint check, and its ranking
    (400 passes over 4,097 tokens) held a core for ~30 min."""
    config = ViTConfig(image_size=256, patch_size=4, num_classes=10, dim=40, depth=20, heads=20, mlp_dim=40)
    meta = vit.ModelMeta(list(CIFAR10_CLASSES), Preprocessing(256, 256))
    hostile = LoadedModel("x", "hostile", VisionTransformer(config), meta)
    assert lessons.ranking_flops(config, 64 * 64 + 1) > 5 * lessons.MAX_RANKING_FLOPS
    monkeypatch.setattr(VisionTransformer, "forward", lambda *_: pytest.fail("a forward pass ran"))
    with pytest.raises(lessons.LessonError, match="20 x 20 = 400 heads .* more than this server's 6 TFLOP"):
        next(lessons.head_ranking_steps(hostile, photo()))


def test_the_ranking_stops_at_its_time_budget_with_the_heads_ranked_so_far():
    steps = list(lessons.head_ranking_steps(loaded("plain"), photo(), seconds=0.0))
    assert len(steps) == 1 and steps[0].done == 1 and steps[0].total == 24 and len(steps[0].rows) == 1
    every = list(lessons.head_ranking_steps(loaded("plain"), photo()))
    assert [s.done for s in every] == [4, 8, 12, 16, 20, 24]  # after each layer, the last one the result


def test_timm_models_with_a_distillation_token_and_registers_through_the_views():
    """Models converted from timm (random weights: the zoo cannot be downloaded here): DeiT's
    distillation token as a query and class relevance; DINOv2-style registers in the norms lesson."""
    timm = pytest.importorskip("timm")
    from conftest import randomise_

    from explorer import controls, views
    from explorer.explain import explain

    small = {"img_size": 32, "depth": 2}
    deit = vit.from_timm(randomise_(timm.create_model("deit_tiny_distilled_patch16_224", pretrained=False, **small)))
    dino = vit.from_timm(
        randomise_(timm.create_model("vit_small_patch14_reg4_dinov2", pretrained=False, img_size=28, depth=2))
    )
    deit_loaded = LoadedModel("deit", "deit", deit.eval(), vit.ModelMeta([f"c{i}" for i in range(1000)], CIFAR10))
    ex = explain(deit_loaded.model, deit_loaded.meta.class_names, CIFAR10, photo())
    assert ex.prefix_names == ("cls", "dist")
    assert controls.query_choices(ex.prefix_names)[1] == ("distillation token", "dist")
    assert not np.allclose(ex.query_maps("dist"), ex.query_maps())
    dist, cls = (np.asarray(views.heads(ex, query, 1, MapStyle())) for query in ("dist", "cls"))
    assert dist.shape == cls.shape and not np.array_equal(dist, cls)  # the distillation token's own maps
    relevance = [
        np.asarray(views.relevance(deit_loaded.model, deit_loaded.meta.class_names, ex, c, MapStyle())) for c in (3, 4)
    ]
    assert relevance[0].shape == relevance[1].shape and not np.array_equal(*relevance)  # one map per class
    dino_loaded = LoadedModel("dinov2", "dinov2", dino.eval(), vit.ModelMeta([], vit.Preprocessing(28, 28)))
    report = lessons.norm_report(dino_loaded, photo(), 1)
    assert list(report.prefix) == ["cls", "reg1", "reg2", "reg3", "reg4"] and report.norms.shape == (2, 2)


def test_heads_off_refuses_a_huge_item_with_a_short_message():
    """int() of a 5,000-digit layer number raised an uncaught ValueError (Python's digit limit)."""
    with pytest.raises(lessons.LessonError, match="is not layer.head") as refused:
        lessons.parse_heads("9" * 5000 + ".1", 6, 4)
    assert len(str(refused.value)) < 150


def test_each_lesson_opens_on_its_own_models_then_a_stand_in_then_the_bundled_one():
    small = {"pretrained:vit_small_patch14_reg4_dinov2.lvd142m", "pretrained:vit_small_patch14_dinov2.lvd142m"}
    opening = lessons.opening_models(lambda key: key in small)
    assert opening.with_registers == "pretrained:vit_small_patch14_reg4_dinov2.lvd142m"
    assert opening.without_registers == "pretrained:vit_small_patch14_dinov2.lvd142m"
    assert opening.compare == ["pretrained:vit_small_patch14_dinov2.lvd142m"] and opening.heads == BUNDLED
    assert opening.missing["norms"] == ["vit_large_patch14_reg4_dinov2.lvd142m", "vit_large_patch14_dinov2.lvd142m"]
    assert opening.words is None  # no CLIP here: the words lesson says so (lessons.words_missing)
    everything = lessons.opening_models(lambda key: True)
    assert everything.missing == {"compare": [], "norms": [], "heads": [], "words": []}
    assert everything.words == "pretrained:vit_base_patch16_clip_224.openai"
    line = lessons.better_models(opening.missing["heads"])
    assert "\n" not in line and "`python -m vit.download deit_small_patch16_224.fb_in1k`" in line
    assert lessons.better_models([]) == ""
    assert len(lessons.lesson_weights()) == 6 and lessons.lesson_weights()[0] == "deit_small_patch16_224.fb_in1k"


# A teacher's machine (issue 61): DeiT-B, CLIP, DINOv2-S with registers in the cache, none of lesson 1's own
THE_WALKS = (
    "deit_base_patch16_224.fb_in1k",
    "vit_base_patch16_clip_224.openai",
    "vit_small_patch14_reg4_dinov2.lvd142m",
)


def test_the_lessons_words_say_which_models_are_on_this_machine(tmp_path, tiny_checkpoint, monkeypatch):
    """With DeiT-B, CLIP, DINOv2-S with registers and a trained checkpoint in Explore's picker,
    lesson 1 said "Only one model is on this machine … its checkpoint then joins this list" and
    opened on the bundled model alone; lesson 2 said no model with registers was here. The lessons
    read "which models are here" from the list Explore's picker shows (`ModelCatalog.here`)."""
    monkeypatch.setattr(vit, "is_pretrained_cached", lambda name: name in THE_WALKS)
    catalog = ModelCatalog(tiny_checkpoint, tmp_path / "runs", scan_runs=False)
    run = catalog.register(tiny_checkpoint, "alice", label="my run, 3 epochs")
    here = catalog.here("alice")
    assert here == [BUNDLED, *(f"pretrained:{n}" for n in THE_WALKS), run]  # the picker's order
    opening = lessons.opening_models(catalog.available, here)
    # lesson 1 compares what is here, the bundled model last: none of its own models is
    assert opening.compare == [f"pretrained:{n}" for n in THE_WALKS]
    said = lessons.compare_better(opening)
    assert "Only one model" not in said and "joins this list" not in said
    assert "python -m vit.download deit_small_patch16_224.fb_in1k" in said  # its own models: how to get them
    # lesson 2 opens on the model with registers that is here, and never says none is
    assert opening.with_registers == "pretrained:vit_small_patch14_reg4_dinov2.lvd142m"
    assert lessons.registers_missing(opening) == []
    # a machine with the bundled model alone: that sentence is true there, and still said
    monkeypatch.setattr(vit, "is_pretrained_cached", lambda name: False)
    alone = ModelCatalog(tiny_checkpoint, tmp_path / "runs", scan_runs=False)
    lone = lessons.opening_models(alone.available, alone.here())
    assert lone.compare == [BUNDLED] and lessons.compare_better(lone).startswith(
        "**Only one model is on this machine**"
    )
    assert lessons.registers_missing(lone) == lone.missing["norms"] != []
    # one of lesson 1's own and the bundled model: the two are compared, not one alone
    monkeypatch.setattr(vit, "is_pretrained_cached", lambda name: name == lessons.COMPARED[1])
    one = lessons.opening_models(alone.available, alone.here())
    assert one.compare == [f"pretrained:{lessons.COMPARED[1]}", BUNDLED] and "Only one" not in lessons.compare_better(
        one
    )
    assert lessons.has_registers("pretrained:facebook/dinov2-with-registers-small")
    assert not lessons.has_registers("pretrained:vit_small_patch14_dinov2.lvd142m") and not lessons.has_registers(run)


def test_dinov3_stands_in_for_a_model_with_registers():
    # Only DINOv3 here among the models with registers: lesson 2's first row opens on it.
    dinov3 = "pretrained:vit_small_patch16_dinov3.lvd1689m"
    here = {dinov3, "pretrained:vit_small_patch14_dinov2.lvd142m"}
    opening = lessons.opening_models(lambda key: key in here)
    assert (opening.with_registers, opening.without_registers) == (
        dinov3,
        "pretrained:vit_small_patch14_dinov2.lvd142m",
    )
    assert "vit_small_patch16_dinov3.lvd1689m" in vit.list_pretrained()
    # Its 4 registers count as registers: the pair can differ, no warning; the row says what it has.
    config = vit.ViTConfig(
        image_size=32,
        patch_size=8,
        num_classes=0,
        dim=16,
        depth=1,
        heads=1,
        mlp_dim=16,
        register_tokens=4,
        pos_embed_prefix=False,
        pos_embed="rope",
    )
    with_reg = LoadedModel(dinov3, "DINOv3", vit.VisionTransformer(config).eval(), vit.ModelMeta([], None))
    without = LoadedModel("b", "plain", vit.create_model("vit_cifar_nano"), vit.ModelMeta([], None))
    assert lessons.registers_note(with_reg, without, []) == "" and lessons.register_role(with_reg) == "with 4 registers"
    assert "“dinov3”" in lessons.registers_note(without, with_reg, [])  # the note names what to pick


@pytest.mark.parametrize("label", HOSTILE_NAMES)
def test_a_models_label_is_shown_as_written_in_the_lessons_markdown(label):
    """An uploaded checkpoint is labelled by its file name, which the visitor chose (issue 56)."""
    with_reg, other = loaded(label), loaded("plain")
    assert shows_as_written(lessons.registers_note(with_reg, with_reg, []), f"({label}), so")
    assert shows_as_written(lessons.registers_note(with_reg, other, []), f"registers: {label} has none")
    report = lessons.norm_report(with_reg, photo(), 0, "no registers")
    assert shows_as_written(lessons.describe_norms([report]), f"no registers: {label}: median")
