"""Binding module-level handlers to the tab they serve."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import gradio as gr


def bound(fn: Callable, *context: Any) -> Callable:
    """`fn` with its leading arguments (the tab's view, the model catalogue, ...) fixed.

    Unlike `functools.partial`, the result is a function whose signature and annotations
    are those of `fn` without the context: Gradio reads them to name the API parameters
    and to spot the parameters it fills in itself (e.g. `evt: gr.SelectData`), and
    `typing.get_type_hints` does not look inside a partial."""

    if inspect.isgeneratorfunction(fn):  # Gradio streams a handler's updates only if it is one

        @functools.wraps(fn)
        def handler(*args: Any, **kwargs: Any) -> Any:
            yield from fn(*context, *args, **kwargs)

    else:

        @functools.wraps(fn)
        def handler(*args: Any, **kwargs: Any) -> Any:
            return fn(*context, *args, **kwargs)

    signature = inspect.signature(fn)
    remaining = list(signature.parameters.values())[len(context) :]
    handler.__signature__ = signature.replace(parameters=remaining)
    names = {p.name for p in remaining} | {"return"}
    handler.__annotations__ = {k: v for k, v in fn.__annotations__.items() if k in names}
    return handler


class ComponentView:
    """Base of a tab's frozen dataclass of components: read them by name for an event's
    inputs and outputs, and build a handler's result by name."""

    def pick(self, *names: str) -> list[gr.components.Component]:
        """The components called `names`, in that order (an event's inputs or outputs)."""
        return [getattr(self, name) for name in names]

    def update(self, **values: Any) -> dict[gr.components.Component, Any]:
        """A handler's result, {component: value}, from values given by component name."""
        return {getattr(self, name): value for name, value in values.items()}
