"""CLIP (Radford et al. 2021, "Learning Transferable Visual Models From Natural Language
Supervision"): its image tower as our ViT, its text tower and tokenizer from open_clip.

The image tower is a plain pre-norm ViT with three additions our config names (`pre_norm`,
`act="quick_gelu"`, `embed_dim`; see vit/model.py), so its weights are converted from
open_clip's layout (`visual.*`) like timm's and torchvision's, and every map of the app works on
it. The text tower is open_clip's own module, tokenizer and all, never re-implemented: open_clip
is imported lazily, only here (docs/architecture.md).

A zero-shot score is open_clip's: logit = exp(logit_scale) · cos(image embedding, text embedding),
one per prompt, and a softmax over the prompts gives their probabilities (CLIP, Sec. 3.1.2).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .checkpoint import CheckpointError, ModelMeta, assign_weights, load_state_dict_file
from .hub import Progress, download
from .model import VisionTransformer, ViTConfig
from .preprocessing import Preprocessing

OPEN_CLIP_WEIGHTS = "open_clip_model.safetensors"  # open_clip's HF_SAFE_WEIGHTS_NAME: both towers
TEMPLATE = "a photo of {}."  # CLIP's prompt template for ImageNet (Radford et al. 2021, Sec. 3.1.4)

# open_clip's vision towers (its model_configs/*.json: width, layers, patch, head width 64, MLP
# ratio 4, LayerNorm eps 1e-5) as our configs. OpenAI's weights need QuickGELU ("-quickgelu").
_SIZES = {
    "ViT-B-16": dict(patch_size=16, dim=768, depth=12, heads=12, mlp_dim=3072, embed_dim=512),
    "ViT-B-32": dict(patch_size=32, dim=768, depth=12, heads=12, mlp_dim=3072, embed_dim=512),
    "ViT-L-14": dict(patch_size=14, dim=1024, depth=24, heads=16, mlp_dim=4096, embed_dim=768),
}
_CLIP_TOWER = dict(num_classes=0, pre_norm=True, patch_bias=False, norm_eps=1e-5)
CLIP_CONFIGS: dict[str, ViTConfig] = {
    f"{name}{suffix}": ViTConfig(**size, **_CLIP_TOWER, act=act)
    for name, size in _SIZES.items()
    for suffix, act in (("", "gelu"), ("-quickgelu", "quick_gelu"))
}

_TOP = {
    "conv1.weight": "patch_embed.proj.weight",
    "ln_pre.weight": "norm_pre.weight",
    "ln_pre.bias": "norm_pre.bias",
    "ln_post.weight": "norm.weight",
    "ln_post.bias": "norm.bias",
}
_BLOCK = {
    "ln_1": "norm1",
    "attn.in_proj_weight": "attn.qkv.weight",  # packed q;k;v (nn.MultiheadAttention), same order as ours
    "attn.in_proj_bias": "attn.qkv.bias",
    "attn.out_proj": "attn.proj",
    "ln_2": "norm2",
    "mlp.c_fc": "mlp.fc1",
    "mlp.c_proj": "mlp.fc2",
}


def _rename_visual(key: str, value: Tensor) -> tuple[str, Tensor]:
    """One open_clip `visual.*` tensor (prefix removed) in our name and layout."""
    if key == "class_embedding":
        return "cls_token", value.reshape(1, 1, -1)  # (D,) -> (1, 1, D)
    if key == "positional_embedding":
        return "pos_embed", value.unsqueeze(0)  # (1 + N, D) -> (1, 1 + N, D)
    if key == "proj":
        return "proj.weight", value.t()  # x @ proj, (D, E), is a Linear with weight (E, D)
    if key in _TOP:
        return _TOP[key], value
    m = re.fullmatch(r"transformer\.resblocks\.(\d+)\.(.+)", key)
    if m:
        block, rest = m.groups()
        for theirs, ours in _BLOCK.items():
            if rest == theirs or rest.startswith(theirs + "."):
                return f"blocks.{block}.{ours}{rest[len(theirs) :]}", value
    raise CheckpointError(f"open_clip image-tower key 'visual.{key}' is not one this ViT implements")


def visual_state_dict(state_dict: dict[str, Tensor]) -> dict[str, Tensor]:
    """The image tower of an open_clip CLIP state dict (its `visual.*` keys) in our names."""
    visual = {k.removeprefix("visual."): v for k, v in state_dict.items() if k.startswith("visual.")}
    if not visual:
        raise CheckpointError("not an open_clip CLIP state dict: it has no 'visual.*' keys")
    return dict(_rename_visual(k, v) for k, v in visual.items())


def from_open_clip(
    source: nn.Module | dict[str, Tensor], name: str | None = None, config: ViTConfig | None = None
) -> VisionTransformer:
    """Our ViT with the image tower of an open_clip CLIP (module or state dict) whose
    architecture is open_clip's `name` (a key of CLIP_CONFIGS, e.g. "ViT-B-16-quickgelu"), or
    the `config` given (pre_norm, patch_bias=False, norm_eps 1e-5 and embed_dim, as CLIP_CONFIGS')."""
    if (name is None) == (config is None):
        raise ValueError("pass name= or config=, one of them")
    if config is None and name not in CLIP_CONFIGS:
        raise CheckpointError(f"unknown CLIP model {name!r}; choose one of {sorted(CLIP_CONFIGS)}")
    sd = source.state_dict() if isinstance(source, nn.Module) else source
    model = VisionTransformer(config or CLIP_CONFIGS[name])
    return assign_weights(model, visual_state_dict(sd), "open_clip weights").eval()


def as_typed(template: str, prompt: str) -> bool:
    """Whether `prompt` already reads as the template's sentence: it starts with the template's
    own opening ("a photo of a cat" for "a photo of {}."). Templated again it read "a photo of a
    photo of a cat." (issue 61), a sentence CLIP never saw in training."""
    opening = template.partition("{}")[0].lower()
    return bool(opening.strip()) and (prompt.lower() + " ").startswith(opening)


def sentence(template: str, prompt: str) -> str:
    """The text the tower reads for `prompt`: put into `template`, unless it reads as its sentence
    already (`as_typed`); then as typed, ended as the template ends ("a photo of a cat.")."""
    if not as_typed(template, prompt):
        return template.format(prompt)
    ending = template.partition("{}")[2]
    return prompt if prompt.endswith(ending) else prompt + ending


@dataclass
class ClipText:
    """open_clip's text tower (its CLIP module without the image tower) and tokenizer."""

    model: nn.Module  # open_clip.CLIP with `visual` removed
    tokenizer: object  # open_clip.get_tokenizer(name): prompts -> (P, 77) token ids
    template: str = TEMPLATE

    @property
    def logit_scale(self) -> Tensor:
        """exp(logit_scale): CLIP's learned temperature (100 for OpenAI's weights)."""
        return self.model.logit_scale.detach().exp()

    @property
    def context_length(self) -> int:
        """Tokens the text tower reads (77 for CLIP): the tokenizer cuts every text to them."""
        return self.tokenizer.context_length

    def reads_whole(self, prompt: str) -> bool:
        """Whether all of `prompt`'s sentence (`sentence`: put into `template`) fits the context: open_clip's
        SimpleTokenizer keeps [start] + its BPE tokens (`encode`) + [end] up to `context_length`
        and cuts the rest without a word (the end token kept last): forty 🦜 take 86."""
        return len(self.tokenizer.encode(sentence(self.template, prompt))) + 2 <= self.context_length

    def embed(self, prompts: list[str]) -> Tensor:
        """(P, E) unit-length text embeddings of the prompts, each made a `sentence` first, on
        the device of `model` (explorer/compute.py places a copy on the GPU)."""
        tokens = self.tokenizer([sentence(self.template, p) for p in prompts])  # (P, context)
        with torch.no_grad():
            return self.model.encode_text(tokens.to(self.model.logit_scale.device), normalize=True)


class _WeightsFollow(logging.Filter):
    """Drops open_clip's "Model initialized randomly" warning of create_model(pretrained=None):
    the weights are loaded right after it, strictly, so in a server's log it would only mislead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("No pretrained weights loaded for model")


def text_tower(state_dict: dict[str, Tensor], name: str) -> ClipText:
    """open_clip's text tower for architecture `name` with the non-`visual.*` weights of `state_dict`."""
    import open_clip  # lazily: open_clip imports timm; only a CLIP model needs it

    quiet, root = _WeightsFollow(), logging.getLogger()  # open_clip warns through the root logger
    root.addFilter(quiet)
    try:
        model = open_clip.create_model(name, pretrained=None)
    finally:
        root.removeFilter(quiet)
    del model.visual  # the image tower is ours (from_open_clip): no second copy in memory
    text = {k: v for k, v in state_dict.items() if not k.startswith("visual.")}
    model.load_state_dict(text, strict=True)
    return ClipText(model.eval(), open_clip.get_tokenizer(name))


def zero_shot(image_embeddings: Tensor, text_embeddings: Tensor, logit_scale: Tensor | float) -> Tensor:
    """(B, P) logits exp(t)·cos(image, text) of each image (B, E) for each prompt (P, E)
    (CLIP, Fig. 3); a softmax over P gives the zero-shot probabilities."""
    return logit_scale * F.normalize(image_embeddings, dim=-1) @ F.normalize(text_embeddings, dim=-1).T


def load_clip(
    repo: str, name: str, progress: Progress | None = None, text: bool = True
) -> tuple[VisionTransformer, ModelMeta, ClipText | None]:
    """The CLIP in Hub repository `repo` (open_clip's architecture `name`) from its
    `open_clip_model.safetensors`, downloaded by `vit.hub`: our image tower, its metadata
    (open_clip's preprocessing for OpenAI's weights, no class names) and, with `text`, open_clip's
    text tower. Raises PretrainedUnavailable (vit.hub) or CheckpointError."""
    import open_clip

    sd = load_state_dict_file(download(repo, [OPEN_CLIP_WEIGHTS], progress)[OPEN_CLIP_WEIGHTS])
    model = from_open_clip(sd, name)
    cfg = open_clip.get_pretrained_cfg(name.removesuffix("-quickgelu"), "openai")
    size = model.config.image_size  # resize the shorter side to the crop ('shortest'), then centre-crop
    pre = Preprocessing(size, size, tuple(cfg["mean"]), tuple(cfg["std"]), cfg["interpolation"])
    info = {"source": f"open_clip weights from the Hub: {repo}", "prompt_template": TEMPLATE}
    return model, ModelMeta([], pre, info), text_tower(sd, name) if text else None
