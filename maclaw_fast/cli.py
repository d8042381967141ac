"""``maclaw-fast``: a thin command line over the API.

Each package contributes its subcommands from a ``commands`` module exposing
``register(subparsers)``; handlers import the heavy libraries only when they run, so ``--help``
stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMAND_MODULES = (
    "maclaw_fast.memory.commands",
    "maclaw_fast.maintenance.commands",
    "maclaw_fast.tools.commands",
    "maclaw_fast.workspace.commands",
    "maclaw_fast.agent.commands",
    "maclaw_fast.server.commands",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="maclaw-fast", description="Long-term memory and tool routing for AI agents.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # that package has no commands yet
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``maclaw-fast`` console script."""
    from maclaw_fast.errors import MaclawError

    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except MaclawError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
