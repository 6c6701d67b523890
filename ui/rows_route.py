"""The rows route: the page's questions for a layer's numbers (ui/js/rows.js, `fetchRows`),
answered with the deflated rows themselves as the reply's body (issue 58: as base64 in the JSON of
Gradio's server function route they had taken a third more bytes, and a decoding on each side).

    POST ui.gate.ROUTE, Content-Type: application/json
    {"handle": ..., "layer": 1-based, "band": 0-based or "tokens", "parts": ["layer", ...]}

(`ui.explore_handlers.layer_rows` reads the question.) The answer:

- 200, application/octet-stream: the rows, deflated (zlib; explorer.page_maps.rows_bytes' layout),
  with the parts they hold, in their order, in the PARTS_HEADER header ("head,fine");
- 404, text/plain: a sentence, for a handle that names no analysis kept, forged or dropped alike;
- 400, text/plain: a sentence, for a layer, band or parts the analysis has not;
- and from ui.limits.RequestLimits, before this runs: 413 for a body over its limit, 429 when no
  place comes (ui.gate.BUSY), each a sentence.

Every request to ROUTE runs in one of the places of RequestLimits' RouteGate (places per
network, the reply sent in chunks as it is read and paced, a stalled reader dropped), which knows
it by its path; the bands are encoded once and kept (`ui.common.PageHandles.rows`), and the
seconds an encode took are charged to the network that asked (ENCODED_HEADER, which the gate takes
off the reply: whether a band was encoded anew would tell a visitor whether another page asked it). The question
runs in Gradio's thread pool (the Blocks' limiter), as Gradio ran its server functions.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from .common import ENCODED_S, Server
from .explore_handlers import layer_rows
from .gate import ENCODED_HEADER, ROUTE

PARTS_HEADER = "X-Rows-Parts"
# A page's rows are its own (they are named by a handle only that page was sent): no cache keeps them.
PRIVATE = {"Cache-Control": "no-store"}


def question(body: bytes) -> Any:
    """The question a request's body holds (JSON), or None: `layer_rows` answers anything that
    is not a question as it answers a handle that names nothing."""
    try:
        return json.loads(body)
    except ValueError:  # not JSON, or not UTF-8 (UnicodeDecodeError is a ValueError)
        return None


def rows_route(server: Server) -> Route:
    """The route that answers the page's questions for rows of `server`'s analyses; ui.app
    serves it on Gradio's app (`served_limits`)."""

    async def answer(request: Request) -> Response:
        asked = question(await request.body())  # RequestLimits read it first: at most MAX_EVENT_BYTES
        blocks = getattr(request.app, "blocks", None)  # Gradio's App; None for a bare Starlette app (tests)
        rows = await anyio.to_thread.run_sync(layer_rows, server, asked, limiter=getattr(blocks, "limiter", None))
        if "error" in rows:
            return PlainTextResponse(rows["error"], status_code=rows["status"], headers=PRIVATE)
        headers = {PARTS_HEADER: ",".join(rows["parts"]), **PRIVATE}
        if ENCODED_S in rows:  # for the gate, which charges it to the network and never sends it on
            headers[ENCODED_HEADER] = f"{rows[ENCODED_S]:.6f}"
        return Response(rows["deflated"], media_type="application/octet-stream", headers=headers)

    return Route(ROUTE, answer, methods=["POST"])
