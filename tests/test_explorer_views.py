"""The app's pictures as a class sees them: a near-uniform model draws a flat picture, every
caption says what the maps leave out, grids read rows × columns and sizes width × height."""

from dataclasses import fields, replace
from functools import partial

import numpy as np
import pytest
import torch
from markdown_helpers import read, rendered, tags
from matplotlib import colormaps
from picture_helpers import (
    colour_index,
    drawn_peaks,
    expected_ring_heights,
    first_line_px,
    gradient_runs,
    ring_heights,
    squares,
)
from PIL import Image
from tolerance import assert_close_up_to_rounding, rounding_tolerance

import vit
from explorer import (
    canvas,
    charts,
    compute,
    controls,
    lessons,
    probe_strip,
    render,
    run_views,
    texts,
    views,
)
from explorer.canvas import MapStyle
from explorer.explain import Explanation, explain, model_input
from explorer.loaded import LoadedModel
from explorer.more_views import REGISTRY, Scene, logit_lens, pca, run_here
from explorer.more_views import distance as distance_view
from explorer.more_views import overview as overview_view
from explorer.more_views import similarity as similarity_view
from explorer.prompts import ZeroShot
from vit.analysis import grid_border, patch_pca, position_embedding_similarity, top_mass_mask
from vit.preprocessing import CIFAR10


def near_uniform_model() -> vit.VisionTransformer:
    """Random weights, with queries and keys shrunk so far that every attention weight is
    within 0.1% of 1/T (T = 65 tokens), yet not exactly uniform."""
    model = vit.create_model("vit_cifar_nano")
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
        for block in model.blocks:
            dim = block.attn.qkv.in_features
            block.attn.qkv.weight[: 2 * dim] *= 0.05  # rows: queries, then keys, then values
    return model.eval()


@pytest.fixture(scope="module")
def uniform():
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8))
    return explain(near_uniform_model(), [str(i) for i in range(10)], CIFAR10, image)


def test_a_near_uniform_model_draws_flat_maps_in_heads_and_overview(uniform):
    deviation = np.abs(uniform.query_maps(None) * 65 - 1)
    assert 0 < deviation.max() < 1e-3  # near uniform, not exactly
    top = tuple(colormaps["inferno"](1.0, bytes=True)[:3])
    for picture, tiles, side in (
        (views.heads(uniform, None, 2, MapStyle(raw=True)), uniform.heads, views.head_layout(uniform)[1]),
        (overview_view.overview(uniform, MapStyle(raw=True)), uniform.heads * uniform.depth, overview_view.OVERVIEW_PX),
    ):
        flat = (np.asarray(picture) == top).all(-1).sum()
        # The tiles are one flat colour: the top of the map (the colour bar adds a few pixels).
        assert 0.95 * tiles * side**2 <= flat <= 1.05 * tiles * side**2


def test_captions_say_what_the_maps_leave_out(uniform):
    assert texts.left_out(uniform) == (
        "Maps show attention to the 64 patches; attention to CLS (printed under each head) is left out."
    )
    np.testing.assert_allclose(uniform.prefix_attention(None), 1 / 65, rtol=1e-3)
    rows = uniform.query_maps((1, 2)).sum((-2, -1)) + uniform.prefix_attention((1, 2))[..., 0]
    assert_close_up_to_rounding(torch.from_numpy(rows), torch.ones(rows.shape), reduction=65, steps=2)
    text = texts.describe_rollout(uniform, "mean", 0.5)
    assert "0.5·A + 0.5·I" in text and "weakest 50%" in text and "never all zero" in text
    cls = float(uniform.rollout_prefix("mean", 0.5)[0])
    assert f"its share on CLS itself, {cls:.2f}, is left out" in text
    total = cls + float(uniform.rollout("mean", 0.5).sum())  # a product of 6 row-normalised 65 x 65 matrices
    assert abs(total - 1) <= rounding_tolerance(torch.float32, 65, steps=2 * uniform.depth)


def test_whole_image_mode_states_its_aspect_cap_and_sizes_read_width_by_height():
    wide = Image.new("RGB", (400, 40))  # width 400, height 40: 10:1
    policy = model_input(wide, CIFAR10, 4, "whole").policy
    assert "128 × 32 px (width × height" in policy and "more elongated than 4:1" in policy
    assert "elongated" not in model_input(Image.new("RGB", (120, 40)), CIFAR10, 4, "whole").policy


def test_a_model_without_cls_says_nothing_is_left_out():
    model = vit.create_model("vit_cifar_nano", class_token=False, pool="gap").eval()
    image = Image.fromarray(np.random.default_rng(1).integers(0, 256, (32, 32, 3), dtype=np.uint8))
    ex = explain(model, [str(i) for i in range(10)], CIFAR10, image)
    assert ex.prefix_attention(None).shape == (ex.depth, ex.heads, 0)
    assert "nothing is left out" in texts.left_out(ex) and "nothing is left out" in texts.describe_rollout(
        ex, "mean", 0
    )
    with_cls = views.heads(
        explain(near_uniform_model(), [str(i) for i in range(10)], CIFAR10, image), None, 0, MapStyle()
    )
    assert views.heads(ex, None, 0, MapStyle()).height < with_cls.height  # no "CLS 0.xx" line under the tiles


def _tiny(**prefix) -> vit.VisionTransformer:
    """A 2-layer model on a 4 x 4 grid with the given prefix-token options."""
    config = vit.ViTConfig(image_size=32, patch_size=8, num_classes=3, dim=16, depth=2, heads=2, mlp_dim=32, **prefix)
    torch.manual_seed(0)
    return vit.VisionTransformer(config).eval()


def _explained(**prefix):
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8))
    return explain(_tiny(**prefix), ["a", "b", "c"], CIFAR10, image)


def test_an_enlarged_image_is_said_with_both_sizes_width_by_height():
    """A 5 x 5 image was enlarged to the model's 32 x 32 with no note."""
    tiny = explain(_tiny(), ["a", "b", "c"], CIFAR10, Image.new("RGB", (5, 5)))
    numbers = texts.describe_input(tiny)
    assert "**Enlarged:** the image is 5 × 5 px" in numbers and "upscaled to 32 × 32 px (width × height)" in numbers
    wide = texts.describe_input(explain(_tiny(), ["a", "b", "c"], CIFAR10, Image.new("RGB", (50, 20)), "whole"))
    assert "uploaded **50 × 20** px" in wide and "Enlarged" in wide  # 20 px high, below the 32 px short side
    assert "Enlarged" not in texts.describe_input(_explained())  # 32 x 32: the model's own size


def test_captions_name_the_prefix_tokens_of_deit_with_registers():
    ex = _explained(distill_token=True, register_tokens=4)
    assert ex.has_prefix and ex.has_cls
    numbers = texts.describe_input(ex)
    assert "**22 tokens** (6 prefix tokens: CLS, dist, reg1, reg2, reg3, reg4 + 16 patches)" in numbers
    assert "6 CLS" not in numbers
    assert "the CLS token" in texts.describe_query(None, ex.has_cls)
    # "Query: the register 2" read wrong: "register 2" is a name, as "layer 3" is
    assert texts.describe_query("reg2").startswith("Query: **register 2**, a token with no pixels of its own.")
    assert texts.describe_query("dist").startswith("Query: **the distillation token**, a token")
    assert texts.describe_query("cls").startswith("Query: **the CLS token**, a token")


def test_captions_of_a_model_without_prefix_tokens_never_name_a_cls_token():
    ex = _explained(class_token=False, pool="gap")
    assert not ex.has_prefix and not ex.has_cls
    assert "**16 tokens**\n" in texts.describe_input(ex)  # no "(... + 16 patches)" part
    assert "no CLS token" in texts.describe_query(None, ex.has_cls)
    assert "the CLS token" not in texts.describe_query(None, ex.has_cls)
    assert "nothing is left out" in texts.describe_rollout(ex, "mean", 0.0)


def test_registers_without_cls_query_the_mean_patch_and_leave_the_registers_out():
    ex = _explained(class_token=False, pool="gap", register_tokens=2)
    assert ex.has_prefix and not ex.has_cls
    assert "(2 prefix tokens: reg1, reg2 + 16 patches)" in texts.describe_input(ex)
    assert "the CLS token" not in texts.describe_query(None, ex.has_cls)
    rollout = texts.describe_rollout(ex, "mean", 0.0)
    assert "the mean patch row of R over the patches" in rollout and "reg1" in rollout and "CLS row" not in rollout


def test_every_view_of_a_dinov3_shaped_model_reads_its_registers_and_rotary_positions():
    # DINOv3's layout at toy size: CLS + 4 registers, rotary positions, no classifier.
    dinov3 = {"register_tokens": 4, "pos_embed_prefix": False, "pos_embed": "rope", "layer_scale": 1e-5}
    config = vit.ViTConfig(image_size=32, patch_size=8, num_classes=0, dim=16, depth=2, heads=2, mlp_dim=32, **dinov3)
    model = vit.VisionTransformer(config).eval()
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8))
    ex = explain(model, [], CIFAR10, image)
    assert "(5 prefix tokens: CLS, reg1, reg2, reg3, reg4 + 16 patches)" in texts.describe_input(ex)
    assert ex.prefix_attention(None).shape == (ex.depth, ex.heads, 5)  # CLS and the 4 registers, printed
    left_out = texts.left_out(ex)
    assert all(name in left_out for name in ("CLS", "reg1", "reg4")), left_out
    # Hand-made maps on its layout: every query puts half its weight on one patch, per layer and head.
    peaks = {(0, 0): (1, 2), (0, 1): (3, 0), (1, 0): (0, 3), (1, 1): (1, 2)}  # (layer, head) -> (row, col)
    layers = [torch.full((1, 2, 21, 21), 0.5 / 20) for _ in range(2)]  # 5 prefix tokens + 16 patches
    for (layer, head), (row, col) in peaks.items():
        layers[layer][0, head, :, 5 + 4 * row + col] = 0.5
    ex = replace(ex, attention=vit.AttentionMaps(layers, ex.grid, 5, ex.prefix_names))
    style = MapStyle(cmap="viridis", raw=True)  # the map alone: a pixel's colour is its weight
    for layer in (0, 1):
        for query in (None, (2, 3)):  # the outline of patch (2, 3) never hides a peak
            picture = views.heads(ex, query, layer, style)
            tile = views.head_layout(ex, None, style)[1]
            drawn = drawn_peaks(picture, tile, "viridis", ex.grid)  # one tile per head
            assert drawn == [peaks[layer, 0], peaks[layer, 1]], (layer, query)
            assert any(d == "across" for d, *_ in gradient_runs(picture, "viridis"))  # its colour bar, 0 to top
    overview = overview_view.overview(ex, style)
    tile = canvas.fit_to_grid(ex.input.pixels, ex.grid, overview_view.OVERVIEW_PX).shape[0]
    drawn = drawn_peaks(overview, tile, "viridis", ex.grid)
    assert drawn == [peaks[0, 0], peaks[0, 1], peaks[1, 0], peaks[1, 1]]  # layers down, heads across
    assert np.unravel_index(ex.rollout("mean", 0.0).argmax(), ex.grid) == (1, 2)  # the peak of both layers
    side = canvas.fit_to_grid(ex.input.pixels, ex.grid, views.ROLLOUT_PX).shape[0]
    for show, cmap in (("weights", "viridis"), ("relative", render.RELATIVE_CMAP), ("top mass", "viridis")):
        picture = views.rollout(ex, controls.Fusion("mean", 0.0), style, controls.Showing(show))
        assert drawn_peaks(picture, side, cmap, ex.grid) == [(1, 2)], show
    chart = distance_view.distance_chart(ex)
    axes = charts.distance_axes(ex.depth, ex.heads, tuple(ex.input.pixels.shape[:2]))
    diameter = np.sqrt(axes.dots.get_sizes()[0]) * axes.canvas.figure.dpi / 72
    expected = expected_ring_heights(axes, ex.attention_distance(), chart.height)
    assert np.abs(ring_heights(chart, axes, ex.heads) - expected).max() < diameter / 4
    compared = similarity_view.positions_compared(model)
    assert (
        compared.startswith("rotary position angles")
        and similarity_view.positions_compared(_tiny()) == "position embeddings"
    )
    assert compared in similarity_view.similarity_alt(ex.grid, "toy DINOv3", compared)
    tiles = render.position_similarity_tiles(position_embedding_similarity(model).numpy(), compared=compared)
    side = 4 * render._similarity_scale(4, 1)  # a tile: the 4 x 4 slots, each enlarged alike
    corners = squares(tiles, side)
    assert len(corners) == 16  # one tile per slot, rows down and columns across
    cell = side // 4
    for (row, col), (y, x) in zip(np.ndindex(4, 4), corners, strict=True):  # each outlines its own slot in black
        black = np.argwhere((np.asarray(tiles)[y : y + side, x : x + side] == canvas.OWN_SLOT_COLOUR).all(-1))
        assert black.min(0).tolist() == [row * cell, col * cell], (row, col)
        assert black.max(0).tolist() == [(row + 1) * cell - 1, (col + 1) * cell - 1], (row, col)


def test_rollout_marks_uniform_and_says_what_above_and_below_mean(uniform):
    shares = uniform.rollout("mean", 0.0)
    assert views.uniform_value(shares) == pytest.approx(shares.sum() / 64)
    raw = MapStyle(cmap="viridis", raw=True)  # the map alone: a pixel's colour is its value
    side = canvas.fit_to_grid(uniform.input.pixels, uniform.grid, views.ROLLOUT_PX).shape[0]
    cells = {}
    for show, cmap in (("weights", "viridis"), ("relative", render.RELATIVE_CMAP), ("top mass", "viridis")):
        picture = views.rollout(uniform, controls.Fusion("mean", 0.0), raw, controls.Showing(show))
        ((y, x),) = squares(picture, side)
        index = colour_index(np.asarray(picture)[y : y + side, x : x + side], cmap)
        cells[show] = index[side // 16 :: side // 8, side // 16 :: side // 8]  # each patch's centre pixel
        assert any(d == "across" for d, *_ in gradient_runs(picture, cmap)), show  # its colour bar, end to end
    assert (cells["weights"] >= 250).all()  # near uniform: every patch at about the largest weight
    assert (np.abs(cells["relative"] - 127.5) <= 3).all()  # and at 1 x uniform, the diverging map's middle
    kept = top_mass_mask(torch.from_numpy(shares), controls.KEEP).numpy()
    assert 0 < kept.sum() < 64 and ((cells["top mass"] >= 0) == kept).all()  # only the kept patches in colour
    with pytest.raises(ValueError, match="show must be one of weights, relative, top mass"):
        views.rollout(uniform, controls.Fusion("mean", 0.0), MapStyle(), controls.Showing("sideways"))


def test_one_map_keeps_the_top_mass_and_dims_the_rest():
    base = np.full((40, 40, 3), 255, np.uint8)  # a 4 x 4 grid in 10-pixel cells
    amap = np.full((4, 4), 0.28 / 13)
    amap[0, :3] = [0.4, 0.17, 0.15]  # 0.4 + 0.17 fall short of 0.6 of the total 1, so 0.15 is kept too
    style = MapStyle(cmap="gray", raw=True)
    top = canvas.text_block("t", 320, canvas.TEXT_PX).height + canvas.GAP  # the body starts under the one-line title
    cells = [
        np.asarray(views.one_map(base, amap, style, "t", "u", "", controls.Showing(show, 0.6)))[
            top + 5 : top + 40 : 10, 5:40:10, 0
        ]
        for show in ("top mass", "weights")
    ]
    masked, weights = (c.astype(int) for c in cells)
    kept = np.zeros((4, 4), bool)
    kept[0, :3] = True
    assert (masked[kept] == weights[kept]).all()
    # outside: the white photo in the light tint, without the map (red channel of the pale blue)
    tint = render.DIM_TINTS[render.dim_tint("gray")][0]
    assert (np.abs(masked[~kept] - render.DIM_LEVELS[1] * tint) <= 1).all()


def test_every_picture_has_an_alt_text_naming_view_layer_query_and_model(uniform):
    model = "CIFAR-10 nano"
    alts = {
        "input": texts.input_alt(uniform, (2, 4), model),
        "heads": texts.heads_alt(uniform, (2, 4), 3, model),
        "overview": overview_view.overview_alt(uniform, model),
        "rollout": texts.rollout_alt(uniform, controls.Fusion("max", 0.25), controls.Showing("relative", 0.6), model),
        "relevance": texts.relevance_alt(uniform, "cat", controls.Showing("top mass", 0.4), model),
        "distance": distance_view.distance_alt(uniform, model),
        "similarity": similarity_view.similarity_alt(uniform.grid, model),
    }
    assert all(f"model: {model}" in text and "8 × 8" in text for text in alts.values())
    assert "the query, patch (3, 5), is outlined" in alts["input"]
    assert "the query is CLS" in texts.input_alt(uniform, None, model)
    assert "outlined" not in texts.input_alt(uniform, None, model)
    assert "4 heads of layer 3 of 6" in alts["heads"] and "query patch (3, 5)" in alts["heads"]
    assert "query CLS" in alts["overview"] and "layers 1 to 6" in alts["overview"]
    assert "rollout of the query CLS" in alts["rollout"] and "max over heads, discard ratio 0.25" in alts["rollout"]
    assert "drawn as multiples of uniform" in alts["rollout"]
    assert (
        "the chosen class 'cat'" in alts["relevance"]
        and "top 40% of its mass, the rest as the photo in a light tint" in alts["relevance"]
    )
    predicted = texts.relevance_alt(uniform, None, controls.Showing("weights", 0.6), model)
    top = max(uniform.probabilities, key=uniform.probabilities.get)  # the class the model predicts
    assert f"the predicted class '{top}'" in predicted
    assert "weights from 0 with uniform marked" in predicted
    assert "mean attention distance" in alts["distance"]
    assert "position embeddings" in alts["similarity"]


MIN_TEXT_PX = 12  # the smallest text a projector shows legibly at 1280×720


def shown_px(drawn_px: float, picture: Image.Image, view: str) -> float:
    """Text `drawn_px` high in `picture`, as the app shows the picture on a 1280×720 screen:
    gr.Image shrinks a picture wider than its column to fit and never enlarges one."""
    return drawn_px * min(1.0, views.DISPLAY_WIDTH["more" if view in REGISTRY else view] / picture.width)


def chart_text_px(fig) -> float:
    """The smallest text a matplotlib figure draws, in pixels: points × dpi / 72."""
    from matplotlib.text import Text

    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    assert len(texts) > 5  # titles, labels, ticks and legend entries were found
    return min(t.get_fontsize() for t in texts) * fig.dpi / 72


def twelve_heads() -> tuple[vit.VisionTransformer, Explanation]:
    """A ViT-B/16-sized layout (12 heads, 14 × 14 patches) with few small layers."""
    config = vit.ViTConfig(image_size=224, patch_size=16, num_classes=10, dim=96, depth=3, heads=12, mlp_dim=96)
    model = vit.VisionTransformer(config).eval()
    image = Image.fromarray(np.random.default_rng(1).integers(0, 256, (240, 300, 3), dtype=np.uint8))
    return model, explain(model, [f"c{i}" for i in range(10)], vit.Preprocessing(224, 224), image)


def first_screen_pictures(
    model: vit.VisionTransformer, ex: Explanation, style: MapStyle, text_px: int = canvas.TEXT_PX
) -> list[tuple[str, Image.Image]]:
    """(view, picture) for every Explore picture drawn in `style` that no registry view draws when its
    tab opens: the head maps, the maps a button draws (relevance, a CLIP model's prompts), words
    `text_px` high."""
    names = [f"c{i}" for i in range(10)]
    top_mass = controls.Showing("top mass")
    assert [v.name for v in REGISTRY.values() if v.picture is None] == ["relevance"]  # each drawn below
    return [
        ("heads", views.heads(ex, (1, 2), 1, style, text_px=text_px)),
        ("heads", views.heads(ex, None, 1, replace(style, scale="head"), text_px=text_px)),  # "max": a line of its own
        ("relevance", views.relevance(model, names, ex, None, style, top_mass, text_px=text_px)),
        ("prompts", views.prompt_relevance(ex.input.pixels, ex.grid, words(ex), 1, style, top_mass, text_px)),
    ]


def words(ex: Explanation) -> ZeroShot:
    """Two prompts' scores and maps on `ex`'s grid, as a CLIP model's task returns them."""
    maps = np.random.default_rng(2).random((2, *ex.grid))
    return ZeroShot(("a cat", "a very long prompt about a teapot"), "a photo of {}.", np.array([1.0, 0.5]), maps)


def records(kind: type) -> list:
    """A view's record of its controls at their defaults, then with each yes/no flipped and each way
    of showing a map (`controls.SHOWS`): the choices that change what a picture writes (the PCA's
    examples: seven images in one row; top mass: a line of its own)."""
    default = kind()
    names = kind._fields if hasattr(kind, "_fields") else [f.name for f in fields(kind)]  # a NamedTuple or dataclass
    values = {name: getattr(default, name) for name in names}
    remade = default._replace if hasattr(default, "_replace") else partial(replace, default)
    flipped = [remade(**{name: not value}) for name, value in values.items() if isinstance(value, bool)]
    shown = [
        remade(**{name: controls.Showing(show)})
        for name, value in values.items()
        if isinstance(value, controls.Showing)
        for show in controls.SHOWS
    ]
    return [default, *flipped, *shown]


def more_pictures(
    loaded: LoadedModel, ex: Explanation, text_px: int = canvas.TEXT_PX, style: bool = False
) -> list[tuple[str, Image.Image, float]]:
    """(view, picture, its smallest words in px) for every registry view drawn when its tab opens
    (with `style`, those that follow the style only), as its module draws it, for each of `records`."""
    scene = Scene(loaded, "m", text_px, run_here, ex)
    return [
        (view.name, view.picture(scene, record).image, view.smallest_text_px(text_px))
        for view in REGISTRY.values()
        if view.picture is not None and (view.style or not style)
        for record in records(view.record)
    ]


def loaded_model(model: vit.VisionTransformer, ex: Explanation) -> LoadedModel:
    """`model` as the app holds it, its input as large as `ex`'s (the PCA's examples are made alike)."""
    side = ex.input.pixels.shape[0]
    return LoadedModel("m", "m", model, vit.ModelMeta([f"c{i}" for i in range(10)], vit.Preprocessing(side, side)))


def explore_pictures(model: vit.VisionTransformer, ex: Explanation) -> list[tuple[str, Image.Image, float]]:
    """(view, picture, its smallest drawn text in px) for every picture of the Explore tab."""
    text = canvas.TEXT_PX
    first = [(view, picture, text) for view, picture in first_screen_pictures(model, ex, MapStyle())]
    return first + more_pictures(loaded_model(model, ex), ex)


@pytest.mark.parametrize("layout", ["nano: 4 heads, 8 × 8 patches", "12 heads, 14 × 14 patches"])
def test_every_text_in_every_explore_picture_is_at_least_12_px_on_a_1280x720_screen(layout, uniform):
    model, ex = (near_uniform_model(), uniform) if layout.startswith("nano") else twelve_heads()
    if layout.startswith("nano"):
        ex = explain(model, [f"c{i}" for i in range(10)], CIFAR10, Image.new("RGB", (32, 32)))
    for view, picture, drawn in explore_pictures(model, ex):
        assert shown_px(drawn, picture, view) >= MIN_TEXT_PX, (view, picture.size, drawn)


PRESENT_MIN_PX = 18  # the presentation mode's promise at 1280×720


@pytest.mark.parametrize("layout", ["nano: 4 heads, 8 × 8 patches", "12 heads, 14 × 14 patches"])
def test_in_the_presentation_mode_the_text_of_every_styled_picture_is_at_least_18_px(layout, uniform):
    """The pictures' labels were ~13 px on a projector; the presentation mode's text size
    now draws every word larger, and the pictures still fit their columns."""
    model, ex = (near_uniform_model(), uniform) if layout.startswith("nano") else twelve_heads()
    present = canvas.PRESENT_TEXT_PX
    styled = [(view, picture, present) for view, picture in first_screen_pictures(model, ex, MapStyle(), present)]
    for view, picture, drawn in styled + more_pictures(loaded_model(model, ex), ex, present, style=True):
        assert shown_px(drawn, picture, view) >= PRESENT_MIN_PX, (view, picture.size)
    loaded = LoadedModel("m", "a model with a long name", model, vit.ModelMeta([], vit.Preprocessing(224, 224)))
    heads = lessons.cls_heads(loaded, Image.new("RGB", (240, 240)))
    compare = lessons.compare_cls_heads([loaded, loaded], [heads, heads], MapStyle(), present)
    assert shown_px(present, compare, "compare") >= PRESENT_MIN_PX
    plain = views.heads(ex, None, 1, MapStyle())
    assert views.heads(ex, None, 1, MapStyle(), text_px=present).height > plain.height  # the words really are larger


def test_in_the_presentation_mode_a_16_head_overview_is_drawn_within_its_width():
    """Issue 61: in `--present` a model with more heads than fit (ViT-L's 16; 12 with registers)
    had its overview shown at 0.71 to 0.8 of its drawn size, its 20-px words at 14 to 16 px; its
    heads now come in blocks that fit the page's width, every tile still drawn."""
    config = vit.ViTConfig(image_size=64, patch_size=16, num_classes=10, dim=128, depth=2, heads=16, mlp_dim=64)
    image = Image.fromarray(np.random.default_rng(1).integers(0, 256, (64, 64, 3), dtype=np.uint8))
    ex = explain(vit.VisionTransformer(config).eval(), [f"c{i}" for i in range(10)], vit.Preprocessing(64, 64), image)
    style = MapStyle(cmap="viridis", raw=True)
    for text_px in (canvas.TEXT_PX, canvas.PRESENT_TEXT_PX):
        overview = overview_view.overview(ex, style, text_px)
        assert overview.width <= views.DISPLAY_WIDTH["more"], (text_px, overview.size)
        tile = canvas.fit_to_grid(ex.input.pixels, ex.grid, overview_view.OVERVIEW_PX).shape[0]
        assert len(squares(overview, tile)) == ex.depth * ex.heads  # every head of every layer


def test_in_the_presentation_mode_the_charts_similarity_and_train_curves_are_at_least_18_px(uniform):
    """The presentation mode grew the maps' words but not the distance chart's, the position
    similarity's or the Train tab's curves and probe strip (13 px on a projector; the probe strip's
    words stayed 13 px high after a test that computed them at 20 px had passed)."""
    present = canvas.PRESENT_TEXT_PX
    chart = distance_view.distance_chart(uniform, present)
    layers, heads = uniform.attention_distance().shape
    drawn = chart_text_px(charts.distance_axes(layers, heads, uniform.input.pixels.shape[:2], present).canvas.figure)
    assert shown_px(drawn, chart, "distance") >= PRESENT_MIN_PX
    assert drawn == pytest.approx(distance_view.VIEW.smallest_text_px(present))  # as its record says (more_pictures)
    assert chart.width > distance_view.distance_chart(uniform).width  # larger words, not only a larger number
    for grid in ((8, 8), (14, 14)):
        similarity = np.random.default_rng(0).uniform(-1, 1, (*grid, *grid))
        tiles = render.position_similarity_tiles(similarity, text_px=present)
        assert shown_px(present, tiles, "similarity") >= PRESENT_MIN_PX, (grid, tiles.size)
        assert tiles.height > render.position_similarity_tiles(similarity).height
    history = [
        {"epoch": e, "train_loss": 2.0 / e, "val_loss": 2.1 / e, "train_acc": 0.3, "val_acc": 0.28} for e in (1, 2)
    ]
    curves = charts.training_figure(history, [(0.5, 2.2)], present)
    assert shown_px(chart_text_px(curves), charts.training_curves(history, [(0.5, 2.2)], present), "curves") >= 18
    for heads in (4, 12):
        maps = torch.from_numpy(np.random.default_rng(0).random((6, heads, 8, 8)) / 80)
        readings = [(e, maps) for e in range(4)]
        image = torch.zeros(3, 32, 32, dtype=torch.uint8)  # as the run keeps it (training.chunks)
        probe, plain = run_views.probe(image, readings, present), run_views.probe(image, readings)
        assert first_line_px(probe) > first_line_px(plain)  # drawn at PRESENT_TEXT_PX: its title is taller
        assert shown_px(present, probe, "probe") >= PRESENT_MIN_PX, (heads, probe.size)
        assert "before training" in run_views.probe_alt(readings, present)


def test_the_train_and_lessons_pictures_keep_their_text_at_least_12_px():
    history = [
        {"epoch": e, "train_loss": 2.0 / e, "val_loss": 2.1 / e, "train_acc": 0.3 * e, "val_acc": 0.28 * e}
        for e in (1, 2)
    ]
    curves = charts.training_figure(history, [(0.5, 2.2), (1.0, 2.0)])
    assert shown_px(chart_text_px(curves), charts.training_curves(history), "curves") >= MIN_TEXT_PX
    for heads in (4, 12):  # vit_cifar_nano (the Train tab's default), vit_cifar_tiny and _small
        maps = np.random.default_rng(0).random((6, heads, 8, 8)) / 80
        probe = probe_strip.probe_strip(np.zeros((64, 64, 3), np.uint8), [(e, maps) for e in range(1, 4)], MapStyle())
        assert shown_px(canvas.TEXT_PX, probe, "probe") >= MIN_TEXT_PX
    model, _ = twelve_heads()
    twelve = LoadedModel(
        "b16", "ViT-B/16 sized, with a long name", model, vit.ModelMeta([], vit.Preprocessing(224, 224))
    )
    heads = lessons.cls_heads(twelve, Image.new("RGB", (240, 240)))
    compare = lessons.compare_cls_heads([twelve, twelve], [heads, heads], MapStyle())
    assert shown_px(canvas.TEXT_PX, compare, "compare") >= MIN_TEXT_PX
    norms = lessons.token_norm_maps([lessons.norm_report(twelve, Image.new("RGB", (240, 240)), 1)] * 3, 1, MapStyle())
    assert shown_px(canvas.TEXT_PX, norms, "norms") >= MIN_TEXT_PX


def test_wrapped_into_fewer_columns_the_tiles_keep_their_size_and_the_colour_bar_spans_them(uniform):
    """As the page wraps the head maps in a phone's column (ui/js/layout.js, fittingColumns), so
    the PNG export of that screen: each tile as large as in the full layout, the bar no wider."""
    cols, tile = views.head_layout(uniform)
    assert cols > 2 and views.head_layout(uniform, columns=2) == (2, tile)
    wide, wrapped = views.heads(uniform, None, 5, MapStyle()), views.heads(uniform, None, 5, MapStyle(), columns=2)
    assert len(squares(wide, tile)) == len(squares(wrapped, tile)) == uniform.heads  # every head, as large
    assert wrapped.width == 2 * (tile + canvas.GAP) < canvas.BAR_WIDTH < wide.width


def test_the_gifs_frames_are_laid_out_as_the_screens_head_maps_in_every_style_and_text_size():
    """The GIF's frames had the plain layout whatever the style and text size: in the
    presentation mode, its captions widened a row of 6 tiles past the heads' column, where the
    screen (and its PNG export) shows 4."""
    _, ex = twelve_heads()
    for style, text_px in ((MapStyle(), canvas.TEXT_PX), (MapStyle(scale="head"), canvas.PRESENT_TEXT_PX)):
        frames = views.layer_frames(ex, None, style, text_px=text_px)
        screen = views.heads(ex, None, 1, style, text_px=text_px)
        assert frames[1].width == screen.width <= views.DISPLAY_WIDTH["heads"], (style, text_px)


def test_the_relevance_picture_is_titled_by_its_class_not_by_a_query(monkeypatch):
    """It read "query: CLS" although no query changes relevance."""
    model, ex = twelve_heads()
    titles = []
    monkeypatch.setattr(views, "one_map", lambda base, amap, style, title, *rest: titles.append(title))
    views.relevance(model, [f"c{i}" for i in range(10)], ex, 3, MapStyle())
    assert titles == ["relevance for the chosen class 'c3' (Chefer et al. 2021)"]
    assert "query" not in texts.relevance_alt(ex, "c3", controls.Showing("weights", 0.6), "m")


def nano_loaded(seed: int = 0) -> LoadedModel:
    torch.manual_seed(seed)
    model = vit.create_model("vit_cifar_nano").eval()
    return LoadedModel("nano", "nano", model, vit.ModelMeta([f"c{i}" for i in range(10)], CIFAR10))


def test_patch_features_fit_one_pca_on_all_images_and_the_picture_shows_each_images_rows():
    loaded, g = nano_loaded(), torch.Generator().manual_seed(4)
    one, other = torch.randn(1, 3, 32, 32, generator=g), torch.randn(1, 3, 32, 40, generator=g)
    computed = pca.patch_features(loaded, [one, other, one], 2, True)
    assert computed.grids == ((8, 8), (8, 10), (8, 8)) and computed.pca.rgb.shape == (64 + 80 + 64, 3)
    assert torch.equal(computed.pca.rgb[:64], computed.pca.rgb[144:])  # one PCA: the same patches, the same colours
    with torch.inference_mode():  # block 3's patch tokens through the final norm
        tokens = [loaded.model.norm(loaded.model.hidden_states(t, upto=2)[2])[0, 1:] for t in (one, other, one)]
    expected = patch_pca(tokens, [grid_border(grid) for grid in computed.grids])
    torch.testing.assert_close(computed.pca.rgb, expected.rgb, atol=0, rtol=0)  # the same arithmetic, here
    pixels = [
        np.full((32, 32, 3), 80, np.uint8),
        np.full((32, 40, 3), 80, np.uint8),
        np.full((32, 32, 3), 80, np.uint8),
    ]
    picture = pca.pca_view(pixels, ["this image", "b", "c"], computed, 3, 6, ("cls",))
    drawn = np.asarray(picture)
    for i, colour in enumerate(computed.pca.rgb[computed.pca.foreground][:5]):
        assert (drawn == (colour.numpy() * 255 + 0.5).astype(np.uint8)).all(-1).any(), i  # each patch colour drawn
    note = pca.describe_pca(computed.pca, 3, ("cls",))
    assert "per image, a first PCA" in note and "thresholded at 0" in note and "border patches" in note
    assert "One PCA for all 3 images" in note
    assert "(CLS) have no place on the grid" in note
    alt = pca.pca_alt(["this image", "b", "c"], computed, 3, 6, "nano")
    assert "layer 3 of 6" in alt and "red, green and blue" in alt
    kept = pca.patch_features(loaded, [one], 2, False)
    assert not kept.pca.removed.any() and "No background removed" in pca.describe_pca(kept.pca, 1, ())


def test_the_logit_lens_view_shows_the_last_layers_top_classes_and_says_it_was_never_trained_so():
    loaded = nano_loaded(5)
    tensor = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(6))
    lens = logit_lens.layer_predictions(loaded, tensor)
    with torch.inference_mode():
        final = loaded.model(tensor).softmax(-1)[0]
    assert lens.shape == (6, 10)
    torch.testing.assert_close(lens[-1], final, atol=rounding_tolerance(torch.float32, 128, 1.0, 26), rtol=0)
    alt = logit_lens.logit_lens_alt(lens.numpy(), loaded.meta.class_names, "nano")
    assert f"layer 6: c{int(final.argmax())}" in alt and "never trained" in alt
    picture = logit_lens.logit_lens_view(lens.numpy(), loaded.meta.class_names)
    assert picture.width <= views.DISPLAY_WIDTH["more"] and picture.height > 200
    assert "never trained" in logit_lens.LENS_CAVEAT


def test_the_new_tasks_cost_more_for_more_images_and_deeper_layers():
    loaded, x = nano_loaded(), torch.zeros(1, 3, 32, 32)
    shallow, deep = (
        pca.patch_features_cost(loaded, [x], 0, True),
        pca.patch_features_cost(loaded, [x], 5, True),
    )
    assert 0 < shallow < deep < pca.patch_features_cost(loaded, [x, x], 5, True)
    assert logit_lens.layer_predictions_cost(loaded, x) > compute.pass_seconds(loaded.model, (32, 32))


def test_one_query_parser_for_every_picker_of_a_query_token():
    """Explore's token picker and Live's name a query the same way (controls.parse_query)."""
    names = ("cls", "dist", "reg1")

    def refused() -> tuple[int, int]:
        raise AssertionError("the patch was asked for a token that is no patch")

    assert controls.parse_query("cls", names, refused) is None
    assert controls.parse_query("reg1", names, refused) == "reg1"
    assert controls.parse_query("patch", names, lambda: (2, 3)) == (2, 3)
    assert controls.parse_query("mean", ("reg1",), refused) is None  # no CLS: the mean of the patches
    with pytest.raises(controls.QueryError, match=r"unknown query token 'reg2'; choose one of 'cls', 'dist', 'reg1'"):
        controls.parse_query("reg2", names, refused)
    with pytest.raises(controls.QueryError, match="unknown query token 'mean'"):
        controls.parse_query("mean", names, refused)  # a model with CLS has no "mean" query


@pytest.mark.parametrize(
    "typed",
    [
        "![x](http://evil.example/p.png)",  # Chromium fetched it: a tracking pixel
        "<img src=x onerror=alert(1)>",
        "[click](http://evil.example) *bold* _it_ `code` ~~gone~~ <b>",
        "$$\\alpha$$ &amp; &lt;b&gt; \\* www.evil.example",
    ],
)
def test_the_prompt_note_shows_the_visitors_words_as_typed_never_as_markdown_or_html(typed):
    maps = np.zeros((2, 2, 2))
    note = texts.prompt_note(ZeroShot((typed, "a dog"), "a photo of {}.", np.zeros(2), maps))
    plain = texts.prompt_note(ZeroShot(("a cat", "a dog"), "a photo of {}.", np.zeros(2), maps))
    # the words add no element: no picture, link, tag, emphasis or code; and no formula
    assert tags(rendered(note)) == tags(rendered(plain)) and "$$" not in note
    assert f"(e.g. “a photo of {typed}.”)" in read(rendered(note))
