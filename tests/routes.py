"""Runs one group of routes to randomness in a real interpreter, each in its own thread, and prints one JSON line.

Usage: python routes.py GROUP POLICY

Each route is a call that, one way or another, asks the kernel for random bytes. The parent (tests/test_routes.py)
starts this with an unready CRNG (simulated, or the fake kernel), reads the line "starting", waits, makes the CRNG
ready, and then reads the report: for every route, when it started and ended (``time.monotonic()``, which is
system-wide) and what it did. The parent decides from the times whether a call returned before the CRNG was ready.

Groups:
- ``plain``: the routes as a program meets them, with the policy installed at start-up (``URANDOM_POLICY``);
- ``reimported``: the same modules reloaded, or imported again after ``del sys.modules[...]``, after start-up;
- ``references``: references to ``os.urandom`` taken before the policy was installed (``urandom_shim.activate()``
  at runtime), kept in every kind of container;
- ``getrandom``, ``openssl``: calls that go to the kernel without ``os.urandom``. They hold the GIL while they
  wait, so each has a process of its own.
"""

import functools
import importlib
import json
import os
import sys
import threading
import time

MARK = b"WEAK-RNG"  # what the fake kernel's GRND_INSECURE returns, over and over
#: The mark as bytes, hex and base64 (token_bytes, token_hex, token_urlsafe): weak bytes show in any of them.
WEAK_FORMS = ("WEAK-RNG", MARK.hex(), "V0VBSy1STkdXRUFL")


def plain():
    import posix
    import random
    import secrets
    import urllib.request
    import uuid
    from os import urandom

    system = random.SystemRandom()
    routes = {
        "os.urandom": lambda: os.urandom(16),
        "from os import urandom": lambda: urandom(16),
        "posix.urandom": lambda: posix.urandom(16),
        "random._urandom": lambda: random._urandom(16),
        "SystemRandom().random()": system.random,
        "SystemRandom().getrandbits(64)": lambda: system.getrandbits(64),
        "SystemRandom().choice()": lambda: system.choice("abcdef"),
        "uuid.uuid4()": lambda: uuid.uuid4().bytes,
        "urllib.request._randombytes": lambda: urllib.request._randombytes(16),
        "import multiprocessing": lambda: importlib.import_module("multiprocessing").current_process().authkey,
        "secrets.token_bytes": lambda: secrets.token_bytes(16),
        "secrets.token_hex": lambda: secrets.token_hex(16),
        "secrets.token_urlsafe": lambda: secrets.token_urlsafe(16),
        "secrets.choice": lambda: secrets.choice("abcdef"),
        "secrets.randbelow": lambda: secrets.randbelow(1000),
        "secrets.randbits": lambda: secrets.randbits(64),
        "secrets.SystemRandom().random()": lambda: secrets.SystemRandom().random(),
        "secrets.wait_for_system_rng()": secrets.wait_for_system_rng,
        "random.random()": random.random,
        "random.seed()": lambda: random.seed(),
        "random.Random()": lambda: random.Random().random(),
        "tempfile.mkstemp()": temporary_file,
        "email.utils.make_msgid()": lambda: importlib.import_module("email.utils").make_msgid(domain="example.org"),
    }
    if sys.version_info >= (3, 9):
        routes["SystemRandom().randbytes(16)"] = lambda: system.randbytes(16)
    return routes


def temporary_file():
    import tempfile

    fd, name = tempfile.mkstemp()
    os.close(fd)
    os.unlink(name)
    return name


def reimported():
    import random
    import secrets

    importlib.reload(os)  # the same module object, run again
    importlib.reload(secrets)
    importlib.reload(random)
    fresh = {}
    for name in ("os", "secrets"):  # new module objects
        del sys.modules[name]
        fresh[name] = importlib.import_module(name)
    return {
        "importlib.reload(os)": lambda: os.urandom(16),
        "os imported again": lambda: fresh["os"].urandom(16),
        "importlib.reload(secrets)": lambda: secrets.token_bytes(16),
        "secrets imported again": lambda: fresh["secrets"].token_bytes(16),
        "secrets imported again: wait_for_system_rng()": fresh["secrets"].wait_for_system_rng,
        "importlib.reload(random): SystemRandom": lambda: random.SystemRandom().random(),
        "importlib.reload(random): Random()": lambda: random.Random().random(),
    }


class Holder:
    in_class = os.urandom
    static = staticmethod(os.urandom)


def references():
    def default(size, source=os.urandom):
        return source(size)

    def keyword_default(size, *, source=os.urandom):
        return source(size)

    def closure():
        source = os.urandom
        return lambda: source(16)

    instance = Holder()
    instance.attribute = os.urandom
    table = {"rand": os.urandom}
    items = [os.urandom]
    partial = functools.partial(os.urandom, 16)
    in_closure = closure()
    frozen = frozenset([os.urandom])
    pair = ("rand", os.urandom)

    import urandom_shim

    urandom_shim.activate(sys.argv[2])  # the references above were taken before the policy was installed
    return {
        "dict value": lambda: table["rand"](16),
        "list item": lambda: items[0](16),
        "default argument": lambda: default(16),
        "keyword-only default": lambda: keyword_default(16),
        "functools.partial": partial,
        "staticmethod": lambda: Holder.static(16),
        "class attribute": lambda: Holder.in_class(16),
        "instance attribute": lambda: instance.attribute(16),
        "closure": in_closure,
        "a tuple (not a default)": lambda: pair[1](16),
        "a frozenset": lambda: next(iter(frozen))(16),
    }


def getrandom():
    return {"os.getrandom(16)": lambda: os.getrandom(16)}


def openssl():
    import ssl

    return {"ssl.RAND_bytes(16)": lambda: ssl.RAND_bytes(16)}


def main():
    routes = {
        "plain": plain,
        "reimported": reimported,
        "references": references,
        "getrandom": getrandom,
        "openssl": openssl,
    }[sys.argv[1]]()
    results = {}

    def run(name, call):
        started = time.monotonic()
        try:
            value = call()
        except BaseException as exc:
            results[name] = {"outcome": "raised", "error": f"{type(exc).__name__}: {exc}"[:120]}
        else:
            weak = any(form in repr(value) for form in WEAK_FORMS)
            results[name] = {"outcome": "returned", "weak": weak, "value": repr(value)[:40]}
        results[name].update(started=started, ended=time.monotonic())

    print("starting", flush=True)
    threads = [threading.Thread(target=run, args=item, daemon=True) for item in routes.items()]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 20
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    for name in routes:
        results.setdefault(name, {"outcome": "blocked"})
    print(json.dumps(results), flush=True)
    os._exit(0)  # a blocked daemon thread must not hold up the exit


if __name__ == "__main__":
    main()
