"""Every subcommand's ``--help`` documents every option: the whole parser is walked."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from maclaw_fast.cli import COMMAND_MODULES, HOT_COMMANDS, build_parser


def _subparsers(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def _walk(parser, path=()):
    """(path, parser) of every leaf command, and every parser on the way."""
    yield path, parser
    sub = _subparsers(parser)
    if sub is not None:
        for name, child in sub.choices.items():
            yield from _walk(child, path + (name,))


ALL = list(_walk(build_parser()))
LEAVES = [(path, p) for path, p in ALL if _subparsers(p) is None]


def test_every_package_contributes_commands():
    names = {path[0] for path, _ in ALL if path}
    assert {"save", "recall", "import", "stats", "maintain", "route", "tools", "index",
            "search", "chat", "serve"} <= names
    assert len(COMMAND_MODULES) == 6 and len(LEAVES) >= 20


@pytest.mark.parametrize("path,parser", ALL, ids=[" ".join(p) or "maclaw-fast" for p, _ in ALL])
def test_every_option_and_subcommand_has_help(path, parser):
    sub = _subparsers(parser)
    if sub is not None:  # each subcommand is listed with a one-line summary
        helps = {a.dest: a.help for a in sub._choices_actions}
        assert set(helps) == set(sub.choices), path
        assert all(h and h.strip() for h in helps.values()), helps
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        assert action.help and action.help.strip(), f"{path}: {action.dest} has no help"
    if path:
        assert parser.epilog and "examples:" in parser.epilog and "maclaw-fast" in parser.epilog
        assert parser.description, path


@pytest.mark.parametrize("path,parser", LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
def test_help_text_shows_options_and_choices(path, parser):
    text = parser.format_help()
    for action in parser._actions:
        for opt in action.option_strings:
            assert opt in text, (path, opt)
        if action.choices and not isinstance(action.choices, dict):
            listed = [c for c in action.choices if str(c) in text]
            # every choice is in the help, the canonical ones at least (aliases may be in usage)
            assert len(listed) == len(list(action.choices)), (path, action.dest)


def test_specific_help_promises():
    """What a newcomer looks for: categories, that --tag repeats, --chunk and --top explained."""
    by_path = dict(ALL)
    save = by_path[("save",)].format_help()
    for cat in ("self_identity", "instruction", "preference", "project_knowledge",
                "session_checkpoint", "conversation_summary", "user_fact"):
        assert cat in save
    assert "repeat" in save
    assert "per batch" in by_path[("recall-batch",)].format_help()
    assert "hits shown per query" in by_path[("demo",)].format_help()
    recall = by_path[("recall",)].format_help()
    for opt in ("--category", "--dynamic", "--max", "--json"):
        assert opt in recall


def test_hot_commands_build_alone():
    for name in HOT_COMMANDS:
        parser = build_parser(name)
        assert set(_subparsers(parser).choices) >= {name}


def test_help_runs_as_a_process():
    res = subprocess.run([sys.executable, "-m", "maclaw_fast.cli", "save", "--help"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "--category CATEGORY" in res.stdout


@pytest.mark.parametrize("argv,needle", [
    (["recall"], "the following arguments are required: query"),
    (["recall", "x", "--max", "0"], "must be at least 1"),
    (["nope"], "invalid choice: 'nope'"),
    (["stats", "--store", "/nonexistent/maclaw_store"], "no store at /nonexistent/maclaw_store"),
])
def test_errors_are_one_line_and_non_zero(argv, needle):
    res = subprocess.run([sys.executable, "-m", "maclaw_fast.cli", *argv],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], res.stderr


def test_chat_and_serve_share_their_common_options():
    """One declaration: every option of chat but its own two is serve's too, with the same
    kind (a flag, a choice, a value), and serve takes --quiet as chat does."""
    def options(name):
        parser = dict(ALL)[(name,)]
        return {s: (type(a).__name__, tuple(a.choices or ()), a.nargs)
                for a in parser._actions for s in a.option_strings}

    chat, serve = options("chat"), options("serve")
    shared = set(chat) - {"--enable-bash", "--no-stream"}
    assert {"--store", "--workspace", "--catalog", "--embedder", "--mcp-config", "--off",
            "--llm-url", "--llm-timeout", "--quiet", "--progress"} <= shared
    assert {s: chat[s] for s in shared} == {s: serve[s] for s in shared}
    args = build_parser("serve").parse_args(["serve", "--quiet"])
    assert args.quiet is True
