"""All of the app's Gradio code, in floors (docs/architecture.md): the page (app); its four tabs,
Explore, Live, Train and Lessons, each a module of layout and wiring (explore, live, train,
lessons) and one of handlers (explore_handlers, live_handlers, lessons_handlers; the Train tab's
are in train); what the tabs share (common); and what they all stand on: binding handlers to a
tab (binding), checking what people send (checks), the pictures and files served (outputs,
pictures), the GPU (zerogpu), model downloads (downloads), and the server's limits and budgets
(limits, sessions, concurrency, heap, settings). Nothing outside this package imports gradio."""

from .app import build_demo, launch

__all__ = ["build_demo", "launch"]
