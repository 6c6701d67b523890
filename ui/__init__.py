"""All of the app's Gradio code, in floors (docs/architecture.md): the page (app: the Server, the
page, launching it); its four tabs, Explore, Live, Train and Lessons, each a module of layout and
wiring (explore, live, train, lessons) and one of handlers (explore_handlers, live_handlers,
train_handlers, lessons_handlers: what each event does); the route the head maps' page asks a
layer's numbers on (rows_route); what the tabs share (common); and what they
all stand on: binding handlers to a tab (binding), checking what people send (checks), the pictures
and files served (outputs, pictures), the GPU (zerogpu), model downloads (downloads), and the
server's policies, limits and budgets (limits, sessions, concurrency, heap, settings; uploads: which
files a visitor may make the server open and the upload folder's disk budget; streams: the live
streams' slots). Nothing outside this package imports gradio."""

from .app import build_demo, build_page, launch, server_for

__all__ = ["build_demo", "build_page", "launch", "server_for"]
