"""What the program that ``run`` is about to start will resolve, asked of its own interpreter: what decides the hash
seed (:func:`urandom_shim.cli.launch.start_without_waiting`).

``run`` starts the interpreter once before the program, with the program's own options, its own environment
(``run``'s bootstrap and settings included) and so its own ``site``, but with ``-c`` in place of the program and a
fixed ``PYTHONHASHSEED``: that start reads nothing from the kernel, so it never waits, and the program never runs in
it. ``sys.argv`` then holds :data:`urandom_shim._hashseed.QUESTION` and the program's command line. The shim that
starts there, from its ``.pth`` or from the bootstrap, sees the question where the program's own start resolves its
settings, resolves them with the same code for the program's command line, writes them on stdout in one line and
ends that start (:func:`urandom_shim._hashseed.answer`). Where no shim starts, the ``-c`` code says what the
interpreter is instead (:data:`ASK_CODE`).

The options are read first, as CPython reads them (:func:`read_options`): ``-S`` (no ``site``, so no shim takes the
seed out), ``-E`` and ``-I`` (the seed is ignored and passed on to children, and the question itself would wait for
the kernel), an option ``run`` does not know, and an interpreter that exits before it starts (``-h``,
``--version``) are known without starting anything.
"""

from __future__ import annotations

import os

from .. import _hashseed, _messages, _sources

#: How long ``run`` waits for the interpreter's answer: its start reads nothing from the kernel.
ASK_TIMEOUT = 10.0

#: CPython's one-letter options without a value (3.8 to 3.15; ``-P`` is 3.11's, which earlier ones refuse).
FLAGS = "bBdEiIOPqRsStuvx"
#: One-letter options whose value is the rest of the word, or the next word.
WITH_VALUE = "WX"
#: One-letter options after which the interpreter prints and exits, before it starts.
EXITING = "hV?"
#: Long options (``--NAME``, or ``-`` inside a cluster), and whether each takes the next word as its value; the
#: interpreter exits at once after the ones without a value.
LONG = {"check-hash-based-pycs": True, "help-env": False, "help-xoptions": False, "help-all": False}

#: What the interpreter runs when no shim answered for it: the facts that say why (its version, how a shim started
#: if one did, whether it runs ``site`` and reads ``PYTHON*`` variables), on one line. Python 2 runs it too. Written
#: without a space: it is code, not a message (tests/test_docs.py looks for prose outside the catalogue).
ASK_CODE = (
    "s=__import__('sys');f=s.flags;v=s.version_info;"
    "s.stdout.write('\\n'+chr(32).join(map(str,['" + _hashseed.ANSWER + "','%d.%d'%(v[0],v[1]),"
    "getattr(s,'_urandom_shim_boot',0)or'-','none',f.no_site,f.ignore_environment]))+'\\n');"
    "s.stdout.flush();__import__('os')._exit(0)"
)


class Options:
    """An interpreter's command line as it reads it: ``options`` (one word per option and one per value, as the
    question passes them on), ``letters`` (every one-letter option given), ``exits`` (it prints and exits before it
    starts: ``-h``, ``--version``)."""

    __slots__ = ("exits", "letters", "options")

    def __init__(self, options: list[str], letters: str, exits: bool) -> None:
        self.options = options
        self.letters = letters
        self.exits = exits


def read_options(argv: list[str]) -> Options | str:
    """The options of the command line ``argv`` (the interpreter first), read as CPython's getopt reads them
    (``Python/getopt.c``): up to the first word that is not an option, ``-``, ``--``, or the code or module of
    ``-c`` or ``-m``; clusters such as ``-sE`` and ``-Wdefault``; a value as the rest of its word or the next word;
    ``--check-hash-based-pycs VALUE``, also as ``-`` inside a cluster. What it can't read (an option it does not
    know, a value missing) is a reason, said in words."""
    options: list[str] = []
    letters = ""
    index = 1
    while index < len(argv):
        word = argv[index]
        if word == "--" or not word.startswith("-") or word == "-":
            break
        index += 1
        if word in ("--help", "--version"):
            return Options(options, letters, exits=True)
        cluster = word[1:]
        while cluster:
            letter, cluster = cluster[0], cluster[1:]
            if letter == "-":  # a long option: the rest of the word names it
                takes_value = LONG.get(cluster)
                if takes_value is None:
                    return _messages.RUN_OPTION_UNKNOWN.format(option=word)
                if not takes_value:
                    return Options(options, letters, exits=True)
                if index >= len(argv):
                    return _messages.RUN_OPTION_UNKNOWN.format(option=word)
                options += ["--" + cluster, argv[index]]
                index += 1
                break
            if letter in "cm":  # its value is the program: the options end here
                return Options(options, letters, exits=False)
            if letter in WITH_VALUE:
                if not cluster and index >= len(argv):
                    return _messages.RUN_OPTION_UNKNOWN.format(option=word)
                value = cluster or argv[index]
                index += 0 if cluster else 1
                options += ["-" + letter, value]
                break
            if letter in EXITING:
                return Options(options, letters, exits=True)
            if letter not in FLAGS:
                return _messages.RUN_OPTION_UNKNOWN.format(option=word)
            options.append("-" + letter)
            letters += letter
    return Options(options, letters, exits=False)


def keeps_the_seed(options: Options) -> str | None:
    """Why an interpreter given these options would keep a seed of ours for its children, if it would: with
    ``-S`` no ``site`` runs, so no shim takes it out of its environment; with ``-E`` or ``-I`` the interpreter
    ignores ``PYTHON*`` variables, the seed among them, and passes them on."""
    if "S" in options.letters:
        return _messages.RUN_NO_SITE
    for letter in "IE":
        if letter in options.letters:
            return _messages.RUN_IGNORES_ENVIRONMENT.format(option="-" + letter)
    return None


class Answer:
    """What the program will resolve while the CRNG is unready, as its interpreter answered: its policy's name, its
    ``on_timeout`` and ``timeout``, and whether it is in report mode."""

    __slots__ = ("on_timeout", "policy", "reporting", "timeout")

    def __init__(self, policy: str, on_timeout: str, timeout: float | None, reporting: bool) -> None:
        self.policy = policy
        self.on_timeout = on_timeout
        self.timeout = timeout
        self.reporting = reporting


def ask(executable: str, argv: list[str], options: Options, env: dict[str, str]) -> Answer | str | None:
    """Ask the interpreter ``executable`` what the program of the command line ``argv`` (the interpreter first,
    as ``run`` will start it, with ``env``) resolves: its :class:`Answer`; None if that start found the CRNG ready
    (the program's start then reads a full-strength hash secret without waiting); or why it can't be known."""
    import subprocess

    question = [argv[0], *options.options, "-c", ASK_CODE, _hashseed.QUESTION, *argv]
    try:
        result = subprocess.run(
            question,
            executable=executable,
            env={**env, _hashseed.VARIABLE: "0"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=ASK_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return _messages.RUN_TARGET_SILENT.format(interpreter=argv[0], reason=f"no answer in {ASK_TIMEOUT:g} s")
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        return _messages.RUN_TARGET_SILENT.format(interpreter=argv[0], reason=exc)
    lines = [line for line in os.fsdecode(result.stdout).splitlines() if line.startswith(_hashseed.ANSWER + " ")]
    words = lines[-1].split(" ")[1:] if lines else []
    if len(words) < 3:
        said = os.fsdecode(result.stderr).strip().splitlines()
        reason = f"exit status {result.returncode}" + (f": {said[-1]}" if said else "")
        return _messages.RUN_TARGET_SILENT.format(interpreter=argv[0], reason=_sources.clip(reason, 200))
    return _read_answer(words[0], words[1], words[2], words[3:])


def _read_answer(version: str, how: str, kind: str, rest: list[str]) -> Answer | str | None:
    """An answer's line, after its first word: the interpreter's version, how its shim started (``-`` if none),
    then ``resolved POLICY ON_TIMEOUT TIMEOUT MODE``, ``ready``, ``error NAME``, or where no shim answered, the
    ``-c`` code's ``none NO_SITE IGNORE_ENVIRONMENT``."""
    if kind == "resolved" and len(rest) == 4:
        policy, on_timeout, timeout, mode = rest
        try:
            seconds = None if timeout == "none" else float(timeout)
        except ValueError:
            seconds = None
        return Answer(policy, on_timeout, seconds, mode == "report")
    if kind == "ready":
        return None
    if kind == "error":
        return _messages.RUN_TARGET_FAILED.format(error=_sources.clip(" ".join(rest), 200))
    major, _, minor = version.partition(".")
    if kind != "none" or not major.isdigit() or not minor.isdigit():
        words = _sources.clip(" ".join([version, how, kind, *rest]), 200)
        return _messages.RUN_TARGET_SILENT.format(interpreter="it", reason=f"an answer it can't read: {words}")
    if (int(major), int(minor)) < (3, 8):
        return _messages.RUN_OLD_PYTHON.format(version=version)
    if rest[:1] == ["1"]:
        return _messages.RUN_NO_SITE
    if rest[1:2] == ["1"]:
        return _messages.RUN_IGNORES_ENVIRONMENT.format(option="-E or -I")
    if how == "-":
        return _messages.RUN_NO_SHIM_THERE
    from .. import _readiness

    # A shim started and did not answer: it found the CRNG ready, unless the kernel says otherwise now.
    return None if _readiness.kernel_state() != _readiness.UNREADY else _messages.RUN_SHIM_SILENT


__all__ = ["ASK_CODE", "Answer", "Options", "ask", "keeps_the_seed", "read_options"]
