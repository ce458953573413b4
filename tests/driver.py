"""Runs one call site inside a real interpreter and prints one JSON line about what happened.

Usage: python driver.py SITE [--probe=SECONDS]

The call runs in a daemon thread. With --probe, a call still running after SECONDS is reported as "blocked" and the
process exits at once; without it the driver waits for the call however long it takes (the test's subprocess timeout
bounds it). Every ``os.getrandom`` call is recorded, so tests can see the best-effort (GRND_INSECURE) reads.

Keep this file's imports minimal: importing ``random`` or ``secrets`` here would happen before the call under test.
"""

import json
import os
import sys
import threading
import time

GRND_INSECURE = 4
getrandom_calls = []
_real_getrandom = getattr(os, "getrandom", None)
if _real_getrandom is not None:

    def _spy(size, flags=0):
        getrandom_calls.append([size, flags])
        return _real_getrandom(size, flags)

    os.getrandom = _spy


def site_calls():
    def urllib_cnonce():
        import urllib.request

        return urllib.request._randombytes(8)

    def import_multiprocessing():
        import multiprocessing

        return multiprocessing.current_process().authkey

    def import_random():
        import random

        return random.random()

    def random_seed():
        import random

        random.seed()
        return random.random()

    def random_instance():
        import random

        return random.Random().random()

    def tempfile_name():
        import tempfile

        fd, name = tempfile.mkstemp()
        os.close(fd)
        os.unlink(name)
        return name

    def uuid4():
        import uuid

        return str(uuid.uuid4())

    def system_random(method):
        def call():
            import random

            return getattr(random.SystemRandom(), method)(*{"random": (), "getrandbits": (64,)}[method])

        return call

    def secret(name, *args):
        def call():
            import secrets

            return getattr(secrets, name)(*args)

        return call

    def from_os_import():
        from os import urandom

        return urandom(16)

    def wait_for_system_rng():
        import secrets

        return secrets.wait_for_system_rng()

    return {
        "os.urandom": lambda: os.urandom(16),
        "from-os-import-urandom": from_os_import,
        "SystemRandom.random": system_random("random"),
        "SystemRandom.getrandbits": system_random("getrandbits"),
        "uuid.uuid4": uuid4,
        "urllib.request._randombytes": urllib_cnonce,
        "import multiprocessing": import_multiprocessing,
        "secrets.token_bytes": secret("token_bytes", 16),
        "secrets.token_hex": secret("token_hex", 16),
        "secrets.token_urlsafe": secret("token_urlsafe", 16),
        "secrets.choice": secret("choice", "abcdef"),
        "secrets.randbelow": secret("randbelow", 1000),
        "secrets.randbits": secret("randbits", 64),
        "import random": import_random,
        "random.seed()": random_seed,
        "random.Random()": random_instance,
        "tempfile.mkstemp": tempfile_name,
        "secrets.wait_for_system_rng": wait_for_system_rng,
    }


def main():
    site = sys.argv[1]
    probe = None
    for arg in sys.argv[2:]:
        if arg.startswith("--probe="):
            probe = float(arg.split("=", 1)[1])
    call = site_calls()[site]
    report = {"site": site, "simulate": os.environ.get("URANDOM_SHIM_SIMULATE"), "pid": os.getpid()}

    def run():
        try:
            value = call()
        except BaseException as exc:
            report.update(outcome="raised", exc_type=type(exc).__name__, message=str(exc))
        else:
            report.update(outcome="returned", value=repr(value)[:80])
        report["t_end"] = time.monotonic()

    report["t_start"] = time.monotonic()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(probe)
    if worker.is_alive():
        report.update(outcome="blocked", t_end=time.monotonic())
        report["getrandom_calls"] = getrandom_calls
        print(json.dumps(report), flush=True)
        os._exit(0)
    import posix

    report["native_urandom_restored"] = os.urandom is posix.urandom and type(posix.urandom) is type(len)
    report["getrandom_calls"] = getrandom_calls
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
