"""Pictures of attention (explorer/render.py): every picture is checked against hand-made maps
where the right answer is known."""

from pathlib import Path

import numpy as np
import pytest
from matplotlib import colormaps
from picture_helpers import RAW, gradient_runs, lut, one_hot, top_of_bar
from PIL import Image

from explorer import canvas, render
from explorer.canvas import MapStyle


def test_layer_scale_shows_a_weaker_head_darker_and_head_scale_does_not():
    size = (16, 16)
    maps = np.stack([0.2 * one_hot((2, 2), 0, 0), 0.8 * one_hot((2, 2), 0, 0)])  # same place, 4x the weight
    peaks = {}
    for scale in ("layer", "head"):
        picture = np.asarray(
            render.head_grid(np.zeros((*size, 3), np.uint8), maps, MapStyle(cmap="gray", raw=True, scale=scale))
        )
        weak = first_tile(picture, "gray", size)
        top = next(y for y in range(picture.shape[0]) if (picture[y : y + size[0], : size[1]] == weak).all())
        strong = picture[top : top + size[0], size[1] + canvas.GAP : 2 * size[1] + canvas.GAP]
        peaks[scale] = int(weak[0, 0, 0]), int(strong[0, 0, 0])
    assert peaks["layer"][0] < peaks["layer"][1] == 255  # shared scale: the weaker head is darker
    assert peaks["head"] == (255, 255)  # per-head stretch: both peaks look the same
    assert canvas.scale_tops(maps, "layer").tolist() == pytest.approx([0.8, 0.8])
    assert canvas.scale_tops(maps, "fixed").tolist() == [1.0, 1.0]


def test_near_uniform_heads_render_as_one_flat_colour():
    # Every weight within 0.1% of 1/N: drawn from 0 it is one colour; a min-max stretch of
    # each head (the old rule) turned the noise into blocks from black to yellow.
    n, grid, cell = 64, (8, 8), 8
    rng = np.random.default_rng(0)
    maps = (1.0 + rng.uniform(-1e-3, 1e-3, (4, *grid))) / n
    base = np.zeros((grid[0] * cell, grid[1] * cell, 3), np.uint8)
    for scale in ("layer", "head"):
        picture = np.asarray(render.head_grid(base, maps, MapStyle(raw=True, scale=scale), "near-uniform"))
        tile = first_tile(picture, "inferno", base.shape[:2])
        _, counts = np.unique(tile.reshape(-1, 3), axis=0, return_counts=True)
        assert counts.max() / counts.sum() > 0.95
    stretched = canvas.heatmap(maps[0], base.shape[:2], MapStyle(), top=None)
    assert len(np.unique(stretched.reshape(-1, 3), axis=0)) <= 2  # a single map on its own scale: flat too


def first_tile(picture: np.ndarray, cmap: str, size: tuple[int, int]) -> np.ndarray:
    """The first (top-left) map tile of a head grid: the first run of `size[0]` colormap
    pixels down its middle column (the title above is text, not colormap colours)."""
    h, w = size
    table = lut(cmap)
    column = [tuple(p) in table for p in picture[:, w // 2].tolist()]
    top = next(y for y in range(len(column) - h) if all(column[y : y + h]))
    return picture[top : top + h, :w]


def test_head_grid_draws_at_given_tops_and_says_what_they_cover():
    """A video's frame: the top colour is the whole clip's largest weight, not this frame's."""
    size, maps = (16, 16), np.full((2, 2, 2), 0.25)
    style = MapStyle(cmap="gray", raw=True)
    own = np.asarray(render.head_grid(np.zeros((*size, 3), np.uint8), maps, style))
    clip = np.asarray(
        render.head_grid(
            np.zeros((*size, 3), np.uint8), maps, style, top=render.ScaleTop(np.full(2, 0.5), "the whole clip")
        )
    )
    assert first_tile(own, "gray", size)[0, 0, 0] == 255  # this frame alone: its weight is the top
    assert abs(int(first_tile(clip, "gray", size)[0, 0, 0]) - 128) <= 1  # half the clip's top


def test_head_grid_wraps_heads_into_rows_and_carries_a_colour_bar():
    image = np.zeros((64, 64, 3), np.uint8)
    maps = np.random.default_rng(0).random((12, 4, 4))
    one_row = render.head_grid(image, maps[:4], MapStyle())
    two_rows = render.head_grid(image, maps, MapStyle(), max_cols=6)
    assert 6 * 64 < two_rows.width <= 6 * (64 + canvas.GAP) + canvas.GAP  # six tiles a row, not twelve
    assert two_rows.height > one_row.height + 64
    assert gradient_runs(one_row, "inferno") and gradient_runs(two_rows, "inferno")


def test_prefix_shares_are_printed_per_tile():
    assert render.prefix_lines(render.Prefix(np.array([0.4213]))) == ["CLS 0.42"]
    assert render.prefix_lines(render.Prefix(np.array([0.4, 0.1, 0.05]))) == ["CLS 0.40 + 2 more 0.15"]
    head_scale = MapStyle(scale="head")
    one = render.Prefix(np.array([0.5]))
    assert render._tile_lines("head 3", 0.123, head_scale, one) == ["head 3", "max 0.12", "CLS 0.50"]
    assert render._tile_lines("head 3", 0.123, MapStyle(), None) == ["head 3"]
    image, maps = np.zeros((16, 16, 3), np.uint8), np.random.default_rng(0).random((2, 4, 4))
    with_prefix = render.head_grid(image, maps, MapStyle(), prefix=render.Prefix(np.full((2, 1), 0.3)))
    assert with_prefix.height == render.head_grid(image, maps, MapStyle()).height + canvas._line(canvas.TEXT_PX)


def test_layers_by_heads_has_one_tile_per_layer_and_head_and_a_bar_per_row():
    image = np.zeros((64, 64, 3), np.uint8)
    out = render.layers_by_heads(image, np.random.default_rng(0).random((3, 5, 2, 2)), MapStyle(cmap="viridis"))
    assert out.width >= 5 * (64 + canvas.GAP) and out.height >= 3 * (64 + canvas.GAP)
    assert len(gradient_runs(out, "viridis")) == 3  # one vertical colour bar per layer


def test_layers_by_heads_splits_its_heads_into_equal_blocks_that_fit_a_width():
    """Issue 61: a wide overview was shrunk by the page, words and all; given the page's width, its
    heads come in blocks one under another (5 heads: 3 above 2), each with its layers' colour bars."""
    image, maps = np.zeros((64, 64, 3), np.uint8), np.random.default_rng(0).random((3, 5, 2, 2))
    whole = render.layers_by_heads(image, maps, MapStyle(cmap="viridis"))
    assert render.layers_by_heads(image, maps, MapStyle(cmap="viridis"), width=whole.width).size == whole.size
    split = render.layers_by_heads(image, maps, MapStyle(cmap="viridis"), width=whole.width - 1)
    assert split.width <= whole.width - 1 - 64 and split.height > 1.8 * whole.height  # 3 heads a row, not 4
    assert len(gradient_runs(split, "viridis")) == 6  # each block: a colour bar per layer
    assert render.layers_by_heads(image, maps, MapStyle(), width=10).width > 10  # a head a block at least


def test_gif_has_one_frame_per_layer(tmp_path):
    image = np.zeros((16, 16, 3), np.uint8)
    frames = render.layer_frames(image, np.random.default_rng(0).random((5, 2, 4, 4)), MapStyle())
    path = tmp_path / "layers.gif"
    render.save_gif(frames, path)
    with Image.open(path) as gif:
        assert gif.n_frames == 5
        assert gif.info["loop"] == 0


def test_gif_keeps_every_frame_whole_when_frames_differ_in_size(tmp_path):
    short, tall = Image.new("RGB", (30, 20), (255, 0, 0)), Image.new("RGB", (40, 50), (0, 0, 255))
    render.save_gif([short, tall], tmp_path / "sizes.gif")
    with Image.open(tmp_path / "sizes.gif") as gif:
        assert gif.size == (40, 50)
        gif.seek(1)
        assert gif.convert("RGB").getpixel((39, 49)) == (0, 0, 255)  # the taller frame's corner survives


def test_position_similarity_tiles_mark_each_tiles_own_slot_and_carry_a_colour_bar():
    gh, gw, s = 2, 3, 5  # non-square: a transposed mark would land in the wrong place
    pos = np.random.default_rng(0).normal(size=(gh * gw, 16))
    unit = pos / np.linalg.norm(pos, axis=1, keepdims=True)
    sim = (unit @ unit.T).reshape(gh, gw, gh, gw)
    out = np.asarray(render.position_similarity_tiles(sim, cmap="viridis", tile_scale=s))
    black = (out == canvas.OWN_SLOT_COLOUR).all(axis=-1)  # viridis has no black: only the marks are
    corners = sorted(
        (y, x) for y, x in zip(*np.nonzero(black), strict=True) if not black[y - 1, x] and not black[y, x - 1]
    )
    assert len(corners) == gh * gw
    tile_h, tile_w = gh * s + canvas.GAP, gw * s + canvas.GAP
    # Tile (i, j) sits at origin + (i * tile_h, j * tile_w); its own slot (i, j) at (i * s, j * s) within it.
    origins = {
        (y - i * (tile_h + s), x - j * (tile_w + s)) for (y, x), (i, j) in zip(corners, np.ndindex(gh, gw), strict=True)
    }
    assert len(origins) == 1
    y, x = corners[gh * gw - 1]
    assert tuple(out[y + s // 2, x + s // 2]) == tuple(colormaps["viridis"](1.0, bytes=True)[:3])  # similarity 1
    assert gradient_runs(Image.fromarray(out), "viridis")


def test_prefix_shares_name_every_prefix_token_one_per_line():
    """Two a line ("CLS 0.40 · dist 0.10") were wider than a register model's tiles (issue 42)."""
    names = ("cls", "dist", "reg1")
    prefix = render.Prefix(np.array([0.4, 0.1, 0.05]), names)
    assert render.prefix_lines(prefix) == ["CLS 0.40", "dist 0.10", "reg1 0.05"]
    lines = render._tile_lines("head 1", 0.5, MapStyle(), prefix)
    assert lines == ["head 1", "CLS 0.40", "dist 0.10", "reg1 0.05"]


def test_outlined_patches_change_only_their_border():
    picture = np.zeros((40, 60, 3), np.uint8)  # a 4 x 6 grid of 10 px cells
    marked = render.outline_patches(picture, (4, 6), [(1, 2)])
    changed = np.argwhere(marked.any(-1))
    assert changed.min(0).tolist() == [10, 20] and changed.max(0).tolist() == [19, 29]
    assert not marked[14, 24].any()  # the inside of the cell is untouched


def test_shared_scale_rows_use_one_top_for_every_map():
    image = np.zeros((8, 8, 3), np.uint8)
    weak, strong = np.full((1, 2, 2), 0.5), np.full((1, 2, 2), 2.0)
    style = MapStyle(opacity=1.0, scale="head")  # ignored: the comparison always shares one scale
    out = render.shared_scale_rows(
        [render.MapRow("a", image, weak), render.MapRow("b", image, strong)], style, "t", "token norm (L2)"
    )
    assert len(gradient_runs(out, "inferno")) == 1  # one colour bar for both rows
    tiles = np.asarray(out)
    colours = {tuple(c) for c in tiles.reshape(-1, 3)}
    half, top = canvas.heatmap(weak[0], (1, 1), style, 2.0)[0, 0], canvas.heatmap(strong[0], (1, 1), style, 2.0)[0, 0]
    assert tuple(half) in colours and tuple(top) in colours and tuple(half) != tuple(top)


def test_the_query_patch_is_outlined_in_every_head_tile():
    image = np.zeros((40, 40, 3), np.uint8)
    maps = np.full((3, 4, 4), 1 / 16, np.float32)
    plain = np.asarray(render.head_grid(image, maps, RAW))
    marked = np.asarray(render.head_grid(image, maps, RAW, mark=(1, 2)))
    outline = (marked == canvas.MARK_COLOUR).all(axis=-1) & ~(plain == canvas.MARK_COLOUR).all(axis=-1)
    ys, xs = np.nonzero(outline)
    assert len(set(xs // (40 + canvas.GAP))) == 3  # one outline in each of the three tiles
    first = xs[xs < 40]
    assert (first.min(), first.max()) == (20, 29) and ys.max() - ys.min() == 9  # column 3, one 10-px patch high


def test_relative_display_puts_uniform_in_the_middle_colour_and_spreads_both_sides():
    image = np.zeros((40, 40, 3), np.uint8)
    amap = np.array([[0.0, 0.125], [0.25, 0.625]])  # uniform = total / 4 = 0.25
    out = np.asarray(render.relative_picture(image, amap, 0.25, MapStyle(raw=True), "title"))
    colour = colormaps[render.RELATIVE_CMAP]
    y = canvas._line(canvas.TEXT_PX) + 12  # inside the first row of patches, under the one-line title
    top = 0.625 / 0.25  # 2.5× uniform: above RELATIVE_TOP, so it is the top of the scale
    assert tuple(out[y, 5]) == tuple(colour(0.0, bytes=True)[:3])  # 0: the bottom colour
    assert tuple(out[y, 25]) == tuple(colour(0.25, bytes=True)[:3])  # 0.5× uniform: half way down
    assert tuple(out[y + 20, 5]) == tuple(colour(0.5, bytes=True)[:3])  # uniform: the middle colour
    assert tuple(out[y + 20, 25]) == tuple(colour(1.0, bytes=True)[:3])  # the largest: the top colour
    assert top > render.RELATIVE_TOP
    assert gradient_runs(Image.fromarray(out), render.RELATIVE_CMAP)  # its colour bar


def test_a_near_uniform_map_is_white_in_the_relative_display():
    amap = np.full((4, 4), 1 / 16) * (1 + 1e-3 * np.random.default_rng(0).standard_normal((4, 4)))
    heat = canvas.heatmap(amap / (amap.sum() / 16), (4, 4), MapStyle(cmap=render.RELATIVE_CMAP), 2.0, centre=1.0)
    middle = colormaps[render.RELATIVE_CMAP](0.5, bytes=True)[:3]
    assert np.abs(heat.astype(int) - middle).max() <= 2  # within a colour step of uniform's white


def test_a_mask_dims_exactly_the_patches_outside_it():
    picture = np.full((30, 20, 3), 7, np.uint8)  # a 3 x 2 grid in 10-pixel cells
    photo = np.full((30, 20, 3), 255, np.uint8)
    keep = np.array([[True, False], [False, False], [False, True]])
    out = render.dim_outside(picture, keep, photo, "inferno")
    assert (out[:10, :10] == 7).all() and (out[20:, 10:] == 7).all()
    assert (out[:10, 10:] == render.DIM_LEVELS[1]).all() and (out[10:20] == render.DIM_LEVELS[1]).all()


@pytest.mark.parametrize("cmap", canvas.COLORMAPS)
def test_dimmed_patches_are_no_colour_of_the_colour_bar(cmap):
    """Outside the top mass, patches were darkened to near-black, inferno's 0."""
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (40, 40, 3), np.uint8)  # a 4 x 4 grid in 10-pixel cells
    amap = rng.random((4, 4))
    keep = amap > np.median(amap)
    picture = np.asarray(render.map_picture(image, amap, MapStyle(cmap=cmap), "t", "u", keep=keep))
    top = canvas.text_block("t", 320, canvas.TEXT_PX).height + canvas.GAP  # the body starts under the one-line title
    body = picture[top : top + 40, :40].astype(float)
    outside = body[np.repeat(np.repeat(~keep, 10, 0), 10, 1)]  # (pixels, 3)
    bar = colormaps[cmap](np.linspace(0.0, 1.0, 1024), bytes=True)[:, :3].astype(float)
    nearest = np.linalg.norm(outside[:, None] - bar[None], axis=-1).min()
    assert nearest >= 30, f"a dimmed pixel is {nearest:.0f} from a colour of {cmap}"


def test_every_gif_frame_has_the_same_colour_bar_on_one_scale_over_all_layers(tmp_path):
    image = np.zeros((32, 32, 3), np.uint8)
    maps = np.random.default_rng(0).random((4, 2, 4, 4)) * np.array([0.2, 0.5, 0.3, 0.9])[:, None, None, None]
    frames = render.layer_frames(image, maps, MapStyle(), one_scale=True)
    (top,) = {top_of_bar(frame, "inferno") for frame in frames}  # one layout: the bar sits alike in each
    below = top + canvas.BAR_PX  # the tick values (0 to the shared top), the bar's label and the note
    assert all(np.array_equal(np.asarray(f)[top:], np.asarray(frames[0])[top:]) for f in frames)
    render.save_gif(frames, tmp_path / "layers.gif")
    text = []
    with Image.open(tmp_path / "layers.gif") as gif:
        for i in range(gif.n_frames):
            gif.seek(i)
            text.append(np.asarray(gif.convert("L"), dtype=int)[below:])
    # each frame has its own palette, which moves a grey by a few levels; another number
    # in the labels would move some pixels from ink (30) to paper (255)
    assert all(np.abs(t - text[0]).max() <= 16 for t in text)
    assert (text[0] < 128).any()


def test_gif_frames_are_drawn_as_the_screen_draws_each_layer_unless_one_scale_is_asked(monkeypatch):
    """One scale for every frame made the early layers nearly black (on screen
    layer 3 ran 0 to 0.058). By default each frame has its own layer's scale and colour bar."""
    labels = []
    real = canvas.colour_bar
    monkeypatch.setattr(render, "colour_bar", lambda *a, **k: labels.append(a[3]) or real(*a, **k))
    image = np.zeros((32, 32, 3), np.uint8)
    maps = np.random.default_rng(0).random((3, 2, 4, 4)) * np.array([0.058, 0.2, 0.9])[:, None, None, None]
    own = render.layer_frames(image, maps, MapStyle())
    screen = [render.head_grid(image, m, MapStyle(), f"layer {i + 1} of 3") for i, m in enumerate(maps)]
    assert [f.tobytes() for f in own] == [s.tobytes() for s in screen]  # each frame is the screen's picture
    tops = [f"from 0 to {canvas.number(m.max())}, the largest in this layer" for m in maps]
    assert all(top in label for top, label in zip(tops, labels[:3], strict=True))
    labels.clear()
    shared = render.layer_frames(image, maps, MapStyle(), one_scale=True)
    assert len(set(labels)) == 1 and f"from 0 to {canvas.number(maps.max())}, the largest in all 3" in labels[0]
    top = canvas.text_block("layer 1 of 3", 320, canvas.TEXT_PX).height + canvas.GAP  # the tiles start under the title
    tile = [np.asarray(frame)[top : top + 32, :32].astype(float) for frame in (own[0], shared[0])]
    assert tile[1].mean() < tile[0].mean() / 2  # layer 1's first head: much darker on the shared scale


def test_the_gif_colour_bar_keeps_its_gradient(tmp_path):
    """GIF's 256-colour palette cut the colour bar of 256 shades into about 20 bands."""
    photo = Path(__file__).resolve().parents[1] / "examples" / "cifar10" / "cat.jpg"  # a photo's many colours
    image = np.asarray(Image.open(photo).convert("RGB").resize((128, 128)))
    maps = np.random.default_rng(0).random((3, 4, 8, 8)) ** 4
    frames = render.layer_frames(image, maps, MapStyle())
    top = top_of_bar(frames[0], "inferno")
    ((_, start, end),) = {run for run in gradient_runs(frames[0], "inferno") if run[0] == "across"}
    render.save_gif(frames, tmp_path / "layers.gif", cmap="inferno")
    with Image.open(tmp_path / "layers.gif") as gif:
        for i in range(gif.n_frames):
            gif.seek(i)
            bar = np.asarray(gif.convert("RGB"))[top + canvas.BAR_PX // 2, start:end]
            assert len({tuple(p) for p in bar.tolist()}) >= 100, i  # of 128 kept: no bands


def test_the_gif_colour_bar_says_one_scale_once(monkeypatch):
    """The label read "(one scale for every frame) (one scale for all its maps)"."""
    labels = []
    real = canvas.colour_bar
    monkeypatch.setattr(render, "colour_bar", lambda *a, **k: labels.append(a[3]) or real(*a, **k))
    maps = np.random.default_rng(0).random((3, 2, 4, 4))
    render.layer_frames(np.zeros((32, 32, 3), np.uint8), maps, MapStyle(), one_scale=True)
    render.head_grid(np.zeros((32, 32, 3), np.uint8), maps[0], MapStyle())  # one layer on screen
    assert len(labels) == 4
    assert all(label.count("one scale") == 1 for label in labels), labels
    assert "the largest in all 3 layers (one scale for every frame)" in labels[0]
    assert "the largest in this layer (one scale for all its maps)" in labels[-1]


def test_pca_picture_paints_each_patch_its_colour_dims_the_background_and_has_one_bar_per_channel():
    colours = np.zeros((2, 3, 3))
    colours[0, 0] = (1.0, 0.0, 0.0)  # patch (1, 1): pure red = component 1 at its largest
    colours[1, 2] = (0.0, 1.0, 0.5)
    keep = np.ones((2, 3), bool)
    keep[0, 2] = False  # background: no colour value, the photo in a light tint
    photo = np.full((20, 30, 3), 90, np.uint8)  # cells of 10 x 10 px
    legend = [f"{c} = component {i + 1}: projection, min-max scaled" for i, c in enumerate("RGB")]
    out = render.pca_picture([photo], [colours], [keep], ["this image"], legend, "title", "note")
    pixels = np.asarray(out)
    (top, left), *_ = np.argwhere((pixels == (255, 0, 0)).all(-1))  # the red block, first pixel
    block = pixels[top : top + 20, left : left + 30]  # the PCA tile: 2 x 3 cells of 10 px
    assert (block[:10, :10] == (255, 0, 0)).all() and (block[10:, 20:] == (0, 255, 128)).all()
    dimmed = block[:10, 20:].reshape(-1, 3)
    assert len(np.unique(dimmed, axis=0)) == 1 and tuple(dimmed[0]) not in {(0, 0, 0), (90, 90, 90)}
    for cmap in canvas.CHANNELS.values():  # black to the pure channel colour, 0 to 1
        assert gradient_runs(out, cmap)
