"""Optimizer state <-> flat tensors + JSON: a round trip restores AdamW exactly."""

from __future__ import annotations

import json

import torch

from training.state import OPTIMIZER_PREFIX, flatten_optimizer, unflatten_optimizer


def _stepped_adamw() -> tuple[torch.nn.Module, torch.optim.AdamW]:
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1, betas=(0.8, 0.9))
    for _ in range(3):
        model(torch.randn(4, 3)).square().sum().backward()
        optimizer.step()
    return model, optimizer


def test_flattened_state_is_tensors_plus_json_and_restores_the_optimizer():
    model, optimizer = _stepped_adamw()
    tensors, rest = flatten_optimizer(optimizer.state_dict())
    assert all(k.startswith(OPTIMIZER_PREFIX) for k in tensors) and f"{OPTIMIZER_PREFIX}0/exp_avg" in tensors
    rest = json.loads(json.dumps(rest))  # what the checkpoint header stores
    fresh = torch.optim.AdamW(model.parameters(), lr=1.0)
    fresh.load_state_dict(unflatten_optimizer(tensors, rest))
    assert fresh.param_groups[0]["lr"] == 0.1 and tuple(fresh.param_groups[0]["betas"]) == (0.8, 0.9)
    for index, state in optimizer.state_dict()["state"].items():
        for name, value in state.items():
            # A copy through the file, no arithmetic: bit-identical, or resuming would not continue the run.
            torch.testing.assert_close(fresh.state_dict()["state"][index][name], value, rtol=0, atol=0)
