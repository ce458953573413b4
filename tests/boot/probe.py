"""The program inside each unit of the real-boot test: one line of facts in the journal, then its job.

Installed as the docs' programs (``python -m app``, ``/usr/local/sbin/setup-disks.py``,
``/usr/local/sbin/early-setup.py``); which one it is follows from how it was started. It records the CRNG's state at
its first line and again just before its first call for randomness (a ``GRND_NONBLOCK`` probe, which never waits and
never initialises anything), the policy and mode that apply with their sources, and what that call did: under
``pep522`` in the window that call raises and the unit fails, as designed; in report mode it behaves as ``native``.
The ``app`` then serves on 127.0.0.1:8080, as the web service of the how-to would.
"""

import json
import os
import sys
import time

FIRST_LINE = time.monotonic()


def crng():
    try:
        os.getrandom(1, os.GRND_NONBLOCK)
        return "ready"
    except BlockingIOError:
        return "unready"


CRNG_AT_START = crng()


def which():
    if __spec__ is not None and __spec__.name.startswith("app"):
        return "app"
    return os.path.splitext(os.path.basename(sys.argv[0]))[0]


def main():
    name = which()
    facts = {
        "probe": name,
        "pid": os.getpid(),
        "first_line": FIRST_LINE,
        "crng_at_start": CRNG_AT_START,
        "hashseed": os.environ.get("PYTHONHASHSEED"),
        "hash_randomization": sys.flags.hash_randomization,
        "python": sys.executable,
    }
    try:
        import urandom_shim

        settings = urandom_shim.current_settings()
        facts.update(policy=settings.policy.value.name, policy_source=settings.policy.source)
        facts.update(mode=settings.mode.value, mode_source=settings.mode.source, events=settings.events.value)
        facts["patched"] = hasattr(os.urandom, "__wrapped__")
    except ImportError:
        facts["policy"] = facts["mode"] = None
    if name == "app":
        import secrets

        call, job = "secrets.token_hex(32)", lambda: secrets.token_hex(32)  # the session secret
    elif name == "setup-disks":
        import uuid

        call, job = "uuid.uuid4()", uuid.uuid4  # a name for a temporary label: not secret
    else:
        call, job = "os.urandom(32)", lambda: os.urandom(32)  # a key
    facts["crng_before_call"] = crng()
    began = time.monotonic()
    try:
        job()
        facts["outcome"] = "returned"
    except BlockingIOError as exc:
        facts.update(outcome="raised BlockingIOError", error=str(exc)[:400])
    facts.update(call=call, seconds=round(time.monotonic() - began, 4), crng_after=crng())
    print("urandom-shim-boot-probe " + json.dumps(facts, sort_keys=True), flush=True)
    if facts["outcome"] != "returned":
        sys.exit(1)
    if name == "app":
        from http.server import HTTPServer, SimpleHTTPRequestHandler

        HTTPServer(("127.0.0.1", 8080), SimpleHTTPRequestHandler).serve_forever()


main()
