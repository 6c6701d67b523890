"""transformers-format ViTs -> ours: ViT (ViTModel, ViTForImageClassification), DeiT (DeiTModel,
DeiTForImageClassificationWithTeacher) and DINOv2 (Dinov2Model, Dinov2WithRegistersModel).

Two key layouts are read: the files on the Hub (and `save_pretrained`'s output), e.g.
`vit.encoder.layer.0.attention.attention.query.weight`, and transformers 5's modules, e.g.
`vit.layers.0.attention.q_proj.weight`. Separate q, k, v projections are packed into our q;k;v
(timm's order). What the weights cannot tell (head count, LayerNorm eps, LayerScale's initial
value) comes from the model's config (config.json), or for a bare state dict from the one named
configuration that fits and transformers' default eps for the family.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from pathlib import Path

import torch
from torch import Tensor, nn

from .checkpoint import CheckpointError, load_state_dict_file
from .model import VisionTransformer, ViTConfig
from .preprocessing import Preprocessing
from .weights import WeightsSource, config_from_state_dict, convert, shape_fields

SUPPORTED = (
    "ViTModel",
    "ViTForImageClassification",
    "DeiTModel",
    "DeiTForImageClassificationWithTeacher",
    "Dinov2Model",
    "Dinov2WithRegistersModel",
)
_REFUSED = {
    "DeiTForImageClassification": "reads only the CLS token of a distilled DeiT, while this ViT averages its "
    "CLS and distillation heads (load DeiTForImageClassificationWithTeacher or DeiTModel)",
    "Dinov2ForImageClassification": "classifies the CLS token concatenated with the mean patch token, "
    "which this ViT does not implement (load Dinov2Model)",
    "Dinov2WithRegistersForImageClassification": "classifies the CLS token concatenated with the mean patch "
    "token, which this ViT does not implement (load Dinov2WithRegistersModel)",
}
MODEL_TYPES = ("vit", "deit", "dinov2", "dinov2_with_registers")

_TOP = {
    "embeddings.cls_token": "cls_token",
    "embeddings.distillation_token": "dist_token",
    "embeddings.register_tokens": "reg_token",
    "embeddings.position_embeddings": "pos_embed",
    "embeddings.patch_embeddings.projection.weight": "patch_embed.proj.weight",
    "embeddings.patch_embeddings.projection.bias": "patch_embed.proj.bias",
    **{
        f"{theirs}.{p}": f"{ours}.{p}"
        for p in ("weight", "bias")
        for theirs, ours in (
            ("layernorm", "norm"),
            ("classifier", "head"),
            ("cls_classifier", "head"),
            ("distillation_classifier", "head_dist"),
        )
    },
}
# Keys that take no part in inference: dropped, never silently mapped.
_DROPPED = (
    "embeddings.mask_token",  # the masked-image-modelling token (training only)
    "pooler.dense.weight",  # ViTModel's pooler: tanh(dense(CLS)), pooler_output; last_hidden_state skips it
    "pooler.dense.bias",
)
_BLOCK = re.compile(r"(?:encoder\.layer|layers)\.(\d+)\.(.+)")
_BLOCK_PARTS = {  # prefix of the rest of a block key (both layouts) -> ours
    "attention.attention.query.": "attn.q.",
    "attention.attention.key.": "attn.k.",
    "attention.attention.value.": "attn.v.",
    "attention.q_proj.": "attn.q.",
    "attention.k_proj.": "attn.k.",
    "attention.v_proj.": "attn.v.",
    "attention.output.dense.": "attn.proj.",
    "attention.o_proj.": "attn.proj.",
    "layernorm_before.": "norm1.",
    "norm1.": "norm1.",
    "layernorm_after.": "norm2.",
    "norm2.": "norm2.",
    "intermediate.dense.": "mlp.fc1.",
    "output.dense.": "mlp.fc2.",
    "mlp.fc1.": "mlp.fc1.",
    "mlp.fc2.": "mlp.fc2.",
    "layer_scale1.lambda1": "ls1.gamma",
    "layer_scale2.lambda1": "ls2.gamma",
}
# DINOv2-giant's SwiGLU MLP: weights_in/out in the Hub files, gate/up/down_proj in transformers 5's modules.
_UNSUPPORTED_BLOCK = {
    f"mlp.{part}.": "a SwiGLU MLP (use_swiglu_ffn)" for part in ("weights_in", "weights_out", "gate_proj", "up_proj")
}
# transformers' default LayerNorm eps per family, for a bare state dict without its config.
_DEFAULT_EPS = {"layer_scale": 1e-6, "plain": 1e-12}  # DINOv2 (LayerScale) / ViT and DeiT


def _rename_block(key: str, block: str, rest: str) -> str:
    for marker, what in _UNSUPPORTED_BLOCK.items():
        if rest.startswith(marker):
            raise CheckpointError(f"transformers checkpoint uses {what} ({key!r}), which this ViT does not implement")
    for theirs, ours in _BLOCK_PARTS.items():
        if rest.startswith(theirs):
            return f"blocks.{block}.{ours}{rest[len(theirs) :]}"
    raise CheckpointError(f"unrecognised transformers ViT key {key!r}")


def _backbone_prefix(sd: dict[str, Tensor]) -> str:
    """The task models' prefix of the backbone's keys (`vit.`, `deit.`, `dinov2.`), or ''."""
    return next((p for p in ("vit.", "deit.", "dinov2.") if any(k.startswith(p) for k in sd)), "")


def _pack_qkv(sd: dict[str, Tensor]) -> dict[str, Tensor]:
    """blocks.i.attn.{q,k,v}.{weight,bias} -> blocks.i.attn.qkv.* (q;k;v stacked on dim 0)."""
    out = {k: v for k, v in sd.items() if not re.fullmatch(r"blocks\.\d+\.attn\.[qkv]\..+", k)}
    for key in [k for k in sd if re.fullmatch(r"blocks\.\d+\.attn\.q\..+", k)]:
        parts = [key.replace(".attn.q.", f".attn.{c}.") for c in "qkv"]
        missing = [p for p in parts if p not in sd]
        if missing:
            raise CheckpointError(f"transformers checkpoint has {key!r} but not {missing}")
        out[key.replace(".attn.q.", ".attn.qkv.")] = torch.cat([sd[p] for p in parts], dim=0)
    for key in sd:
        query = re.sub(r"\.attn\.[kv]\.", ".attn.q.", key)
        if query != key and query not in sd:
            raise CheckpointError(f"transformers checkpoint has {key!r} but not {query!r}")
    return out


def rename_transformers(state_dict: dict[str, Tensor]) -> dict[str, Tensor]:
    """A transformers ViT/DeiT/DINOv2 state dict in our key names. DINOv2 with registers gives
    its CLS token a position embedding and its registers none; ours (timm's no_embed_class)
    gives positions to the patches only, so the CLS slot is folded into the CLS token (exact:
    the CLS slot is never resampled)."""
    out: dict[str, Tensor] = {}
    prefix = _backbone_prefix(state_dict)
    for key, value in state_dict.items():
        short = key.removeprefix(prefix)
        if short in _DROPPED:
            continue
        block = _BLOCK.fullmatch(short)
        new = _rename_block(key, *block.groups()) if block else _TOP.get(short)
        if new is None:
            raise CheckpointError(f"unrecognised transformers ViT key {key!r}")
        if new in out:
            raise CheckpointError(f"two keys map to {new!r} (both transformers layouts in one state dict?)")
        out[new] = value
    out = _pack_qkv(out)
    if "reg_token" in out and "cls_token" in out and "pos_embed" in out:
        out["cls_token"] = out["cls_token"] + out["pos_embed"][:, :1]  # (1, 1, D)
        out["pos_embed"] = out["pos_embed"][:, 1:]  # (1, N, D): patches only
    if "dist_token" in out and "head.weight" in out and "head_dist.weight" not in out:
        raise CheckpointError(f"DeiTForImageClassification {_REFUSED['DeiTForImageClassification']}")
    return out


def config_from_transformers(hf_config: dict, sd: dict[str, Tensor]) -> ViTConfig:
    """Our config for weights `sd` (our key names) and their transformers config (config.json):
    shapes from the weights, heads, eps and LayerScale's initial value from the config."""
    model_type = hf_config.get("model_type")
    if model_type not in MODEL_TYPES:
        raise CheckpointError(f"transformers model_type {model_type!r} is not supported; supported: {MODEL_TYPES}")
    act = hf_config.get("hidden_act", "gelu")
    if act != "gelu":
        raise CheckpointError(f"transformers hidden_act={act!r} is not supported (this ViT uses exact GELU, 'gelu')")
    if hf_config.get("use_swiglu_ffn"):
        raise CheckpointError("transformers use_swiglu_ffn=True (a SwiGLU MLP) is not supported")
    fields = shape_fields(sd, pos_embed_prefix="reg_token" not in sd)
    layer_scale = hf_config.get("layerscale_value", 1.0) if fields.pop("layer_scale") else None
    return ViTConfig(
        **fields,
        heads=hf_config["num_attention_heads"],
        pool="cls",
        layer_scale=layer_scale,
        norm_eps=hf_config.get("layer_norm_eps", 1e-12),
    )


def _module_source(module: nn.Module) -> tuple[dict[str, Tensor], dict]:
    cls = type(module).__name__
    if not type(module).__module__.startswith("transformers."):
        hint = " (a timm model: use vit.from_timm)" if type(module).__module__.startswith("timm.") else ""
        raise CheckpointError(
            f"from_transformers expects a transformers model ({', '.join(SUPPORTED)}); got {cls}{hint}"
        )
    if cls in _REFUSED:
        raise CheckpointError(f"{cls} {_REFUSED[cls]}")
    if cls not in SUPPORTED:
        raise CheckpointError(f"transformers {cls} is not supported; supported: {', '.join(SUPPORTED)}")
    return module.state_dict(), module.config.to_dict()


def _path_source(path: Path) -> tuple[dict[str, Tensor], dict | None]:
    """Weights and config.json from a `save_pretrained` folder (or Hub snapshot), or a weights file
    with or without a config.json beside it."""
    folder = path if path.is_dir() else path.parent
    if path.is_dir():
        found = [path / f for f in ("model.safetensors", "pytorch_model.bin") if (path / f).is_file()]
        if not found:
            sharded = (path / "model.safetensors.index.json").is_file()
            raise CheckpointError(
                f"{path.name} holds {'sharded weights (not supported)' if sharded else 'no model.safetensors'}"
            )
        path = found[0]
    config_file = folder / "config.json"
    hf_config = json.loads(config_file.read_text()) if config_file.is_file() else None
    architectures = (hf_config or {}).get("architectures") or []
    refused = [a for a in architectures if a in _REFUSED]
    if refused:
        raise CheckpointError(f"{refused[0]} {_REFUSED[refused[0]]}")
    return load_state_dict_file(path), hf_config


def from_transformers(
    source: WeightsSource, *, name: str | None = None, config: ViTConfig | None = None
) -> VisionTransformer:
    """Our ViT with the weights of a transformers ViT, DeiT or DINOv2 (module, state dict, a
    `save_pretrained` folder or Hub snapshot, or a weights file). A module or a folder with its
    config.json tells the head count and eps; a bare state dict loads only as the one named
    configuration that fits (or the `name` or `config` given), with transformers' default eps.
    Options this ViT does not implement (SwiGLU, another activation, a classifier on other
    tokens) are refused by name. ViTModel's pooler (tanh(dense(CLS))) is dropped: the model
    returns last_hidden_state's normed CLS token, as transformers' last_hidden_state[:, 0]."""
    if config is not None and name is not None:
        raise ValueError("pass config= or name=, not both")
    hf_config = None
    if isinstance(source, nn.Module):
        raw, hf_config = _module_source(source)
    elif isinstance(source, (str, os.PathLike)):
        raw, hf_config = _path_source(Path(source))
    else:
        raw = dict(source)
    sd = rename_transformers(raw)
    if config is None and name is None and hf_config is not None:
        config = config_from_transformers(hf_config, sd)
    if config is None:
        family_eps = _DEFAULT_EPS["layer_scale" if "blocks.0.ls1.gamma" in sd else "plain"]
        eps = (hf_config or {}).get("layer_norm_eps", family_eps)
        config = replace(config_from_state_dict(sd, name=name, pool="cls"), norm_eps=eps)
    return convert(sd, config, None, None, "transformers weights")


def transformers_class_names(hf_config: dict, num_classes: int) -> list[str]:
    """Class names from a config.json's id2label, in label order; none for a headless model."""
    if num_classes == 0:
        return []
    id2label = {int(k): v for k, v in (hf_config.get("id2label") or {}).items()}
    if sorted(id2label) != list(range(num_classes)):
        raise CheckpointError(f"config.json's id2label does not name the {num_classes} classes 0..{num_classes - 1}")
    return [id2label[i] for i in range(num_classes)]


# PIL's resampling codes, as transformers' image processors store them.
_PIL_RESAMPLE = {0: "nearest", 1: "lanczos", 2: "bilinear", 3: "bicubic", 4: "box", 5: "hamming"}


def _side(size: int | dict | None, default: int) -> int:
    if size is None:
        return default
    if isinstance(size, int):
        return size
    return size.get("shortest_edge") or size.get("height") or default


def transformers_preprocessing(processor: dict) -> Preprocessing:
    """Our Preprocessing from a preprocessor_config.json (ViTImageProcessor, BitImageProcessor).
    ViTImageProcessor squashes the image to size x size; ours keeps the aspect ratio (shorter
    side to size, centre crop), as for every other model in the app (docs/models.md)."""
    resize = _side(processor.get("size"), 224)
    crop = _side(processor.get("crop_size"), resize) if processor.get("do_center_crop") else resize
    return Preprocessing(
        resize_size=resize,
        crop_size=crop,
        mean=tuple(processor.get("image_mean", (0.5, 0.5, 0.5))),
        std=tuple(processor.get("image_std", (0.5, 0.5, 0.5))),
        interpolation=_PIL_RESAMPLE.get(processor.get("resample", 2), "bilinear"),
    )
