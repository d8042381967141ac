"""What a tool's vector is made of (``RouterConfig.description_view``).

A tool's whole text (name, description, parameter summary) and its description alone are two
views of it: the parameter lines say what the tool takes, the description what it does, which
is what a request names. The vector is the normalised mean of the two views' vectors (a tool
whose description is empty has the one view). Measured in
``benchmarks/results/quality_tools.md`` (ablation "one vector per tool"): on the tune halves it
lifts vector-only and hybrid ranking on MetaTool, Seal-Tools and HammerBench-zh alike.
"""

from __future__ import annotations

import numpy as np

from maclaw_fast.embedding import l2_normalise


def whole_text(tool) -> str:
    """The text a tool is embedded under as a whole: name, description, body summary."""
    return f"{tool.name} {tool.description}\n{tool.body_summary}"


def view_texts(tools, description_view: bool = True) -> tuple[list[str], np.ndarray]:
    """Every text to embed for ``tools`` and, for each text, the position of its tool: the whole
    text of each tool, then (``description_view``) each non-empty description.

    Examples
    --------
    >>> from maclaw_fast.tools import RegisteredTool
    >>> ts = [RegisteredTool(name="a", description="Do A"), RegisteredTool(name="b")]
    >>> texts, owner = view_texts(ts)
    >>> texts, owner.tolist()
    (['a Do A\\n', 'b \\n', 'Do A'], [0, 1, 0])
    """
    texts = [whole_text(t) for t in tools]
    owner = list(range(len(texts)))
    if description_view:
        for i, t in enumerate(tools):
            d = t.description.strip()
            if d:
                texts.append(d)
                owner.append(i)
    return texts, np.asarray(owner, np.int64)


def combine_views(vectors: np.ndarray, owner: np.ndarray, n_tools: int) -> np.ndarray:
    """One unit vector per tool: the normalised sum of its views' (unit) vectors, i.e. the
    direction of their mean.

    Examples
    --------
    >>> v = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]], np.float32)
    >>> combine_views(v, np.array([0, 1, 0]), 2).astype(float).round(3).tolist()
    [[0.707, 0.707], [0.0, 1.0]]
    """
    out = np.zeros((n_tools, vectors.shape[1]), np.float32)
    np.add.at(out, owner, np.asarray(vectors, np.float32))
    return l2_normalise(out)
