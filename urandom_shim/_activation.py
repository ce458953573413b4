"""The engine: applies the effective policy at every patched call site while the CRNG is unready, and the stand-ins
for the interpreter's functions that ask it.

Start-up (``_urandom_shim_boot``) hands over to :func:`boot` when its probe finds the kernel CRNG
uninitialised (or a simulation says so). The engine reads the configuration, installs the patches, and takes them all
out again the moment the CRNG is ready, so every call site returns to the interpreter's own code and speed.

This module also holds ``activate()`` and ``deactivate()``, which :mod:`urandom_shim` re-exports, and
:func:`boot`, where start-up hands over to the package on the unready path.

One piece, though over 500 lines: each module costs about 0.45 M instructions to import, the unready path's start-up
budget is 1.5x, and its wrappers must not import anything while a call waits.
"""

import os
import sys
from _thread import _local
from time import monotonic

from . import _config, _hooks, _messages, _patching, _readiness, _runtime, _simulation
from ._messages import ENTROPY_HINT, bounded, emit
from ._patching import NATIVE_URANDOM, Patcher, dress, is_wrapper, namespace, unwrap
from ._policies import (
    BEST_EFFORT,
    NATIVE,
    RAISE,
    RAISED,
    SECRETS,
    SEED_INSTANCE,
    SEED_NEW,
    TIMED_OUT_BEST_EFFORT,
    TIMED_OUT_RAISED,
    UNTOUCHED,
    URANDOM,
    WAIT,
    WAITED,
    WAITS,
    WEAK,
    Settings,
    decide,
    lifted,
)
from ._runtime import REFUSAL, policy_phrase, refusal, simulation_note
from ._state import state

#: urandom_shim._events.record once the first event has loaded it (an import statement costs microseconds a call),
#: and whether the exit handler that loads it is registered.
_EVENTS: "dict[str, Any]" = {}

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any, Callable, Mapping


class Engine:
    """Holds the settings and the undo log, and answers each patched call while the CRNG is unready."""

    def __init__(self, settings: "Settings") -> None:
        self.settings = settings
        self.engaged = False
        self.patcher = _patching.Patcher()
        self._local = _local()
        #: The call sites that have printed their one line (a wait's, or a fallback's).
        self.warned: set[str] = set()
        self._callbacks: list[Callable[[ModuleType], None]] = []
        self.os_urandom: Callable[..., bytes] = _patching.NATIVE_URANDOM

    # -- install and undo ----------------------------------------------------------------------------------------

    def engage(self, reseed_loaded_random: bool = True) -> None:
        """Install the policy, unless the CRNG is already ready (then nothing needs changing). In report mode the
        wrappers go in under every policy, ``native`` included, to record what the policy would do.

        ``random._inst`` was seeded from time and pid if ``random`` was imported while the CRNG was unready; it is
        reseeded from the kernel when ``random`` is imported (or reloaded) after this, and, with
        ``reseed_loaded_random``, when it was imported before (at start-up, by another ``.pth``).
        :func:`activate` at runtime passes False so that a program's own ``random.seed(42)`` is never overridden.

        Every patched module stays watched while the policy is installed: a reload, or an import after
        ``del sys.modules[name]``, runs its code again, and the patch goes back on.
        """
        settings = self.settings
        if self.engaged or (settings.policy_value is NATIVE and not settings.reporting) or _readiness.is_ready():
            return
        self.engaged = True
        # A call made while the interpreter shuts down (a module global's __del__) can no longer import the events
        # module: in report mode, whose records are a gate's findings, load it at exit, before that.
        if settings.reporting and not _EVENTS:
            import atexit

            atexit.register(_load_events)
            _EVENTS["at exit"] = _load_events
        self.patcher = patcher = _patching.Patcher()
        self.os_urandom = urandom_wrapper(self, _patching.NATIVE_URANDOM, "os.urandom")
        _readiness.on_ready(self.disengage)  # first, so that a failure below still ends in a full restore
        try:
            self._watch("posix", patch_os, reseed_loaded_random)
            self._watch("os", patch_os, reseed_loaded_random)
            holders = _patching.urandom_holders()
            patch_all_loaded_aliases(self, patcher, holders)
            _patching.patch_stray_references(patcher, self.os_urandom, holders)
            del holders
            self._watch("random", patch_random, reseed_loaded_random)
            self._watch("secrets", patch_secrets, reseed_loaded_random)
            self._watch("urllib.request", patch_aliases, reseed_loaded_random)
        except BaseException:
            self.disengage()
            raise

    def _watch(
        self, name: str, patch: "Callable[[Engine, _patching.Patcher, ModuleType], None]", reseed_loaded: bool
    ) -> None:
        """Patch ``name`` now if it is loaded, and again whenever it is imported or reloaded while engaged."""
        loaded = name in sys.modules
        reseed = [reseed_loaded or not loaded]  # a later import or reload always reseeds
        before_start = [loaded]  # imported before the shim: who imported it is not on the stack

        def callback(module: "ModuleType") -> None:
            if self.engaged:
                patch(self, self.patcher, module)
                if reseed[0] and patch is patch_random:
                    self.reseed_module_instance(module, before_start[0])
            reseed[0] = True
            before_start[0] = False

        self._callbacks.append(callback)
        _hooks.watch(name, callback)

    def disengage(self) -> None:
        """Restore every original. Runs on the transition to ready, and on :func:`deactivate`."""
        self.engaged = False
        for callback in self._callbacks:
            _hooks.unwatch(callback)
        self._callbacks.clear()
        self.patcher.undo()

    # -- what call sites ask ---------------------------------------------------------------------------------------

    def ready(self) -> bool:
        return _readiness.is_ready()

    def urandom(
        self, original: "Callable[..., bytes]", name: str, args: "tuple[Any, ...]", kwargs: "dict[str, Any]"
    ) -> bytes:
        """os.urandom (or an alias) called while unready. Invalid arguments fail exactly as the interpreter's own."""
        if kwargs or len(args) != 1:
            return original(*args, **kwargs)  # the interpreter raises its own TypeError
        size = args[0]
        if type(size) is not int:
            import operator

            try:
                size = operator.index(size)
            except TypeError:
                return original(*args)  # the interpreter raises its own TypeError
        if size <= 0 or size > sys.maxsize:
            # ValueError or OverflowError, raised before any read; or b"" for 0, which never touches the kernel.
            return original(size)
        context = getattr(self._local, "site", None)
        if context is None:
            user = ALIAS_USERS.get(name)
            site, call = URANDOM, f"{name}({size})" + (f" (from {user})" if user else "")
        else:
            site, call = context
        return self._perform(site, call, size, lambda: original(size))

    def within_site(
        self, site: str, label: str, original: "Callable[..., Any]", args: "tuple[Any, ...]", kwargs: "dict[str, Any]"
    ) -> "Any":
        """Run ``original`` (a secrets function) so that its inner os.urandom calls follow ``site``'s row."""
        local = self._local
        if getattr(local, "site", None) is not None:  # token_hex -> token_bytes: the outermost call names the site
            return original(*args, **kwargs)
        local.site = (site, f"{label}()")
        try:
            return original(*args, **kwargs)
        finally:
            local.site = None

    def seed_value(self, instance: object) -> "int | None":
        """The seed for ``Random.seed(None)`` while unready; None means the interpreter's own seeding (now ready)."""
        random_module = sys.modules.get("random")
        is_module_instance = random_module is not None and getattr(random_module, "_inst", None) is instance
        site = SEED_INSTANCE if is_module_instance else SEED_NEW
        call = "random.seed(None)" if is_module_instance else f"{type(instance).__name__}() seeding"
        todo = decide(self.settings, site)
        if self.settings.reporting or todo == UNTOUCHED:
            self._event(site, call, UNTOUCHED, todo, window=_simulated_window())
            return None
        if todo == BEST_EFFORT:
            self._event(site, call, BEST_EFFORT, todo)
            return _best_effort_seed_or_none()
        if todo == RAISE:
            self._event(site, call, RAISED, todo)
            raise self._not_ready_error(call)
        assert todo == WAIT
        start = monotonic()
        if self._wait(call):
            waited = monotonic() - start
            self._event(site, call, WAITED, todo, waited, window=waited)
            return None
        self._timed_out(site, call, todo, monotonic() - start)
        return _best_effort_seed_or_none()

    def reseed_module_instance(self, random_module: "ModuleType", before_start: bool = False) -> None:
        """``import random`` seeded ``random._inst`` from time and pid (bpo-32580): reseed from the kernel."""
        inst = getattr(random_module, "_inst", None)
        todo = decide(self.settings, SEED_INSTANCE)
        if inst is None or _readiness.is_ready():
            return
        if self.settings.reporting or todo != BEST_EFFORT:
            self._event(SEED_INSTANCE, "import random", UNTOUCHED, todo, before_start=before_start)
            return
        seed = _best_effort_seed_or_none()
        if seed is not None:
            self._event(SEED_INSTANCE, "import random", BEST_EFFORT, todo, before_start=before_start)
            inst.seed(seed)

    # -- the actions -------------------------------------------------------------------------------------------------

    def _perform(self, site: str, call: str, size: int, native: "Callable[[], bytes]") -> bytes:
        todo = decide(self.settings, site)
        if self.settings.reporting or todo == UNTOUCHED:  # the interpreter's own code, timed
            start = monotonic()
            if self.settings.reporting and lifted(NATIVE, self.settings.floor) is not NATIVE:
                # PyPy's own os.urandom() returns weak bytes while the CRNG is unready, which the floor forbids in
                # report mode too: wait first, as the interpreter's own code waits on CPython.
                _readiness.wait(None, warn_after=self.settings.warn_after.value, warn=self._warner(call))
            seen: str | None = None
            try:
                return native()
            finally:
                took = monotonic() - start
                # The interpreter's own code returned with the real kernel still unready (PyPy's os.urandom()): weak
                # bytes. Returned with the CRNG ready: it waited, and measured the window. Returned while only a
                # simulation says unready: the real kernel's state tells nothing of the window.
                window = None
                if _readiness.kernel_state() == _readiness.UNREADY:
                    seen = WEAK
                elif _readiness.is_ready():
                    window, seen = took, WAITS
                else:
                    window = _simulated_window()
                self._event(site, call, UNTOUCHED, todo, took, window=window, native=seen)
        if todo == BEST_EFFORT:
            self._event(site, call, BEST_EFFORT, todo)
            return _readiness.best_effort_bytes(size)
        if todo == RAISE:
            self._event(site, call, RAISED, todo)
            raise self._not_ready_error(call)
        assert todo == WAIT
        start = monotonic()
        try:
            ready = self._wait(call)
        except BlockingIOError as exc:
            if getattr(exc, _simulation.BOUNDED, False):  # a test's child: the plugin's watch looks for the record
                self._event(site, call, TIMED_OUT_RAISED, todo, monotonic() - start)
            raise
        if ready:
            waited = monotonic() - start
            self._event(site, call, WAITED, todo, waited, window=waited)
            return native()
        self._timed_out(site, call, todo, monotonic() - start)
        return _readiness.best_effort_bytes(size)

    def _event(
        self,
        site: str,
        call: str,
        done: str,
        would: str,
        waited: float = 0.0,
        before_start: bool = False,
        window: "float | None" = None,
        native: "str | None" = None,
    ) -> None:
        """Record one decision (:mod:`urandom_shim._events`, loaded by the first one). ``window``: how long the CRNG
        stayed unready after the call began, when the call found out; ``native``: what the interpreter's own code was
        seen to do with the call (report mode)."""
        record = _EVENTS.get("record")
        if record is None:
            try:
                from . import _events
            except Exception:  # noqa: BLE001 - at interpreter shutdown an import can fail; the call goes on
                return
            record = _EVENTS["record"] = _events.record
        record(self.settings, site, call, done, would, waited, before_start, window, native)

    def _wait(self, call: str) -> bool:
        """Wait as configured. True when ready; False when the timeout ran out."""
        settings = self.settings
        return _readiness.wait(settings.timeout.value, warn_after=settings.warn_after.value, warn=self._warner(call))

    def _warner(self, call: str) -> "Callable[[float], None]":
        return lambda elapsed: self._warn_waiting(call, elapsed)

    def _timed_out(self, site: str, call: str, todo: str, waited: float) -> None:
        """After a timeout: raise, or return for best-effort bytes (with one warning per call site)."""
        settings = self.settings
        if settings.on_timeout.value != "fallback":
            self._event(site, call, TIMED_OUT_RAISED, todo, waited)
            raise self._timeout_error(call)
        self._event(site, call, TIMED_OUT_BEST_EFFORT, todo, waited)
        key = call.partition("(")[0]
        if key not in self.warned:
            self.warned.add(key)
            emit(
                _messages.FALLBACK_AFTER_TIMEOUT.format(
                    call=call,
                    timeout_value=settings.timeout.value,
                    timeout_source=settings.timeout.source,
                    on_timeout_source=settings.on_timeout.source,
                    entropy_hint=ENTROPY_HINT,
                )
            )

    def _warn_waiting(self, call: str, elapsed: float) -> None:
        _runtime.warn_waiting(self.settings, self.warned, call, elapsed)

    def _not_ready_error(self, call: str) -> "BlockingIOError":
        return refusal(
            _messages.PEP522_REFUSAL.format(
                call=call,
                policy_phrase=policy_phrase(self.settings),
                wait_hint=_runtime.wait_hint(self.settings),
                simulation_note=simulation_note(),
            )
        )

    def _timeout_error(self, call: str) -> "BlockingIOError":
        timeout = self.settings.timeout
        return refusal(
            _messages.TIMED_OUT.format(
                call=call,
                value=timeout.value,
                source=timeout.source,
                policy_phrase=policy_phrase(self.settings),
                entropy_hint=ENTROPY_HINT,
                simulation_note=simulation_note(),
            )
        )


def _load_events() -> None:
    if "record" not in _EVENTS and state.engine is not None and state.engine.engaged:
        try:
            from . import _events

            _events.ready_for_shutdown()
        except Exception:  # noqa: BLE001 - never fail an interpreter's exit
            return
        _EVENTS["record"] = _events.record


def _simulated_window() -> "float | None":
    """How much longer a simulated window with a deadline stays open (infinite for one that nothing ends); None
    without a simulation, or when its end can't be known (a file that something will delete)."""
    sim = _simulation.current()
    if sim is None:
        return None
    if sim.deadline is not None:
        return max(0.0, sim.deadline - monotonic())
    return float("inf") if sim.endless() else None


def _best_effort_seed_or_none() -> "int | None":
    """A seed from best-effort kernel bytes; None (the interpreter's own time-and-pid seeding) if even those can't be
    had, say on a kernel before 5.6 in a chroot without /dev/urandom. Seeding never blocks or raises."""
    try:
        return _readiness.best_effort_seed()
    except OSError:
        return None


# -- the stand-ins, and where they go ---------------------------------------------------------------------------------
#
# Each wrapper has a fast path: once the CRNG is ready (or the shim is deactivated) it calls the original at once. The
# wrappers decide nothing themselves: they ask the engine what their call site does under the current policy. The
# undo log they are installed through is urandom_shim._patching.


#: Who calls the well-known aliases of os.urandom, for diagnostics.
ALIAS_USERS = {
    "random._urandom": "random.SystemRandom",
    "urllib.request._randombytes": _messages.URLLIB_DIGEST_AUTH,
}

SECRETS_FUNCTIONS = ("token_bytes", "token_hex", "token_urlsafe", "choice", "randbelow", "randbits")


def urandom_wrapper(engine: "Engine", original: "Callable[..., bytes]", label: str) -> "Callable[..., bytes]":
    """A stand-in for os.urandom (or an alias of it) that applies the policy while the CRNG is unready."""
    original = unwrap(original)

    def urandom(*args: "Any", **kwargs: "Any") -> bytes:
        if not engine.engaged or engine.ready():
            return original(*args, **kwargs)
        try:
            return engine.urandom(original, label, args, kwargs)
        except BlockingIOError as exc:
            if not getattr(exc, REFUSAL, False):
                raise
            raise exc.with_traceback(None) from None

    return dress(urandom, original, label)


def site_wrapper(engine: "Engine", original: "Callable[..., Any]", label: str, site: str) -> "Callable[..., Any]":
    """A stand-in for a function (a ``secrets`` function) whose inner os.urandom calls follow ``site``'s row."""
    original = unwrap(original)

    def wrapper(*args: "Any", **kwargs: "Any") -> "Any":
        if not engine.engaged or engine.ready():
            return original(*args, **kwargs)
        try:
            return engine.within_site(site, label, original, args, kwargs)
        except BlockingIOError as exc:
            if not getattr(exc, REFUSAL, False):
                raise
            raise exc.with_traceback(None) from None

    return dress(wrapper, original, label)


def seed_wrapper(engine: "Engine", original: "Callable[..., Any]") -> "Callable[..., Any]":
    """A stand-in for ``random.Random.seed``: ``seed(None)`` gets its entropy as the policy says."""
    original = unwrap(original)

    def seed(self: "Any", *args: "Any", **kwargs: "Any") -> "Any":
        if (
            ((args and args[0] is None) or (not args and kwargs.get("a") is None))
            and engine.engaged
            and not engine.ready()
        ):
            try:
                value = engine.seed_value(self)
            except BlockingIOError as exc:
                if not getattr(exc, REFUSAL, False):
                    raise
                raise exc.with_traceback(None) from None
            if value is not None:
                if args:
                    args = (value, *args[1:])
                else:
                    kwargs["a"] = value
        return original(self, *args, **kwargs)

    return dress(seed, original, "random.Random.seed")


def module_aliases(module: "ModuleType") -> "list[str]":
    """Names in ``module`` bound to the interpreter's os.urandom or to one of our os.urandom wrappers."""
    found = namespace(module) or {}
    # Identities first (no value's own __eq__ is ever called), found at the speed of C: `os` alone has about 300
    # names, and a loop over them in Python cost about 0.5 M instructions (issue 37). Then the exact test for the
    # few names that match.
    ids = _patching.urandom_ids
    if ids.isdisjoint(map(id, list(found.values()))):  # nearly every module: no tuple of a name and value made
        return []
    items = list(found.items())  # one copy: names and values that belong together
    names, values = zip(*items)
    identities = list(map(id, values))
    matched = ids.intersection(identities)
    if not matched:
        return []
    places = []
    for identity in matched:
        index = -1
        while True:
            try:
                index = identities.index(identity, index + 1)
            except ValueError:
                break
            places.append(index)
    return [
        names[index]
        for index in sorted(places)
        if (value := values[index]) is NATIVE_URANDOM or (is_wrapper(value) and unwrap(value) is NATIVE_URANDOM)
    ]


def patch_os(engine: "Engine", patcher: "Patcher", module: "ModuleType") -> None:
    """``os.urandom`` and ``posix.urandom``: one wrapper for both, so that ``os.urandom is posix.urandom`` stays
    true. Patching ``posix`` too covers ``import posix``, and an ``os`` that is reloaded or imported again after
    ``del sys.modules['os']``: it copies ``urandom`` from ``posix`` again."""
    if vars(module).get("urandom") is not None:
        patcher.set(module, "urandom", engine.os_urandom)


def patch_aliases(engine: "Engine", patcher: "Patcher", module: "ModuleType") -> None:
    """Point every alias of os.urandom that ``module`` holds at a wrapper labelled with the module and name."""
    mod_name = (namespace(module) or {}).get("__name__", "?")
    if not isinstance(mod_name, str) or mod_name in ("posix", "nt") or mod_name.startswith("urandom_shim"):
        return
    for name in module_aliases(module):
        if not patcher.has(module, name):  # os.urandom, say, which already has its wrapper
            patcher.set(module, name, urandom_wrapper(engine, NATIVE_URANDOM, f"{mod_name}.{name}"))


def patch_all_loaded_aliases(engine: "Engine", patcher: "Patcher", holders: "list[object]") -> None:
    """Cover aliases held by modules imported before the shim engaged (another ``.pth``, a sitecustomize).

    ``holders`` are the containers that refer to os.urandom or a wrapper of it (:func:`_patching.urandom_holders`):
    only the modules whose namespace is one of them are scanned. Scanning every value of every loaded module cost
    about 2.7 M instructions on an unready start (issue 30); the garbage collector's walk is shared with
    :func:`_patching.patch_stray_references`."""
    import gc

    # The walk doesn't see what gc.freeze() moved to the permanent generation (a pre-fork server's modules, say):
    # then every module is scanned, as before the walk was shared. PyPy has no gc.freeze().
    if getattr(gc, "get_freeze_count", int)():
        # Every module, each one's values tested here by identity at the speed of C first.
        ids = _patching.urandom_ids
        modules = []
        for module in list(sys.modules.values()):
            found = namespace(module)
            if found is not None and not ids.isdisjoint(map(id, list(found.values()))):
                modules.append(module)
    else:
        modules = _patching.holding_modules(holders)
    for module in modules:
        try:
            patch_aliases(engine, patcher, module)
        except Exception as exc:  # noqa: BLE001 - one odd module must not stop the others from being covered
            from ._messages import emit

            emit(_messages.ALIAS_SCAN_FAILED.format(module=module, name=type(exc).__name__, exc=exc))


def patch_random(engine: "Engine", patcher: "Patcher", module: "ModuleType") -> None:
    patch_aliases(engine, patcher, module)
    cls = getattr(module, "Random", None)
    if cls is not None and "seed" in vars(cls):
        inst = getattr(module, "_inst", None)
        bound = vars(module).get("seed")
        # random.seed is _inst.seed, a method bound at import time to the unpatched function: rebind it too.
        rebind = inst is not None and getattr(bound, "__self__", None) is inst
        wrapped_seed = seed_wrapper(engine, vars(cls)["seed"])
        patcher.set(cls, "seed", wrapped_seed)
        if rebind:
            patcher.set(module, "seed", wrapped_seed.__get__(inst, type(inst)))


def patch_secrets(engine: "Engine", patcher: "Patcher", module: "ModuleType") -> None:
    patch_aliases(engine, patcher, module)
    replaced: dict[int, tuple[object, object]] = {}
    for name in SECRETS_FUNCTIONS:
        original = vars(module).get(name)
        if original is not None and callable(original):
            wrapper = site_wrapper(engine, original, f"secrets.{name}", SECRETS)
            patcher.set(module, name, wrapper)
            replaced[id(original)] = (original, wrapper)
    # `from secrets import token_bytes` in a module loaded before the shim engaged holds the unpatched function.
    # Each namespace is first tested at the speed of C (the identities of its values against the replaced ones'):
    # a loop in Python over every name of every loaded module cost 7 to 31 M instructions in real apps (issue 37).
    wanted = set(replaced)
    for other in list(sys.modules.values()):
        found_namespace = namespace(other)
        if other is module or found_namespace is None:
            continue
        values = list(found_namespace.values())
        if wanted.isdisjoint(map(id, values)):
            continue
        for name, value in list(found_namespace.items()):
            found = replaced.get(id(value))
            if found is not None and found[0] is value:
                patcher.set(other, name, found[1])


# -- start-up and the runtime API -----------------------------------------------------------------------------------


def boot(how: str = "pth") -> None:
    """Take over from ``_urandom_shim_boot`` once it has found the CRNG unready (or simulated): read the
    configuration and install the policy. Idempotent. The kill switch and the probe are the start-up module's: an
    activation path of its own (such as a bootstrap ``sitecustomize``) calls ``_urandom_shim_boot.boot(how)``."""
    if state.booted:
        return
    state.booted = True
    state.activated_by = how
    try:
        start_unready()
    except Exception as exc:  # noqa: BLE001 - never break an interpreter
        state.inactive_reason = f"activation failed: {type(exc).__name__}: {exc}"
        _messages.report_failure(exc)


def start_unready() -> None:
    """Called by start-up when the CRNG is unready (or simulated so): resolve the configuration and engage."""
    if _config.ENV_HASHSEED in os.environ:  # started by `urandom-shim run` with a hash seed of ours
        from . import _hashseed  # only then: a module costs about 0.4 M instructions to import

        _hashseed.take_out()
    # A subinterpreter follows what its main interpreter resolved at start-up (_config.publish): not the directory the
    # process is in now, and without a second set of problem lines.
    followed = _config.followed()
    _simulation.current(report=followed is None)  # report a bad spec, and pin a relative window, before anything else
    if _readiness.is_ready():  # e.g. a simulated window that has already closed
        _hooks.add_wait_for_system_rng()
        if followed is None:
            _config.publish(None)
        return
    problems: list[str] = []
    if isinstance(followed, Settings):
        settings = followed
    else:
        settings, problems = _config.resolve()
    # The command line reports them itself; a report-only pytest run says them in its report.
    if (
        followed is None
        and not os.environ.get(_config.ENV_LAUNCHER)
        and os.environ.get(_config.ENV_PROBLEM_LINES) != "0"
    ):
        for problem in bounded(problems):
            emit(problem)
    _hooks.add_wait_for_system_rng()
    state.engine = engine = Engine(settings)
    if followed is None:
        _config.publish(settings)
    engine.engage()


# -- the runtime API ---------------------------------------------------------------------------------------------------


class _FromConfiguration:
    """The default of ``activate()``'s options: the value the configuration gives, as at start-up."""

    __slots__ = ()

    def __repr__(self) -> str:  # what help() and the API reference show as the default
        return "<from configuration>"


_KEEP: "Any" = _FromConfiguration()


def activate(
    policy: "str | None" = None,
    *,
    timeout: "float | None" = _KEEP,
    on_timeout: str = _KEEP,
    warn_after: "float | None" = _KEEP,
    seed_random_instances: str = _KEEP,
    mode: str = _KEEP,
    events: "str | None" = _KEEP,
) -> "Settings":
    """Apply a policy in this interpreter from now on, replacing any active one. Returns the effective settings.

    Settings you don't pass come from the configuration, as at start-up, and a floor (``allow_weak = false``) in
    the environment's or machine's file still applies. Patches are only installed while the CRNG is unready; when it
    is ready this changes nothing but the settings reported. ``mode="report"`` makes every call site behave as
    ``native`` and records what the policy would do; ``events`` is the file events are also appended to. Raises
    ValueError for a bad value, naming it and the valid choices.
    """
    given = {
        "policy": policy,
        "timeout": timeout,
        "on_timeout": on_timeout,
        "warn_after": warn_after,
        "seed_random_instances": seed_random_instances,
        "mode": mode,
        "events": events,
    }
    overrides = {k: v for k, v in given.items() if v is not _KEEP and not (k == "policy" and v is None)}
    return apply(overrides, "urandom_shim.activate()")


def apply(overrides: "Mapping[str, object]", source: str, say_problems: bool = True) -> "Settings":
    """:func:`activate`, with ``source`` naming where the values came from in every message (the pytest plugin
    passes ``--urandom-policy`` or its marker). Raises ValueError for a bad value, before anything changes.
    ``say_problems=False``: the caller says the configuration's problems itself (the plugin's report-only run)."""
    for key, value in overrides.items():
        try:
            _config.KEYS[key].read(value, from_text=False)
        except Exception as exc:  # noqa: BLE001 - InvalidValue, or anything a strange value raises
            raise ValueError(f"{source}: {key}={_config.as_invalid(value, key, exc)}") from None
    # The same resolution as at start-up, with these values on top: so the machine's floor holds here too.
    settings, problems = _config.resolve(overrides=overrides, overrides_source=source)
    for problem in bounded(problems) if say_problems else ():
        emit(problem)
    deactivate()
    if state.activated_by is None:
        state.activated_by = "runtime"
    _hooks.add_wait_for_system_rng()
    state.engine = engine = Engine(settings)
    engine.engage(reseed_loaded_random=False)
    return engine.settings


def deactivate() -> None:
    """Take out every patch and restore every original. ``secrets.wait_for_system_rng`` stays: code may rely on it."""
    engine = state.engine
    if engine is not None:
        engine.disengage()
        state.engine = None
