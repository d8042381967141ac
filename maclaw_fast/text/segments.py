"""Han runs cut into words by jieba's dictionary (rjieba, no HMM), remembered: in this process,
and across processes in a file beside the embedding cache when a command line entry point asks
for it.

Importing rjieba loads its dictionary (~0.2 s of CPU), a large part of a short command's start
(``maclaw-fast route`` over a catalog with Chinese text). With the file, a run that cuts only
the texts an earlier run cut never imports it. The file is a cache: it records the rjieba
version and the splitting rules it was made with, and anything else (a missing, damaged or
older file) means cutting again.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import msgspec

FILE_NAME = "han_cuts.msgpack"
MAX_RUNS = 200_000  # runs remembered per mode; beyond, cut every time (memory stays bounded)
_RULES = "cuts-2"  # bump if what is stored per run changes (2: dictionary words only, no HMM)

_memo: dict[bool, dict[str, list[str]]] = {True: {}, False: {}}  # search_mode → run → words
_state = {"path": None, "added": 0, "jieba": None, "unread": False}
_lock = threading.Lock()


class _CutFile(msgspec.Struct):
    rules: str
    jieba: str  # rjieba's version
    search: dict[str, list[str]]
    plain: dict[str, list[str]]


def _jieba():
    mod = _state["jieba"]
    if mod is None:
        import rjieba as mod

        _state["jieba"] = mod
    return mod


def _jieba_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rjieba")
    except PackageNotFoundError:
        return "unknown"


def cut(run: str, search_mode: bool = True) -> list[str]:
    """jieba's words of a Han ``run`` (search segmentation by default, as
    ``rjieba.cut_for_search``; else ``rjieba.cut``), from its dictionary alone. The returned
    list is shared: do not change it.

    jieba's HMM glues characters its dictionary lacks by their neighbours, so one word came out
    whole in one sentence and in pieces in another ("时区是" → 时区, but "哪个时区" → 时 / 区;
    "林遥住在" → 林遥住): a query never matched the memory it asked about. Without it, a word
    outside the dictionary is cut into its characters wherever it stands, and a name stays apart
    from the verb after it (BM25 on ``data/memories_zh.json``: hit@5 0.864 → 0.932,
    ``benchmarks/results/quality_tokenizer.md``).

    >>> cut("查询数据库")
    ['查询', '数据', '据库', '数据库', '查询数据库']
    >>> cut("林遥住在上海"), cut("时区")
    (['林', '遥', '住', '在', '上海'], ['时', '区'])
    """
    memo = _memo[search_mode]
    words = memo.get(run)
    if words is None and _state["unread"]:  # the saved cuts, read on the first Han run only
        _read_cut_file()
        words = memo.get(run)
    if words is None:
        jieba = _jieba()
        words = jieba.cut_for_search(run, False) if search_mode else jieba.cut(run, False)
        if len(memo) < MAX_RUNS:
            memo[run] = words
            _state["added"] += 1
    return words


def enable_cut_cache(directory: str | os.PathLike) -> None:
    """Use the cuts saved in ``directory`` (if any, made by this rjieba), read when the first
    Han run is cut (a process without Chinese text never reads them), and save this process's
    new ones there at exit."""
    path = Path(directory) / FILE_NAME
    with _lock:
        if _state["path"] is None:
            import atexit

            atexit.register(save_cut_cache)
        elif _state["path"] != path:
            save_cut_cache()
        _state["path"] = path
        _state["unread"] = True


def _read_cut_file() -> None:
    with _lock:
        if not _state["unread"]:
            return
        _state["unread"] = False
        try:
            saved = msgspec.msgpack.decode(_state["path"].read_bytes(), type=_CutFile)
        except (OSError, msgspec.DecodeError):
            return
        if saved.rules != _RULES or saved.jieba != _jieba_version():
            return
        for mode, runs in ((True, saved.search), (False, saved.plain)):
            memo = _memo[mode]
            for run, words in runs.items():
                if len(memo) >= MAX_RUNS:
                    break
                memo.setdefault(run, words)


def save_cut_cache() -> None:
    """Write the cuts to the enabled file when this process added any (errors ignored: it is a
    cache); temp file + rename, so a reader never sees half a file."""
    path = _state["path"]
    if path is None or not _state["added"]:
        return
    data = msgspec.msgpack.encode(_CutFile(rules=_RULES, jieba=_jieba_version(),
                                           search=dict(_memo[True]), plain=dict(_memo[False])))
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, path)
        _state["added"] = 0
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
