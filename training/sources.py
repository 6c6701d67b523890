"""The model to train: a fresh preset, named pretrained weights, or a weights file, adapted
to the data set's classes and the training resolution."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from torch import Tensor

import vit
from vit.checkpoint import assign_weights, is_checkpoint


def check_model_spec(spec: str) -> None:
    """Raise ValueError unless `spec` is a preset name, a pretrained name or an existing file."""
    if spec in vit.list_models() or spec in vit.list_pretrained() or Path(spec).is_file():
        return
    raise ValueError(
        f"unknown model {spec!r}: not a preset ({', '.join(vit.list_models())}), "
        f"not a pretrained name ({', '.join(vit.list_pretrained())}) and not a file"
    )


def load_source(spec: str) -> tuple[vit.VisionTransformer, vit.Preprocessing | None]:
    """(model, its preprocessing or None) for a preset name (fresh weights), a
    `vit.load_pretrained` name, one of our checkpoints, or a torchvision/timm weights file."""
    check_model_spec(spec)
    if spec in vit.list_models():
        return vit.create_model(spec), None
    if spec in vit.list_pretrained():
        model, meta = vit.load_pretrained(spec)
        return model, meta.preprocessing
    path = Path(spec)
    if is_checkpoint(path):  # ours, intact or not: its own checks decide, never a retry as foreign weights
        model, meta = vit.load_checkpoint(path)
        return model, meta.preprocessing
    state_dict = vit.load_state_dict_file(path)  # refuses our format, so no path skips the hash
    convert = vit.from_torchvision if any(k.startswith("encoder.") for k in state_dict) else vit.from_timm
    return convert(state_dict), None


def adapt(
    model: vit.VisionTransformer, num_classes: int, image_size: int, drop_path: float | None
) -> vit.VisionTransformer:
    """A copy of `model` for `num_classes` at `image_size`: the head is re-initialised when
    the class count changes, position embeddings are resampled when the grid changes."""
    old = model.config
    new = replace(
        old,
        num_classes=num_classes,
        image_size=image_size,
        drop_path=old.drop_path if drop_path is None else drop_path,
    )
    if new == old:
        return model
    adapted = vit.VisionTransformer(new)
    weights: dict[str, Tensor] = dict(model.state_dict())
    if num_classes != old.num_classes:  # fresh heads: the classifier and, for DeiT, the distillation head
        fresh = adapted.state_dict()
        weights = {k: v for k, v in weights.items() if not k.startswith("head")}
        weights |= {k: v.detach().clone() for k, v in fresh.items() if k.startswith("head")}
    if new.grid != old.grid and model.pos_embed is not None:  # rotary embeddings have no weights to resample
        weights["pos_embed"] = model.position_embedding(new.grid).detach()  # (1, prefix + gh'*gw', D)
    return assign_weights(adapted, weights, "adapted model")
