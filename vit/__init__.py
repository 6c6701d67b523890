"""A from-scratch Vision Transformer whose blocks return their attention, plus the tools
to load foreign weights, save safe checkpoints and analyse attention.

    import vit
    model = vit.create_model("vit_b_16", num_classes=1000)
    logits = model(images)                                # fast path: fused SDPA, no maps
    logits, attn = model(images, need_weights=True)       # attn: L x (B, heads, T, T), attn.grid = (gh, gw)
"""

from .checkpoint import CheckpointError, ModelMeta, load_checkpoint, load_state_dict_file, save_checkpoint
from .hub import Gated, NoInternet, NotOnHub, PretrainedUnavailable, can_download, offline_by_setting
from .model import (
    AttentionMaps,
    VisionTransformer,
    ViTConfig,
    create_model,
    list_models,
    vit_b_16,
    vit_b_32,
    vit_h_14,
    vit_l_16,
    vit_l_32,
)
from .preprocessing import Preprocessing
from .pretrained import (
    is_pretrained_cached,
    list_pretrained,
    load_pretrained,
    pretrained_files,
    pretrained_repo,
)
from .transformers_format import from_transformers
from .weights import from_timm, from_torchvision

__all__ = [
    "AttentionMaps",
    "CheckpointError",
    "Gated",
    "ModelMeta",
    "NoInternet",
    "NotOnHub",
    "Preprocessing",
    "PretrainedUnavailable",
    "ViTConfig",
    "VisionTransformer",
    "can_download",
    "create_model",
    "from_timm",
    "from_torchvision",
    "from_transformers",
    "is_pretrained_cached",
    "list_models",
    "list_pretrained",
    "load_checkpoint",
    "load_pretrained",
    "load_state_dict_file",
    "offline_by_setting",
    "pretrained_files",
    "pretrained_repo",
    "save_checkpoint",
    "vit_b_16",
    "vit_b_32",
    "vit_h_14",
    "vit_l_16",
    "vit_l_32",
]
