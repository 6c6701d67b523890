"""bench.serving: the benches' clients."""

from __future__ import annotations

import gradio as gr
import httpx

from bench.serving import free_port, gradio_client, tls_context


def test_the_benches_clients_build_their_tls_context_once_and_still_answer() -> None:
    """gradio_client makes an httpx client per request and per reply stream; each loaded the
    certificate bundle into a new context (20 ms of CPU): three quarters of the soak's class
    process, whose clicks then waited for its CPU."""
    demo = gr.Interface(lambda text: text[::-1], "text", "text", api_name="reverse")
    port = free_port()
    demo.launch(server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        client = gradio_client(f"http://127.0.0.1:{port}/")
        assert client.ssl_verify is tls_context() and client.download_files is False
        assert client.predict("abc", api_name="/reverse") == "cba"  # the context is accepted on every call
        client.close()
    finally:
        demo.close()
    transport = httpx.Client(verify=tls_context())._transport
    assert transport._pool._ssl_context is tls_context()  # what httpx builds per client: nothing new
