"""What every tab shares: the server's context (`Server`: the models, the analyses, ... built once
by ui.app.server_for and passed to each tab); the values several controls make (a `MapStyle`,
how a map is shown, rollout's fusion), parsed once at the binding (`ui.binding.Controls`); the
layer slider; who is asking; the upload an image payload names; the model pickers' checks."""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import gradio as gr
import numpy as np

from explorer import controls, texts, views
from explorer.canvas import COLORMAPS, SCALES, TEXT_PX, MapStyle
from explorer.catalog import BUNDLED, ModelCatalog, ModelUnavailable
from explorer.explain import (
    Explanation,
    ExplanationKey,
    ExplanationStore,
    ExplanationTooLarge,
    content_digest,
    explain_file,
)
from explorer.images import EXAMPLES_DIR, ImageError, check_image, first_frame_note
from explorer.loaded import LoadedModel
from explorer.prompts import ZeroShot
from training.registry import JobRegistry, visitor_id
from vit.analysis import Query
from vit.messages import quoted

from . import zerogpu
from .binding import Controls
from .checks import ERROR_TOAST_S, number, one_of, visitor_error, whole_number
from .class_run import ClassRuns
from .classroom import Classroom
from .limits import sender
from .outputs import UPLOADS, saved, upload_folder
from .settings import ServerSettings
from .uploads import UploadRefused, checked_upload

UPSAMPLING = ("nearest", "smooth")
DISPLAYS = ("overlay", "raw")
FUSIONS = ("mean", "max", "min")
DISCARD_MAX = 0.95
SCALE_CHOICES = [
    ("one scale per layer (heads comparable)", "layer"),
    ("each head stretched to its own max", "head"),
    ("fixed 0 to 1", "fixed"),
]


def map_style(cmap: str, opacity: float, upsampling: str, display: str, scale: str) -> MapStyle:
    """The one MapStyle the five style controls describe (gr.Error for values they cannot take).
    Two controls keep their API names and become yes-or-no in the drawing here: `upsampling`
    ("nearest" or "smooth") is `MapStyle.smooth`, `display` ("overlay" or "raw") is `MapStyle.raw`;
    the page's own style object (ui/js/explore.js, `setStyle`) converts them the same way, to the
    same names."""
    return MapStyle(
        cmap=one_of("colour map", cmap, COLORMAPS),
        opacity=number("opacity", opacity, 0.0, 1.0),
        smooth=one_of("upsampling", upsampling, UPSAMPLING) == "smooth",
        raw=one_of("display", display, DISPLAYS) == "raw",
        scale=one_of("colour scale", scale, SCALES),
    )


def colour_map_style(cmap: str, scale: str = "layer") -> MapStyle:
    """The MapStyle of a tab that offers only a colour map (and a colour scale): Explore's
    defaults for the rest (overlay at opacity 0.6, nearest upsampling: honest patch blocks)."""
    return map_style(cmap, 0.6, "nearest", "overlay", scale)


def map_showing(show: str = "weights", keep_percent: float = 100 * controls.KEEP) -> controls.Showing:
    """How rollout and relevance are drawn (controls.SHOWS) and the kept share of the mass, 0 to 1."""
    return controls.Showing(
        one_of("show", show, controls.SHOWS), number("keep percent", keep_percent, 1.0, 100.0) / 100
    )


def map_fusion(fusion: str, discard: float) -> controls.Fusion:
    """Rollout's head fusion and discard ratio."""
    return controls.Fusion(one_of("head fusion", fusion, FUSIONS), number("discard ratio", discard, 0.0, DISCARD_MAX))


class SeenUploads:
    """The image path each browser session last took up (the `size` most recent sessions), so
    that Gradio's two .change events for one upload (it sets the value twice, a few
    milliseconds apart, so a session state read by the second may not hold the first's write
    yet) start one analysis. The lock makes exactly one of two concurrent requests the new one."""

    def __init__(self, size: int = 4096):
        self.paths: OrderedDict[str, str | None] = OrderedDict()
        self.size, self.lock = size, threading.Lock()

    def is_new(self, session: str, path: str | None) -> bool:
        """Whether `path` is not the session's last image; it is from now on."""
        with self.lock:
            new = self.paths.get(session, "") != path  # "" matches no path and no removal (None)
            self.paths[session] = path
            self.paths.move_to_end(session)
            while len(self.paths) > self.size:
                self.paths.popitem(last=False)
            return new


class OnePerVisitor:
    """Which visitors have a long job (a head ranking) running, each until its deadline: one at a
    time per visitor. A job Gradio abandons without closing (its visitor left) frees its
    visitor when the deadline passes; the job itself stops there too."""

    def __init__(self) -> None:
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    @contextmanager
    def claim(self, visitor: str, seconds: float) -> Iterator[None]:
        now = time.monotonic()
        with self._lock:
            if self._until.get(visitor, 0.0) > now:
                raise visitor_error("you already have a ranking running: wait for it, or press Stop first")
            self._until[visitor] = now + seconds
        try:
            yield
        finally:
            with self._lock:
                self._until.pop(visitor, None)


RowsAsked = tuple[int, int | str, tuple[str, ...]]  # a layer, a band of it and the parts (explorer/page_maps.py)
ROWS_KEPT_BYTES = 32 * 2**20  # bands of patch rows kept encoded, for the pages asking again (16 of ViT-B/16's layers)
ROWS_AT_ONCE = 2  # bands encoded at once: a band is a few milliseconds of one core (issue 56)
ENCODED_S = "encoded_s"  # the CPU seconds the question that encoded a band took (`PageHandles.rows`)


class PageHandles:
    """The analyses pages show, each under an unguessable handle the page was sent with its
    numbers (explorer/page_maps.py): the page asks for a band of a layer's patch rows by it, and a
    handle no page was sent names nothing. The `size` most recent are kept; an older one's page is
    told to upload again, as a session whose analysis the store dropped is. The bands asked for are
    encoded ROWS_AT_ONCE at a time and kept, ROWS_KEPT_BYTES at most, so that a class asking for
    the same layer, or one page asking eight times at once, costs one encoding."""

    def __init__(self, size: int = 4096, kept_bytes: int = ROWS_KEPT_BYTES):
        self.keys: OrderedDict[str, ExplanationKey] = OrderedDict()
        self.size, self.lock = size, threading.Lock()
        self.bands: OrderedDict[tuple[ExplanationKey, RowsAsked], tuple[dict, int]] = OrderedDict()
        self.kept, self.kept_bytes = 0, kept_bytes
        self.encoding = threading.BoundedSemaphore(ROWS_AT_ONCE)

    def handle(self, key: ExplanationKey) -> str:
        """A new handle for `key`."""
        handle = secrets.token_urlsafe(18)
        with self.lock:
            self.keys[handle] = key
            while len(self.keys) > self.size:
                self.keys.popitem(last=False)
        return handle

    def key(self, handle: object) -> ExplanationKey | None:
        """The analysis `handle` names, or None."""
        with self.lock:
            return self.keys.get(handle) if isinstance(handle, str) else None

    def alias(self, handle: str) -> str | None:
        """A new handle for the analysis `handle` names (None if it names none): a class's followers
        read the teacher's rows by it (ui.classroom.Classroom.grant), and lose them when it is `forget`-ed."""
        key = self.key(handle)
        return self.handle(key) if key is not None else None

    def forget(self, handle: str) -> None:
        """`handle` names nothing from now on (a class that moved to another image, or ended)."""
        with self.lock:
            self.keys.pop(handle, None)

    def rows(self, key: ExplanationKey, asked: RowsAsked, encode: Callable[[], dict]) -> dict:
        """The rows `asked` of the analysis `key`, (layer, band, parts): a band of a layer's patch
        rows (or its token rows, explorer.page_maps.TOKENS) with those parts, `encode`d once; the
        question that encoded them also gets the seconds it took (ENCODED_S)."""
        name = (key, asked)
        if (kept := self._kept(name)) is not None:
            return kept
        with self.encoding:
            if (kept := self._kept(name)) is not None:  # encoded while this one waited
                return kept
            began = time.thread_time()  # CPU seconds: a wait for a busy core is not the question's cost
            rows = encode()
            took = time.thread_time() - began
        size = sum(len(v) for v in rows.values() if isinstance(v, bytes))
        with self.lock:
            if name not in self.bands and size <= self.kept_bytes:
                self.bands[name] = rows, size
                self.kept += size
                while self.kept > self.kept_bytes:
                    self.kept -= self.bands.popitem(last=False)[1][1]
        return rows | {ENCODED_S: took}  # what this question cost (ui.gate charges it)

    def _kept(self, name: tuple[ExplanationKey, RowsAsked]) -> dict | None:
        with self.lock:
            if name not in self.bands:
                return None
            self.bands.move_to_end(name)
            return self.bands[name][0]


@dataclass(frozen=True)
class Server:
    """What the server holds for all its visitors, built once by ui.app.server_for and passed to
    every tab: the model catalogue; every session's forward passes in one store bounded in bytes
    (docs/security.md; a session's state holds only its key); the image each session last took
    up (Explore); the handles of the analyses pages draw (Explore); the head rankings running (Lessons);
    the operator's settings; the training runs (Train); the pictures' text size (larger in the
    presentation mode); the classes (ui/classroom.py) and the Train runs they watch (ui/class_run.py)."""

    catalog: ModelCatalog
    store: ExplanationStore = field(default_factory=ExplanationStore)
    seen_uploads: SeenUploads = field(default_factory=SeenUploads)
    pages: PageHandles = field(default_factory=PageHandles)
    rankings: OnePerVisitor = field(default_factory=OnePerVisitor)
    settings: ServerSettings = field(default_factory=ServerSettings)
    runs: JobRegistry = None  # type: ignore[assignment]  # None: made by `__post_init__`
    text_px: int = TEXT_PX
    classes: Classroom = None  # type: ignore[assignment]  # None: made by `__post_init__`
    class_runs: ClassRuns = None  # type: ignore[assignment]  # the runs classes watch: made by `__post_init__`

    def __post_init__(self) -> None:
        """The training runs, unless given (a test's stand-in): under the catalogue's runs folder,
        within the settings' limits, in chunks on ZeroGPU (`ui.zerogpu.gpu_chunks`); the classes,
        whose followers read the teacher's analysis by a handle of `pages` of their own."""
        if self.classes is None:
            classes = Classroom(self.settings.classes, grant=self.pages.alias, revoke=self.pages.forget)
            object.__setattr__(self, "classes", classes)  # frozen: set once, here
        if self.runs is None:
            settings = self.settings
            runs = JobRegistry(
                self.catalog.runs_dir, settings.train, shared=settings.shared_runs, chunks=zerogpu.gpu_chunks()
            )
            object.__setattr__(self, "runs", runs)  # frozen: set once, here
        if self.class_runs is None:
            object.__setattr__(self, "class_runs", ClassRuns(self.classes, self.runs, self.text_px))

    def require(self, key: ExplanationKey | None) -> Explanation:
        """The session's current explanation, or a visitor's error saying why there is none."""
        if key is None:
            raise visitor_error("No image analysed yet in this session: upload an image first.")
        ex = self.store.peek(key)
        return ex if ex is not None else self.analysed_again(key)

    def analysed_again(self, key: ExplanationKey) -> Explanation:
        """The session's analysis once more, from its upload, when the store dropped it to make
        room: one visitor's large analysis may take the room of a whole class's (issue 43's soak),
        and a student then pays a forward pass, not an upload. Only while the upload is still
        on disk with the same content; the model is the session's own (`key` is server state)."""
        dropped = "This analysis was dropped from the server's memory to make room: upload the image again."
        if not Path(key.path).is_file():
            raise visitor_error(dropped)
        try:
            loaded = self.catalog.get(key.model_key)
            forward = partial(zerogpu.FORWARD, loaded)
            # shared as before: within the same network (`within` is that network, or "" for all)
            again, ex = explain_file(loaded, key.path, key.mode, self.store, forward, network=key.within or None)
        except (ImageError, ModelUnavailable, ExplanationTooLarge, OSError) as e:
            raise visitor_error(dropped) from e
        if again.content != key.content:
            raise visitor_error(dropped)
        return ex


STYLE = Controls.of(MapStyle, map_style)
SHOWING = Controls.of(controls.Showing, map_showing)
FUSION = Controls.of(controls.Fusion, map_fusion)


def map_drawing(fusion: controls.Fusion, style: MapStyle, showing: controls.Showing) -> controls.Drawing:
    """How an image's maps are drawn, from the controls of its three parts."""
    return controls.Drawing(fusion, style, showing)


DRAWING = Controls.of(controls.Drawing, map_drawing)


def check_layer(layer: object, depth: int) -> int:
    """A 1-based layer number of a model `depth` layers deep."""
    return whole_number("layer", layer, 1, depth)


def check_query(token: object, prefix_names: tuple[str, ...], patch: Callable[[], tuple[int, int]]) -> Query:
    """`controls.parse_query`, its refusal as a visitor's error."""
    try:
        return controls.parse_query(token, prefix_names, patch)
    except controls.QueryError as e:
        raise visitor_error(str(e)) from e


def layer_slider(depth: int, value: int, **kwargs: Any) -> gr.Slider:
    """The layer slider for a model `depth` layers deep. Gradio refuses a slider whose minimum
    is not below its maximum, so a one-layer model gets a hidden one (0 to 1, at 1): there is
    nothing to choose, and the handlers still accept only layer 1."""
    return gr.Slider(minimum=1 if depth > 1 else 0, maximum=depth, value=value, visible=depth > 1, **kwargs)


def example_contents() -> frozenset[str]:
    """sha256 of each of the app's example pictures (`EXAMPLES_DIR`): public, so every network
    shares their analyses (`ExplanationStore.public`)."""
    return frozenset(content_digest(str(path)) for path in sorted(EXAMPLES_DIR.glob("*.jpg")))


def network(server: Server, request: gr.Request | None) -> str | None:
    """The network an event's request comes from (`ui.limits.sender`, behind the server's
    trusted proxies), whose sessions share analyses; None without an HTTP request (a direct call)."""
    scope = getattr(getattr(request, "request", None), "scope", None)  # Gradio's wrapped starlette Request
    return sender(scope, server.settings.trusted_hops) if isinstance(scope, dict) else None


def visitor_of(request: gr.Request | None) -> str:
    """Who is asking: a digest of the browser (or gradio_client) session."""
    return visitor_id(request.session_hash if request is not None and request.session_hash else "anonymous")


def check_upload_header(image: dict) -> None:
    """An uploaded image refused from its header (nothing decoded) in a visitor's sentence, and an
    animated one's note that its first frame is shown: Explore's and the lessons' first steps."""
    path = uploaded_path(image)
    try:
        check_image(path)
    except ImageError as e:
        raise visitor_error(str(e)) from e
    if note := first_frame_note(path):
        gr.Info(note, duration=ERROR_TOAST_S)


def uploaded_path(payload: dict | None) -> str:
    """The upload inside an image payload that reached us undecoded (preprocess=False), so
    the app decodes it itself (explorer.images) and every bad file gets a clear message.
    Whatever path a client sent, only a file inside Gradio's upload folder is accepted."""
    try:
        path = checked_upload(payload.get("path") if isinstance(payload, dict) else None, upload_folder())
        UPLOADS.admit(path)  # the disk budget holds when the file arrives, not a minute later
        return str(path)
    except UploadRefused as e:
        raise visitor_error(str(e)) from e


SLUG_CHARS = 60  # of an upload's or a model's name in an export's name (ui.outputs bounds the whole)


def slug(text: str) -> str:
    """`text` as a safe piece of a file name, at most SLUG_CHARS long: a 230-character upload
    name made every export's name too long for the file system."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text)[:SLUG_CHARS].strip("-.") or "x"


def export_stem(payload: dict, model_key: str, catalog: ModelCatalog) -> str:
    """How export files of this analysis begin: image-model (file names without folder and
    extension; pretrained weights by name)."""
    image = Path(payload.get("orig_name") or payload["path"]).stem
    kind, _, name = model_key.partition(":")
    model = catalog.bundled_path.stem if model_key == BUNDLED else Path(name).stem if kind == "checkpoint" else name
    return f"{slug(image)}-{slug(model)}"


def query_name(query: Query) -> str:
    """The query in a file name, 1-based: "cls", a prefix token ("dist", "reg1") or "row3-col7"."""
    if query is None or isinstance(query, str):
        return query or "cls"
    return f"row{query[0] + 1}-col{query[1] + 1}"


def word_maps(
    pixels: np.ndarray,
    grid: tuple[int, int],
    zs: ZeroShot,
    style: MapStyle,
    showing: controls.Showing,
    model: str,
    text_px: int,
) -> list[tuple[str, str]]:
    """A gallery's value: each prompt's relevance map (a file, its text `text_px` high: the
    Server's) with its alt text as its caption."""
    return [
        (
            saved(views.prompt_relevance(pixels, grid, zs, i, style, showing, text_px)),
            texts.prompt_alt(grid, zs, i, showing, model),
        )
        for i in range(len(zs.prompts))
    ]


def model_name(model_key: str) -> str:
    """The model as an alt text names it: pretrained weights by name, never a server path."""
    kind, _, name = model_key.partition(":")
    return {"bundled": "the bundled model", "checkpoint": "a checkpoint"}.get(kind, name or model_key)


def load_or_error(catalog: ModelCatalog, key: str, visitor: str | None = None) -> LoadedModel:
    """The catalogue's model for `key` (for `visitor`: ModelCatalog.check_use), or a visitor's
    error with its message."""
    try:
        return catalog.get(key, visitor=visitor)
    except ModelUnavailable as e:
        raise visitor_error(str(e)) from e


def picked_model(catalog: ModelCatalog, model_key: object, request: gr.Request | None) -> str:
    """`model_key` if it is one of this visitor's picker choices, else an app message. The model
    pickers' events run with preprocess=False: Gradio's own choice check echoed a 10 MB key
    whole, and HTML in it unescaped."""
    try:
        catalog.check_use(model_key, visitor_of(request))  # the one rule for checkpoint keys, one sentence
    except ModelUnavailable as e:
        raise visitor_error(str(e), duration=None) from e
    if not isinstance(model_key, str) or model_key not in {key for _, key in catalog.choices(visitor_of(request))}:
        raise visitor_error(f"unknown model {quoted(model_key)}: pick one from the list")
    return model_key


def keep_model(current_model: str) -> str:
    """After a failed switch: the picker goes back to the model that works."""
    return current_model
