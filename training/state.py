"""Optimizer state <-> flat tensors + JSON, so a resumable training state fits the ViT
core's safetensors checkpoint (tensors in the file, everything else in its JSON header)
and loading it never unpickles anything."""

from __future__ import annotations

import json

from torch import Tensor

OPTIMIZER_PREFIX = "optimizer/"  # extra tensor keys: optimizer/<param index>/<state name>


def _json_safe(value: object) -> object:
    """Tuples become lists (betas), a tensor learning rate (a capturable optimizer's) a number;
    JSON round-trips everything else an optimizer stores."""
    return json.loads(json.dumps(value, default=_number))


def _number(value: object) -> float:
    if isinstance(value, Tensor) and value.numel() == 1:
        return value.item()
    raise TypeError(f"an optimizer setting that is neither a number nor a one-element tensor: {value!r}")


def flatten_optimizer(state_dict: dict) -> tuple[dict[str, Tensor], dict]:
    """optimizer.state_dict() -> (tensors keyed 'optimizer/<i>/<name>', JSON-able rest)."""
    tensors: dict[str, Tensor] = {}
    scalars: dict[str, dict] = {}
    for index, param_state in state_dict["state"].items():
        for name, value in param_state.items():
            if isinstance(value, Tensor):
                tensors[f"{OPTIMIZER_PREFIX}{index}/{name}"] = value
            else:
                scalars.setdefault(str(index), {})[name] = value
    return tensors, {"param_groups": _json_safe(state_dict["param_groups"]), "scalars": _json_safe(scalars)}


def unflatten_optimizer(tensors: dict[str, Tensor], info: dict) -> dict:
    """The inverse of `flatten_optimizer`: a dict for optimizer.load_state_dict()."""
    state: dict[int, dict] = {}
    for key, value in tensors.items():
        if key.startswith(OPTIMIZER_PREFIX):
            index, name = key[len(OPTIMIZER_PREFIX) :].split("/", 1)
            state.setdefault(int(index), {})[name] = value
    for index, values in info["scalars"].items():
        state.setdefault(int(index), {}).update(values)
    return {"state": state, "param_groups": info["param_groups"]}
