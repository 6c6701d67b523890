"""Read-outs of and interventions on a running model, for the app's lessons.

- `token_norms`: the L2 norm of every token after a chosen block. Darcet et al., "Vision
  Transformers Need Registers" (2023), Fig. 3: large models trained long (DINOv2) grow a few
  patch tokens with norms far above the rest, which soak up the CLS token's attention;
  register tokens give that computation a place to go.
- `heads_off`: switch attention heads off by zeroing their output before the output
  projection W_O (Michel, Levy & Neubig, "Are Sixteen Heads Really Better than One?", 2019).

The hooks act only on the calling thread's forward passes, so a server can run them on a model
that other requests use at the same time.
- `head_importance` (and `head_importance_steps`, one pass at a time): each head's effect on
  the predicted class, switched off one at a time.
- `logit_lens`: what the classifier would answer after each block (docs/analysis.md).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import torch
from torch import Tensor

from .model import VisionTransformer

Head = tuple[int, int]  # (layer, head), 0-based


def _check_layer(model: VisionTransformer, layer: int) -> None:
    depth = model.config.depth
    if not 0 <= layer < depth:
        raise ValueError(f"layer index must be from 0 to {depth - 1}, got {layer}")


def token_norms(model: VisionTransformer, images: Tensor, layer: int) -> Tensor:
    """(B, T) L2 norms of the tokens leaving block `layer` (0-based), prefix tokens first."""
    _check_layer(model, layer)
    with torch.inference_mode():
        return model.hidden_states(images, upto=layer)[layer].float().norm(dim=-1)  # (B, T, D) -> (B, T)


def logit_lens(model: VisionTransformer, images: Tensor) -> Tensor:
    """(B, L, classes) class probabilities read after every block: the tokens leaving block l
    go through the model's own final norm and classifier head (`forward_head`: the CLS token,
    or the mean patch token of a GAP model), then a softmax. The "logit lens" (nostalgebraist
    2020, for GPT-2; ViT-Prisma's demos for ViTs). Only the last block's reading was trained:
    the others show what the head would answer, not what the model computed for them. The last
    entry is the model's own prediction. Raises ValueError for a model without a classifier."""
    if model.config.num_classes < 1:
        raise ValueError("this model has no classifier head, so there is no class to read after each layer")
    with torch.inference_mode():
        states = model.hidden_states(images)
        return torch.stack([model.forward_head(model.norm(x)).float().softmax(-1) for x in states], dim=1)


@contextmanager
def heads_off(model: VisionTransformer, heads: Iterable[Head]) -> Iterator[None]:
    """Within the block, the given (layer, head) pairs contribute nothing: their slice of the
    concatenated head outputs is zeroed before the projection W_O."""
    by_layer: dict[int, list[int]] = {}
    for layer, head in heads:
        _check_layer(model, layer)
        if not 0 <= head < model.config.heads:
            raise ValueError(f"head index must be from 0 to {model.config.heads - 1}, got {head}")
        by_layer.setdefault(layer, []).append(head)
    width = model.config.dim // model.config.heads
    me = threading.get_ident()  # only this thread's forward passes: others may share the model meanwhile

    def zero(off: list[int]):
        def hook(_module, args):
            if threading.get_ident() != me:
                return None
            x = args[0].clone()  # (B, T, D) = heads concatenated, head h in columns [h*width, (h+1)*width)
            for h in off:
                x[..., h * width : (h + 1) * width] = 0
            return (x,)

        return hook

    handles = [model.blocks[layer].attn.proj.register_forward_pre_hook(zero(off)) for layer, off in by_layer.items()]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def head_importance(model: VisionTransformer, image: Tensor) -> tuple[int, Tensor]:
    """(predicted class, (L, H) drop of its probability when each head alone is switched off)
    for one image (1, C, H, W). Positive: the head supported the prediction."""
    *_, (predicted, drops, _) = head_importance_steps(model, image)  # the last step: every head done
    return predicted, drops


def head_importance_steps(model: VisionTransformer, image: Tensor) -> Iterator[tuple[int, Tensor, int]]:
    """`head_importance` one forward pass at a time: after each head, (predicted class, the
    (L, H) drops so far, heads done). A caller stops between passes by no longer iterating
    (a time budget, a visitor who left)."""
    with torch.inference_mode():
        probs = model(image).softmax(-1)[0]
    predicted = int(probs.argmax())
    drops = torch.zeros(model.config.depth, model.config.heads)
    for layer in range(model.config.depth):
        for head in range(model.config.heads):
            with torch.inference_mode(), heads_off(model, [(layer, head)]):
                drops[layer, head] = probs[predicted] - model(image).softmax(-1)[0, predicted]
            yield predicted, drops, layer * model.config.heads + head + 1
