"""The numbers the page draws the first screen from (explorer/page_maps.py): exactly the colours
of the server's PNG on the scale the page starts on, within the reply's byte budgets."""

import base64

import numpy as np
import pytest
import torch
from matplotlib import colormaps
from PIL import Image

import vit
from explorer import canvas, page_budget, page_maps, render, texts, views
from explorer.canvas import MapStyle
from explorer.explain import explain
from vit.preprocessing import Preprocessing

MB = 10**6


def decoded(b64: str, dtype) -> np.ndarray:
    return np.frombuffer(base64.b64decode(b64), dtype=np.dtype(dtype).newbyteorder("<"))


def colour_indices(maps: np.ndarray, top: float) -> np.ndarray:
    """The colour-map entry canvas.heatmap picks for each value of a map (nearest upsampling)."""
    position = np.clip(maps.astype(np.float32) / np.float32(top if top > 0 else 1.0), 0.0, 1.0)
    lut = colormaps["viridis"](np.arange(256), bytes=True)[:, :3]
    drawn = colormaps["viridis"](position, bytes=True)[..., :3]
    # which of the 256 entries each drawn colour is (viridis's entries are all different)
    index = {tuple(c): i for i, c in enumerate(lut)}
    return np.vectorize(lambda *rgb: index[rgb])(drawn[..., 0], drawn[..., 1], drawn[..., 2])


@pytest.fixture(scope="module")
def nano_explanation():
    torch.manual_seed(0)
    model = vit.create_model("vit_cifar_nano").eval()
    pre = Preprocessing(resize_size=32, crop_size=32)
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8))
    return explain(model, [str(i) for i in range(10)], pre, image)


def test_every_level_gives_the_very_colour_the_server_draws_on_the_layer_scale(nano_explanation):
    """floor(level / 256) is canvas.heatmap's colour index for every head, query and layer."""
    ex = nano_explanation
    payload = page_maps.page_maps(ex, "nano", ex.depth - 1, canvas.TEXT_PX, "handle")
    gh, gw = ex.grid
    queries = {0: None, 5: (0, 4), 40: (4, 7)}  # a token row, then patch rows (patch index: row-major)
    for layer in range(ex.depth):
        token, patches = payload["token_rows"][layer], payload["patch_rows"][layer]
        assert patches["layer"] == layer
        for row, query in queries.items():
            rows = token if query is None else patches
            q = 0 if query is None else query[0] * gw + query[1]
            maps = ex.query_maps(query)[layer]  # (heads, gh, gw): what views.heads draws
            levels = decoded(rows["levels"], np.uint16).reshape(-1, ex.heads, gh, gw)[q]
            top = decoded(rows["tops"], np.float32)[q]
            assert top == maps.max()
            np.testing.assert_array_equal(levels // 256, colour_indices(maps, float(top)), err_msg=f"{layer} {row}")
            shares = decoded(rows["shares"], np.float32).reshape(-1, ex.heads, 1)[q]
            np.testing.assert_array_equal(shares, ex.prefix_attention(query)[layer])
            head_tops = decoded(rows["head_tops"], np.float32).reshape(-1, ex.heads)[q]
            np.testing.assert_array_equal(head_tops, maps.max(axis=(-2, -1)))


def test_the_page_gets_the_colour_maps_own_256_entries():
    tables = page_maps.colour_tables()
    assert set(tables) == {*canvas.COLORMAPS, render.RELATIVE_CMAP}  # the picker's, and Live's rollout's
    for name, b64 in tables.items():
        table = decoded(b64, np.uint8).reshape(256, 3)
        np.testing.assert_array_equal(table, colormaps[name](np.arange(256), bytes=True)[:, :3])  # the LUT itself


def test_the_words_are_the_servers_with_places_for_the_query_and_layer(nano_explanation):
    ex = nano_explanation
    words = page_maps.words(ex, "nano")
    heads = words["heads_alt"].replace("{layer}", "3").replace("{query}", "patch (2, 5)")
    assert heads == texts.heads_alt(ex, (1, 4), 3, "nano")
    patch = words["input_alt_patch"].replace("{query}", "patch (2, 5)")
    assert patch == texts.input_alt(ex, (1, 4), "nano")
    assert words["input_alt"].replace("{query}", "CLS") == texts.input_alt(ex, None, "nano")
    caption = words["patch_caption"].replace("{row}", "2").replace("{column}", "5")
    assert caption == texts.describe_query((1, 4), ex.has_cls)
    assert words["title"].replace("{layer}", "3").replace("{query}", "CLS") == texts.heads_title(ex, "CLS", 3)
    assert words["picks"] == ["cls"] and words["labels"] == ["CLS"] and words["note"] == texts.left_out(ex)


def test_the_tiles_are_laid_out_as_the_servers_heads_view(nano_explanation):
    ex = nano_explanation
    for scale, layout in page_maps.layouts(ex, page_maps.tile_layouts(ex, canvas.PRESENT_TEXT_PX)).items():
        cols, tile = views.head_layout(ex, None, MapStyle(scale=scale), canvas.PRESENT_TEXT_PX)
        assert (layout["cols"], layout["tile"]) == (cols, tile)
        base = layout["base"]
        expected = canvas.fit_to_grid(ex.input.pixels, ex.grid, tile)  # what views.heads lays the maps over
        np.testing.assert_array_equal(
            decoded(base["rgb"], np.uint8).reshape(base["height"], base["width"], 3), expected
        )


def test_the_model_input_is_sent_as_its_own_pixels_with_no_encoding(nano_explanation):
    """It was a PNG: encoding it took 16 % of the server's CPU for an analysis beside its
    forward pass (ViT-S/16), and the page decoded it again."""
    ex = nano_explanation
    sent = page_maps.page_maps(ex, "nano", 0, canvas.TEXT_PX, "handle")["input"]
    pixels = decoded(sent["rgb"], np.uint8).reshape(sent["height"], sent["width"], 3)
    np.testing.assert_array_equal(pixels, ex.input.pixels)
    assert sent["scale"] == views.input_scale(ex)


def spread_model(name: str) -> vit.VisionTransformer:
    """A model of a pretrained one's shapes (random weights: the bytes depend on the shapes only)."""
    torch.manual_seed(0)
    return vit.create_model(name).eval()


@pytest.mark.parametrize(
    ("name", "budget", "every_layer"),
    [("vit_cifar_nano", 2 * MB, True), ("vit_base_patch16_224", 2 * MB, False)],
)
def test_the_first_screens_reply_fits_its_budget(name, budget, every_layer):
    """ViT-B/16 at 224 px at most 2 MB (issue 41); the bundled model's whole attention is sent."""
    model = spread_model(name)
    side = model.config.image_size
    pre = Preprocessing(resize_size=side, crop_size=side)
    image = Image.fromarray(np.random.default_rng(1).integers(0, 256, (side, side, 3), dtype=np.uint8))
    ex = explain(model, [str(i) for i in range(model.config.num_classes)], pre, image)
    payload = page_maps.page_maps(ex, name, ex.depth - 1, canvas.TEXT_PX, "handle")
    assert page_maps.reply_bytes(payload) <= budget
    assert len(payload["patch_rows"]) == (ex.depth if every_layer else 1)
    assert len(payload["token_rows"]) == ex.depth  # the default query's rows: every layer, always


def test_vit_large_with_registers_fits_six_megabytes():
    """ViT-L/14 (DINOv2 with 4 registers, the Space's largest) at 224 px: at most 6 MB."""
    model = spread_model("vit_large_patch14_reg4_dinov2")
    pre = Preprocessing(resize_size=224, crop_size=224)
    image = Image.fromarray(np.random.default_rng(1).integers(0, 256, (224, 224, 3), dtype=np.uint8))
    ex = explain(model, [], pre, image)
    payload = page_maps.page_maps(ex, "L/14", ex.depth - 1, canvas.TEXT_PX, "handle")
    assert page_maps.reply_bytes(payload) <= 6 * MB
    assert len(payload["token_rows"][0]["tops"]) > 0 and len(payload["words"]["picks"]) == 5  # CLS, reg1 ... reg4
    assert payload["patch_rows"] == []  # a layer is two bands: the page asks for the one it shows
    assert_bands_are_the_layer(ex, 3)


def assert_bands_are_the_layer(ex, layer: int) -> None:
    """Every band of `layer`'s patch rows fits page_budget.BAND_BYTES, and the bands together,
    in order, are every patch query's row of that layer (levels within half a level)."""
    shape, n, p = page_maps.page_shape(ex), ex.grid[0] * ex.grid[1], ex.attention.prefix_tokens
    levels, tops = [], []
    for band in range(shape.bands):
        rows = page_maps.layer_rows(ex, layer, band)
        assert page_maps.reply_bytes(rows) <= page_budget.BAND_BYTES
        assert rows["first"] == band * shape.band
        levels.append(decoded(rows["levels"], np.uint16).reshape(-1, ex.heads, n))
        tops.append(decoded(rows["tops"], np.float32))
    levels, tops = np.concatenate(levels), np.concatenate(tops)
    attention = ex.attention[layer][0, :, p:, p:].permute(1, 0, 2).numpy()  # (patch queries, heads, patches)
    assert levels.shape == attention.shape
    rebuilt = (levels + 0.5) / page_maps.LEVELS * tops[:, None, None]
    assert np.abs(rebuilt - attention).max() <= tops.max() / page_maps.LEVELS


def test_a_48_by_48_grid_is_sent_within_the_budgets():
    """Issue 56's checkpoint: 1 layer, 12 heads of 8 channels, 768 px in 16-px patches. Its layer
    of patch rows was one 170 MB reply; now its first screen fits REPLY_BYTES with no patch rows,
    and the page asks for bands of at most BAND_BYTES."""
    torch.manual_seed(0)
    config = vit.ViTConfig(image_size=768, patch_size=16, num_classes=10, dim=96, depth=1, heads=12, mlp_dim=96)
    model = vit.VisionTransformer(config).eval()
    image = Image.fromarray(np.random.default_rng(3).integers(0, 256, (768, 768, 3), dtype=np.uint8))
    ex = explain(model, [str(i) for i in range(10)], Preprocessing(768, 768), image)
    payload = page_maps.page_maps(ex, "attack", 0, canvas.TEXT_PX, "handle")
    assert page_maps.reply_bytes(payload) <= page_budget.REPLY_BYTES
    assert payload["patch_rows"] == [] and payload["band"] < 48 * 48
    assert page_maps.page_shape(ex).bands > 1
    last = page_maps.page_shape(ex).bands - 1
    rows = page_maps.layer_rows(ex, 0, last)
    assert page_maps.reply_bytes(rows) <= page_budget.BAND_BYTES
    count = decoded(rows["tops"], np.float32).size
    assert rows["first"] + count == 48 * 48  # the last band ends at the last patch


@pytest.mark.parametrize("name", ["vit_cifar_nano", "vit_small_patch14_reg4_dinov2"])
def test_the_estimate_of_a_first_screen_is_what_is_sent(name):
    """page_budget's bytes, known from the shape before anything is built, bound the reply's
    bytes without patch rows from above and by no more than its slack."""
    model = spread_model(name)
    side = 32 if model.config.image_size == 32 else 224
    image = Image.fromarray(np.random.default_rng(1).integers(0, 256, (side, side, 3), dtype=np.uint8))
    ex = explain(model, [str(i) for i in range(model.config.num_classes)], Preprocessing(side, side), image)
    payload = page_maps.page_maps(ex, name, 0, canvas.TEXT_PX, "handle")
    sent = page_maps.reply_bytes({**payload, "patch_rows": []})
    tiles = page_maps.tile_layouts(ex, canvas.TEXT_PX)
    estimate = page_maps.page_shape(ex).first_screen_bytes(page_maps.base_pixels(ex, tiles))
    assert sent <= estimate <= sent + (ex.depth + 1) * page_budget.JSON_SLACK


def test_a_first_screen_over_its_budget_is_refused_in_words_before_it_is_built(nano_explanation, monkeypatch):
    ex = nano_explanation
    monkeypatch.setattr(page_budget, "REPLY_BYTES", 10_000)
    monkeypatch.setattr(page_maps, "encode_rows", lambda *a: pytest.fail("rows were encoded"))
    with pytest.raises(page_maps.PageTooLarge, match=r"first screen would send 0\.\d MB .* 0 MB per reply"):
        page_maps.page_maps(ex, "nano", 0, canvas.TEXT_PX, "handle")


def test_a_layers_patch_rows_decode_to_the_attention(nano_explanation):
    ex = nano_explanation
    rows = page_maps.layer_rows(ex, 2)
    gh, gw = ex.grid
    levels = decoded(rows["levels"], np.uint16).reshape(gh * gw, ex.heads, gh * gw)
    tops = decoded(rows["tops"], np.float32)
    attention = ex.attention[2][0, :, 1:, 1:].permute(1, 0, 2).numpy()  # (patch queries, heads, patches)
    rebuilt = (levels + 0.5) / page_maps.LEVELS * tops[:, None, None]
    assert np.abs(rebuilt - attention).max() <= tops.max() / page_maps.LEVELS  # half a level each side


def test_the_whole_image_mode_keeps_rows_and_columns(nano_explanation):
    """A non-square grid: the rows the page reads are row-major over (gh, gw), never swapped."""
    model = vit.create_model("vit_cifar_nano").eval()
    pre = Preprocessing(resize_size=32, crop_size=32)
    image = Image.fromarray(np.random.default_rng(2).integers(0, 256, (32, 64, 3), dtype=np.uint8))
    ex = explain(model, [str(i) for i in range(10)], pre, image, mode="whole")
    gh, gw = ex.grid
    assert gh != gw
    payload = page_maps.page_maps(ex, "nano", 0, canvas.TEXT_PX, "h")
    assert payload["grid"] == [gh, gw]
    levels = decoded(payload["patch_rows"][0]["levels"], np.uint16).reshape(gh * gw, ex.heads, gh, gw)
    query = (1, gw - 2)
    maps = ex.query_maps(query)[0]
    np.testing.assert_array_equal(levels[query[0] * gw + query[1]] // 256, colour_indices(maps, float(maps.max())))


def test_a_model_without_cls_sends_the_mean_patch_query_first():
    model = vit.create_model("vit_cifar_showcase").eval()  # mean pooling, no CLS token, no prefix
    pre = Preprocessing(resize_size=32, crop_size=32)
    image = Image.fromarray(np.random.default_rng(3).integers(0, 256, (32, 32, 3), dtype=np.uint8))
    ex = explain(model, [str(i) for i in range(10)], pre, image)
    payload = page_maps.page_maps(ex, "showcase", 0, canvas.TEXT_PX, "h")
    assert payload["words"]["picks"] == ["mean"] and payload["words"]["labels"] == ["mean of patches"]
    gh, gw = ex.grid
    levels = decoded(payload["token_rows"][0]["levels"], np.uint16).reshape(ex.heads, gh, gw)
    maps = ex.query_maps(None)[0]  # the mean patch query
    np.testing.assert_array_equal(levels // 256, colour_indices(maps, float(maps.max())))
