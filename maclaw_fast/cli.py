"""``maclaw-fast``: a thin command line over the API.

Each module of ``maclaw_fast.commands`` contributes its subcommands, exposing
``register(subparsers)``; handlers import the heavy libraries only when they run, so ``--help``
stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMAND_MODULES = (
    "maclaw_fast.commands.memory",
    "maclaw_fast.commands.maintenance",
    "maclaw_fast.commands.tools",
    "maclaw_fast.commands.workspace",
    "maclaw_fast.commands.agent",
    "maclaw_fast.commands.server",
)


# What an exit status means, for every command (docs/interfaces.md lists the same)
EXIT_CODES = {
    0: "done",
    1: "a system error (permissions, the disk, a failing library) or an unexpected one",
    2: "bad input (arguments, a path that is not there, a file that does not parse) or a "
       "store that cannot be used (locked by another process, damaged)",
    130: "stopped by Ctrl-C (within 2 s; every acknowledged write kept)",
}


# The per-call commands: their module alone builds the parser, so a run loads only what it uses
# (importing every command module pulls the store, maintenance and LLM client: ~0.5 s).
HOT_COMMANDS = {"route": "maclaw_fast.commands.tools", "recall": "maclaw_fast.commands.memory",
                "save": "maclaw_fast.commands.memory"}


EPILOG = """\
examples:
  maclaw-fast demo --embedder hash                  try everything on the bundled sample data
  maclaw-fast save "Lin prefers tabs" --category preference
  maclaw-fast recall "indentation style"
  maclaw-fast import data/memories.json             load a memories.json (with a progress bar)
  maclaw-fast chat --llm-url http://127.0.0.1:8080/v1 --model qwen2.5
  maclaw-fast COMMAND --help                        every option of one command

environment: MACLAW_HOME (where stores live, default ~/.maclaw_fast), MACLAW_LLM_BASE_URL,
MACLAW_LLM_MODEL, MACLAW_LLM_API_KEY, MACLAW_PROGRESS (1: always show progress, 0: never),
MACLAW_DEBUG=1 (show the traceback of an unexpected error).

exit status: 0 done, 2 bad input or an unusable store, 1 a system or unexpected error,
130 Ctrl-C.
"""


class HelpFormatter(argparse.HelpFormatter):
    """Wraps one-paragraph descriptions, keeps the layout of multi-line text (the examples),
    and appends each option's default when it says something (not for flags, nor when the
    help text already names it)."""

    def _fill_text(self, text, width, indent):
        if "\n" in text.strip():
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if (action.option_strings and default not in (None, False, True, argparse.SUPPRESS)
                and "default" not in text and action.nargs != 0):
            text += " (default: %(default)s)"
        return text


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (and the hint where the help is), exit 2.

    Subparsers are made with the same class and formatter, so every subcommand behaves alike.
    """

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def print_help(self, file=None):
        from maclaw_fast.progress import stop_all

        stop_all()  # the "starting" line goes before the help is printed
        super().print_help(file)

    def error(self, message: str):
        from maclaw_fast.progress import stop_all

        stop_all()
        text = " ".join(message.split())
        self.exit(2, f"error: {text} (see: {self.prog} --help)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``maclaw-fast`` parser: every command module's subcommands, or only the module of
    ``command`` when it is one of the per-call commands (``route``, ``recall``, ``save``).

    Examples
    --------
    >>> build_parser("recall").parse_args(["recall", "deploy", "--max", "3"]).max
    3
    """
    parser = Parser(
        prog="maclaw-fast", description="Long-term memory and tool routing for AI agents.",
        epilog=EPILOG)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    hot = HOT_COMMANDS.get(command)
    for name in (hot,) if hot else COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # that package has no commands yet
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``maclaw-fast`` console script.

    Every failure ends as one line on stderr and a non-zero exit (:data:`EXIT_CODES`): 2 for
    bad input (arguments, a path that is not there, a file that does not parse) or a store
    that cannot be used, 1 for a system error (permissions, the disk) or anything unexpected
    (``MACLAW_DEBUG=1`` shows its traceback), 130 for Ctrl-C.
    """
    import os
    import warnings

    from maclaw_fast.errors import MaclawError

    # a warning (e.g. a model package missing, and the fallback taken) reads as one line
    warnings.formatwarning = lambda message, category, *a, **k: f"warning: {message}\n"
    argv = sys.argv[1:] if argv is None else list(argv)
    from maclaw_fast import interrupt, progress

    before = os.environ.get(progress.ENV)
    try:
        with interrupt.guard():
            # building the parser imports the packages of every command (seconds when busy)
            flags = argparse.Namespace(progress=True if "--progress" in argv else None,
                                       quiet="--quiet" in argv)
            starting = progress.Activity(flags, "starting maclaw-fast", transient=True).start()
            try:
                args = build_parser(argv[0] if argv else None).parse_args(argv)
            finally:
                starting.stop()
        args.argv = argv  # as given: serve --workers starts its workers with the same options
        progress.apply_flags(args)  # so the library's own bars follow --progress/--quiet
        # chat and serve end on Ctrl-C their own way (the chat's last extraction, a server's
        # shutdown): they get the message, not the forced exit
        with interrupt.guard(force=not getattr(args, "own_interrupt", False)):
            return int(args.func(args) or 0)
    except MaclawError as exc:
        _fail(exc)
        return 2
    except KeyboardInterrupt:
        if not interrupt.fired():  # Ctrl-C before the guard (while Python imported the CLI)
            print(f"\n{interrupt.MESSAGE}", file=sys.stderr)
        return interrupt.EXIT_CODE
    except BrokenPipeError:  # the reader left (| head): nothing more to say, no traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
        _fail(_os_message(exc))  # a path given that is not there (or not a file): bad input
        return 2
    except OSError as exc:
        _fail(_os_message(exc))
        return 1
    except Exception as exc:  # noqa: BLE001 - the CLI's promise: a message, not a traceback
        if os.environ.get("MACLAW_DEBUG"):
            raise
        _fail(f"unexpected {type(exc).__name__}: {exc} (MACLAW_DEBUG=1 shows the traceback)")
        return 1
    finally:  # main() called in-process leaves the environment as it found it
        if before is None:
            os.environ.pop(progress.ENV, None)
        else:
            os.environ[progress.ENV] = before


def run() -> None:
    """Console-script entry: :func:`main`, then the exit handlers (the disk vector cache's
    save among them) and a direct exit. Skipping the interpreter's teardown of numba's and
    LLVM's state saves ~0.5 s of CPU per run (a ``route`` run: 2.1 → 1.55 s, measured; 1.2–1.6 s
    of wall time on a busy machine); with other non-daemon threads still running, the normal
    exit joins them. Daemon threads (the idle timer thread) are never joined by a normal exit
    either, so they do not stop the direct one."""
    import atexit
    import os
    import threading

    from maclaw_fast import interrupt

    # the exit handlers too: after Ctrl-C they get what is left of the grace period
    with interrupt.guard():
        code = main()
        me = threading.current_thread()
        if any(t is not me and not t.daemon and t.is_alive() for t in threading.enumerate()):
            sys.exit(code)
        atexit._run_exitfuncs()  # what a normal exit runs first; teardown is all that is skipped
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe: nothing left to say
                pass
    os._exit(code)


def _os_message(exc: OSError) -> str:
    where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
    return f"{exc.strerror or exc}{where}"


def _fail(message) -> None:
    text = " ".join(str(message).split()) or "failed"
    print(f"error: {text}", file=sys.stderr)


if __name__ == "__main__":
    run()
