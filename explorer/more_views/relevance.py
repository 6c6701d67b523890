"""Class-specific relevance (Chefer, Gur & Wolf 2021): a forward and a backward pass, so it is drawn
when its button is pressed (/relevance, ui/explore_handlers.py), not when its tab opens."""

from __future__ import annotations

from .. import view_tasks
from .base import MoreView, Task, register

TASK = Task(view_tasks.relevance_map, view_tasks.relevance_cost, "The relevance map", backward=True)

VIEW = register(
    MoreView(
        "relevance",
        "Relevance (Chefer et al. 2021)",
        "relevance",
        "**Class-specific relevance** (Chefer, Gur & Wolf, 2021): which patches made this class",
        "Class-specific relevance of every patch",
        None,
        style=True,
        task=TASK,
        kept="relevance_map",  # explore_handlers.RelevanceMap: a new style or "show" redraws it from this
    )
)
