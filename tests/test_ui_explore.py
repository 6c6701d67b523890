"""One forward pass per image: the views after it read the session's cached result.

Runs the app in-process (the only way to count the model's forward calls) on a free port.
"""

import re

import gradio
import pytest
from app_helpers import analyze, served
from gradio_client import Client
from gradio_client.exceptions import AppError

import ui
from explorer.catalog import BUNDLED, ModelCatalog

STYLE = ("inferno", 0.6, "nearest", "overlay", "layer")  # colour map, opacity, upsampling, display, scale
# Gradio's in-process queue metrics use pandas options that pandas 3 deprecates; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore::pandas.errors.Pandas4Warning")


@pytest.fixture(scope="module")
def counted(tiny_checkpoint, tmp_path_factory):
    """(client, calls): a live in-process app whose bundled model counts its forward passes."""
    catalog = ModelCatalog(tiny_checkpoint, tmp_path_factory.mktemp("runs"))
    calls = []
    catalog.get(BUNDLED).model.register_forward_pre_hook(lambda module, args: calls.append(args[0].shape))
    demo = ui.build_demo(catalog)
    with served(demo) as url:
        yield Client(url, verbose=False), calls


def test_sliders_and_clicks_never_rerun_the_model(counted):
    client, calls = counted
    analyze(client, gradio.media.get_image("lion.jpg"))
    assert len(calls) == 1
    client.predict(2, *STYLE, api_name="/heads")
    client.predict(3, "max", 0.3, "viridis", 0.2, "smooth", "raw", api_name="/restyle")
    client.predict("min", 0.5, *STYLE, api_name="/rollout")
    client.predict(1, 1, 4, *STYLE, api_name="/query_patch")
    client.predict(4, *STYLE, api_name="/reset_query")
    client.predict(4, *STYLE, api_name="/export_png")
    client.predict(*STYLE, api_name="/export_gif")
    assert len(calls) == 1
    analyze(client, gradio.media.get_image("tower.jpg"))  # a new image is a new forward pass
    assert len(calls) == 2
    analyze(client, gradio.media.get_image("tower.jpg"), mode="whole")  # so is a new resize policy...
    assert len(calls) == 3
    analyze(client, gradio.media.get_image("tower.jpg"), mode="crop")  # ...but going back reuses the first
    analyze(client, gradio.media.get_image("lion.jpg"))  # and this session has seen the lion too
    assert len(calls) == 3


def test_sessions_do_not_share_their_cached_image(counted):
    client, calls = counted
    other = Client(client.src, verbose=False)
    with pytest.raises(AppError, match="upload an image first"):
        other.predict(1, *STYLE, api_name="/heads")


def test_visitors_looking_at_the_same_example_share_one_forward_pass(counted):
    client, calls = counted
    image = gradio.media.get_image("groot.jpeg")
    analyze(client, image)
    before = len(calls)
    analyze(Client(client.src, verbose=False), image)  # another visitor, the same file content
    assert len(calls) == before


def test_clicks_and_slider_moves_share_one_pool_of_queue_slots_apart_from_the_analyses(tiny_checkpoint, tmp_path):
    """Gradio gives every event its own slots unless told otherwise: clicks (the most frequent
    action) queued in their two while the other redraws' slots sat idle (bench/visitors.py).
    The page's own clicks, keys, layer steps, style changes and Play run no function at all."""
    demo = ui.build_demo(ModelCatalog(tiny_checkpoint, tmp_path / "runs"))
    groups = {fn.api_name: (fn.concurrency_id, fn.concurrency_limit) for fn in demo.fns.values()}
    redraws = ("heads", "restyle", "restyle_shown", "rollout", "query_patch", "query_token", "reset_query")
    assert {groups[name] for name in redraws} == {("views", 2)}
    assert groups["analyze"][0] != "views" and groups["analyze_page"][0] != "views"
    in_page = [fn for fn in demo.fns.values() if fn.js and "window.attentionMaps." in fn.js]
    assert in_page and all(fn.fn is None and not fn.preprocess for fn in in_page)
    drawn = {fn.js.split("attentionMaps.")[1].split("(")[0] for fn in in_page}
    assert {"setLayer", "setStyle", "play", "stop", "queryOutputs", "reset", "pick", "move"} <= drawn


def test_the_page_loads_its_modules_from_the_apps_own_route():
    """Issue 57: the page's JavaScript is ES modules (ui/js/) that the app serves as they are on a
    route of its own (ui.app.page_scripts): no build step, nothing from elsewhere. The page's head
    imports main.js from it, and every module main.js reaches is served as JavaScript, asked for
    again at each load (a server updated is never run with an old module from the browser's cache)."""
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from ui.app import page_scripts
    from ui.explore import HEAD_JS, PAGE_CONFIG_ID, PAGE_JS_DIR, PAGE_JS_ROUTE

    assert f'import(new URL("{PAGE_JS_ROUTE.removeprefix("/")}/main.js", document.baseURI).href)' in HEAD_JS
    client = TestClient(Starlette(routes=[page_scripts()]))
    reached, todo = set(), ["main.js"]
    while todo:
        name = todo.pop()
        reached.add(name)
        answer = client.get(f"{PAGE_JS_ROUTE}/{name}")
        assert answer.status_code == 200 and "javascript" in answer.headers["content-type"], name
        assert answer.headers["cache-control"] == "no-cache", name
        todo += [found for found in re.findall(r'from "\./([\w-]+\.js)";', answer.text) if found not in reached]
    assert reached == {path.name for path in PAGE_JS_DIR.glob("*.js")}  # every module is reached, none missing
    # the JSON main.js reads is the one the head holds
    assert f'CONFIG_ID = "{PAGE_CONFIG_ID}"' in (PAGE_JS_DIR / "main.js").read_text()
    assert f'id="{PAGE_CONFIG_ID}"' in HEAD_JS
    assert client.get(f"{PAGE_JS_ROUTE}/nothing.js").status_code == 404
