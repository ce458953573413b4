"""``wait``: block until the kernel's CRNG is ready (or ``--timeout``), with a live line on a terminal."""

from __future__ import annotations

import argparse
import os
import sys

from .. import _messages, _readiness, _simulation
from . import facts, text
from .exits import EXIT_INTERRUPTED, EXIT_TIMEOUT


def cmd_wait(args: argparse.Namespace) -> int:
    import time

    stream = sys.stderr
    live = text.StatusLine(stream, not args.quiet and stream is not None and stream.isatty())
    start = time.monotonic()
    deadline = None if args.timeout is None else start + args.timeout
    entropy_path = os.path.join(facts.RANDOM_DIR, "entropy_avail")

    sim = _simulation.current()

    def progress(word: str) -> str:
        if sim is not None:  # the real kernel's entropy count says nothing about a simulated state
            tail = _messages.WAIT_SIMULATED.format(variable=_simulation.ENV, spec=sim.spec)
        else:
            entropy = facts.read_int(entropy_path)
            tail = "" if entropy is None else _messages.WAIT_ENTROPY.format(entropy=entropy)
        return _messages.WAIT_LIVE_LINE.format(word=word, value=time.monotonic() - start, tail=tail)

    try:
        while True:
            if _readiness.is_ready():
                how = "ready" if _readiness.state() == _readiness.READY else _messages.WAIT_STATE_UNKNOWN
                live.show(progress(how), final=True)
                return 0
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                break
            live.show(progress("not ready yet"))
            _readiness.wait(0.2 if deadline is None else min(0.2, deadline - now))
    except KeyboardInterrupt:
        live.show(progress("not ready; interrupted"), final=True)
        return EXIT_INTERRUPTED
    live.show(progress("still not ready; giving up"), final=True)
    if not args.quiet and not live.enabled:
        from .._messages import ENTROPY_HINT, emit
        from .._runtime import simulation_note

        emit(
            _messages.WAIT_TIMED_OUT.format(
                timeout=args.timeout, entropy_hint=ENTROPY_HINT, simulation_note=simulation_note()
            )
        )
    return EXIT_TIMEOUT
