"""All of the app's Gradio code: the page (app), the Explore tab (explore: layout and wiring;
explore_handlers: what each event does), the Train tab (train), and where rendered pictures
are written for Gradio to serve (outputs). Nothing outside this package imports gradio."""

from .app import build_demo, build_page, launch, server_for

__all__ = ["build_demo", "build_page", "launch", "server_for"]
