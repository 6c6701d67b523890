"""All of the app's Gradio code: the page (app: the Server, the page, launching it), each tab (explore,
live, train, lessons: layout and wiring; explore_handlers, live_handlers, train_handlers,
lessons_handlers: what each event does), and where rendered pictures are written for Gradio to
serve (outputs). Nothing outside this package imports gradio."""

from .app import build_demo, build_page, launch, server_for

__all__ = ["build_demo", "build_page", "launch", "server_for"]
