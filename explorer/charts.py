"""Charts drawn with matplotlib: the mean attention distance (the ViT paper's Fig. 7), the
training curves and the logit lens. Each figure is made without pyplot, so concurrent
requests share no global state; matplotlib's drawing stack is imported on first use.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from matplotlib import colormaps
from PIL import Image

from .canvas import CHART_PT, TEXT_PX, titled

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _figure(width: float, height: float, layout: str | None = None, dpi: float = 100) -> Figure:
    """A matplotlib figure (inches at `dpi` pixels each) that is not registered with pyplot, so
    concurrent requests never share global state. Imported here, on first use: the charts
    need matplotlib's whole drawing stack, which costs half a second at start-up."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=dpi, layout=layout)


def _figure_to_image(fig: Figure) -> Image.Image:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return Image.fromarray(np.asarray(canvas.buffer_rgba())[..., :3].copy())


def attention_distance_chart(distance: np.ndarray, image_size: tuple[int, int], text_px: int = TEXT_PX) -> Image.Image:
    """The ViT paper's Fig. 7 (right) for one image (the paper averages over many): `distance`
    is (layers, heads) in pixels; one ring per head at each layer, coloured by head (legend) and
    shifted sideways by head, so heads at equal distance do not hide each other. The y axis runs from 0 to the image
    diagonal (no distance can be larger), so charts of different images compare at a
    glance; the dashed line, half the diagonal, is labelled in the legend. Drawn at text_px /
    TEXT_PX times the pixels per inch, so its words grow with the presentation mode."""
    layers, heads = distance.shape
    return distance_axes(layers, heads, tuple(image_size), text_px).draw(distance)


DOT_SPREAD = 0.3  # how far (in layers) a distance chart's dots sit either side of their layer


class DistanceAxes:
    """The distance chart's axes, drawn once; each chart restores them and draws only the
    dots (matplotlib blitting): a few milliseconds instead of ~60 for a full redraw."""

    def __init__(self, layers: int, heads: int, image_size: tuple[int, int], text_px: int = TEXT_PX):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.lines import Line2D

        # constrained: no label or legend is clipped; more pixels per inch: every word and line larger
        fig = _figure(6.4, 3.6, layout="constrained", dpi=100 * text_px / TEXT_PX)
        ax = fig.add_subplot()
        diagonal = math.hypot(*image_size)
        ax.axhline(diagonal / 2, color="grey", linestyle="--", linewidth=1)
        ax.set_title("for this image (the ViT paper averages many images)", fontsize=CHART_PT)
        ax.set(xlabel="layer (one dot per head, heads side by side)", ylabel="mean attention distance (pixels)")
        ax.set(xlim=(0.5, layers + 0.5), ylim=(0, diagonal))
        ax.set_xticks(range(1, layers + 1))
        ax.grid(alpha=0.3)
        # tab20's dark colours first, then its light twins: neighbouring heads stay distinct
        colours = [colormaps["tab20"](2 * (j % 10) + (j // 10) % 2) for j in range(heads)]
        handles = [
            Line2D(
                [],
                [],
                color=c,
                marker="o",
                markerfacecolor="none",
                markeredgewidth=1.5,
                linestyle="",
                label=f"head {j + 1}",
            )
            for j, c in enumerate(colours)
        ]
        handles.append(Line2D([], [], color="grey", linestyle="--", label="½ image diagonal"))
        ax.legend(
            handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=CHART_PT, ncols=1 + heads // 13
        )
        # each layer's heads side by side within ±DOT_SPREAD of it, head 1 leftmost: (layers * heads,)
        side = np.linspace(-DOT_SPREAD, DOT_SPREAD, heads) if heads > 1 else np.zeros(1)
        self.layers = (np.arange(1, layers + 1)[:, None] + side[None, :]).reshape(-1)
        # animated=True: left out of canvas.draw(), so the saved background has no dots
        # hollow rings: where many heads crowd a layer and dots overlap, each ring still shows
        self.dots = ax.scatter(
            self.layers,
            self.layers * 0.0,
            s=28,
            facecolors="none",
            edgecolors=colours * layers,
            linewidths=1.5,
            animated=True,
        )
        self.canvas = FigureCanvasAgg(fig)
        self.canvas.draw()
        self.background = self.canvas.copy_from_bbox(fig.bbox)
        self.lock = threading.Lock()  # one figure shared by concurrent requests

    def draw(self, distance: np.ndarray) -> Image.Image:
        with self.lock:
            self.canvas.restore_region(self.background)
            self.dots.set_offsets(np.column_stack([self.layers, distance.reshape(-1)]))
            self.dots.axes.draw_artist(self.dots)
            return Image.fromarray(np.asarray(self.canvas.buffer_rgba())[..., :3].copy())


@functools.lru_cache(maxsize=16)
def distance_axes(layers: int, heads: int, image_size: tuple[int, int], text_px: int = TEXT_PX) -> DistanceAxes:
    """The distance chart's axes for one layout, drawn once and shared (its figure: `.canvas.figure`)."""
    return DistanceAxes(layers, heads, image_size, text_px)


def training_curves(
    history: Sequence[dict], step_losses: Sequence[tuple[float, float]] = (), text_px: int = TEXT_PX
) -> Image.Image:
    """Loss and accuracy per epoch, train vs validation, from the training job's history;
    `step_losses` (epochs done, running train loss) draws the loss from the first steps on."""
    return _figure_to_image(training_figure(history, step_losses, text_px))


def training_figure(
    history: Sequence[dict], step_losses: Sequence[tuple[float, float]] = (), text_px: int = TEXT_PX
) -> Figure:
    """The matplotlib figure of `training_curves`: 600 px wide, the Train tab's column, whatever
    the text size (a wider picture would be shrunk to the column, its words with it): larger
    words (the presentation mode) make it taller."""
    grow = text_px / TEXT_PX
    fig = _figure(6.0, 3.0 * grow, layout="constrained")
    loss_ax, acc_ax = fig.subplots(1, 2)
    if step_losses:
        x, y = zip(*step_losses, strict=True)
        loss_ax.plot(x, y, "-", color="0.6", linewidth=1, label="train, during the epoch")
    epochs = [h["epoch"] for h in history]
    for ax, key in ((loss_ax, "loss"), (acc_ax, "acc")):
        for split, style in (("train", "o-"), ("val", "s--")):
            values = [h.get(f"{split}_{key}") for h in history]
            if any(v is not None for v in values):
                ax.plot(epochs, [math.nan if v is None else v for v in values], style, label=split, markersize=4)
        ax.set_xlabel("epoch", fontsize=CHART_PT * grow)
        ax.set_title("loss" if key == "loss" else "accuracy", fontsize=10 * grow)
        ax.tick_params(labelsize=CHART_PT * grow)
        ax.grid(alpha=0.3)
    if loss_ax.lines:  # one legend for both panels, under them: inside a panel it hid the curves
        fig.legend(*loss_ax.get_legend_handles_labels(), loc="outside lower center", ncols=3, fontsize=CHART_PT * grow)
    return fig


LOGIT_LENS_CMAP = "viridis"  # perceptually uniform, dark at 0: an unlikely class fades into the background


def logit_lens_chart(
    probabilities: np.ndarray,
    classes: Sequence[str],
    top1: Sequence[str],
    title: str,
    note: str,
    text_px: int = TEXT_PX,
) -> Image.Image:
    """What each layer would answer: `probabilities` (K, L) of K classes (rows, `classes`)
    after each of L layers (columns 1..L) as a heat map from 0 to 1 with its colour bar
    ("probability, 0 to 1"), each cell's value printed where they fit, and above each column
    the class that layer ranks first (`top1`, L labels). Its text grows with `text_px` (the
    presentation mode) from CHART_PT at TEXT_PX."""
    k, layers = probabilities.shape
    pt, grow = CHART_PT * text_px / TEXT_PX, text_px / TEXT_PX
    width, height = 3.2 + 0.45 * layers * grow, (1.9 + 0.32 * k + 0.06 * max(map(len, top1))) * grow
    fig = _figure(min(11.9, width), height, layout="constrained")
    ax = fig.add_subplot()
    heat = ax.imshow(probabilities, vmin=0.0, vmax=1.0, cmap=LOGIT_LENS_CMAP, aspect="auto")
    ax.set_xticks(range(layers), [str(i + 1) for i in range(layers)], fontsize=pt)
    ax.set_yticks(range(k), list(classes), fontsize=pt)
    ax.set_xlabel("layer (1 = first block; the last is the model's prediction)", fontsize=pt)
    ax.set_ylabel("the last layer's top classes", fontsize=pt)
    top = ax.secondary_xaxis("top")
    top.set_xticks(range(layers), list(top1), rotation=60, ha="left", fontsize=pt)
    top.set_xlabel("top-1 class read after each layer", fontsize=pt)
    if k * layers <= 150 and layers * grow <= 16:  # the values themselves, where a cell is wide enough
        for (row, col), p in np.ndenumerate(probabilities):
            colour = "black" if p > 0.6 else "white"  # viridis is light at the top
            ax.text(col, row, f"{p:.2f}", ha="center", va="center", fontsize=pt, color=colour)
    bar = fig.colorbar(heat, ax=ax, fraction=0.05, pad=0.02)
    bar.set_label("probability, 0 to 1", fontsize=pt)
    bar.ax.tick_params(labelsize=pt)
    return titled(title, _figure_to_image(fig), text_px, note=note)
