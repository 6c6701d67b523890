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
    return relevance_of_terms([layer_term(a, g) for a, g in zip(maps, grads, strict=True)], maps, query)


def layer_term(a: Tensor, g: Tensor) -> Tensor:
    """Ā = E_h[(∇A ⊙ A)⁺] of one layer, Eq. (5): (B, T, T) from its maps and their gradient (B, H, T, T)."""
    return (g * a).clamp(min=0).mean(dim=1)


def relevance_of_terms(terms: list[Tensor], maps: AttentionMaps, query: Query = None) -> Tensor:
    """Eq. (6) over the layers' Ā (first layer first): R ← R + Ā · R from R = I, read for `query`."""
    batch, _, tokens, _ = maps[0].shape
    r = torch.eye(tokens, dtype=maps[0].dtype, device=maps[0].device).expand(batch, tokens, tokens)  # (B, T, T)
    for a_bar in terms:
        r = r + a_bar @ r
    return query_rows(r, maps, query)


def grad_leaf(images: Tensor) -> Tensor:
    """`images` as a leaf that requires a gradient, so the forward pass builds a graph to the maps
    whether or not the model's weights require one (the explorer's do not: explorer/loaded.py)."""
    return images.detach().requires_grad_()


def class_relevance(
    model: VisionTransformer, images: Tensor, target: int | Tensor | None = None, query: Query = None
) -> tuple[Tensor, Tensor]:
    """(relevance (B, gh, gw), the target classes (B,)) for `images` (B, C, H, W). `target`
    is a class index for every image, one per image, or None for each image's predicted class."""
    if model.config.num_classes < 1:
        raise ValueError("this model has no classifier head, so there is no class score to explain")
    with torch.enable_grad():
        logits, maps = model(grad_leaf(images), need_weights=True)
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
        leaf = grad_leaf(images)
        embeddings, maps = model(leaf, need_weights=True)
        logits = zero_shot(embeddings, text_embeddings.to(embeddings), logit_scale)  # (B, P)
        detached = maps.apply(Tensor.detach)
        relevance = [
            _one_target(maps, detached, leaf, logits[:, p].sum(), p + 1 < logits.shape[1], query)
            for p in range(logits.shape[1])
        ]
    return logits.detach(), torch.stack(relevance, dim=1)  # (B, P), (B, P, gh, gw)


def _one_target(
    maps: AttentionMaps, detached: AttentionMaps, leaf: Tensor, target: Tensor, retain: bool, query: Query
) -> Tensor:
    """Eq. (5)-(6) for one target's backward pass, each layer's Ā taken as its gradient arrives (a
    hook on its maps), so a layer's (B, H, T, T) gradient is freed before the next layer's is made:
    returning every layer's at once (autograd.grad of the maps) held them all, a second copy of the
    maps, and the previous word's until the next word's pass ended (issue 43: CLIP B/16 at 224 × 768,
    8 words, +1,272 MiB). The backward pass runs to `leaf`, the input, whose own gradient is dropped."""
    terms: dict[int, Tensor] = {}
    hooks = [
        m.register_hook(lambda g, i=i: terms.__setitem__(i, layer_term(detached[i], g.detach())))
        for i, m in enumerate(maps)
    ]
    try:
        torch.autograd.grad(target, leaf, retain_graph=retain)
    finally:
        for hook in hooks:
            hook.remove()
    return relevance_of_terms([terms[i] for i in range(len(maps))], detached, query)
