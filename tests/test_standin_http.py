"""The stand-ins' HTTP server (tests/standin_http.py): quiet about clients that leave, loud about its own faults."""

import socket
import struct
import time
from http.server import BaseHTTPRequestHandler

from standin_http import served


class Faulty(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        raise ValueError("the stand-in's own fault")


def test_a_client_that_resets_its_connection_is_no_traceback_but_a_fault_is(capsys):
    with served(lambda url: (url, Faulty)) as url:
        host, port = url.removeprefix("http://").split(":")
        left = socket.create_connection((host, int(port)))
        left.sendall(b"GET / HTT")  # then a reset (SO_LINGER 0): the server's readline fails
        left.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        left.close()
        with socket.create_connection((host, int(port))) as faulty:
            faulty.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            faulty.recv(1)  # the server closes it after its handler raised
        time.sleep(0.2)
    err = capsys.readouterr().err
    assert "ValueError: the stand-in's own fault" in err
    assert "ConnectionResetError" not in err
