"""The Explore tab's "More views", one module each, registered in `REGISTRY` when imported here, in
the order of their tabs (base.py says what a view is made of; docs/architecture.md shows how to add
one). ui/explore_views.py builds the tab from the registry."""

# The order of these imports is the order of the tabs.
# isort: off
from . import overview, rollout, distance, similarity, relevance, pca, logit_lens  # noqa: F401 - each registers itself

# isort: on
from .base import REGISTRY, Drawn, MoreView, NoControls, NotDrawn, Scene, Task, register, run_here

__all__ = ["REGISTRY", "Drawn", "MoreView", "NoControls", "NotDrawn", "Scene", "Task", "register", "run_here"]
