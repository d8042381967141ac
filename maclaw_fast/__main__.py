"""``python -m maclaw_fast``: the ``maclaw-fast`` command line."""

from maclaw_fast.cli import run

if __name__ == "__main__":
    run()
