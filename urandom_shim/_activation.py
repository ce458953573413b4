"""The engine: applies the effective policy at every patched call site while the CRNG is unready.

The start-up code in :mod:`urandom_shim` hands over to :func:`start_unready` when its probe finds the kernel CRNG
uninitialised (or a simulation says so). The engine reads the configuration, installs the patches, and takes them all
out again the moment the CRNG is ready, so every call site returns to the interpreter's own code and speed.

This module also holds the runtime API that :mod:`urandom_shim` re-exports.
"""

from __future__ import annotations

import os
import sys
from _thread import _local

import urandom_shim as _startup

from . import _config, _hashseed, _patching, _readiness, _simulation
from ._messages import bounded, emit
from ._policies import (
    BEST_EFFORT,
    NATIVE,
    PEP522,
    RAISE,
    SEED_INSTANCE,
    SEED_NEW,
    UNTOUCHED,
    URANDOM,
    WAIT,
    Settings,
    action,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any, Callable, Mapping

PEP522_TEXT = "system random number generator is not ready; see secrets.token_bytes()"
ENTROPY_HINT = "give the machine an entropy source (a virtio-rng device, a hardware RNG, or a seed file)"


class Engine:
    """Holds the settings and the undo log, and answers each patched call while the CRNG is unready."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.engaged = False
        self.patcher = _patching.Patcher()
        self._local = _local()
        self._warned: set[str] = set()
        self._callbacks: list[Callable[[ModuleType], None]] = []
        self.os_urandom: Callable[..., bytes] = _patching.NATIVE_URANDOM

    # -- install and undo ----------------------------------------------------------------------------------------

    def engage(self, reseed_loaded_random: bool = True) -> None:
        """Install the policy, unless the CRNG is already ready (then nothing needs changing).

        ``random._inst`` was seeded from time and pid if ``random`` was imported while the CRNG was unready; it is
        reseeded from the kernel when ``random`` is imported (or reloaded) after this, and, with
        ``reseed_loaded_random``, when it was imported before (at start-up, by another ``.pth``).
        :func:`activate` at runtime passes False so that a program's own ``random.seed(42)`` is never overridden.

        Every patched module stays watched while the policy is installed: a reload, or an import after
        ``del sys.modules[name]``, runs its code again, and the patch goes back on.
        """
        if self.engaged or self.settings.policy_value is NATIVE or _readiness.is_ready():
            return
        self.engaged = True
        self.patcher = patcher = _patching.Patcher()
        self.os_urandom = _patching.urandom_wrapper(self, _patching.NATIVE_URANDOM, "os.urandom")
        _readiness.on_ready(self.disengage)  # first, so that a failure below still ends in a full restore
        try:
            self._watch("posix", _patching.patch_os, reseed_loaded_random)
            self._watch("os", _patching.patch_os, reseed_loaded_random)
            _patching.patch_all_loaded_aliases(self, patcher)
            _patching.patch_stray_references(self, patcher)
            self._watch("random", _patching.patch_random, reseed_loaded_random)
            self._watch("secrets", _patching.patch_secrets, reseed_loaded_random)
            self._watch("urllib.request", _patching.patch_aliases, reseed_loaded_random)
        except BaseException:
            self.disengage()
            raise

    def _watch(
        self, name: str, patch: Callable[[Engine, _patching.Patcher, ModuleType], None], reseed_loaded: bool
    ) -> None:
        """Patch ``name`` now if it is loaded, and again whenever it is imported or reloaded while engaged."""
        reseed = [reseed_loaded or name not in sys.modules]  # a later import or reload always reseeds

        def callback(module: ModuleType) -> None:
            if self.engaged:
                patch(self, self.patcher, module)
                if reseed[0] and patch is _patching.patch_random:
                    self.reseed_module_instance(module)
            reseed[0] = True

        self._callbacks.append(callback)
        _startup.watch(name, callback)

    def disengage(self) -> None:
        """Restore every original. Runs on the transition to ready, and on :func:`deactivate`."""
        self.engaged = False
        for callback in self._callbacks:
            _startup.unwatch(callback)
        self._callbacks.clear()
        self.patcher.undo()

    # -- what call sites ask ---------------------------------------------------------------------------------------

    def ready(self) -> bool:
        return _readiness.is_ready()

    def urandom(
        self, original: Callable[..., bytes], name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
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
            user = _patching.ALIAS_USERS.get(name)
            site, call = URANDOM, f"{name}({size})" + (f" (from {user})" if user else "")
        else:
            site, call = context
        return self._perform(site, call, size, lambda: original(size))

    def within_site(
        self, site: str, label: str, original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """Run ``original`` (a secrets function) so that its inner os.urandom calls follow ``site``'s row."""
        local = self._local
        if getattr(local, "site", None) is not None:  # token_hex -> token_bytes: the outermost call names the site
            return original(*args, **kwargs)
        local.site = (site, f"{label}()")
        try:
            return original(*args, **kwargs)
        finally:
            local.site = None

    def seed_value(self, instance: object) -> int | None:
        """The seed for ``Random.seed(None)`` while unready; None means the interpreter's own seeding (now ready)."""
        random_module = sys.modules.get("random")
        is_module_instance = random_module is not None and getattr(random_module, "_inst", None) is instance
        site = SEED_INSTANCE if is_module_instance else SEED_NEW
        call = "random.seed(None)" if is_module_instance else f"{type(instance).__name__}() seeding"
        todo = action(self.settings.policy_value, site, str(self.settings.seed_random_instances.value))
        if todo == UNTOUCHED:
            return None
        if todo == BEST_EFFORT:
            return _best_effort_seed_or_none()
        if todo == RAISE:
            raise self._not_ready_error(call)
        assert todo == WAIT
        if self._wait(call):
            return None
        return _best_effort_seed_or_none() if self._fallback(call) else None

    def reseed_module_instance(self, random_module: ModuleType) -> None:
        """``import random`` seeded ``random._inst`` from time and pid (bpo-32580): reseed from the kernel."""
        inst = getattr(random_module, "_inst", None)
        todo = action(self.settings.policy_value, SEED_INSTANCE)
        if inst is not None and todo == BEST_EFFORT and not _readiness.is_ready():
            seed = _best_effort_seed_or_none()
            if seed is not None:
                inst.seed(seed)

    # -- the actions -------------------------------------------------------------------------------------------------

    def _perform(self, site: str, call: str, size: int, native: Callable[[], bytes]) -> bytes:
        todo = action(self.settings.policy_value, site)
        if todo == UNTOUCHED:
            return native()
        if todo == BEST_EFFORT:
            return _readiness.best_effort_bytes(size)
        if todo == RAISE:
            raise self._not_ready_error(call)
        assert todo == WAIT
        if self._wait(call) or not self._fallback(call):
            return native()
        return _readiness.best_effort_bytes(size)

    def _wait(self, call: str) -> bool:
        """Wait as configured. True when ready; False when the timeout ran out."""
        settings = self.settings
        timeout = settings.timeout.value
        warn_after = settings.warn_after.value
        return _readiness.wait(
            timeout,  # type: ignore[arg-type]
            warn_after=warn_after,  # type: ignore[arg-type]
            warn=lambda elapsed: self._warn_waiting(call, elapsed),
        )

    def _fallback(self, call: str) -> bool:
        """After a timeout: True to return best-effort bytes (with one warning per call site), else raise."""
        settings = self.settings
        if settings.on_timeout.value != "fallback":
            raise self._timeout_error(call)
        key = call.partition("(")[0]
        if key not in self._warned:
            self._warned.add(key)
            emit(
                f"{call}: the kernel's random number generator was still not ready after {settings.timeout.value:g} s "
                f"(timeout from {settings.timeout.source}), so on_timeout 'fallback' (from "
                f"{settings.on_timeout.source}) returned best-effort bytes that may be predictable. "
                f"Set URANDOM_SHIM_ON_TIMEOUT=raise to refuse them, or {ENTROPY_HINT}."
            )
        return True

    def _policy_phrase(self) -> str:
        policy = self.settings.policy
        return f"urandom-shim policy '{policy.value}' (from {policy.source})"

    def _simulation_note(self) -> str:
        return simulation_note()

    def _warn_waiting(self, call: str, elapsed: float) -> None:
        key = "wait:" + call.partition("(")[0]
        if key in self._warned:  # one line per call site, not one per thread
            return
        self._warned.add(key)
        fail_fast = "" if self.settings.policy_value is PEP522 else "To fail fast instead, set URANDOM_POLICY=pep522. "
        emit(
            f"{call} has been waiting {elapsed:.1f} s for the kernel's random number generator to initialise, under "
            f"{self._policy_phrase()}. It returns as soon as the kernel is ready. {fail_fast}To bound the wait, set "
            f"URANDOM_SHIM_TIMEOUT=SECONDS. To end it, {ENTROPY_HINT}.{self._simulation_note()}"
        )

    def _not_ready_error(self, call: str) -> BlockingIOError:
        return refusal(
            f"{call} was called before the kernel's random number generator was initialised, and "
            f"{self._policy_phrase()} raises instead of waiting. Call secrets.wait_for_system_rng() first, or use "
            f"the secrets module, which waits; or set URANDOM_POLICY=pep524 to wait here.{self._simulation_note()}"
        )

    def _timeout_error(self, call: str) -> BlockingIOError:
        timeout = self.settings.timeout
        return refusal(
            f"{call} waited {timeout.value:g} s (timeout from {timeout.source}) for the kernel's "
            f"random number generator, under {self._policy_phrase()}. Raise the timeout, set "
            f"URANDOM_SHIM_ON_TIMEOUT=fallback to accept best-effort bytes, or {ENTROPY_HINT}.{self._simulation_note()}"
        )


def refusal(text: str) -> BlockingIOError:
    """A refusal to return bytes while the CRNG is unready: PEP 522's ``BlockingIOError`` (EAGAIN, as
    ``getrandom(GRND_NONBLOCK)`` reports it) with its text first, marked so that the wrapper the caller called
    raises it with one frame of ours."""
    error = BlockingIOError(f"{PEP522_TEXT}. {text}")
    error.errno = 11
    setattr(error, _patching.REFUSAL, True)
    return error


def checked_timeout(timeout: object) -> float | None:
    """``timeout`` as seconds, or None; ValueError for anything but a number >= 0 or None."""
    if timeout is None:
        return None
    try:
        seconds = float(timeout)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"timeout must be a number of seconds >= 0 or None, not {timeout!r}") from None
    if seconds != seconds or seconds < 0:
        raise ValueError(f"timeout must be a number of seconds >= 0 or None, not {seconds!r}")
    return seconds


def wait_as_configured(call: str, timeout: float | None) -> bool:
    """Wait for the CRNG for ``call`` (up to ``timeout``), with the configured ``warn_after`` line naming it."""
    settings = current_settings()
    engine = _engine or Engine(settings)
    return _readiness.wait(
        timeout,
        warn_after=settings.warn_after.value,  # type: ignore[arg-type]
        warn=lambda elapsed: engine._warn_waiting(call, elapsed),
    )


def simulation_note() -> str:
    """The sentence every message about an unready CRNG ends with when the unready state is simulated."""
    sim = _simulation.current()
    if sim is None:
        return ""
    return f" (The unready state is simulated by URANDOM_SHIM_SIMULATE={sim.spec}.)"


def _best_effort_seed_or_none() -> int | None:
    """A seed from best-effort kernel bytes; None (the interpreter's own time-and-pid seeding) if even those can't be
    had, say on a kernel before 5.6 in a chroot without /dev/urandom. Seeding never blocks or raises."""
    try:
        return _readiness.best_effort_seed()
    except OSError:
        return None


_engine: Engine | None = None


def start_unready() -> None:
    """Called by start-up when the CRNG is unready (or simulated so): resolve the configuration and engage."""
    global _engine
    if _hashseed.MARK in os.environ:  # started by `urandom-shim run` with a hash seed of ours
        _hashseed.pass_on(ready=_readiness.kernel_state() != _readiness.UNREADY)
    _simulation.current()  # report a bad simulation spec, and pin a relative window, before anything else
    if _readiness.is_ready():  # e.g. a simulated window that has already closed
        _startup.add_wait_for_system_rng()
        return
    settings, problems = _config.resolve()
    for problem in bounded(problems):
        emit(problem)
    _startup.add_wait_for_system_rng()
    _engine = Engine(settings)
    _engine.engage()


# -- the runtime API ---------------------------------------------------------------------------------------------------


class _FromConfiguration:
    """The default of ``activate()``'s options: the value the configuration gives, as at start-up."""

    __slots__ = ()

    def __repr__(self) -> str:  # what help() and the API reference show as the default
        return "<from configuration>"


_KEEP: Any = _FromConfiguration()


def activate(
    policy: str | None = None,
    *,
    timeout: float | None = _KEEP,
    on_timeout: str = _KEEP,
    warn_after: float | None = _KEEP,
    seed_random_instances: str = _KEEP,
) -> Settings:
    """Apply a policy in this interpreter from now on, replacing any active one. Returns the effective settings.

    Settings you don't pass come from the configuration, as at start-up, and a floor (``allow_weak = false``) in
    the environment's or machine's file still applies. Patches are only installed while the CRNG is unready; when it
    is ready this changes nothing but the settings reported. Raises ValueError for a bad value, naming it and the
    valid choices.
    """
    given = {
        "policy": policy,
        "timeout": timeout,
        "on_timeout": on_timeout,
        "warn_after": warn_after,
        "seed_random_instances": seed_random_instances,
    }
    overrides = {k: v for k, v in given.items() if v is not _KEEP and not (k == "policy" and v is None)}
    return apply(overrides, "urandom_shim.activate()")


def apply(overrides: Mapping[str, object], source: str) -> Settings:
    """:func:`activate`, with ``source`` naming where the values came from in every message (the pytest plugin
    passes ``--urandom-policy`` or its marker). Raises ValueError for a bad value, before anything changes."""
    global _engine
    for key, value in overrides.items():
        try:
            _config.KEYS[key][1](value, False)
        except Exception as exc:  # noqa: BLE001 - InvalidValue, or anything a strange value raises
            raise ValueError(f"{source}: {key}={_config.as_invalid(value, key, exc)}") from None
    # The same resolution as at start-up, with these values on top: so the machine's floor holds here too.
    settings, problems = _config.resolve(overrides=overrides, overrides_source=source)
    for problem in bounded(problems):
        emit(problem)
    deactivate()
    if _startup.activated_by is None:
        _startup.activated_by = "runtime"
    _startup.add_wait_for_system_rng()
    _engine = Engine(settings)
    _engine.engage(reseed_loaded_random=False)
    return _engine.settings


def deactivate() -> None:
    """Take out every patch and restore every original. ``secrets.wait_for_system_rng`` stays: code may rely on it."""
    global _engine
    if _engine is not None:
        _engine.disengage()
        _engine = None


def current_settings() -> Settings:
    """The effective policy and options, each with its source. Resolved now if start-up did not need to."""
    if _engine is not None:
        return _engine.settings
    settings, _problems = _config.resolve()
    return settings


def wait_for_system_rng(timeout: float | None = None) -> bool:
    """See :func:`urandom_shim.wait_for_system_rng`."""
    if _readiness.is_ready():
        return True
    return wait_as_configured("secrets.wait_for_system_rng()", checked_timeout(timeout))


def urandom_or_error(size: int, block: bool, timeout: float | None) -> bytes | BaseException:
    """See :func:`urandom_shim.urandom`: the bytes, or the exception for it to raise (so that the traceback shows the
    one frame the caller called)."""
    import operator

    try:
        size = operator.index(size)
    except TypeError:
        return TypeError(f"size must be an integer, not {type(size).__name__}")
    if size < 0:
        return ValueError("negative argument not allowed")
    if timeout is not None and block is False:
        return ValueError("block=False never waits, so it takes no timeout")
    try:
        timeout = checked_timeout(timeout)
    except ValueError as exc:
        return exc.with_traceback(None)  # raised again from the one frame the caller called
    if _readiness.is_ready():
        return _patching.NATIVE_URANDOM(size)
    if not block:
        return refusal(
            f"urandom_shim.urandom({size}, block=False) was called before the kernel's random number generator was "
            f"initialised. Call it without block=False to wait, or call secrets.wait_for_system_rng() first."
            f"{simulation_note()}"
        )
    if not wait_as_configured(f"urandom_shim.urandom({size})", timeout):
        return refusal(
            f"urandom_shim.urandom({size}, timeout={timeout:g}) waited {timeout:g} s for the kernel's random number "
            f"generator. Raise the timeout, or {ENTROPY_HINT}.{simulation_note()}"
        )
    return _patching.NATIVE_URANDOM(size)
