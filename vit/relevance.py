"""Class-specific relevance: which patches made the model predict a class.

Chefer, Gur & Wolf, "Generic Attention-model Explainability for Interpreting Bi-Modal and
Encoder-Decoder Transformers" (ICCV 2021), Eq. (5)-(6) for self-attention: starting from
R = I (each token explains itself), every layer's attention A (B, H, T, T) is weighted by
the gradient of the class score y_c with respect to it,

    Ā = E_h[(∇A ⊙ A)⁺]          (mean over heads of the positive part)
    R ← R + Ā · R

and the relevance of each patch is the query token's row of R. Unlike rollout, the
gradient makes it class-specific: heads and entries that lower y_c are dropped.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .analysis import Query, query_rows
from .clip import zero_shot
from .model import AttentionMaps, VisionTransformer


def relevance_from(maps: AttentionMaps, grads: list[Tensor] | tuple[Tensor, ...], query: Query = None) -> Tensor:
    """Eq. (5)-(6) from the attention maps and the gradients of the class score with respect
    to them (one (B, H, T, T) pair per layer): (B, gh, gw) relevance of each patch for `query`."""
    if len(grads) != len(maps):
        raise ValueError(f"{len(grads)} gradients for {len(maps)} layers of attention")
    batch, _, tokens, _ = maps[0].shape
    r = torch.eye(tokens, dtype=maps[0].dtype, device=maps[0].device).expand(batch, tokens, tokens)  # (B, T, T)
    for a, g in zip(maps, grads, strict=True):
        a_bar = (g * a).clamp(min=0).mean(dim=1)  # (B, T, T): Eq. (5)
        r = r + a_bar @ r  # Eq. (6)
    return query_rows(r, maps, query)


def class_relevance(
    model: VisionTransformer, images: Tensor, target: int | Tensor | None = None, query: Query = None
) -> tuple[Tensor, Tensor]:
    """(relevance (B, gh, gw), the target classes (B,)) for `images` (B, C, H, W). `target`
    is a class index for every image, one per image, or None for each image's predicted class."""
    if model.config.num_classes < 1:
        raise ValueError("this model has no classifier head, so there is no class score to explain")
    with torch.enable_grad():
        logits, maps = model(images, need_weights=True)
        if target is None:
            target = logits.argmax(dim=-1)
        target = torch.as_tensor(target, device=logits.device).expand(logits.shape[0])  # (B,)
        if not bool(((target >= 0) & (target < logits.shape[-1])).all()):
            raise ValueError(f"class index must be from 0 to {logits.shape[-1] - 1}, got {target.tolist()}")
        score = logits.gather(1, target[:, None]).sum()  # y_c, summed over the batch
        grads = torch.autograd.grad(score, list(maps))
    detached = maps.apply(Tensor.detach)  # keeps the prefix names: 'dist', or registers without CLS
    return relevance_from(detached, [g.detach() for g in grads], query), target


def similarity_relevance(
    model: VisionTransformer, images: Tensor, text_embeddings: Tensor, logit_scale: Tensor | float, query: Query = None
) -> tuple[Tensor, Tensor]:
    """CLIP's zero-shot logits (B, P) for `images` (B, C, H, W) against unit text embeddings
    (P, E), and for each prompt p the relevance (B, P, gh, gw) of Eq. (5)-(6) with y = the
    image-text logit exp(t)·cos(image, text_p): Chefer et al.'s target for CLIP (their CLIP
    notebook: one backward pass per text, from one forward pass of the image tower)."""
    if model.config.embed_dim < 1:
        raise ValueError("this model has no image-text projection (not a CLIP image tower), so no similarity")
    with torch.enable_grad():
        embeddings, maps = model(images, need_weights=True)
        logits = zero_shot(embeddings, text_embeddings.to(embeddings), logit_scale)  # (B, P)
        detached = maps.apply(Tensor.detach)
        relevance = []
        for p in range(logits.shape[1]):
            grads = torch.autograd.grad(logits[:, p].sum(), list(maps), retain_graph=p + 1 < logits.shape[1])
            relevance.append(relevance_from(detached, [g.detach() for g in grads], query))
    return logits.detach(), torch.stack(relevance, dim=1)  # (B, P), (B, P, gh, gw)
