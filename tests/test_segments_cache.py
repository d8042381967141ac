"""The saved Han cuts (maclaw_fast.text.segments) are read on a process's first Han run, not
when the cache is enabled: an English-only command line never decodes the file."""

import subprocess
import sys
import textwrap


def _run(tmp_path, body: str) -> str:
    code = textwrap.dedent(f"""
        import sys
        from maclaw_fast.text import segments
        from maclaw_fast.text.tokenizer import tokenize
        segments.enable_cut_cache({str(tmp_path)!r})
    """) + textwrap.dedent(body)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_saved_cuts_are_read_on_the_first_han_run_only(tmp_path):
    assert _run(tmp_path, """
        print(tokenize("用户在哪个时区") == ["用户", "在", "哪个", "时", "区"])
    """) == ["True"]
    assert (tmp_path / segments_file()).stat().st_size > 0
    assert _run(tmp_path, """
        tokenize("which time zone")
        print(segments._state["unread"], "rjieba" in sys.modules)
        words = tokenize("用户在哪个时区")  # from the file: jieba is not loaded
        print(segments._state["unread"], "rjieba" in sys.modules, words[-1])
    """) == ["True", "False", "False", "False", "区"]


def test_a_damaged_file_means_cutting_again(tmp_path):
    (tmp_path / segments_file()).write_bytes(b"\x00not msgpack")
    assert _run(tmp_path, """
        print(tokenize("时区")[0], "rjieba" in sys.modules)
    """) == ["时", "True"]


def segments_file() -> str:
    from maclaw_fast.text.segments import FILE_NAME

    return FILE_NAME
