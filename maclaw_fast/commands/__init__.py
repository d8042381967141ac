"""The ``maclaw-fast`` subcommands, one module per area (memory, maintenance, tools, workspace,
agent, server), each exposing ``register(subparsers)``; ``maclaw_fast.cli`` assembles them."""
