"""Prompts of the LLM-using maintenance steps, and the small helpers that read the replies.

Every builder returns OpenAI-style messages (the client translates them for Anthropic). Each
prompt states the exact JSON shape expected; the callers still validate every field, because
a model's promise to follow a format is not a guarantee.
"""

from __future__ import annotations

import json
import re

_FENCE = re.compile(r"^\s*```[A-Za-z0-9_+-]*[ \t]*\r?\n(.*?)\r?\n?```\s*$", re.DOTALL)
_QUOTES = ('"', "'", "“", "”", "「", "」")


def cut_bytes(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, never inside a character.

    Examples
    --------
    >>> cut_bytes("日本語", 7)
    '日本'
    """
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", errors="ignore")


def plain_reply(text: str) -> str:
    """A free-text reply without a surrounding code fence, quotes or a ``Compressed:`` label.

    Examples
    --------
    >>> plain_reply('```\\nuse `make` for builds\\n```')
    'use `make` for builds'
    """
    out = (text or "").strip()
    m = _FENCE.match(out)
    if m:
        out = m.group(1).strip()
    out = re.sub(r"^(compressed|result|output|summary|压缩后|结果)\s*[:：]\s*", "", out,
                 flags=re.IGNORECASE)
    if len(out) >= 2 and out[0] in _QUOTES and out[-1] in _QUOTES:
        out = out[1:-1].strip()
    return out


def _numbered(items: list[str]) -> str:
    return "\n".join(f"[{i}] {text}" for i, text in enumerate(items))


def merge_messages(contents: list[str], category: str) -> list[dict]:
    """Ask which memories of one category say the same thing (design §10 Compress step 3)."""
    system = (
        "You maintain the long-term memory of an AI assistant. You find entries that state the "
        "same fact, preference or instruction in different words, and merge each such group "
        "into one entry that keeps every concrete detail (names, numbers, paths, commands). "
        "Entries that merely share a topic are NOT duplicates.")
    user = (
        f"Category: {category}\nMemories (index in brackets):\n{_numbered(contents)}\n\n"
        "Reply with only a JSON array, one object per group of duplicates:\n"
        '[{"keep": <index of the entry to keep>, "remove": [<indices merged into it>], '
        '"merged": "<the merged text>"}]\n'
        "Use each index at most once; \"keep\" must not appear in \"remove\". "
        "Reply [] when there are no duplicates.")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def compress_messages(content: str, max_chars: int) -> list[dict]:
    """Ask for a shorter wording of one memory (design §10 Compress step 4)."""
    system = (
        "You compress memories of an AI assistant. Keep names, numbers, paths, commands and "
        "technical terms exactly; drop filler words and redundant explanation; use terse "
        "bullet points or short sentences. Keep the language of the original.")
    user = (f"Compress this memory to fewer than {max_chars} characters. Reply with the "
            f"compressed text only.\n\n{content}")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def compact_messages(contents: list[str]) -> list[dict]:
    """Ask for one-line compact forms of several memories (design §10 Compress step 5)."""
    system = (
        "You write compact forms of an AI assistant's memories: one short line each, keeping "
        "names, numbers, paths, commands and technical terms, shorter than the original.")
    user = (f"Memories (index in brackets):\n{_numbered(contents)}\n\n"
            'Reply with only a JSON array: [{"index": <index>, "compact": "<compact form>"}].')
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def promote_messages(contents: list[str], min_evidence: int, max_items: int) -> list[dict]:
    """Ask for recurring themes in episodic memories (design §10 Promote)."""
    system = (
        "You turn an AI assistant's episodic memories (conversation summaries, session "
        "checkpoints) into durable semantic knowledge about the user, the way MemGPT promotes "
        "recurring events into facts.")
    user = (
        f"Episodic memories, newest first:\n{_numbered(contents)}\n\n"
        f"Find themes that recur in at least {min_evidence} different entries. Reply with only "
        "a JSON array (at most "
        f"{max_items} items): "
        '[{"content": "<the durable fact, preference or instruction>", '
        '"category": "preference" | "instruction" | "user_fact", '
        '"evidence_count": <number of entries showing it>}]. Reply [] if nothing recurs.')
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def reflect_messages(contents: list[str], max_items: int) -> list[dict]:
    """Ask for higher-level insights over recent episodic memories (design §10 Reflect)."""
    system = (
        "You reflect on an AI assistant's recent experiences, as in Generative Agents: from "
        "concrete episodes infer higher-level insights about the user's preferences, habits "
        "and decision patterns that will help in future conversations.")
    user = (
        f"Recent episodic memories, newest first:\n{_numbered(contents)}\n\n"
        f"Reply with only a JSON array of at most {max_items} insights: "
        '[{"content": "<insight>", "category": "preference" | "instruction" | "user_fact" | '
        '"project_knowledge"}]. Reply [] if there is nothing new to learn.')
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def transcript(messages: list[dict]) -> str:
    """``role: content`` lines of a conversation."""
    return "\n".join(f"{m['role']}: {m['content']}" for m in messages)


def precompress_messages(messages: list[dict]) -> list[dict]:
    """Ask for a dense summary of a long conversation before extraction."""
    system = (
        "You condense conversations between a user and an AI assistant. Keep every decision, "
        "fact, preference, correction, name, number, path and command; drop small talk.")
    user = f"Condense this conversation:\n\n{transcript(messages)}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def extract_messages(conversation: str) -> list[dict]:
    """Ask for knowledge worth remembering from a finished conversation (design §10)."""
    system = (
        "You extract durable knowledge from a conversation between a user and an AI assistant: "
        "project facts (architecture, commands, paths, conventions, decisions) and the user's "
        "instructions or corrections about how the assistant should work. Skip small talk, "
        "one-off requests and anything only true during this conversation.")
    user = (
        f"Conversation:\n{conversation}\n\n"
        "Reply with only a JSON array: "
        '[{"content": "<one self-contained fact or instruction>", '
        '"category": "project_knowledge" | "instruction"}]. Reply [] if nothing is worth '
        "remembering.")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def conflict_messages(new: str, old: str) -> list[dict]:
    """Ask whether a new memory contradicts an older one (design §10 ConflictDetector)."""
    system = ("You check an AI assistant's memories for contradictions. Two memories conflict "
              "when both cannot be true now, e.g. a changed preference, path or decision.")
    user = (f"Older memory: {old}\nNewer memory: {new}\n\n"
            'Reply with only a JSON object: {"conflict": true | false, "reason": "<short>"}.')
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def filter_messages(query: str, candidates: list[dict], max_items: int) -> list[dict]:
    """Ask which recalled memories matter for a query (design §6 recall_with_llm_filter)."""
    system = ("You select the memories an AI assistant needs to answer the user's request. "
              "Prefer memories that directly help; ignore loosely related ones.")
    user = (f"Request: {query}\nCandidate memories (JSON):\n"
            f"{json.dumps(candidates, ensure_ascii=False)}\n\n"
            f"Reply with only a JSON array of the ids of the at most {max_items} most relevant "
            'memories, most relevant first, e.g. ["id1", "id2"].')
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
