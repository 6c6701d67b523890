"""Binding module-level handlers to the tab they serve.

A handler takes plain values and returns what changes by field name, `{field: value}`; `bound`
turns it into the function Gradio calls: its context (the server's, `ui.common.Server`; a training job)
fixed, values made of several controls (a `MapStyle`) parsed from those controls, and its
result applied to the tab's components, `{component: value}`. A tab's components are a
`TabComponents` (`ExploreTab`, ...), called `tab` where they are wired; a "view" is a picture
the Explore tab shows (docs/architecture.md, "Names").
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, get_type_hints

import gradio as gr

from . import concurrency


@dataclass(frozen=True)
class Controls:
    """Several controls that a handler takes as one value: a handler parameter annotated
    `kind` is, on the API page, the `parameters` (each control by its own name), and the
    handler gets `parse(*their values)`."""

    kind: type
    parameters: tuple[inspect.Parameter, ...]
    parse: Callable[..., Any]

    @property
    def names(self) -> tuple[str, ...]:
        """The controls' names, in order: the components an event passes for this value."""
        return tuple(p.name for p in self.parameters)

    def leaves(self, known: Sequence[Controls]) -> tuple[str, ...]:
        """The names of the controls this value is made of, those of a value made of `known` ones
        in turn theirs (a `Drawing`: its fusion's, its style's, its showing's), as the API page names them."""
        by_kind = {c.kind: c for c in known}
        return tuple(leaf.name for p in self.parameters for leaf in _controls_of(p, by_kind))

    @classmethod
    def of(cls, kind: type, parse: Callable[..., Any]) -> Controls:
        """The controls `parse` reads, as its signature names them (their hints and defaults)."""
        hints = get_type_hints(parse)
        parameters = tuple(p.replace(annotation=hints[p.name]) for p in inspect.signature(parse).parameters.values())
        return cls(kind, parameters, parse)


class TabComponents:
    """Base of a tab's frozen dataclass of components: read them by name for an event's
    inputs and outputs, and turn a handler's result by field name into Gradio's. `controls`:
    the values made of several of the tab's controls that its handlers take."""

    controls: ClassVar[tuple[Controls, ...]] = ()

    def bind(self, fn: Callable, *context: Any, retyped: dict[str, type] | None = None) -> Callable:
        """`fn` bound (`bound`) to this tab and its controls (`retyped` as there)."""
        return bound(fn, *context, tab=self, controls=self.controls, retyped=retyped)

    def pick(self, *names: str) -> list[gr.components.Component]:
        """The components called `names`, in that order (an event's outputs)."""
        return [getattr(self, name) for name in names]

    def inputs(self, handler: Callable, **fields: str) -> list[gr.components.Component]:
        """A bound handler's inputs, read from its signature: the component of each parameter
        by its name, but those Gradio fills in itself (a `gr.Request`, an event's data). `fields`:
        the field that answers a parameter named as no field is, where two of the tab's controls
        are one API parameter in two events (each lesson's picker is `model_key`). A parameter no
        component answers is a mistake in the wiring, raised when the page is built."""
        names = [p.name for p in inspect.signature(handler).parameters.values() if not _filled_by_gradio(p)]
        unknown = set(fields) - set(names)
        names = [fields.get(name, name) for name in names]
        missing = [name for name in names if not isinstance(getattr(self, name, None), gr.components.Component)]
        if missing or unknown:
            raise TypeError(
                f"{handler.__name__}: no component of {type(self).__name__} is called {', '.join(missing)}"
                if missing
                else f"{handler.__name__} has no parameter {', '.join(sorted(unknown))}"
            )
        return self.pick(*names)

    def event(
        self, fn: Callable, *context: Any, retyped: dict[str, type] | None = None, **fields: str
    ) -> dict[str, Any]:
        """An event's function and inputs: `fn` bound to this tab (`bind`, `retyped` as in `bound`) and
        the components its parameters name (`inputs`, `fields` as there), for `trigger(**tab.event(fn,
        server), outputs=...)`."""
        handler = self.bind(fn, *context, retyped=retyped)
        return {"fn": handler, "inputs": self.inputs(handler, **fields)}

    def update(self, **values: Any) -> dict[gr.components.Component, Any]:
        """A handler's result, {component: value}, from values given by field name; nothing
        changes (gr.skip) for no values: Gradio reads an empty dict as a value, not as none."""
        return {getattr(self, name): value for name, value in values.items()} if values else gr.skip()


def bound(
    fn: Callable,
    *context: Any,
    tab: TabComponents | None = None,
    controls: Sequence[Controls] = (),
    retyped: dict[str, type] | None = None,
) -> Callable:
    """`fn` with its leading arguments (the server's context, ...) fixed, each parameter whose
    annotation is the kind of one of `controls` taken from those controls' values, and (with
    `tab`) its `{field: value}` result applied to `tab`. `retyped`: the kind a parameter is read
    as in this binding, by name, where one handler serves several records (ui/explore_views.py: each
    "More views" view's own controls). Two controls of one name are one control: the API page
    names it once, where it first comes (a view's `Drawing` and another's `MapStyle` share the style).

    Unlike `functools.partial`, the result is a function whose signature and annotations
    are those Gradio should see: it reads them to name the API parameters and to spot the
    parameters it fills in itself (e.g. `evt: gr.SelectData`), and `typing.get_type_hints`
    does not look inside a partial."""
    hints = get_type_hints(fn) | (retyped or {})
    parameters = [
        p.replace(annotation=hints.get(p.name, p.annotation)) for p in inspect.signature(fn).parameters.values()
    ]
    parameters = parameters[len(context) :]
    by_kind = {c.kind: c for c in controls}
    named: dict[str, inspect.Parameter] = {}  # as the API page names them
    for leaf in (leaf for p in parameters for leaf in _controls_of(p, by_kind)):
        named.setdefault(leaf.name, leaf)
    api_parameters = list(named.values())
    signature = inspect.Signature(api_parameters)

    def call_args(args: tuple, kwargs: dict) -> dict[str, Any]:
        given = signature.bind(*args, **kwargs)
        given.apply_defaults()
        return {p.name: _parsed(p, by_kind, given.arguments) for p in parameters}

    def applied(result: Any) -> Any:
        # None: a step with no outputs (a check, ui.binding.checked_first)
        return tab.update(**result) if tab is not None and result is not None else result

    if inspect.isgeneratorfunction(fn):  # Gradio streams a handler's updates only if it is one

        @functools.wraps(fn)
        def handler(*args: Any, **kwargs: Any) -> Iterator[Any]:
            for result in fn(*context, **call_args(args, kwargs)):
                yield applied(result)

    else:

        @functools.wraps(fn)
        def handler(*args: Any, **kwargs: Any) -> Any:
            return applied(fn(*context, **call_args(args, kwargs)))

    handler.__signature__ = signature  # inspect.signature reads it before following __wrapped__ to `fn`
    handler.__annotations__ = {p.name: p.annotation for p in api_parameters}
    return handler


def checked_first(trigger: Callable[..., Any], check: Callable[..., None], checked: Any, **event: Any) -> Any:
    """`event` (its fn, outputs, api_name, ...) on `trigger`, after `check` of the inputs `checked` in a
    first step of its own, with no outputs and kept out of the API. Gradio marks every output of
    a step that raises with a red "Error" badge with no words, which stays until that output is
    next written: a refusal raised by `check` shows its toast and leaves every output as it was.
    The event keeps its name, and its handler still checks for API clients, which call it alone."""
    first = trigger(
        check, checked, None, api_visibility="private", preprocess=False, show_progress="hidden", **concurrency.CHEAP
    )
    return first.success(**event)


def _filled_by_gradio(parameter: inspect.Parameter) -> bool:
    """Whether Gradio gives this parameter itself (the request, an event's data, a progress
    tracker), as it decides from the annotation, `X | None` included."""
    hint = parameter.annotation
    kinds = (
        typing.get_args(hint)
        if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union
        else (hint,)
    )
    special = (gr.Request, gr.EventData, gr.Progress)
    return any(isinstance(kind, type) and issubclass(kind, special) for kind in kinds)


def _controls_of(parameter: inspect.Parameter, by_kind: dict[Any, Controls]) -> list[inspect.Parameter]:
    """The controls behind a handler's parameter: itself, or those its kind is made of (in turn
    made of other kinds' controls, e.g. a view's drawing of a MapStyle and its fusion)."""
    made_of = by_kind.get(parameter.annotation)
    if made_of is None:
        return [parameter]
    return [leaf for inner in made_of.parameters for leaf in _controls_of(inner, by_kind)]


def _parsed(parameter: inspect.Parameter, by_kind: dict[Any, Controls], values: dict[str, Any]) -> Any:
    """The handler's value for `parameter` from the controls' `values` by name."""
    made_of = by_kind.get(parameter.annotation)
    if made_of is None:
        return values[parameter.name]
    return made_of.parse(*(_parsed(inner, by_kind, values) for inner in made_of.parameters))
