"""A small Flask service that makes its secrets at start-up, as many do.

- ``app.secret_key = os.urandom(24)``: the idiom in Flask's documentation for years;
- ``secrets.token_hex()``: today's advice, for a session-signing key.

``APP_WAIT_FIRST=1`` puts PEP 522's fix at the top, ``secrets.wait_for_system_rng()``. ``APP_KEYS=secrets`` makes
both keys with ``secrets`` only (under ``pep522`` the ``secrets`` functions wait, as PEP 522 specifies).
"""

import os

if os.environ.get("APP_WAIT_FIRST") == "1":
    import secrets

    secrets.wait_for_system_rng()

import secrets
import time

from flask import Flask

app = Flask(__name__)
app.secret_key = secrets.token_bytes(24) if os.environ.get("APP_KEYS") == "secrets" else os.urandom(24)
SESSION_SIGNING_KEY = secrets.token_hex()
KEYS_MADE_AT = time.monotonic()


@app.route("/")
def index():
    return {"keys_made_at": KEYS_MADE_AT, "key_length": len(SESSION_SIGNING_KEY)}


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=int(os.environ["APP_PORT"]))
