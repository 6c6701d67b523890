"""A whole training step replayed as one CUDA graph.

Why: a CIFAR-size ViT's step is thousands of small kernels, and launching them from Python cost
about 9.4 ms per step on an H100 whatever the batch (docs/benchmarks-training.md), several times
the GPU's own arithmetic. A CUDA graph records the step's kernels once and replays them with one
launch (PyTorch's "whole network capture", torch.cuda.graphs; the recipe in the CUDA semantics
notes: warm up on a side stream, capture with the gradients unset, replay on static inputs).

What a replay needs: every input in the same memory (`CapturedStep` copies the batch into its
own buffers), every number that changes per step a tensor (the learning rate: AdamW's
`capturable=True` with a tensor `lr`, see training.optim), no host synchronisation inside, and
the same shapes (the trainer drops an epoch's last, smaller batch when graphed). The random draws
of the augmentation stay eager, from the epoch's own generator, so a graphed run draws the same
augmentation as an eager one and resumes exactly; dropout and stochastic depth use the default
CUDA generator, which graphs advance on every replay.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

WARMUP_STEPS = 3  # eager steps on a side stream before the capture (cuBLAS, the allocator, optimizer state)


class CapturedStep:
    """`step(*inputs) -> Tensor`, recorded once as a CUDA graph at the first call and replayed after.

    The first call runs `WARMUP_STEPS` eager steps and the capture on its inputs, then puts the
    model's weights, the optimizer's state and the CUDA generator back as they were, and replays
    once: every call, the first included, is one step. The returned tensor is the graph's own
    output buffer, overwritten by the next call: read or copy it before then.
    """

    def __init__(self, step: Callable[..., Tensor], model: nn.Module, optimizer: torch.optim.Optimizer):
        assert all(group.get("capturable") for group in optimizer.param_groups), "the optimizer must be capturable"
        self.step, self.model, self.optimizer = step, model, optimizer
        self.graph: torch.cuda.CUDAGraph | None = None
        self.inputs: tuple[Tensor, ...] = ()
        self.output: Tensor | None = None

    def __call__(self, *inputs: Tensor) -> Tensor:
        if self.graph is None:
            self._capture(inputs)
        assert len(inputs) == len(self.inputs), f"{len(inputs)} inputs, captured with {len(self.inputs)}"
        for static, new in zip(self.inputs, inputs, strict=True):
            assert static.shape == new.shape, f"captured for {tuple(static.shape)}, given {tuple(new.shape)}"
            static.copy_(new, non_blocking=True)
        self.graph.replay()
        return self.output

    def _capture(self, inputs: tuple[Tensor, ...]) -> None:
        saved = self._state()
        self.inputs = tuple(t.clone() for t in inputs)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP_STEPS):
                self.step(*self.inputs)
        torch.cuda.current_stream().wait_stream(side)
        self.optimizer.zero_grad(set_to_none=True)  # the graph allocates the gradients it writes
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.output = self.step(*self.inputs)
        self._restore(saved)

    def _state(self) -> tuple[list[Tensor], dict[nn.Parameter, dict[str, Tensor]], Tensor]:
        """Copies of what the warm-up and the capture change: weights, optimizer state, CUDA RNG."""
        weights = [t.detach().clone() for t in self.model.state_dict().values()]
        optim = {
            p: {k: v.clone() for k, v in s.items() if isinstance(v, Tensor)} for p, s in self.optimizer.state.items()
        }
        return weights, optim, torch.cuda.get_rng_state()

    @torch.no_grad()
    def _restore(self, saved: tuple[list[Tensor], dict[nn.Parameter, dict[str, Tensor]], Tensor]) -> None:
        """Put `_state` back in place (`copy_`: the graph holds these tensors' addresses); optimizer
        state that did not exist before the warm-up (a fresh run's moments and step) becomes 0."""
        weights, optim, rng = saved
        for tensor, value in zip(self.model.state_dict().values(), weights, strict=True):
            tensor.copy_(value)
        for p, state in self.optimizer.state.items():
            for name, value in state.items():
                if isinstance(value, Tensor):
                    value.copy_(optim[p][name]) if name in optim.get(p, {}) else value.zero_()
        torch.cuda.set_rng_state(rng)
