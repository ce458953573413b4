"""A small web app whose start-up generates a session key: the kind of code that meets an unready CRNG at boot."""

import http.server
import os
import secrets


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"hello\n")


def create_server_naive() -> http.server.HTTPServer:
    """Start-up as it is often written: at early boot, os.urandom() hangs (pep524) or raises (pep522)."""
    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    server.session_key = os.urandom(32)  # type: ignore[attr-defined]
    return server


def create_server() -> http.server.HTTPServer:
    """The fix: wait for the kernel once, explicitly, at the one place where waiting is acceptable."""
    secrets.wait_for_system_rng()  # added by urandom-shim (PEP 522); returns at once when the CRNG is ready
    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    server.session_key = os.urandom(32)  # type: ignore[attr-defined]
    return server
