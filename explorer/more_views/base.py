"""What every "More views" view is made of, and the registry that holds them (`REGISTRY`, in the
order of their tabs). A view is one module of this package: its record (`MoreView`), the function
that draws it, its text (titles, notes, alt text), the model arithmetic it runs again (`Task`) and
the record its own controls make. Gradio-free: ui/explore_views.py reads the registry and builds
the tab, its controls' wiring and each view's endpoint from it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from PIL import Image

from .. import canvas, compute
from ..explain import Explanation
from ..loaded import LoadedModel


@dataclass(frozen=True)
class Task:
    """Model arithmetic a view runs beyond the analysis's pass (explorer/compute.py: `run(loaded,
    *args)`, CPU tensors in and out), its `cost` in GPU seconds, and the name logs give it. `backward`:
    it runs autograd's backward pass (ui.zerogpu.GpuTask never runs such a task on this process's CPU)."""

    run: Callable[..., Any]
    cost: Callable[..., float]
    what: str
    backward: bool = False


def run_here(task: Task, loaded: LoadedModel, *args: Any) -> Any:
    """`task` run in this process (`Scene.run` where no GPU is lent per call: tests, benchmarks)."""
    return compute.run_here(task.run, loaded, *args)


@dataclass(frozen=True)
class Scene:
    """What a view is drawn from, beside its own controls' record: the model and how alt texts name
    it, the pictures' text size, for a view of an image its analysis (None for a view of the model
    alone), and how to run a view's `Task` (on the GPU where the app has one: ui/explore_views.py)."""

    loaded: LoadedModel | None  # None for a redraw in a new style, which runs no model
    model: str
    text_px: int
    run: Callable[..., Any]  # run(task, loaded, *args): the task's result
    ex: Explanation | None = None


class Drawn(NamedTuple):
    """A view's picture and its alt text (docs/pictures.md)."""

    image: Image.Image
    alt: str


class NotDrawn(Exception):
    """A view that cannot be drawn for this model (the logit lens of a model with no classes): the
    message says why, to the visitor, and the picture stays empty."""


class NoControls(NamedTuple):
    """The record of a view with no controls of its own: its endpoint takes no parameter."""


def no_controls() -> NoControls:
    return NoControls()


@dataclass(frozen=True)
class MoreView:
    """One view under "More views" (a closed accordion of tabs): drawn only while on screen."""

    name: str  # its component's name, its tab's key, and `on_screen` while its tab is open
    tab: str  # the tab's label
    listed: str  # how the accordion's label names it
    caption: str  # Markdown above the picture (its plain text labels it in the API)
    alt: str  # the picture's alt text until it is first drawn
    # (Scene, its controls' record) -> its picture; None: drawn by a button of its own, not on opening
    picture: Callable[[Scene, Any], Drawn] | None
    # The record its own controls make (`picture`'s second argument), and the function making it from
    # the controls' values, by name: what its endpoint takes, and nothing else. A style's MapStyle or
    # a Drawing are made by ui/common.py's controls, which every view shares (parse None).
    record: type = NoControls
    parse: Callable[..., Any] | None = no_controls
    # Its named endpoint: its tab's opening, or, for a view with controls of its own beside the
    # style's, their change; None: the page's only.
    api_name: str | None = None
    image: bool = True  # it changes with the image (False: with the model alone)
    style: bool = False  # it follows the style controls (a new style redraws it when on screen)
    task: Task | None = None  # the model's arithmetic it runs again beyond the analysis's pass
    hint: str = ""  # Markdown at the top of its tab
    kept: str | None = None  # the session state keeping what it drew, to redraw it in a new style
    # Drawn by matplotlib (explorer/charts.py), whose smallest text is CHART_PT points, not text_px:
    # the 12-px floor on screen is checked at `smallest_text_px` (tests/test_explorer_views.py).
    chart: bool = False

    def smallest_text_px(self, text_px: int) -> float:
        """The height in px of its picture's smallest text where text is asked `text_px` high."""
        return canvas.chart_words_px(text_px) if self.chart else text_px

    @property
    def elem_id(self) -> str:
        return self.name.replace("_", "-")


REGISTRY: dict[str, MoreView] = {}  # every view, by name, in the order of their tabs


def register(view: MoreView) -> MoreView:
    """Add `view` as the last tab. Before ui/ is imported: the tab reads the registry once, when it is built."""
    if view.name in REGISTRY:
        raise ValueError(f"a 'More views' view is already called {view.name!r}")
    REGISTRY[view.name] = view
    return view
