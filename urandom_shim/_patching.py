"""Patching: install, undo, and cover every alias.

Patches are recorded in an undo log of (object, attribute, original) and undone in reverse order, so every original
comes back exactly. The originals stay reachable from each wrapper as ``__wrapped__``.

Each wrapper has a fast path: once the CRNG is ready (or the shim is deactivated) it calls the original at once. On the
transition to ready the shim also *restores* every original, so call sites go back to the interpreter's own functions
and speed; only references that were copied while the shim was engaged keep a wrapper, and its fast path.

This module is the machinery only, and imports nothing of the package but the interpreter's own os.urandom: the
stand-ins, where they go and what they do are the engine's (:mod:`urandom_shim._activation`).
"""

import _thread
import _weakref
import os
import sys

from ._readiness import native_urandom

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any, Callable, TypeVar

    T = TypeVar("T")

#: The interpreter's own os.urandom.
NATIVE_URANDOM = native_urandom

_MISSING = object()


class _Attr:
    """``obj.attr``: a module's or a class's attribute."""

    __slots__ = ("attr", "obj")

    def __init__(self, obj: "Any", attr: "Any") -> None:
        self.obj, self.attr = obj, attr

    def key(self) -> "tuple[int, object]":
        return id(self.obj), self.attr

    def get(self) -> object:
        return vars(self.obj).get(self.attr, _MISSING)

    def put(self, value: object) -> None:
        if value is _MISSING:
            try:
                delattr(self.obj, self.attr)
            except AttributeError:
                pass
        else:
            setattr(self.obj, self.attr, value)


class _Item(_Attr):
    """``container[key]``: a dict's value or a list's item."""

    def get(self) -> object:
        try:
            return self.obj[self.attr]
        except (LookupError, TypeError):
            return _MISSING

    def put(self, value: object) -> None:
        if value is not _MISSING:
            self.obj[self.attr] = value


class _Default(_Attr):
    """``function.__defaults__[index]``: a default argument (a tuple, so the whole tuple is replaced)."""

    def get(self) -> object:
        defaults = getattr(self.obj, "__defaults__", None) or ()
        return defaults[self.attr] if self.attr < len(defaults) else _MISSING

    def put(self, value: object) -> None:
        defaults = list(getattr(self.obj, "__defaults__", None) or ())
        if value is not _MISSING and self.attr < len(defaults):
            defaults[self.attr] = value
            self.obj.__defaults__ = tuple(defaults)


class _Wrapped(_Attr):
    """What a ``functools.partial`` (``func``), a ``staticmethod`` (``__func__``) or a closure cell
    (``cell_contents``) holds. None of these has a setter for it, but each can be set again: a partial through its
    ``__setstate__``, a staticmethod through ``__init__``."""

    def get(self) -> object:
        try:
            return getattr(self.obj, self.attr)
        except ValueError:  # an empty cell
            return _MISSING

    def put(self, value: object) -> None:
        obj = self.obj
        if value is _MISSING:
            return
        if self.attr == "func":  # functools.partial
            obj.__setstate__((value, obj.args, obj.keywords, vars(obj) or None))
        elif self.attr == "__func__":  # staticmethod
            type(obj).__init__(obj, value)
        else:
            obj.cell_contents = value


class _Entry:
    """One line of the undo log. Not a tuple: the garbage collector reports it among the holders of the original,
    and a slotted object is one the reference sweep skips without a look (see :func:`_places`)."""

    __slots__ = ("original", "ours", "place")

    def __init__(self, place: "_Attr", original: object, ours: object) -> None:
        self.place, self.original, self.ours = place, original, ours


class Patcher:
    """An undo log. ``set`` records the original the first time a place is patched; ``undo`` restores all.

    A place is usually a module's or class's attribute (``set``), and for references found elsewhere a dict value, a
    list item, a default argument, a partial's or staticmethod's function or a closure cell (``set_slot``).
    ``undo`` restores a place only if it still holds our wrapper: whoever patched it after us (``mock.patch``,
    another shim) keeps theirs. Once undone, a patcher is closed, so a post-import hook that races the transition to
    ready cannot patch again behind it.
    """

    def __init__(self) -> None:
        self._log: list[_Entry] = []
        self._patched: dict[tuple[int, object], int] = {}  # place key -> index in the log
        self._lock = _thread.RLock()
        self.closed = False

    def set(self, obj: object, attr: str, value: object) -> None:
        self.set_slot(_Attr(obj, attr), value)

    def set_slot(self, place: "_Attr", value: object) -> None:
        with self._lock:
            if self.closed:
                return
            key = place.key()
            index = self._patched.get(key)
            if index is not None:
                self._log[index].ours = value
            else:
                self._patched[key] = len(self._log)
                self._log.append(_Entry(place, unwrap(place.get()), value))
                if self not in _live:
                    _live.append(self)
            place.put(value)

    def has(self, obj: object, attr: str) -> bool:
        """Whether ``obj.attr`` is already in this patcher's log."""
        return _Attr(obj, attr).key() in self._patched

    def undo(self) -> None:
        with self._lock:
            self.closed = True
            while self._log:
                entry = self._log.pop()
                place, original, ours = entry.place, entry.original, entry.ours
                if place.get() is not ours:
                    continue  # patched again by someone else since: theirs stays
                try:
                    place.put(original)
                except Exception:  # noqa: BLE001 - a place that has become read-only keeps a wrapper, which passes through
                    pass
            self._patched.clear()
            if self in _live:
                _live.remove(self)


_live: "list[Patcher]" = []


def _after_fork_in_child() -> None:
    for patcher in _live:
        patcher._lock = _thread.RLock()  # another thread may have held it when the process forked


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


#: id -> weak reference to each live wrapper, to recognise our own without touching foreign objects. Weak, so that
#: the wrappers of every activate() that has since been undone don't pile up.
_wrappers: "dict[int, Any]" = {}
#: The ids of the interpreter's os.urandom and of each live wrapper around it: what the alias scan looks for, in C.
urandom_ids: "set[int]" = {id(NATIVE_URANDOM)}


def is_wrapper(value: object) -> bool:
    reference = _wrappers.get(id(value))
    return reference is not None and reference() is value


def unwrap(value: "T") -> "T":
    """The interpreter's original behind one of our wrappers; any other object unchanged."""
    while is_wrapper(value):
        value = vars(value)["__urandom_shim_original__"]
    return value


def dress(wrapper: "Callable[..., Any]", original: "Callable[..., Any]", label: str) -> "Callable[..., Any]":
    """Give ``wrapper`` the original's name, docstring and module, as functools.update_wrapper does (without its
    import cost on the start-up path)."""
    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(wrapper, attr, getattr(original, attr))
        except (AttributeError, TypeError):
            pass
    vars(wrapper).update(__wrapped__=original, __urandom_shim_original__=original, __urandom_shim_label__=label)
    key = id(wrapper)
    _wrappers[key] = _weakref.ref(wrapper, lambda _gone: _forget(key))
    if unwrap(original) is NATIVE_URANDOM:
        urandom_ids.add(key)
    return wrapper


def _forget(key: int) -> None:
    _wrappers.pop(key, None)
    urandom_ids.discard(key)


def namespace(module: object) -> "dict[str, object] | None":
    """A loaded module's globals, read without triggering anything: lazy modules (importlib.util.LazyLoader) load on
    attribute access, and may fail doing so."""
    if not isinstance(module, type(sys)):
        return None
    try:
        found = object.__getattribute__(module, "__dict__")
    except Exception:  # noqa: BLE001
        return None
    return found if isinstance(found, dict) else None


def urandom_holders() -> "list[object]":
    """Every container the garbage collector knows that refers to the interpreter's os.urandom or to a live wrapper
    of it: one walk of the heap, for both the alias scan and :func:`patch_stray_references`."""
    import gc

    targets = [NATIVE_URANDOM]
    for key, reference in list(_wrappers.items()):
        wrapper = reference()
        if wrapper is not None and key in urandom_ids:
            targets.append(wrapper)
    return [holder for holder in gc.get_referrers(*targets) if holder is not targets]


def holding_modules(holders: "list[object]") -> "list[ModuleType]":
    """The loaded modules whose namespace is one of ``holders`` (:func:`urandom_holders`). Each dict holder that
    has a ``__name__``, as every module's namespace has, is looked up by it in ``sys.modules``: a few lookups, where
    a loop over every loaded module cost about 0.5 M instructions an unready start (issue 37). Only if one isn't
    found that way (a module registered under another name) is every loaded module looked at, as before. A dict
    without ``__name__`` (an object's attributes, a class's namespace) is no module's, nor is one whose name's
    module has another namespace: :func:`patch_stray_references` covers them."""
    dicts = [holder for holder in holders if type(holder) is dict and "__name__" in holder]
    found: list[ModuleType] = []
    modules = sys.modules
    for holder in dicts:
        name = holder["__name__"]
        module = modules.get(name) if type(name) is str else None
        if module is None:
            break  # registered under another name, perhaps: look at every module
        if namespace(module) is holder:
            found.append(module)
        # Otherwise a dict that is not the namespace of the module of its name: a copy the interpreter keeps of a
        # built-in module's namespace (3.8's posix), or an object's attributes. patch_stray_references covers it.
    else:
        return found
    wanted = {id(holder) for holder in dicts}
    return [module for module in list(modules.values()) if id(namespace(module)) in wanted]


def patch_stray_references(patcher: "Patcher", wrapper: "Callable[..., bytes]", holders: "list[object]") -> None:
    """Cover references to the interpreter's os.urandom held outside module namespaces, taken before the shim
    engaged: dict values (instance attributes, ``{"rand": os.urandom}``), list items, class attributes, default
    arguments, ``functools.partial``, ``staticmethod`` and closure cells. The garbage collector knows every container
    that holds one; each place is patched in place and restored when the CRNG becomes ready.

    What can't be covered: a reference in a tuple that is not a default argument, a frozenset or dict key, a deque
    or a dict subclass, a bound method or a lazy iterator, an attribute declared in ``__slots__``, a running
    function's local variable, or C code. Those keep the interpreter's
    own behaviour: CPython's waits for the kernel; PyPy's never waits, which ``status`` and ``check`` say there.
    """
    skip = _own_places()
    skip.update(id(namespace(module)) for module in holding_modules(holders))
    for holder in holders:
        if id(holder) in skip:
            continue
        for place in _places(holder, NATIVE_URANDOM):
            try:
                if place.get() is NATIVE_URANDOM:
                    patcher.set_slot(place, wrapper)
            except Exception:  # noqa: BLE001 - a place that refuses (a read-only mapping, a frozen class) is skipped
                pass


def _own_places() -> "set[int]":
    """Our own wrappers' attributes and closures, which call the original, and so must keep the interpreter's
    os.urandom (as must module namespaces, which the alias scan covers with better labels)."""
    skip: set[int] = set()
    for reference in list(_wrappers.values()):
        wrapper = reference()
        if wrapper is None:
            continue
        skip.add(id(vars(wrapper)))
        skip.update(id(cell) for cell in getattr(wrapper, "__closure__", None) or ())
    return skip


def _places(holder: "Any", target: object) -> "list[_Attr]":
    """The places inside ``holder`` (a referrer of ``target``) that hold ``target``."""
    import gc

    kind = type(holder)
    if kind is dict or kind is list:
        keys = [key for key, value in (holder.items() if kind is dict else enumerate(holder)) if value is target]
        # Only a class's namespace has "__module__"; looking for the class costs a walk of the whole heap.
        owner = _owning_class(holder) if keys and kind is dict and "__module__" in holder else None
        if owner is not None:
            return [_Attr(owner, key) for key in keys if isinstance(key, str)]
        return [_Item(holder, key) for key in keys]
    if kind is tuple:  # only a function's default arguments can be replaced
        if not _DEFAULTS_IN_TUPLES:
            return []  # PyPy reports the function itself (below): no second walk of the heap for its tuple
        indexes = [index for index, value in enumerate(holder) if value is target]
        return [
            _Default(function, index)
            for function in (gc.get_referrers(holder) if indexes else ())
            if getattr(function, "__defaults__", None) is holder
            for index in indexes
        ]
    # PyPy's garbage collector reports the class, the function and the instance themselves, not the dict or the
    # tuple that holds the reference on CPython.
    if isinstance(holder, type):
        return [_Attr(holder, key) for key, value in list(vars(holder).items()) if value is target]
    if kind is _FUNCTION:
        defaults = holder.__defaults__ or ()
        keywords = holder.__kwdefaults__ or {}
        return [_Default(holder, index) for index, value in enumerate(defaults) if value is target] + [
            _Item(keywords, key) for key, value in keywords.items() if value is target
        ]
    if kind is staticmethod:
        return [_Wrapped(holder, "__func__")]
    if kind.__name__ == "cell":
        return [_Wrapped(holder, "cell_contents")]
    if kind.__name__ == "partial" and kind.__module__ == "functools":
        return [_Wrapped(holder, "func")]
    found = getattr(holder, "__dict__", None)
    if type(found) is dict:  # an instance whose attributes live in the object itself (Python 3.11+, PyPy)
        return [_Item(found, key) for key, value in found.items() if value is target]
    return []  # a frame, a bound method, a frozenset, C code: nothing to set


#: Whether a function's default arguments are a tuple the garbage collector reports (CPython), rather than the function
#: itself (PyPy).
_DEFAULTS_IN_TUPLES = sys.implementation.name == "cpython"
_FUNCTION = type(_places)


def _owning_class(namespace_: "dict[str, object]") -> "type | None":
    """The class whose namespace this dict is: it must be changed with setattr, which keeps the type cache right."""
    import gc

    for owner in gc.get_referrers(namespace_):
        if isinstance(owner, type) and any(inner is namespace_ for inner in gc.get_referents(owner.__dict__)):
            return owner
    return None
