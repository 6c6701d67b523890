"""The four lessons of the Lessons tab, as pictures and tables without Gradio (docs/lessons.md).

- `compare_cls_heads`: one image through up to three models, their last-layer CLS heads side by
  side on one colour scale (supervised vs self-supervised).
- `token_norm_maps`: the L2 norm of every patch token after a chosen layer, for models with and
  without registers, the high-norm patches outlined and listed (Darcet et al. 2024).
- `predictions_with_heads_off` and `head_ranking`: the top classes with heads switched off, and
  the heads ranked by how much switching each one off lowers the predicted class.
- one picture, many words: a CLIP model's probabilities over a teacher's words and a relevance
  map per word (explorer.prompts; the words' own arithmetic and pictures live there and in views).

`opening_models` picks the models each lesson opens on: the ones the lesson is about when they
load now (downloaded already), else smaller stand-ins, else the bundled model, so every lesson
starts anywhere, offline too, and `better_models` names what the operator could download.

Layers and heads are 0-based here, as in vit/; `parse_heads` reads the 1-based "layer.head"
people type. Every function takes `LoadedModel`s from the catalogue and a decoded RGB image.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image

from vit.analysis import query_attention, query_prefix_attention
from vit.messages import markdown_text, quoted
from vit.model import ViTConfig
from vit.probes import Head, head_importance_steps, heads_off, token_norms

from . import canvas, render
from .canvas import MapStyle
from .catalog import BUNDLED, PRETRAINED_PREFIX, pretrained_key
from .compute import forward_flops, pass_seconds, to_model
from .explain import InputTooLarge, ModelInput, model_input, top_classes
from .loaded import LoadedModel
from .render import MapRow

# The pretrained weights each lesson is about (vit.list_pretrained() names), best first.
COMPARED = (
    "deit_small_patch16_224.fb_in1k",  # supervised on ImageNet labels
    "vit_small_patch16_224.dino",  # self-supervised, no labels
    "vit_small_patch14_dinov2.lvd142m",
)
# The artefacts show in large models trained long (Darcet et al. 2024); the small DINOv2 pair
# stands in where the large one is not downloaded (the lesson runs, with few or no artefacts).
# DINOv3 (Siméoni et al. 2025) was trained with 4 registers from the start: it stands in for a
# model with registers too (it has no twin without them).
WITH_REGISTERS = (
    "vit_large_patch14_reg4_dinov2.lvd142m",
    "vit_small_patch14_reg4_dinov2.lvd142m",
    "vit_small_patch16_dinov3.lvd1689m",
)
WITHOUT_REGISTERS = ("vit_large_patch14_dinov2.lvd142m", "vit_small_patch14_dinov2.lvd142m")
RANKED = ("deit_small_patch16_224.fb_in1k",)
WORDS = ("vit_base_patch16_clip_224.openai", "vit_base_patch32_clip_224.openai")  # CLIP: image and text tower

MAX_COMPARED = 3  # models lesson 1 compares at most (its picker's limit)
RANKING_ROWS = 10  # heads listed by the head ranking, largest drop first
TILE_PX = 112  # each map's longer side in the lessons' pictures
ROW_TILES = 6  # head tiles per row: 12 heads of 112 px would be wider than the tab (views.DISPLAY_WIDTH)
HIGH_NORM_FACTOR = 2.0  # a patch is "high-norm" above this many times the median patch norm
LISTED = 8  # high-norm patches listed per model, largest first
# Head ranking runs one forward pass per head, so its cost is layers x heads x the cost of a
# pass: a 20-layer, 20-head model on a 64 x 64 grid took ~30 min of a core. Refused above
# MAX_RANKING_FLOPS (estimated, `ranking_flops`): DeiT-S (0.7 TFLOP) and ViT-B/16 (5.1) fit,
# ViT-L/16 (47) does not. A ranking that fits still stops after MAX_RANKING_S seconds (a busy
# server) and shows the heads ranked so far.
MAX_RANKING_FLOPS = 6e12
MAX_RANKING_S = 180.0

SUPERVISED_VS_SELF = """**Supervised vs self-supervised.** The same picture goes through each model. Every tile
is one attention head of the last layer, showing where the CLS token looks. A supervised ViT learned
from labels: its heads often spread over the whole picture, background included. DINO and DINOv2
learned without any labels, by matching different crops of the same image: their heads tend to
outline the object itself. All tiles share one colour scale, so a brighter tile really means more
attention. The numbers under each tile say how much attention went to the tokens the map leaves out
(the CLS token itself, registers)."""

ARTEFACTS = f"""**Artefacts and registers.** Each square is one patch token, coloured by its length (L2 norm)
after the chosen layer. Big models trained for long (DINOv2) recycle a few background patches as
scratch space: those tokens grow norms far above the rest and soak up the CLS token's attention,
which makes attention maps spotty. Darcet et al. (2024) gave the model a few extra **register**
tokens with no pixels: the scratch work moves there and the patches look normal again (DINOv3
was trained with 4 registers from the start: pick it for the first row to see a newer model). Outlined:
patches whose norm is above {HIGH_NORM_FACTOR:g} × the median patch norm of that model, listed below
with their norm and their share of the last layer's CLS attention."""

WHICH_HEADS = """**Which heads matter.** Type heads as "layer.head" (counted from 1) to switch them off:
their output is set to zero before the layer's output projection, as if the head were removed.
Watch the top-5 predictions change. The ranking switches off one head at a time and measures how
much the probability of the predicted class drops: many heads can go with no loss, a few carry the
answer (Michel, Levy & Neubig 2019)."""


MANY_WORDS = """**One picture, many words.** CLIP learned from 400 million pictures with their captions
to put a picture and the words that describe it close together. It has no list of classes: type
any words, separated by commas, and it scores how well each fits the picture. The probabilities
compare only the words typed, so CLIP always picks one of them, even when none fits. Each map
shows which patches raised that word's score (Chefer et al. 2021): try words for two things in
the same picture and watch the maps move."""


def lesson_weights() -> list[str]:
    """The pretrained weights the lessons open on where they are downloaded (their first
    choices), in order, each once: what a Space preloads and a classroom server fetches."""
    firsts = [*COMPARED, WITH_REGISTERS[0], WITHOUT_REGISTERS[0], RANKED[0], WORDS[0]]
    return list(dict.fromkeys(firsts))


@dataclass(frozen=True)
class OpeningModels:
    """The model keys each lesson opens on, and per lesson the better weights not here."""

    compare: list[str]
    with_registers: str
    without_registers: str
    heads: str
    words: str | None  # a CLIP model, or None: no other model answers words
    missing: dict[str, list[str]]  # lesson ("compare", "norms", "heads", "words") -> pretrained names
    here: tuple[str, ...] = ()  # every model on this machine, as the model pickers list it first


def has_registers(key: str) -> bool:
    """Whether the pretrained weights `key` names have registers, by their name (DINOv2's "_reg4"
    or "-with-registers", DINOv3's four from the start), as lesson 2's note tells people to look."""
    name = key.removeprefix(PRETRAINED_PREFIX)
    return key.startswith(PRETRAINED_PREFIX) and any(mark in name for mark in ("_reg", "registers", "dinov3"))


def opening_models(available: Callable[[str], bool], here: Sequence[str] = ()) -> OpeningModels:
    """Each lesson's models among those `available(key)` says load now: the lesson's own
    first, then a stand-in of the same kind, else the bundled model. `here`: every model on this
    machine, as Explore's picker lists it (`ModelCatalog.here`): lesson 1 with fewer than two of its
    own compares those instead (a teacher's DeiT-B, CLIP and DINOv2 with registers were left out
    while it said "only one model is on this machine"), and lesson 2 takes any model with
    registers among them before the bundled one."""

    def first(names: Sequence[str], also: Sequence[str] = ()) -> str:
        keys = [pretrained_key(n) for n in names if available(pretrained_key(n))]
        return next(iter([*keys, *also]), BUNDLED)

    def absent(names: Sequence[str]) -> list[str]:
        return [n for n in names if not available(pretrained_key(n))]

    own = [pretrained_key(n) for n in COMPARED if available(pretrained_key(n))]
    if len(own) < 2:  # nothing to compare: the other models here, the bundled one last
        others = sorted((key for key in here if key not in own), key=lambda key: key == BUNDLED)
        own = [*own, *others][:MAX_COMPARED]
    return OpeningModels(
        compare=own or [BUNDLED],
        with_registers=first(WITH_REGISTERS, [key for key in here if has_registers(key)]),
        without_registers=first(WITHOUT_REGISTERS),
        heads=first(RANKED),
        words=next((pretrained_key(n) for n in WORDS if available(pretrained_key(n))), None),
        missing={
            "compare": absent(COMPARED),
            "norms": absent([WITH_REGISTERS[0], WITHOUT_REGISTERS[0]]),
            "heads": absent(RANKED[:1]),
            "words": absent(WORDS[:1]),
        },
        here=tuple(here),
    )


def opening_keys(opening: OpeningModels) -> list[str]:
    """Every model key the lessons open on, each once (CLIP's too, where there is one)."""
    keys = [*opening.compare, opening.with_registers, opening.without_registers, opening.heads, opening.words]
    return [key for key in dict.fromkeys(keys) if key is not None]


def better_models(names: Sequence[str]) -> str:
    """One line naming the lesson's weights this server has not downloaded and how its
    operator gets them ("" when it has them all)."""
    if not names:
        return ""
    listed = ", ".join(f"`{n}`" for n in names)
    return (
        f"Better models for this lesson are not downloaded on this server: {listed}. The operator gets them "
        f"with `python -m vit.download {' '.join(names)}` and restarts the app; until then the lesson uses "
        "the models in its pickers."
    )


def compare_better(opening: OpeningModels) -> str:
    """Lesson 1's line above its picture: said plainly when the one model it opens on is the only
    one on this machine (`opening.here`, Explore's picker's list: it then compares that model with
    nothing), and which weights the operator could add."""
    better = better_models(opening.missing["compare"])
    if len(opening.compare) > 1:
        return better
    alone = (
        "**Only one model is on this machine**, so this lesson shows it alone: there is nothing to compare it "
        "with. Train a model on the Train tab (a few epochs on a folder of images): its checkpoint then joins "
        "this list, to compare with."
    )
    return f"{alone} {better}".strip()


def words_missing(opening: OpeningModels) -> str:
    """The words lesson's line above its results: when no CLIP model is here, what that means for
    the class and how the operator gets one, in a teacher's words; else the better model, if any."""
    if opening.words is not None:
        return better_models(opening.missing["words"])
    return (
        f"**No CLIP model is on this machine yet**, and only a CLIP model understands words. Pressing the button "
        f"downloads `{WORDS[0]}` (about 600 MB) if this machine is online; if it is not, the operator fetches it "
        f"once with `python -m vit.download {WORDS[0]}` before class."
    )


def no_clip_offline() -> str:
    """What lesson 4 says when no CLIP model is on this machine and none can be downloaded: the
    picker's models are all away, so "pick one on this machine" would send the class nowhere.
    Plain words: it is said in a toast, which shows Markdown's marks as they are."""
    return (
        "No CLIP model is on this machine, and this machine has no internet connection to download one, so "
        "this lesson cannot run here today. Before the next class, on this machine while it is online, the "
        f'operator runs "python -m vit.download {WORDS[0]}" (about 600 MB) once and restarts the app. The other '
        "three lessons work with the models on this machine."
    )


def model_notes(opening: OpeningModels) -> dict[str, str]:
    """Each lesson's line about its models, by lesson ("compare", "norms", "heads", "words"), as
    `opening` (the catalogue's state now) says: drawn again whenever the page may show it, so a
    model downloaded since the server started is never called "not downloaded"."""
    better = {lesson: better_models(opening.missing[lesson]) for lesson in ("norms", "heads")}
    return {"compare": compare_better(opening), **better, "words": words_missing(opening)}


def registers_missing(opening: OpeningModels) -> list[str]:
    """Lesson 2's weights not here, for `registers_note` to say "No model with registers is on this
    machine yet": none when a model with registers is here (one downloaded from Explore's picker
    is not among the lesson's own, and the note said none was here while the picker listed it)."""
    return [] if any(has_registers(key) for key in opening.here) else opening.missing["norms"]


def register_role(loaded: LoadedModel) -> str:
    """How lesson 2 names a row: by the registers its model really has ("with 4 registers")."""
    count = loaded.model.config.register_tokens
    return f"with {count} registers" if count else "no registers"


def registers_note(with_registers: LoadedModel, without: LoadedModel, missing: Sequence[str]) -> str:
    """Lesson 2's warning when its two rows cannot differ: the same model twice, or a first
    model that has no registers; then what to do: pick one with registers, or (`missing`, the
    lesson's weights not here, named once in its "Better models" line) none is here yet.
    "" when the pair can show the registers' effect. The model's label is shown as written (an
    uploaded checkpoint's is the visitor's file name)."""
    label = markdown_text(with_registers.label)
    if with_registers.key == without.key:
        head = f"**Both rows show the same model** ({label}), so they cannot differ."
    elif not with_registers.model.config.register_tokens:
        head = f"**Neither row has registers**: {label} has none, so the rows cannot show their effect."
    else:
        return ""
    if missing:
        return f"{head} No model with registers is on this machine yet (see “Better models for this lesson”)."
    return f"{head} Pick a model with registers (“reg4” or “dinov3” in its name) for the first row."


class LessonError(ValueError):
    """A lesson cannot run with these models or this input; the message says why and what to do."""


def _input(loaded: LoadedModel, image: Image.Image) -> ModelInput:
    try:
        return model_input(image, loaded.preprocessing, loaded.model.config.patch_size, "crop")
    except InputTooLarge as e:
        raise LessonError(f"{loaded.label}: {e}") from e


def _who(loaded: LoadedModel) -> str:
    return "CLS" if loaded.model.config.class_token else "mean of patches"


@dataclass(frozen=True)
class ClsHeads:
    """One model's last-layer heads for lesson 1: the model input's pixels, each head's map
    (heads, gh, gw) and its attention to the prefix tokens (heads, prefix), with their names."""

    pixels: np.ndarray
    heads: np.ndarray
    prefix: np.ndarray
    prefix_names: tuple[str, ...]


def cls_heads(loaded: LoadedModel, image: Image.Image) -> ClsHeads:
    """Task (explorer/compute.py): the last layer's attention of the CLS token (the mean patch
    query without one), per head, for `image` cropped as the model expects."""
    inp = _input(loaded, image)
    with torch.inference_mode():
        _, maps = loaded.model(to_model(loaded.model, inp.tensor), need_weights=True)
    heads = query_attention(maps)[0, -1].float().cpu().numpy()  # (H, gh, gw)
    prefix = query_prefix_attention(maps)[0, -1].float().cpu().numpy()  # (H, prefix)
    return ClsHeads(inp.pixels, heads, prefix, maps.prefix_names)


def one_pass_cost(loaded: LoadedModel, *_: object) -> float:
    """GPU seconds of a task making one forward pass at the model's crop size."""
    crop = loaded.preprocessing.crop_size
    return pass_seconds(loaded.model, (crop, crop))


def two_pass_cost(loaded: LoadedModel, *_: object) -> float:
    """GPU seconds of a task making two forward passes (heads off: before and after)."""
    return 2 * one_pass_cost(loaded)


def compare_cls_heads(
    models: Sequence[LoadedModel], results: Sequence[ClsHeads], style: MapStyle, text_px: int = canvas.TEXT_PX
) -> Image.Image:
    """Lesson 1's picture: each model's `cls_heads`, one row of heads per model (rows of
    ROW_TILES), all on one colour scale; its text `text_px` high."""
    rows = []
    for loaded, r in zip(models, results, strict=True):
        captions = [
            [f"head {i + 1}", *render.prefix_lines(render.Prefix(p, r.prefix_names))] if len(p) else [f"head {i + 1}"]
            for i, p in enumerate(r.prefix)
        ]
        base = canvas.fit_to_grid(r.pixels, r.heads.shape[1:], TILE_PX)
        for start in range(0, len(r.heads), ROW_TILES):  # the model is named on its first row
            label = f"{loaded.label} ({_who(loaded)})" if start == 0 else ""
            end = start + ROW_TILES
            rows.append(MapRow(label, base, r.heads[start:end], captions[start:end]))
    return render.shared_scale_rows(rows, style, compare_title(models), "attention weight", text_px=text_px)


def compare_title(models: Sequence[LoadedModel]) -> str:
    """The comparison's title, with the models' real head counts ("4 heads per model, one row each")."""
    counts = sorted({m.model.config.heads for m in models})
    rows = "one row each" if counts[-1] <= ROW_TILES else f"in rows of {ROW_TILES}"
    heads = " or ".join(map(str, counts))
    return f"Last layer: where the CLS token looks, one tile per head, {heads} heads per model, {rows}"


def compare_alt(models: Sequence[LoadedModel]) -> str:
    """The alt text of `compare_cls_heads`' picture (docs/pictures.md): view, layer, query and
    model of each row, 1-based."""
    rows = ", ".join(
        f"{m.label} (query {_who(m)}, layer {m.model.config.depth} of {m.model.config.depth}, "
        f"{m.model.config.heads} heads)"
        for m in models
    )
    return f"Last-layer attention of every head on one colour scale, one row per model: {rows}."


@dataclass(frozen=True)
class NormReport:
    """One model's token norms after a layer: the patch norms (gh, gw), the prefix tokens'
    norms by name, the median patch norm, the high-norm patches (row, col) largest first,
    and the share of last-layer CLS attention (mean over heads) each patch gets (gh, gw)."""

    label: str
    pixels: np.ndarray
    norms: np.ndarray
    prefix: dict[str, float]
    median: float
    high: list[tuple[int, int]]
    cls_share: np.ndarray


def norm_report(loaded: LoadedModel, image: Image.Image, layer: int, role: str = "") -> NormReport:
    """Task (explorer/compute.py): token norms after block `layer` (0-based) and the high-norm
    patches (> HIGH_NORM_FACTOR x the median patch norm), labelled "`role`: model" (e.g. "with registers: DINOv2")."""
    depth = loaded.model.config.depth
    if not 0 <= layer < depth:
        raise LessonError(f"layer must be from 1 to {depth} for {loaded.label}, got {layer + 1}")
    inp = _input(loaded, image)
    tensor = to_model(loaded.model, inp.tensor)
    norms = token_norms(loaded.model, tensor, layer)[0].cpu().numpy()  # (T,)
    with torch.inference_mode():
        _, maps = loaded.model(tensor, need_weights=True)
    p, grid = maps.prefix_tokens, maps.grid
    patches = norms[p:].reshape(grid)
    median = float(np.median(patches))
    order = np.argsort(-patches, axis=None)
    high = [divmod(int(i), grid[1]) for i in order if patches.flat[i] > HIGH_NORM_FACTOR * median]
    cls_share = query_attention(maps)[0, -1].float().mean(0).cpu().numpy()  # (gh, gw)
    prefix = {name: float(n) for name, n in zip(maps.prefix_names, norms[:p], strict=True)}
    label = f"{role}: {loaded.label}" if role else loaded.label
    return NormReport(label, inp.pixels, patches, prefix, median, high, cls_share)


def token_norm_maps(
    reports: Sequence[NormReport], layer: int, style: MapStyle, text_px: int = canvas.TEXT_PX
) -> Image.Image:
    """Every report's patch norms on one colour scale, high-norm patches outlined; text `text_px` high."""
    rows = []
    for r in reports:
        caption = [f"median {r.median:.3g}", f"{len(r.high)} patches > {HIGH_NORM_FACTOR:g}× median"]
        base = canvas.fit_to_grid(r.pixels, r.norms.shape, 2 * TILE_PX)
        rows.append(MapRow(r.label, base, r.norms[None], [caption], r.high))
    title = f"Norm of each patch token after layer {layer + 1}, high-norm patches outlined"
    return render.shared_scale_rows(rows, style, title, "token norm (L2)", text_px=text_px)


def norms_alt(reports: Sequence[NormReport], layer: int) -> str:
    """The alt text of `token_norm_maps`' picture: the layer (`layer` 0-based, said 1-based)
    and each model's number of outlined high-norm patches."""
    rows = " and ".join(f"{r.label} ({len(r.high)} high-norm patches outlined)" for r in reports)
    return f"Norm of each patch token after layer {layer + 1} on one colour scale, one row per model: {rows}."


def describe_norms(reports: Sequence[NormReport]) -> str:
    """Markdown: per model (its label shown as written: an uploaded checkpoint's is the visitor's
    file name), the rule, the high-norm patches (1-based) with norm and CLS share."""
    parts = []
    for r in reports:
        prefix = ", ".join(f"{render.short_token_name(n)} {v:.3g}" for n, v in r.prefix.items())
        head = f"**{markdown_text(r.label)}**: median patch norm {r.median:.3g}" + (
            f"; prefix token norms: {prefix}" if prefix else ""
        )
        if not r.high:
            parts.append(f"{head}. No patch above {HIGH_NORM_FACTOR:g} × the median.")
            continue
        rows = "\n".join(
            f"| {row + 1} | {col + 1} | {r.norms[row, col]:.3g} | {r.cls_share[row, col]:.3f} |"
            for row, col in r.high[:LISTED]
        )
        more = f"\n\n({len(r.high) - LISTED} more not listed)" if len(r.high) > LISTED else ""
        table = "| row | column | norm | share of CLS attention (last layer, mean of heads) |\n|---|---|---|---|\n"
        parts.append(
            f"{head}. {len(r.high)} high-norm patches (> {HIGH_NORM_FACTOR:g} × median):\n\n{table}{rows}{more}"
        )
    return "\n\n".join(parts)


def require_head(loaded: LoadedModel) -> None:
    """Refuse a model that makes no predictions (no classifier: DINO, DINOv2)."""
    if loaded.model.config.num_classes < 1:
        raise LessonError(
            f"{loaded.label} has no classifier head, so it makes no predictions to change: "
            "pick a supervised model (e.g. DeiT, ViT-B/16 or the bundled CIFAR-10 model)"
        )


def parse_heads(text: str, depth: int, heads: int) -> list[Head]:
    """1-based "layer.head" items, separated by commas or spaces ("3.2, 11.7"), as 0-based
    (layer, head) pairs. Empty text: no head off. LessonError names a malformed or
    out-of-range item and what is allowed."""
    out: list[Head] = []
    for item in re.split(r"[,\s;]+", text.strip()):
        if not item:
            continue
        match = re.fullmatch(r"(\d{1,4})\.(\d{1,4})", item)  # no model has 10,000 layers or heads
        if match is None:
            raise LessonError(f"heads off: {quoted(item)} is not layer.head (e.g. 3.2 = layer 3, head 2; both from 1)")
        layer, head = int(match[1]), int(match[2])
        if not 1 <= layer <= depth:
            raise LessonError(
                f"heads off: layer {layer} in {quoted(item)} is out of range; this model has layers 1 to {depth}"
            )
        if not 1 <= head <= heads:
            raise LessonError(
                f"heads off: head {head} in {quoted(item)} is out of range; each layer has heads 1 to {heads}"
            )
        out.append((layer - 1, head - 1))
    return sorted(set(out))


def _top(loaded: LoadedModel, tensor: torch.Tensor, k: int) -> dict[str, float]:
    with torch.inference_mode():
        return top_classes(loaded.model(to_model(loaded.model, tensor))[0].cpu(), loaded.meta.class_names, k)


def predictions_with_heads_off(
    loaded: LoadedModel, image: Image.Image, off: Sequence[Head], k: int = 5
) -> tuple[dict[str, float], dict[str, float]]:
    """Task (explorer/compute.py): (top-k with every head on, top-k with the heads `off`
    switched off), class -> probability."""
    require_head(loaded)
    tensor = _input(loaded, image).tensor
    before = _top(loaded, tensor, k)
    with heads_off(loaded.model, off):
        after = _top(loaded, tensor, k)
    return before, after


def ranking_passes(config: ViTConfig) -> int:
    """Forward passes of a head ranking: one with every head on, then one per head switched off."""
    return config.depth * config.heads + 1


def ranking_flops(config: ViTConfig, tokens: int) -> float:
    """Estimated floating-point operations of a head ranking: `ranking_passes` forward passes
    over `tokens` tokens (`explorer.compute.forward_flops`)."""
    return forward_flops(config, tokens, images=ranking_passes(config))


def check_ranking_cost(loaded: LoadedModel) -> None:
    """Refuse a ranking whose estimated work is above MAX_RANKING_FLOPS, before any pass."""
    c, crop = loaded.model.config, loaded.preprocessing.crop_size
    gh, gw = loaded.model.patch_grid(crop, crop)
    flops = ranking_flops(c, loaded.model.prefix_tokens + gh * gw)
    if flops > MAX_RANKING_FLOPS:
        raise LessonError(
            f"ranking {loaded.label}'s {c.depth} x {c.heads} = {c.depth * c.heads} heads needs as many forward "
            f"passes, about {flops / 1e12:,.1f} TFLOP, more than this server's {MAX_RANKING_FLOPS / 1e12:g} TFLOP: "
            "switch heads off by hand instead"
        )


@dataclass(frozen=True)
class Ranking:
    """The heads ranked so far: the predicted class, the top rows [rank, "layer.head"
    (1-based), drop in probability], and how many of the model's heads were switched off."""

    predicted: str
    rows: list[list]
    done: int
    total: int


def head_ranking(
    loaded: LoadedModel, image: Image.Image, shown: int = RANKING_ROWS, seconds: float = MAX_RANKING_S
) -> Ranking:
    """The `shown` heads whose removal lowers the predicted class's probability most."""
    return list(head_ranking_steps(loaded, image, shown, seconds))[-1]


def head_ranking_steps(
    loaded: LoadedModel, image: Image.Image, shown: int = RANKING_ROWS, seconds: float = MAX_RANKING_S
) -> Iterator[Ranking]:
    """Task (explorer/compute.py, a generator): the ranking after each layer's heads, then once
    more at the end (`done == total`, or fewer when `seconds` ran out first). Refused past
    MAX_RANKING_FLOPS before any pass."""
    require_head(loaded)
    check_ranking_cost(loaded)
    c = loaded.model.config
    deadline = time.monotonic() + seconds
    ranking = None
    tensor = to_model(loaded.model, _input(loaded, image).tensor)
    for predicted, drops, done in head_importance_steps(loaded.model, tensor):
        flat = drops.flatten().cpu()[:done]  # (done,) the heads switched off so far, layer-major
        order = flat.argsort(descending=True)[:shown]
        rows = [
            [rank + 1, f"{i // c.heads + 1}.{i % c.heads + 1}", round(float(flat[i]), 4)]
            for rank, i in enumerate(order.tolist())
        ]
        ranking = Ranking(loaded.meta.class_names[predicted], rows, done, c.depth * c.heads)
        if time.monotonic() > deadline:
            break
        if done % c.heads == 0 and done < ranking.total:
            yield ranking
    yield ranking


def ranking_cost(loaded: LoadedModel, *_: object) -> float:
    """GPU seconds of `head_ranking_steps`: its estimated work, capped by its time limit."""
    crop = loaded.preprocessing.crop_size
    return min(pass_seconds(loaded.model, (crop, crop), images=ranking_passes(loaded.model.config)), MAX_RANKING_S)
