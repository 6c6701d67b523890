"""The first screen drawn in the page (ui/js/) in a real browser: no request per click,
key or slider step; the very colours of the server's PNG; every size; a layer asked for as bytes."""

import io
import random
import re
import shutil
import zlib

import numpy as np
import pytest
import test_ui_browser
from matplotlib import colormaps
from page_helpers import assert_same_at_every_cell, drawn_heads, read_rows, wait_rows_arrived
from PIL import Image
from test_ui_browser import CHROMIUM, DRAWN_SCALE, PHONE, SCREEN, click_patch, open_page, pick_example

import vit
from explorer import canvas, live, page_maps, views
from explorer.canvas import MapStyle
from explorer.controls import Fusion, Showing
from explorer.explain import explain
from ui.gate import ROUTE as ROWS_ROUTE
from ui.rows_route import PARTS_HEADER
from vit.preprocessing import CIFAR10, CIFAR10_CLASSES

pytestmark = pytest.mark.skipif(
    not shutil.which(CHROMIUM), reason=f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium)"
)

# test_ui_browser's fixtures: one Chromium for the module, Playwright's expectations patient.
browser, patient_expect = test_ui_browser.browser, test_ui_browser.patient_expect
SHOWN = "() => window.attentionMaps.parts.heads.element.querySelector('img').alt"


def server_requests(page, server: str) -> list[str]:
    """Every request the page sends to the server from now on (blob: and data: URLs are the page's own)."""
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if r.url.startswith(server) else None)
    return sent


def wait_drawn(page, alt_part: str) -> None:
    """Until the head maps on the page say `alt_part` of themselves (they are drawn then)."""
    from playwright.sync_api import TimeoutError as Timeout

    try:
        page.wait_for_function("(part) => document.querySelector('#heads img').alt.includes(part)", arg=alt_part)
    except Timeout as e:
        alt, layer = page.evaluate("() => [document.querySelector('#heads img').alt, window.attentionMaps.layer]")
        raise AssertionError(f"the maps never said {alt_part!r}: they say {alt!r} (the page's layer {layer})") from e


def test_clicks_keys_and_slider_steps_send_no_request(server, browser):
    """12 patch clicks, 5 arrow keys and 3 slider steps after an analysis, once the rows the page
    asks for after it have come: 0 requests (101 before issue 41)."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    pick_example(page, "cat")
    wait_rows_arrived(page)
    sent = server_requests(page, server)
    rng = random.Random(0)
    for _ in range(12):
        row, col = rng.randint(1, 8), rng.randint(1, 8)
        click_patch(page, row, col)
        expect(page.locator("#query")).to_contain_text(f"row {row}, column {col}")
        wait_drawn(page, f"for the query patch ({row}, {col})")
    page.locator("body").click(position={"x": 5, "y": 5})
    for key in ("ArrowLeft", "ArrowUp", "ArrowRight", "ArrowDown", "Escape"):
        page.keyboard.press(key)
    expect(page.locator("#query")).to_contain_text("the CLS token")
    slider = page.get_by_label("range slider for Layer (1 = first)")
    for layer in ("5", "4", "3"):
        slider.press("ArrowLeft")
        wait_drawn(page, f"layer {layer} of 6")
    expect(page.get_by_label("number input for Layer (1 = first)")).to_have_value("3")
    page.wait_for_timeout(500)  # anything sent late would be counted
    assert sent == []
    page.close()


def drawn_and_exported(page) -> tuple[np.ndarray, np.ndarray, dict]:
    """The page's head maps (pixels) and the server's PNG of the same view (Export PNG)."""
    drawn, got = drawn_heads(page)
    link = page.locator("#export a")
    before = link.get_attribute("href") if link.count() else None
    page.get_by_role("button", name="Export PNG").click()
    page.wait_for_function(
        "(old) => { const a = document.querySelector('#export a'); return a && a.href !== old; }", arg=before
    )
    png = Image.open(io.BytesIO(page.request.get(link.get_attribute("href")).body())).convert("RGB")
    return drawn, np.asarray(png), got


def test_the_page_draws_the_very_colours_of_the_exported_png(server, browser):
    """CLS and a patch query, at two layers, on the scale the page starts on; then the per-head
    and fixed scales and smooth upsampling, whose bytes the page asks for when they are picked."""
    page = open_page(browser, server)
    pick_example(page, "dog")
    assert_same_at_every_cell(*drawn_and_exported(page))  # CLS, layer 6
    click_patch(page, 3, 6)
    wait_drawn(page, "patch (3, 6)")
    assert_same_at_every_cell(*drawn_and_exported(page))
    page.get_by_label("number input for Layer (1 = first)").fill("2")
    page.get_by_label("number input for Layer (1 = first)").press("Enter")
    wait_drawn(page, "layer 2 of 6")
    assert_same_at_every_cell(*drawn_and_exported(page))
    page.keyboard.press("Escape")
    wait_drawn(page, "query CLS")
    assert_same_at_every_cell(*drawn_and_exported(page))
    for choice in ("each head stretched to its own max", "fixed 0 to 1", "smooth"):
        page.get_by_label(choice).check()
        wait_rows_arrived(page)
        page.wait_for_timeout(300)
        assert_same_at_every_cell(*drawn_and_exported(page))
    page.close()


# The pictures the page read from an analysis's reply: the model input, each scale's photo under the tiles.
PICTURES = """() => { const d = window.attentionMaps.data, c = d.input.image.canvas;
  const input = {width: c.width, height: c.height, filter: d.input.filter,
                 pixels: Array.from(c.getContext("2d").getImageData(0, 0, c.width, c.height).data)};
  const bases = Object.fromEntries(Object.entries(d.layouts).map(([scale, l]) => [scale,
    {width: l.base.width, height: l.base.height, tile: l.tile, pixels: Array.from(l.base.pixels)}]));
  return {input, bases}; }"""


def rgba(picture: dict) -> np.ndarray:
    return np.array(picture["pixels"], np.uint8).reshape(picture["height"], picture["width"], 4)


def test_the_page_reads_the_servers_very_pixels_of_the_model_input_and_the_tiles_photo(server, browser):
    """Issue 58: the pictures come filtered as PNG filters (Sub then Up) and deflated; the page
    inflates them and undoes the filter, and holds the server's pixels exactly, each one."""
    photo = Image.open(test_ui_browser.EXAMPLES / "dog.jpg").convert("RGB")
    ex = explain(vit.create_model("vit_cifar_nano").eval(), list(CIFAR10_CLASSES), CIFAR10, photo)
    page = open_page(browser, server)
    pick_example(page, "dog")
    got = page.evaluate(PICTURES)
    assert got["input"]["filter"] == "sub-up"
    np.testing.assert_array_equal(rgba(got["input"])[..., :3], ex.input.pixels)
    assert (rgba(got["input"])[..., 3] == 255).all()
    assert set(got["bases"]) == set(page_maps.SCALES)
    for scale, base in got["bases"].items():
        expected = canvas.fit_to_grid(ex.input.pixels, ex.grid, base["tile"])  # what the server's PNG lays maps over
        np.testing.assert_array_equal(rgba(base)[..., :3], expected, err_msg=scale)
    page.close()


def test_another_scale_is_fetched_once_when_picked_and_drawn_exactly(server, browser):
    """Issue 58: an analysis sends the layer scale's colour index only (one byte a cell); the
    per-head scale picked after it is asked for then (the shown patch's band first), drawn in the
    colours of the server's PNG, and kept: back and forth between the scales asks for nothing."""
    page = open_page(browser, server)
    pick_example(page, "cat")
    click_patch(page, 2, 5)
    wait_drawn(page, "patch (2, 5)")
    wait_rows_arrived(page)
    parts = "() => Object.keys(window.attentionMaps.stored(6, 0).parts)"
    assert page.evaluate(parts) == ["layer"]
    sent = server_requests(page, server)
    page.get_by_label("each head stretched to its own max").check()
    # the page's style changes through Gradio's event, after the click: until then the rows it
    # holds are all it wants, and `settled` is true at once
    page.wait_for_function("() => window.attentionMaps.style.scale === 'head'")
    wait_rows_arrived(page)  # every layer's token rows and the shown layer's patch rows, with the new byte
    assert page.evaluate(parts) == ["layer", "head"]
    questions = [url for url in sent if url.endswith(ROWS_ROUTE)]
    assert len(questions) == 7  # the shown layer's patch rows, then the 6 layers' token rows
    page.wait_for_timeout(300)
    assert_same_at_every_cell(*drawn_and_exported(page))
    asked = len([url for url in sent if url.endswith(ROWS_ROUTE)])
    for choice in ("one scale per layer (heads comparable)", "each head stretched to its own max"):
        page.get_by_label(choice).check()
        wait_rows_arrived(page)
    page.wait_for_timeout(300)
    assert len([url for url in sent if url.endswith(ROWS_ROUTE)]) == asked
    page.close()


def server_rows(page, server: str, layer: int, band: int, parts: list[str]) -> dict:
    """The rows the server sends this page's analysis (its rows route, by the handle the page was
    sent), read in Python (page_helpers.read_rows): its numbers and the words it decided."""
    handle, heads, (gh, gw) = page.evaluate(
        "() => { const d = window.attentionMaps.data; return [d.handle, d.heads, d.grid]; }"
    )
    question = {"handle": handle, "layer": layer, "band": band, "parts": parts}
    reply = page.request.post(server.rstrip("/") + ROWS_ROUTE, data=question)
    assert reply.ok, reply.text()
    parts = reply.headers[PARTS_HEADER.lower()].split(",")
    return read_rows(zlib.decompress(reply.body()), heads, gh * gw, parts, gw)


# The page's style event (ui/explore.py's: colour map, opacity, upsampling, display, scale); until it is drawn.
RESTYLE = "(style) => window.attentionMaps.setStyle(...style)"
SETTLED_IN = """(scale) => { const m = window.attentionMaps; return m.style.scale === scale && m.settled(); }"""


def test_the_page_writes_the_servers_words_and_paints_its_colour_index_at_every_cell(server, browser):
    """Issue 57: every word under the tiles and on the colour bar is the server's decision, looked up
    (the page formats no number and picks no tick), and every cell of every head is, on every scale
    and colour map, the colour table's entry of the colour index the server sent for it: exactly, the
    map alone; that colour blended over the photo the server sent, as canvas.overlay blends it."""
    page = open_page(browser, server)
    pick_example(page, "dog")
    click_patch(page, 3, 6)
    wait_drawn(page, "patch (3, 6)")
    gw = page.evaluate("() => window.attentionMaps.data.grid[1]")
    q = 2 * gw + 5  # the patch's row in the layer's one band
    for scale in canvas.SCALES:
        sent = server_rows(page, server, 6, 0, [scale])
        tops = sent["head_tops"][q]
        for cmap, display in (("inferno", "raw"), ("viridis", "raw"), ("gray", "overlay")):
            page.evaluate(RESTYLE, [cmap, 0.6, "nearest", display, scale])
            page.wait_for_function(SETTLED_IN, arg=scale)
            painted = page.evaluate("() => window.attentionMaps.painted")
            bar = sent["bars"][q] if scale == "layer" else canvas.bar_text(0.0, 1.0)
            assert painted["bar"] == bar  # its numbers and ticks, as the server decided them
            _, label = canvas.scale_legend(MapStyle(scale=scale), float(tops.max()), "attention weight", "this layer")
            assert painted["label"] == label
            top = [sent["top_lines"][q][h] for h in range(len(tops))] if scale == "head" else [None] * len(tops)
            assert painted["lines"] == [
                [f"head {h + 1}", *([top[h]] if top[h] else []), *sent["prefix_lines"][q][h]] for h in range(len(tops))
            ]
            assert_cells_are_the_colour_table_entries(page, sent[scale][q], cmap, display == "raw")
    page.close()


# The photo under the tiles as the server sent it (explorer/page_maps.layouts), where each cell's centre is.
BASE = """(scale) => { const m = window.attentionMaps, l = m.data.layouts[scale === "head" ? "head" : "layer"];
  return {width: l.base.width, pixels: Array.from(l.base.pixels)}; }"""


def assert_cells_are_the_colour_table_entries(page, index: np.ndarray, cmap: str, raw: bool) -> None:
    """At the centre of every cell of every head, the page's pixel is matplotlib's colour `index`
    (heads, cells) names, or on the overlay that colour over the photo at opacity 0.6, in float32."""
    drawn, got = drawn_heads(page)
    table = colormaps[cmap](np.arange(256), bytes=True)[:, :3].astype(np.float32)
    gh, gw = got["grid"]
    base = page.evaluate(BASE, page.evaluate("() => window.attentionMaps.style.scale"))
    photo = np.array(base["pixels"], np.uint8).reshape(-1, base["width"], 4)[..., :3].astype(np.float32)
    a = np.float32(0.6)
    for cell in got["cells"]:
        for r in range(gh):
            for c in range(gw):
                y, x = int((r + 0.5) * cell["height"] / gh), int((c + 0.5) * cell["width"] / gw)
                heat = table[index[cell["head"] - 1, r * gw + c]]
                expected = heat if raw else (photo[y, x] * (np.float32(1) - a) + heat * a + np.float32(0.5))
                where = (cell["head"], r + 1, c + 1)
                assert np.array_equal(drawn[cell["y"] + y, cell["x"] + x], expected.astype(np.uint8)), where


def test_play_steps_the_page_and_the_slider_through_the_layers_and_pause_stops_it(server, browser):
    from playwright.sync_api import expect

    page = open_page(browser, server)
    pick_example(page, "horse")
    wait_rows_arrived(page)  # every layer's CLS rows, asked for after the analysis
    sent = server_requests(page, server)
    box = page.get_by_label("number input for Layer (1 = first)")
    page.locator("#play").click()  # from the last layer: from layer 1
    expect(box).to_have_value("1")
    expect(page.locator("#pause")).to_be_visible()
    expect(box).to_have_value("3", timeout=10_000)
    page.locator("#pause").click()
    stopped = box.input_value()
    page.wait_for_timeout(1200)
    assert box.input_value() == stopped and page.evaluate(SHOWN).count(f"layer {stopped} of 6") == 1
    expect(page.locator("#play")).to_be_visible()
    page.locator("#play").click()  # goes on where it stopped, to the last layer
    expect(box).to_have_value("6", timeout=10_000)
    wait_drawn(page, "layer 6 of 6")
    expect(page.locator("#pause")).to_be_hidden()
    assert sent == []
    page.close()


def test_a_typed_layer_past_the_model_comes_back_with_a_sentence(server, browser):
    from playwright.sync_api import expect

    page = open_page(browser, server)
    pick_example(page, "ship")
    box = page.get_by_label("number input for Layer (1 = first)")
    box.fill("9")
    box.press("Enter")
    expect(page.locator("#heads .maps-status")).to_have_text(
        "There is no layer 9: this model has layers 1 to 6. Showing layer 6."
    )
    expect(box).to_have_value("6")
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("ArrowRight")  # the sentence was about the last thing done: it goes with the next
    expect(page.locator("#query")).to_contain_text("row 1, column 1")
    expect(page.locator("#heads .maps-status")).to_have_text("")
    page.close()


def test_a_screen_reader_hears_each_new_picture(server, browser):
    """The page writes each picture's description in a live region as it draws it."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    pick_example(page, "frog")
    live = page.locator("#heads .maps-live")
    expect(live).to_have_attribute("aria-live", "polite")
    click_patch(page, 2, 4)
    wait_drawn(page, "for the query patch (2, 4)")
    expect(live).to_have_text(page.evaluate(SHOWN))  # what the picture now says of itself
    expect(page.locator("#input-view img")).to_have_attribute("alt", re.compile("the query, patch"))
    page.locator("#upload").get_by_role("button", name="Remove image").click()
    expect(page.locator("#heads img")).to_be_hidden()
    expect(live).to_have_text("")  # nothing is described that is no longer there
    page.close()


def test_a_phone_taps_a_patch_and_the_maps_keep_their_drawn_size(server, browser):
    from playwright.sync_api import expect

    page = browser.new_page(viewport=PHONE, has_touch=True, is_mobile=True)
    page.set_default_timeout(60_000)
    page.goto(server)
    sent = server_requests(page, server)
    page.get_by_role("button", name="example: deer").tap()
    wait_drawn(page, "query CLS")
    wait_rows_arrived(page)  # and the rows the page asks for after the analysis
    analysis_requests = len(sent)
    box = page.locator("#input-view img").bounding_box()
    page.locator("#input-view img").scroll_into_view_if_needed()
    box = page.locator("#input-view img").bounding_box()
    page.touchscreen.tap(box["x"] + box["width"] * 4.5 / 8, box["y"] + box["height"] * 1.5 / 8)
    expect(page.locator("#query")).to_contain_text("row 2, column 5")
    wait_drawn(page, "patch (2, 5)")
    heads = page.locator("#heads img")
    scale = heads.evaluate(DRAWN_SCALE)
    assert scale >= 0.99  # drawn size kept: its words stay at canvas.TEXT_PX
    frame = heads.evaluate("(i) => { const f = i.closest('.image-frame'); return [f.scrollWidth, f.clientWidth]; }")
    assert frame[0] <= frame[1]  # its tiles wrapped to the phone's column: nothing to scroll to
    assert len(sent) == analysis_requests
    page.close()


def test_the_presentation_mode_draws_words_of_at_least_18_px(present_server, browser):
    page = open_page(browser, present_server)
    pick_example(page, "truck")
    assert page.evaluate("() => window.attentionMaps.data.text_px") == canvas.PRESENT_TEXT_PX
    heads = page.locator("#heads img")
    scale = heads.evaluate(DRAWN_SCALE)
    assert canvas.PRESENT_TEXT_PX * min(scale, 1) >= 18
    page.close()


@pytest.fixture(scope="module")
def layer_at_a_time_server(tiny_checkpoint, tmp_path_factory):
    """The app prefetching no layer's patch rows (as for a wide input): the page asks when it shows one."""
    from conftest import app_server

    code = "import sys, app, explorer.page_budget as b; b.PREFETCH_BYTES = 0; app.main(sys.argv[1:])"
    with app_server(tiny_checkpoint, tmp_path_factory, program=("-c", code)) as url:
        yield url


def test_a_layer_not_sent_is_asked_for_once_as_bytes(layer_at_a_time_server, browser):
    """A patch query in a layer whose rows the page has not got: one request for its numbers,
    then that layer's clicks are the page's own; the default query's rows of every layer came
    unasked after the analysis."""
    server = layer_at_a_time_server
    page = open_page(browser, server, SCREEN)
    pick_example(page, "bird")
    wait_rows_arrived(page)
    sent = server_requests(page, server)
    click_patch(page, 4, 4)  # layer 6
    wait_drawn(page, "patch (4, 4)")
    click_patch(page, 5, 7)
    wait_drawn(page, "patch (5, 7)")
    assert [url.removeprefix(server.rstrip("/")) for url in sent] == [ROWS_ROUTE]
    page.keyboard.press("Escape")
    box = page.get_by_label("number input for Layer (1 = first)")
    box.fill("3")
    box.press("Enter")
    wait_drawn(page, "layer 3 of 6")  # the CLS rows of every layer came after the analysis
    assert len(sent) == 1
    click_patch(page, 2, 2)
    wait_drawn(page, "layer 3 of 6, one tile each, for the query patch (2, 2)")
    assert len(sent) == 2
    click_patch(page, 5, 7)
    wait_drawn(page, "patch (5, 7)")
    assert len(sent) == 2
    drawn, png, got = drawn_and_exported(page)
    assert_same_at_every_cell(drawn, png, got)
    page.close()


def patched_app(tiny_checkpoint, tmp_path_factory, setup: str):
    """The app served with `setup` (Python statements) run before it starts: a limit or a delay
    changed in the server's own process."""
    from conftest import app_server

    code = f"import sys, app; {setup}; app.main(sys.argv[1:])"
    with app_server(tiny_checkpoint, tmp_path_factory, program=("-c", code)) as url:
        yield url


@pytest.fixture(scope="module")
def filtered_rows_server(tiny_checkpoint, tmp_path_factory):
    """The app sending every reply of rows filtered (explorer/page_maps.filtered_planes), as it does
    where that deflates them smaller."""
    yield from patched_app(
        tiny_checkpoint, tmp_path_factory, "import explorer.page_maps as p; p.ROWS_FILTERS = ('up-sub',)"
    )


def test_rows_sent_filtered_are_drawn_in_the_very_colours_of_the_exported_png(filtered_rows_server, browser):
    """Rows whose planes came filtered (Up across queries after Sub along keys: ui/js/decode.js undoes
    it) are drawn as the server exports them at every cell: the analysis's token rows, a patch's
    band, and the per-head scale's byte asked for later."""
    server = filtered_rows_server
    page = open_page(browser, server, SCREEN)
    pick_example(page, "bird")
    wait_rows_arrived(page)
    assert_same_at_every_cell(*drawn_and_exported(page))  # CLS, from the analysis's reply
    click_patch(page, 3, 6)
    wait_drawn(page, "patch (3, 6)")
    assert server_rows(page, server, 6, 0, ["layer"])["table"]["filter"] == "up-sub"
    assert_same_at_every_cell(*drawn_and_exported(page))
    page.get_by_label("each head stretched to its own max").check()
    page.wait_for_function(SETTLED_IN, arg="head")
    page.wait_for_timeout(300)
    assert_same_at_every_cell(*drawn_and_exported(page))
    page.close()


@pytest.fixture(scope="module")
def band_at_a_time_server(tiny_checkpoint, tmp_path_factory):
    """The app sending a layer's patch rows in bands of a few patch queries (as for a 48 x 48 grid)."""
    setup = "import explorer.page_budget as b; b.PREFETCH_BYTES = 0; b.BAND_BYTES = 20_000"
    yield from patched_app(tiny_checkpoint, tmp_path_factory, setup)


def test_a_band_of_a_layer_is_asked_for_when_a_patch_in_it_is_shown(band_at_a_time_server, browser):
    """Issue 56: a layer's patch rows come in bands (explorer/page_budget.py); a patch query in a
    band the page has not got asks for that band only, and is drawn as the server exports it."""
    server = band_at_a_time_server
    page = open_page(browser, server, SCREEN)
    pick_example(page, "bird")
    wait_rows_arrived(page)
    band, grid = page.evaluate("() => [window.attentionMaps.data.band, window.attentionMaps.data.grid]")
    assert 1 < band < grid[0] * grid[1] // 2  # several bands a layer
    sent = server_requests(page, server)
    click_patch(page, 1, 1)
    wait_drawn(page, "patch (1, 1)")
    click_patch(page, 1, 2)  # the same band: no request
    wait_drawn(page, "patch (1, 2)")
    assert len(sent) == 1
    click_patch(page, grid[0], grid[1])  # the last band
    wait_drawn(page, f"patch ({grid[0]}, {grid[1]})")
    assert [url.removeprefix(server.rstrip("/")) for url in sent] == [ROWS_ROUTE] * 2
    drawn, png, got = drawn_and_exported(page)
    assert_same_at_every_cell(drawn, png, got)
    page.close()


@pytest.fixture(scope="module")
def slow_rows_server(tiny_checkpoint, tmp_path_factory):
    """The app prefetching no layer's patch rows (a wide input's are not) and taking 0.3 s to encode
    a band, as a busy server takes longer."""
    setup = (
        "import time, explorer.page_maps as p, explorer.page_budget as b; b.PREFETCH_BYTES = 0; "
        "real = p.layer_rows; p.layer_rows = lambda *a: time.sleep(0.3) or real(*a)"
    )
    yield from patched_app(tiny_checkpoint, tmp_path_factory, setup)


@pytest.fixture(scope="module")
def slow_prefetch_server(tiny_checkpoint, tmp_path_factory):
    """The app taking 1.5 s to encode any rows, as on a slow link: the shown layer's patch rows,
    which the page asks for right after the first map, come late."""
    setup = (
        "import time, explorer.page_maps as p; real = p.layer_rows; "
        "p.layer_rows = lambda *a: time.sleep(1.5) or real(*a)"
    )
    yield from patched_app(tiny_checkpoint, tmp_path_factory, setup)


def test_a_click_before_the_rows_arrive_is_answered_when_they_do(slow_prefetch_server, browser):
    """Issue 58: the first map comes before the shown layer's patch rows; a patch clicked
    meanwhile says it is fetching, and is drawn the moment they come, with no second question."""
    server = slow_prefetch_server
    page = open_page(browser, server, SCREEN)
    sent = server_requests(page, server)
    pick_example(page, "bird")
    wait_drawn(page, "query CLS")
    assert not page.evaluate("() => window.attentionMaps.has(6, 0)")  # its patch rows are on their way
    page.evaluate(RECORD)
    click_patch(page, 3, 4)
    wait_drawn(page, "layer 6 of 6, one tile each, for the query patch (3, 4)")  # no click after it
    assert page.evaluate(FETCHED_AT) == [6]
    wait_rows_arrived(page)
    questions = [url for url in sent if url.endswith(ROWS_ROUTE)]
    assert len(questions) == 6  # the patch rows once, and the token rows of the 5 other layers
    page.close()


# What the maps said (their status line) and which layers they drew, from now on.
RECORD = """() => { const m = window.attentionMaps, say = m.say.bind(m), drawHeads = m.drawHeads.bind(m);
  m.said = []; m.drawnLayers = [];
  m.say = (text) => { m.said.push([m.layer, text]); say(text); };
  m.drawHeads = (rows) => { m.drawnLayers.push(m.layer); drawHeads(rows); }; }"""
# The layers at which the maps said they were fetching their numbers (once or more: a redraw says it again).
FETCHED_AT = "() => [...new Set(window.attentionMaps.said.filter(([, t]) => t.startsWith('Fetching')).map(([l]) => l))]"


def test_play_with_a_patch_query_asks_for_the_next_layers_before_it_shows_them(slow_rows_server, browser):
    """Issue 61: Play through layers with a patch query on a model with registers stalled on
    "Fetching this layer's numbers…" at every layer, as it asked for a layer's rows only when it
    showed it. Now the next layers' are asked for while it plays: only the first layer waits.
    A step of the layer slider asks for the next layer the way it steps likewise."""
    from playwright.sync_api import expect

    server = slow_rows_server
    page = open_page(browser, server, SCREEN)
    pick_example(page, "bird")
    wait_rows_arrived(page)
    click_patch(page, 4, 4)  # layer 6
    wait_drawn(page, "patch (4, 4)")
    page.evaluate(RECORD)
    page.locator("#play").click()  # layers 1, 2, ..., 6, 0.8 s each
    expect(page.get_by_label("number input for Layer (1 = first)")).to_have_value("6", timeout=30_000)
    wait_drawn(page, "layer 6 of 6, one tile each, for the query patch (4, 4)")
    assert page.evaluate(FETCHED_AT) == [1]  # the first layer played waited; none after it
    drawn = page.evaluate("() => window.attentionMaps.drawnLayers")
    assert sorted(set(drawn)) == [1, 2, 3, 4, 5, 6] and drawn == sorted(drawn)  # every layer, in order

    pick_example(page, "cat")  # a new image: no patch rows of any layer, slider steps down
    wait_rows_arrived(page)
    click_patch(page, 2, 3)
    wait_drawn(page, "patch (2, 3)")
    page.evaluate(RECORD)
    slider = page.get_by_label("range slider for Layer (1 = first)")
    slider.press("ArrowLeft")  # layer 5 waits, and layer 4 is asked for meanwhile
    wait_drawn(page, "layer 5 of 6, one tile each, for the query patch (2, 3)")
    page.wait_for_function("() => window.attentionMaps.patchRows.has('3/0')")
    slider.press("ArrowLeft")
    wait_drawn(page, "layer 4 of 6, one tile each, for the query patch (2, 3)")
    assert page.evaluate(FETCHED_AT) == [5]
    page.close()


def test_after_a_new_image_the_export_is_of_the_query_on_screen(server, browser):
    """The page keeps the query it shows as its state, which the exports read: a new image takes
    it back to CLS, and so must the export (it once kept the last image's patch)."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    pick_example(page, "cat")
    click_patch(page, 2, 3)
    wait_drawn(page, "patch (2, 3)")
    page.get_by_role("button", name="Export PNG").click()
    link = page.locator("#export a").first
    expect(link).to_have_attribute("download", re.compile(r"^cat-\w+_layer6_row2-col3\.png$"))
    pick_example(page, "dog")
    page.get_by_role("button", name="Export PNG").click()
    expect(link).to_have_attribute("download", re.compile(r"^dog-\w+_layer6_cls\.png$"))
    page.close()


# A Live frame's pictures as the page drew them (ui/js/live.js, LiveMaps): pixels, where the maps are, names.
LIVE_CANVASES = """() => { const m = window.liveMaps, pictures = {};
  for (const name of ["heads", "input", "rollout"]) {
    const c = document.getElementById(`live-${name}`);
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    pictures[name] = {width: c.width, height: c.height, pixels: Array.from(d), role: c.getAttribute("role"),
                      name: c.getAttribute("aria-label")};
  }
  return {pictures, cells: m.cells, rollout: {head: 1, ...m.rolloutCell}, grid: m.data.grid, heads: m.data.heads}; }"""


def live_frame_drawn(page, numbers: dict) -> tuple[dict[str, np.ndarray], dict]:
    """Hand a frame's numbers to the Live tab's pictures, as its stream does, and read them back."""
    page.evaluate("async (numbers) => { await window.liveMaps.frame(numbers); }", numbers)
    got = page.evaluate(LIVE_CANVASES)
    pixels = {
        name: np.array(p["pixels"], np.uint8).reshape(p["height"], p["width"], 4)[..., :3]
        for name, p in got["pictures"].items()
    }
    return pixels, got


@pytest.mark.parametrize("query", [None, (2, 6)], ids=["cls", "patch"])
def test_live_frames_are_drawn_in_the_page_in_the_colours_of_the_servers_pictures(server, browser, query):
    """Issue 41, Live: a frame sends numbers, and the page draws the head maps and the rollout
    (relative to uniform, its diverging bar centred on 1) as the server's views draw them, each
    channel within 1/255 at every cell, the map alone and over the photo, and the model input
    itself. (The nano model's input is enlarged for its tiles, nearest as the server does; a
    larger input shrunk for them is resampled by the browser, not by Lanczos.)"""
    model = vit.create_model("vit_cifar_nano").eval()
    photo = Image.open(test_ui_browser.EXAMPLES / "cat.jpg").convert("RGB")
    ex = explain(model, list(CIFAR10_CLASSES), CIFAR10, photo)
    page = open_page(browser, server)
    page.get_by_role("tab", name="Live").click()
    page.wait_for_function("() => window.liveMaps?.parts.heads?.element")  # the module may still be loading
    for style in (canvas.MapStyle(raw=True), canvas.MapStyle()):
        drawn, got = live_frame_drawn(page, live.frame_numbers(ex, query, 2, style, canvas.TEXT_PX, "a nano"))
        heads = np.asarray(views.heads(ex, query, 2, style, text_px=canvas.TEXT_PX))
        rollout = views.rollout(ex, Fusion(live.ROLLOUT_FUSION, live.ROLLOUT_DISCARD), style, Showing("relative"))
        for name, server_picture, cells in (("heads", heads, got["cells"]), ("rollout", rollout, [got["rollout"]])):
            picture = np.asarray(server_picture)
            assert drawn[name].shape == picture.shape, name  # the same layout, words and colour bar
            assert len(cells) == (ex.heads if name == "heads" else 1)
            gh, gw = got["grid"]
            for cell in cells:
                for r in range(gh):
                    for c in range(gw):
                        y = int(cell["y"] + (r + 0.5) * cell["height"] / gh)
                        x = int(cell["x"] + (c + 0.5) * cell["width"] / gw)
                        difference = np.abs(drawn[name][y, x].astype(int) - picture[y, x].astype(int)).max()
                        assert difference <= 1, (name, cell["head"], r + 1, c + 1, style.raw)
    scale = views.input_scale(ex)  # the model input, enlarged by whole blocks, read at each block's centre
    model_pixels = drawn["input"][scale // 2 :: scale, scale // 2 :: scale].astype(int)
    assert drawn["input"].shape[:2] == (32 * scale, 32 * scale)
    np.testing.assert_array_equal(model_pixels, ex.input.pixels)
    assert {p["role"] for p in got["pictures"].values()} == {"img"}
    assert "a nano" in got["pictures"]["input"]["name"] and "rollout" in got["pictures"]["rollout"]["name"]
    page.close()
