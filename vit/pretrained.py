"""Named pretrained weights: the zoo, where each name's files live, and loading them with the
class names and preprocessing their own metadata gives.

timm-format and transformers-format names are Hub repositories fetched by `vit.hub` (plain
files: safetensors weights and JSON metadata, read without timm or transformers installed);
CLIP names are open_clip's files in the Hub repositories that hold both towers (`vit.clip`);
torchvision names come from download.pytorch.org through torch.hub. Why not timm at run time:
docs/models.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import torch

from .checkpoint import ModelMeta, load_state_dict_file
from .clip import OPEN_CLIP_WEIGHTS, ClipText, load_clip
from .hub import (
    Gated,
    NoInternet,
    PretrainedUnavailable,
    Progress,
    download,
    gated_sentence,
    is_cached,
    offline_by_setting,
    reachable,
)
from .model import VisionTransformer
from .preprocessing import INTERPOLATIONS, Preprocessing
from .transformers_format import from_transformers, transformers_class_names, transformers_preprocessing
from .weights import from_timm, from_torchvision

SAFETENSORS = "model.safetensors"
T = TypeVar("T")


@dataclass(frozen=True)
class Pretrained:
    library: str  # "torchvision", "timm", "transformers" or "open_clip": the layout of the weights
    weights: str  # torchvision's weights enum name, or the Hub repository id
    config: str | None = None  # our named configuration (vit.list_models()), open_clip's architecture name
    input_size: int | None = None  # default input side in pixels when not the weights' own (DINOv2: 224, not 518)
    torch_hub_file: str | None = None  # torchvision: the file name torch.hub caches (the weights URL's last part)
    licence: str | None = None  # a licence of its own (not Apache/MIT/BSD): named when the Hub asks to accept it

    @property
    def files(self) -> tuple[str, ...]:
        """The files loading downloads. torchvision's file name is spelled out so that asking
        whether it is cached is a stat, without importing torchvision (seconds at start-up)."""
        if self.library == "torchvision":
            return (self.torch_hub_file,)
        if self.library == "timm":
            return ("config.json", SAFETENSORS)
        if self.library == "open_clip":
            return (OPEN_CLIP_WEIGHTS,)  # both towers; the architecture is open_clip's named one
        return ("config.json", "preprocessor_config.json", SAFETENSORS)


def _timm(name: str, config: str, input_size: int | None = None, licence: str | None = None) -> Pretrained:
    return Pretrained("timm", f"timm/{name}", config, input_size, licence=licence)


# DINOv2 was trained at 518 px (a 37x37 grid); a 2-core CPU answers in seconds at 224 px (16x16),
# so that is the default input size. Position embeddings are resampled to any grid, as timm does.
_DINOV2_INPUT = 224


def _torchvision(size: str, file: str) -> Pretrained:
    return Pretrained("torchvision", f"ViT_{size.upper()}_Weights.IMAGENET1K_V1", f"vit_{size}", torch_hub_file=file)


PRETRAINED: dict[str, Pretrained] = {
    "vit_b_16.tv_in1k": _torchvision("b_16", "vit_b_16-c867db91.pth"),
    "vit_b_32.tv_in1k": _torchvision("b_32", "vit_b_32-d86f8d99.pth"),
    "vit_l_16.tv_in1k": _torchvision("l_16", "vit_l_16-852ce7e3.pth"),
    "vit_l_32.tv_in1k": _torchvision("l_32", "vit_l_32-c7638314.pth"),
    **{
        name: _timm(name, name.split(".")[0])
        for name in (
            "vit_tiny_patch16_224.augreg_in21k_ft_in1k",
            "vit_small_patch16_224.augreg_in21k_ft_in1k",
            "vit_base_patch16_224.augreg2_in21k_ft_in1k",
        )
    },
    # DINO (Caron et al. 2021): self-supervised, no classifier.
    "vit_small_patch16_224.dino": _timm("vit_small_patch16_224.dino", "vit_small_patch16_224"),
    "vit_base_patch16_224.dino": _timm("vit_base_patch16_224.dino", "vit_base_patch16_224"),
    "vit_small_patch8_224.dino": _timm("vit_small_patch8_224.dino", "vit_small_patch8_224"),
    # DeiT (Touvron et al. 2021): plain ViT architectures, and distilled ones with a second token and head.
    **{
        f"deit_{size}_patch16_224.fb_in1k": _timm(f"deit_{size}_patch16_224.fb_in1k", f"vit_{size}_patch16_224")
        for size in ("tiny", "small", "base")
    },
    **{
        f"deit_{size}_distilled_patch16_224.fb_in1k": _timm(
            f"deit_{size}_distilled_patch16_224.fb_in1k", f"deit_{size}_distilled_patch16_224"
        )
        for size in ("tiny", "small", "base")
    },
    # DINOv2 (Oquab et al. 2024), with and without 4 registers (Darcet et al. 2024): no classifier.
    **{
        f"vit_{size}_patch14{reg}_dinov2.lvd142m": _timm(
            f"vit_{size}_patch14{reg}_dinov2.lvd142m", f"vit_{size}_patch14{reg}_dinov2", _DINOV2_INPUT
        )
        for size in ("small", "large")
        for reg in ("", "_reg4")
    },
    # DINOv3 (Siméoni et al. 2025): 1 CLS + 4 registers, 2-D rotary positions, no classifier; its own
    # 256 px input (a 16 x 16 grid). Meta's DINOv3 licence; timm's copies are not gated on the Hub
    # (Meta's facebook/dinov3-* are): docs/models.md.
    **{
        f"vit_{size}_patch16_dinov3.lvd1689m": _timm(
            f"vit_{size}_patch16_dinov3.lvd1689m", f"vit_{size}_patch16_dinov3", licence="Meta's DINOv3 licence"
        )
        for size in ("small", "base", "large")
    },
    # OpenAI's CLIP (Radford et al. 2021) in open_clip's layout, from the repositories open_clip's own
    # pretrained.py downloads (hf_hub "timm/vit_*_clip_224.openai/"): image and text tower in one file.
    **{
        f"vit_base_patch{patch}_clip_224.openai": Pretrained(
            "open_clip", f"timm/vit_base_patch{patch}_clip_224.openai", f"ViT-B-{patch}-quickgelu"
        )
        for patch in (16, 32)
    },
    # transformers-format repositories, named by their Hub id: the most downloaded ViTs.
    **{
        repo: Pretrained("transformers", repo)
        for repo in (
            "google/vit-base-patch16-224",
            "facebook/dinov2-small",
            "facebook/dinov2-with-registers-small",
        )
    },
}


def list_pretrained() -> list[str]:
    return sorted(PRETRAINED)


def _spec(name: str) -> Pretrained:
    if name not in PRETRAINED:
        raise ValueError(f"unknown pretrained weights {name!r}; choose one of {list_pretrained()}")
    return PRETRAINED[name]


def pretrained_repo(name: str) -> str:
    """The Hub repository `name` downloads from (for a Space's `models:` and `preload_from_hub:`).
    torchvision's weights are not on the Hub: ValueError."""
    spec = _spec(name)
    if spec.library == "torchvision":
        raise ValueError(f"{name!r} downloads from download.pytorch.org, not from the Hugging Face Hub")
    return spec.weights


def pretrained_files(name: str) -> list[str]:
    """The files loading `name` downloads (in its Hub repository, or torch.hub's cache)."""
    return list(_spec(name).files)


def _torchvision_weights(spec: Pretrained):  # -> torchvision.models.WeightsEnum
    import torchvision

    return torchvision.models.get_weight(spec.weights)


def _torchvision_cache_file(spec: Pretrained) -> Path:
    return Path(torch.hub.get_dir()) / "checkpoints" / spec.files[0]


def is_pretrained_cached(name: str) -> bool:
    """Whether `name` loads without a network (every file it needs is in the local cache)."""
    spec = _spec(name)
    if spec.library == "torchvision":
        return _torchvision_cache_file(spec).is_file()
    return is_cached(spec.weights, spec.files)


def _load_torchvision(name: str, spec: Pretrained, progress: Progress | None) -> tuple[VisionTransformer, ModelMeta]:
    # torch.hub downloads without a byte callback: progress hears the start and the end only.
    weights = _torchvision_weights(spec)
    cached = _torchvision_cache_file(spec).is_file()
    if not cached and (offline_by_setting() or not reachable(weights.url)):  # HF_HUB_OFFLINE: no downloads at all
        raise NoInternet(f"download.pytorch.org cannot be reached from this machine and {name} is not cached")
    if progress is not None and not cached:
        progress(0, None)
    try:
        state_dict = weights.get_state_dict(progress=False)
    except (OSError, RuntimeError) as e:  # URLError is an OSError
        raise PretrainedUnavailable(f"the download of {name} from download.pytorch.org did not complete") from e
    if progress is not None and not cached:
        size = _torchvision_cache_file(spec).stat().st_size
        progress(size, size)
    model = from_torchvision(state_dict, name=spec.config)
    tf = weights.transforms()
    preprocessing = Preprocessing(
        resize_size=tf.resize_size[0],
        crop_size=tf.crop_size[0],
        mean=tuple(tf.mean),
        std=tuple(tf.std),
        interpolation=tf.interpolation.value,
    )
    info = {"source": f"torchvision {spec.weights}", "url": weights.url, "metrics": weights.meta.get("_metrics")}
    return model, ModelMeta(list(weights.meta["categories"]), preprocessing, info)


def imagenet_classes() -> list[str]:
    """ImageNet-1k's 1,000 class names in the standard (synset-sorted) label order, from
    torchvision's weights metadata: the order every in1k classifier (timm's too) predicts in."""
    import torchvision

    return list(torchvision.models.ViT_B_16_Weights.IMAGENET1K_V1.meta["categories"])


def timm_class_names(hub_config: dict) -> list[str]:
    """Class names for a timm Hub config.json: its label descriptions if it has them, else
    ImageNet-1k's for 1,000 classes (its `label_names` would be WordNet ids such as n01440764),
    else its label names; none for a headless model."""
    count = hub_config.get("num_classes", 0)
    for key in ("label_descriptions", "label_names"):
        names = hub_config.get(key)
        names = list(names.values()) if isinstance(names, dict) else names
        if names and len(names) == count and (key == "label_descriptions" or count != 1000):
            return list(names)
    if count == 1000:
        return imagenet_classes()
    if count == 0:
        return []
    raise PretrainedUnavailable(f"the weights have {count} classes and their config.json names none of them")


def timm_preprocessing(pretrained_cfg: dict, input_size: int | None) -> Preprocessing:
    """Our Preprocessing from timm's `pretrained_cfg` (timm writes it into the Hub config.json):
    resize the shorter side to crop / crop_pct, centre-crop (timm's crop_mode 'center')."""
    crop = input_size or pretrained_cfg["input_size"][-1]
    interpolation = pretrained_cfg.get("interpolation", "bicubic")
    return Preprocessing(
        resize_size=math.floor(crop / pretrained_cfg.get("crop_pct", 0.875)),
        crop_size=crop,
        mean=tuple(pretrained_cfg["mean"]),
        std=tuple(pretrained_cfg["std"]),
        interpolation=interpolation if interpolation in INTERPOLATIONS else "bicubic",
    )


def _read_json(path: Path) -> dict:
    return json.loads(path.read_text())


def _load_timm(name: str, spec: Pretrained, progress: Progress | None) -> tuple[VisionTransformer, ModelMeta]:
    files = download(spec.weights, spec.files, progress)
    hub_config = _read_json(files["config.json"])
    model = from_timm(load_state_dict_file(files[SAFETENSORS]), name=spec.config)
    preprocessing = timm_preprocessing(hub_config.get("pretrained_cfg", {}), spec.input_size)
    info = {"source": f"timm weights from the Hub: {spec.weights}"} | (
        {"licence": spec.licence} if spec.licence else {}
    )
    return model, ModelMeta(timm_class_names(hub_config), preprocessing, info)


def _load_transformers(name: str, spec: Pretrained, progress: Progress | None) -> tuple[VisionTransformer, ModelMeta]:
    files = download(spec.weights, spec.files, progress)
    model = from_transformers(files[SAFETENSORS].parent)
    class_names = transformers_class_names(_read_json(files["config.json"]), model.config.num_classes)
    preprocessing = transformers_preprocessing(_read_json(files["preprocessor_config.json"]))
    info = {"source": f"transformers weights from the Hub: {spec.weights}"}
    return model, ModelMeta(class_names, preprocessing, info)


def _load_open_clip(name: str, spec: Pretrained, progress: Progress | None) -> tuple[VisionTransformer, ModelMeta]:
    model, meta, _ = load_clip(spec.weights, spec.config, progress, text=False)
    return model, meta


_LOADERS = {
    "torchvision": _load_torchvision,
    "timm": _load_timm,
    "transformers": _load_transformers,
    "open_clip": _load_open_clip,
}


def is_clip(name: str) -> bool:
    """Whether `name` is a CLIP model (its text tower answers prompts: `load_pretrained_clip`)."""
    return name in PRETRAINED and PRETRAINED[name].library == "open_clip"


def load_pretrained(name: str, *, progress: Progress | None = None) -> tuple[VisionTransformer, ModelMeta]:
    """Download (or read from cache) named pretrained weights and return our model with its
    preprocessing and class names taken from the weights' own metadata. Models without a
    classifier (DINO, DINOv2, DINOv3) have no class names (`meta.class_names == []`) and return
    features, not logits. DINOv2's preprocessing uses 224 px inputs, not the 518 px it was
    trained at (see PRETRAINED).

    `progress(done_bytes, total_bytes_or_None)` is called while downloading (never for a cached
    model). Raises PretrainedUnavailable, whose message is one sentence without Python in it:
    `Gated` when the Hub wants the weights' licence accepted first (the sentence names it and
    says how).
    """
    spec = _spec(name)
    return _said(name, lambda: _LOADERS[spec.library](name, spec, progress))


def load_pretrained_clip(
    name: str, *, progress: Progress | None = None
) -> tuple[VisionTransformer, ModelMeta, ClipText]:
    """`load_pretrained` for a CLIP name (`is_clip`), with open_clip's text tower and tokenizer
    from the same file (vit/clip.py). Raises PretrainedUnavailable as `load_pretrained` does."""
    if not is_clip(name):
        raise ValueError(f"{name!r} is not a CLIP model; CLIP models: {[n for n in PRETRAINED if is_clip(n)]}")
    spec = _spec(name)
    return _said(name, lambda: load_clip(spec.weights, spec.config, progress))


def _said(name: str, load: Callable[[], T]) -> T:
    """`load()`, its failures as PretrainedUnavailable whose one sentence names `name`."""
    try:
        return load()
    except Gated as e:  # what to do, with the licence's name: a teacher can act on it
        licence = _spec(name).licence or "their licence"
        raise Gated(f"cannot load {name}: {gated_sentence('its weights', licence, e.url)}", e.url) from e.__cause__ or e
    except PretrainedUnavailable as e:  # the same kind (NoInternet stays NoInternet), the name said
        raise type(e)(f"cannot load {name}: {e}") from e.__cause__ or e
    except Exception as e:  # noqa: BLE001 - a cached file may be unreadable in many ways; the log gets why
        raise PretrainedUnavailable(f"cannot load {name}: its downloaded files are not usable weights") from e
