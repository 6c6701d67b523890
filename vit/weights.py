"""Foreign weights -> our ViT: torchvision and timm state dicts (transformers' in
`vit.transformers_format`; named pretrained weights in `vit.pretrained`).

Both libraries store the same tensors under different names (torchvision's `encoder.layers.*`
with a packed `in_proj_weight`; timm's `blocks.*`, whose names ours copy; timm's `Eva`, which
holds DINOv3, names LayerScale `gamma_1`/`gamma_2` and keeps q and v biases apart). Each converter
renames keys into ours, refuses anything it does not understand, reads what the tensor shapes
tell, takes the rest (heads, pooling) from the module or one named configuration, never from a
guess, and copies with a check on every key and shape.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import torch
from torch import Tensor, nn

from .checkpoint import CheckpointError, assign_weights, load_state_dict_file
from .model import CONFIGS, VisionTransformer, ViTConfig, list_models

WeightsSource = nn.Module | dict[str, Tensor] | str | os.PathLike

_TORCHVISION_TOP = {
    "class_token": "cls_token",
    "conv_proj.weight": "patch_embed.proj.weight",
    "conv_proj.bias": "patch_embed.proj.bias",
    "encoder.pos_embedding": "pos_embed",
    "encoder.ln.weight": "norm.weight",
    "encoder.ln.bias": "norm.bias",
    "heads.head.weight": "head.weight",
    "heads.head.bias": "head.bias",
}
_TORCHVISION_BLOCK = {
    "ln_1": "norm1",
    "self_attention.in_proj_weight": "attn.qkv.weight",  # packed q;k;v, same order as ours
    "self_attention.in_proj_bias": "attn.qkv.bias",
    "self_attention.out_proj": "attn.proj",
    "ln_2": "norm2",
    "mlp.0": "mlp.fc1",
    "mlp.3": "mlp.fc2",
    "mlp.linear_1": "mlp.fc1",  # names in older torchvision files (the downloadable .pth ones)
    "mlp.linear_2": "mlp.fc2",
}
# timm's names are ours (we chose them to be). These are the timm extras we refuse.
_TIMM_UNSUPPORTED = {
    "norm_pre.": "a pre-encoder LayerNorm (norm_pre)",
    "attn.q_norm.": "QK-norm",
    "attn.k_norm.": "QK-norm",
    "attn.norm.": "attention output norm",
    "mlp.norm.": "MLP norm",
    "patch_embed.norm.": "a patch-embedding LayerNorm",
    "attn_pool.": "attention pooling (MAP head)",
    "head.fc.": "a multi-layer head",
}
_OUR_BLOCK_KEY = re.compile(
    r"blocks\.\d+\.((norm1|norm2|attn\.qkv|attn\.proj|mlp\.fc1|mlp\.fc2)\.(weight|bias)|ls[12]\.gamma)"
)
_OUR_TOP_KEYS = {"cls_token", "dist_token", "reg_token", "pos_embed", "patch_embed.proj.weight"} | {
    f"{m}.{p}" for m in ("patch_embed.proj", "norm", "fc_norm", "head", "head_dist") for p in ("weight", "bias")
}


def _rename_torchvision(key: str) -> str:
    if key in _TORCHVISION_TOP:
        return _TORCHVISION_TOP[key]
    m = re.fullmatch(r"encoder\.layers\.encoder_layer_(\d+)\.(.+)", key)
    if m:
        block, rest = m.groups()
        for theirs, ours in _TORCHVISION_BLOCK.items():
            if rest == theirs or rest.startswith(theirs + "."):
                return f"blocks.{block}.{ours}{rest[len(theirs) :]}"
    if key.startswith("heads.pre_logits"):
        raise CheckpointError("torchvision's optional representation layer (heads.pre_logits) is not supported")
    raise CheckpointError(f"unrecognised torchvision ViT key {key!r}")


def _rename_timm(key: str) -> str:
    for marker, what in _TIMM_UNSUPPORTED.items():
        if marker in key:
            raise CheckpointError(f"timm checkpoint uses {what} ({key!r}), which this ViT does not implement")
    key = re.sub(r"^(blocks\.\d+)\.gamma_([12])$", r"\1.ls\2.gamma", key)  # Eva's LayerScale
    if key in _OUR_TOP_KEYS or _OUR_BLOCK_KEY.fullmatch(key):
        return key
    raise CheckpointError(f"unrecognised timm ViT key {key!r}")


def _rename(state_dict: dict[str, Tensor], rename: Callable[[str], str]) -> dict[str, Tensor]:
    out: dict[str, Tensor] = {}
    for key, value in state_dict.items():
        new = rename(key)
        if new in out:
            raise CheckpointError(f"two keys map to {new!r} (e.g. both mlp.0 and mlp.linear_1 present)")
        out[new] = value
    return out


def _pack_qv_bias(sd: dict[str, Tensor]) -> dict[str, Tensor]:
    """timm's Eva (DINOv3 `_qkvb`) keeps `attn.q_bias` and `attn.v_bias` and a key bias fixed
    at 0 outside its state dict; ours is one packed q;k;v bias (3D,) with that zero in place."""
    out = {k: v for k, v in sd.items() if not k.endswith((".attn.q_bias", ".attn.v_bias"))}
    for key, q in sd.items():
        if key.endswith(".attn.q_bias"):
            v = sd.get(key.replace(".q_bias", ".v_bias"))
            if v is None:
                raise CheckpointError(f"{key!r} without its v_bias")
            out[key.replace(".q_bias", ".qkv.bias")] = torch.cat([q, torch.zeros_like(q), v])  # (3D,)
    return out


def _timm_layout(sd: dict[str, Tensor]) -> dict[str, Tensor]:
    """A timm state dict (VisionTransformer or Eva) in our key names."""
    return _rename(_pack_qv_bias(sd), _rename_timm)


def _square_side(n: int) -> int | None:
    side = math.isqrt(max(n, 0))
    return side if n > 0 and side * side == n else None


def _patch_slots(length: int, prefix: int, pos_embed_prefix: bool | None) -> tuple[int, bool]:
    """(grid side, pos_embed_prefix) for a position embedding of `length` slots and `prefix`
    prefix tokens: with prefix slots the patches are length - prefix, without them all."""
    if prefix == 0:
        options = [(_square_side(length), True)]
    else:
        tried = (True, False) if pos_embed_prefix is None else (pos_embed_prefix,)
        options = [(_square_side(length - prefix * slots), slots) for slots in tried]
    fits = [(side, slots) for side, slots in options if side]
    if len(fits) != 1:
        problem = "fits both with and without prefix slots" if fits else "is not a square grid"
        raise CheckpointError(
            f"a position embedding of {length} slots for {prefix} prefix token(s) {problem}; "
            "pass config=ViTConfig(...) (non-square training grids are not supported)"
        )
    return fits[0]


def shape_fields(sd: dict[str, Tensor], pos_embed_prefix: bool | None = None) -> dict:
    """The config fields a state dict (in our key names) pins down by its tensor shapes and key
    names; `layer_scale` is True or False here (the weights hold the gammas, not their initial
    value). The head count, the pooling and the dropout rates are not among them. Without a
    `pos_embed` the model has rotary embeddings (nothing else in this ViT places the patches),
    and the training size is not in the weights either."""
    for key in ("patch_embed.proj.weight", "blocks.0.mlp.fc1.weight"):
        if key not in sd:
            raise CheckpointError(f"not a ViT state dict: {key!r} (or its foreign name) is missing")
    dim, in_channels, patch, _ = sd["patch_embed.proj.weight"].shape
    tokens = {
        "class_token": "cls_token" in sd,
        "distill_token": "dist_token" in sd,
        "register_tokens": sd["reg_token"].shape[1] if "reg_token" in sd else 0,
    }
    position: dict = {"pos_embed": "rope", "pos_embed_prefix": False}
    if "pos_embed" in sd:
        prefix = sum(int(v) for v in tokens.values())
        side, slots = _patch_slots(sd["pos_embed"].shape[1], prefix, pos_embed_prefix)
        position = {"image_size": side * patch, "pos_embed": "learned", "pos_embed_prefix": slots}
    return {
        **position,
        "patch_size": patch,
        "in_channels": in_channels,
        "num_classes": sd["head.weight"].shape[0] if "head.weight" in sd else 0,
        "dim": dim,
        "depth": len({k.split(".")[1] for k in sd if k.startswith("blocks.")}),
        "mlp_dim": sd["blocks.0.mlp.fc1.weight"].shape[0],
        **tokens,
        "final_norm": "norm.weight" in sd or "fc_norm.weight" in sd,
        "fc_norm": "fc_norm.weight" in sd,
        "layer_scale": "blocks.0.ls1.gamma" in sd,
        "qkv_bias": "blocks.0.attn.qkv.bias" in sd,
    }


# Fields a named configuration is re-read from the weights for: a fine-tuned copy of a named
# model keeps its architecture but may have another class count or training resolution.
_ADAPTABLE = ("num_classes", "image_size")


def _mismatches(named: ViTConfig, fields: dict, pool: str | None) -> list[str]:
    """How the weights' `fields` (and a known `pool`) differ from a named configuration."""
    wanted = {**fields, "pool": pool} if pool else fields  # the fields the weights (or library) pin down
    ours = {k: getattr(named, k) for k in wanted}
    ours["layer_scale"] = named.layer_scale is not None  # the weights tell only whether it is there
    return [f"{k} {v} (weights) vs {ours[k]}" for k, v in wanted.items() if k not in _ADAPTABLE and ours[k] != v]


def _fitting(fields: dict, pool: str | None) -> dict[str, ViTConfig]:
    """Named configurations the weights fit, with class count and resolution from the weights."""
    adapted = {k: fields[k] for k in _ADAPTABLE if k in fields}
    return {name: replace(c, **adapted) for name, c in CONFIGS.items() if not _mismatches(c, fields, pool)}


def _choose_config(fields: dict, name: str | None, pool: str | None) -> ViTConfig:
    """The config for weights that cannot tell their head count or pooling: the named one, or the
    one named configuration that fits; never a guess. Raises CheckpointError listing candidates."""
    how = (
        "choose one with name=NAME (vit.from_timm / vit.from_torchvision); for the command line, save the "
        "weights once as a checkpoint that records their configuration, "
        "vit.save_checkpoint(vit.from_timm(PATH, name=NAME), 'model.safetensors'), and pass --model model.safetensors"
    )
    if name is not None:
        if name not in CONFIGS:
            raise CheckpointError(f"unknown model {name!r}; choose one of {list_models()}")
        wrong = _mismatches(CONFIGS[name], fields, pool)
        if wrong:
            raise CheckpointError(f"the weights do not fit {name!r}: {'; '.join(wrong)}")
        return replace(CONFIGS[name], **{k: fields[k] for k in _ADAPTABLE if k in fields})
    fitting = _fitting(fields, pool)
    if len(set(fitting.values())) == 1:
        return next(iter(fitting.values()))
    if not fitting:
        raise CheckpointError(
            f"the weights fit no named configuration (vit.list_models()), and they cannot tell the head count "
            f"or the pooling: pass config=ViTConfig(...) stating them (weights have {fields})"
        )
    listed = ", ".join(f"{n} ({c.heads} heads, pool {c.pool!r})" for n, c in sorted(fitting.items()))
    raise CheckpointError(
        f"the weights cannot tell the head count or the pooling, and {len(fitting)} named configurations "
        f"fit them: {listed}; {how}"
    )


def config_from_state_dict(sd: dict[str, Tensor], *, name: str | None = None, pool: str | None = None) -> ViTConfig:
    """Our config for a state dict already in our key names: shape-given fields from the weights,
    the rest from the named configuration `name`, or from the only named configuration that
    fits (`pool`, when the source library fixes it, narrows the candidates)."""
    return _choose_config(shape_fields(sd), name, pool)


def _state_dict_of(source: WeightsSource) -> dict[str, Tensor]:
    if isinstance(source, nn.Module):
        return source.state_dict()
    if isinstance(source, (str, os.PathLike)):
        return load_state_dict_file(Path(source))
    return dict(source)


def _require_module(module: nn.Module, library: str, expected: str, attributes: tuple[str, ...]) -> None:
    """Refuse a module of another library (or kind) with a sentence, not an AttributeError."""
    origin = type(module).__module__.split(".")[0]
    if origin == library and all(hasattr(module, a) for a in attributes):
        return
    hint = {
        "transformers": "; use vit.from_transformers",
        "timm": "; use vit.from_timm",
        "torchvision": "; use vit.from_torchvision",
    }.get(origin, "")
    raise CheckpointError(f"expected {expected}, got {type(module).__name__} from {origin}{hint}")


def convert(
    sd: dict[str, Tensor], config: ViTConfig | None, name: str | None, pool: str | None, source: str
) -> VisionTransformer:
    if config is not None and name is not None:
        raise ValueError("pass config= or name=, not both")
    if config is None:
        config = config_from_state_dict(sd, name=name, pool=pool)
    return assign_weights(VisionTransformer(config), sd, source).eval()


def from_torchvision(
    source: WeightsSource, *, name: str | None = None, config: ViTConfig | None = None
) -> VisionTransformer:
    """Our ViT with the weights of a torchvision `VisionTransformer` (module, state dict or
    a `.pth`/`.safetensors` path). A module tells its head count; a bare state dict does not,
    so it loads only as the one named configuration that fits, or as the `name` or `config`
    given (see `vit.list_models()`)."""
    if isinstance(source, nn.Module):
        _require_module(source, "torchvision", "torchvision.models.VisionTransformer", ("encoder", "conv_proj"))
    sd = _rename(_state_dict_of(source), _rename_torchvision)
    if isinstance(source, nn.Module) and config is None and name is None:
        fields = shape_fields(sd) | {"layer_scale": None}  # torchvision's ViT has no LayerScale
        config = ViTConfig(**fields, heads=source.encoder.layers[0].self_attention.num_heads, pool="cls")
    return convert(sd, config, name, "cls", "torchvision weights")


def _eva_fields(module: nn.Module) -> dict:
    """The config fields a timm `Eva` (the class DINOv3 is built with) tells beyond its weights:
    its rotary embedding, which must be DINOv3's, and its LayerNorm eps. Eva's other variants
    (EVA-02's RoPE, SwiGLU, post-norm blocks, ...) are refused by name."""
    block = module.blocks[0]
    parts = (type(block).__name__, type(block.attn).__name__, type(block.mlp).__name__, type(block.mlp.act).__name__)
    if parts != ("EvaBlock", "EvaAttention", "Mlp", "GELU"):
        raise CheckpointError(
            f"timm Eva built of {'/'.join(parts)} is not supported (DINOv3's: EvaBlock/EvaAttention/Mlp/GELU)"
        )
    fields = {"norm_eps": block.norm1.eps}
    rope = module.rope
    if rope is None:
        return fields
    dinov3 = (
        type(rope).__name__ == "RotaryEmbeddingDinoV3"
        and module.pos_embed is None
        and rope.min_period is None
        and (rope.normalize_coords, rope.grid_offset, rope.grid_indexing, rope.rotate_half)
        == ("separate", 0, "ij", True)
    )
    if not dinov3:
        raise CheckpointError(
            f"timm Eva with {type(rope).__name__} is not supported: only DINOv3's rotary embedding is"
        )
    return fields | {"rope_temperature": rope.temperature}


def config_from_timm(module: nn.Module) -> ViTConfig:
    """Our config for a timm `VisionTransformer` (or DeiT's distilled one) or `Eva` (DINOv3):
    shapes from its weights, and what weights cannot tell (heads, pooling, prefix slots, the
    rotary embedding, the training size of a rotary model) from the module."""
    pool = {"token": "cls", "avg": "gap"}.get(module.global_pool)
    if pool is None:
        raise CheckpointError(f"timm global_pool={module.global_pool!r} is not supported (use 'token' or 'avg')")
    eva = type(module).__name__ == "Eva"
    extra = _eva_fields(module) if eva else {}
    sd = _timm_layout(module.state_dict())
    fields = shape_fields(sd, pos_embed_prefix=not getattr(module, "no_embed_class", False))
    fields.setdefault("image_size", module.patch_embed.img_size[0])  # rotary: the size it was built for
    layer_scale = None
    if fields.pop("layer_scale"):  # only the initial value: the gammas themselves are loaded
        layer_scale = module.blocks[0].init_values if eva else getattr(module.blocks[0].ls1, "init_values", 1e-5)
    heads = module.blocks[0].attn.num_heads
    return ViTConfig(**fields, **extra, layer_scale=layer_scale, heads=heads, pool=pool)


def from_timm(source: WeightsSource, *, name: str | None = None, config: ViTConfig | None = None) -> VisionTransformer:
    """Our ViT with the weights of a timm `VisionTransformer` (module, state dict or path):
    plain ViTs, DeiT (distilled too), DINO and DINOv2 (LayerScale, registers, position
    embeddings without prefix slots, no classifier), and timm's `Eva` for DINOv3 (2-D rotary
    embeddings, vit/rope.py). A module tells its head count and pooling;
    a bare state dict loads only as the one named configuration that fits, or as the `name` or
    `config` given. timm options this ViT does not implement (QK-norm, attention pooling, ...)
    are refused with a message naming them."""
    if isinstance(source, nn.Module):
        _require_module(source, "timm", "timm's VisionTransformer or Eva", ("blocks", "global_pool", "patch_embed"))
    if isinstance(source, nn.Module) and config is None and name is None:
        config = config_from_timm(source)
    sd = _timm_layout(_state_dict_of(source))
    return convert(sd, config, name, None, "timm weights")
