"""A model the app has loaded: its weights, what they were trained on, and how it reads images.
Its own module so that the catalogue (which loads models) and the work done with a loaded model
(compute, explain, prompts) can both name it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import vit
from vit.analysis import position_embedding_similarity
from vit.clip import ClipText
from vit.messages import markdown_text
from vit.preprocessing import CIFAR10


@dataclass
class LoadedModel:
    key: str
    label: str
    model: vit.VisionTransformer
    meta: vit.ModelMeta
    untrained: bool = False
    catalog_id: int | None = None  # the ModelCatalog that loaded it (`ref_of`)
    text: ClipText | None = None  # a CLIP model's text tower (open_clip's): it answers prompts

    def __post_init__(self) -> None:
        # The explorer never trains a model. Weights that require a gradient make every forward
        # pass with autograd keep each linear layer's input for the weights' own gradients, which
        # relevance never asks for (vit.relevance differentiates from the input): CLIP B/16's words
        # at 224 × 768 kept 130 MiB more (issue 43).
        self.model.requires_grad_(False)

    @property
    def parameters(self) -> int:
        return sum(t.numel() for t in self.model.parameters())

    @property
    def preprocessing(self) -> vit.Preprocessing:
        return self.meta.preprocessing or CIFAR10

    def position_similarity(self) -> np.ndarray:
        """(gh, gw, gh, gw) cosine similarities of the position embeddings (numpy)."""
        return position_embedding_similarity(self.model).numpy()

    def describe(self) -> str:
        """Markdown: what this model is and how it preprocesses images. Its label is shown as
        written: an uploaded checkpoint's is the visitor's file name."""
        c, p = self.model.config, self.preprocessing
        gh, gw = c.grid
        params = self.parameters
        answers = f"{len(self.meta.class_names)} classes"
        if self.text is not None:
            answers = f"CLIP's image tower: no classes, it answers your words ('{self.text.template}')"
        lines = [
            f"**{markdown_text(self.label)}** — {params / 1e6:.2f} M parameters, "
            f"{c.depth} layers x {c.heads} heads, {answers}",
            f"trained at {c.image_size}x{c.image_size} px, patch {c.patch_size} px -> {gh}x{gw} grid, "
            f"{'CLS token' if c.class_token else 'no CLS token (average pooling)'}"
            + (f", {c.register_tokens} registers" if c.register_tokens else "")
            + (", rotary positions (computed for any grid)" if c.pos_embed == "rope" else ""),
            f"preprocessing: resize shorter side to {p.resize_size} ({p.interpolation}), centre crop {p.crop_size}, "
            f"mean {tuple(round(m, 3) for m in p.mean)}, std {tuple(round(s, 3) for s in p.std)}",
        ]
        if self.untrained:
            lines.insert(0, "⚠️ **untrained weights** — the bundled model file is missing, so these maps are noise.")
        return "\n\n".join(lines)
