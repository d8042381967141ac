"""Query-side boosts for LoCoMo's weak categories (multi-hop, temporal, open-domain), evaluated as
ablations on top of the default recall.

    python benchmarks/locomo_boosts.py [--data DIR] [--out benchmarks/results/quality_memory.md]

Each conversation's store is built and every question recalled as ``locomo_eval`` does (default
configuration, MiniLM vectors, both clocks); every turn comes back with its score, and each
technique re-scores that ranking:

* **session best** — a turn gains ``w ×`` the best (``max``) or the mean of the two best
  (``top2``) scores of its session's turns: a session that holds a strong match lifts its other
  turns (multi-hop answers sit beside each other);
* **names and quoted phrases** — a turn gains ``w ×`` the share of the question's names (capitalised
  words not opening the question, not question words) and quoted phrases it holds;
* **names in the BM25 query** — the question's names and quoted phrases appended once or twice to
  the text the store tokenizes (the query vector unchanged): the form a recall could take with no
  new kernel input;
* **session diversity** — the top 60 taken again greedily, a turn losing ``λ`` for each turn of
  its session already taken beyond the first ``c - 1`` (multi-hop evidence sits in several
  sessions);
* **MMR** — the top 60 taken again greedily, a turn losing ``μ ×`` its largest cosine with a turn
  already taken (near-duplicate turns give way);
* **Rocchio** — the query vector plus ``β ×`` the mean vector of the top ``m`` turns (normalised),
  recalled again (pseudo-relevance feedback on the cosine side);
* **RM3-style expansion** — the ``k`` words of the top ``m`` turns with the largest tf·idf (not in
  the question, no stop words) appended to the query's text, recalled again (BM25 side);
* **temporal resolver** — relative dates of the question (``N days/weeks/months/years ago``,
  ``yesterday``, ``last week/weekend/month/year``, ``last <weekday>``) and explicit ones
  (``10 April 2023``, ``April 10, 2023``, ``May 2023``) resolved against the question's clock
  (the recall time: the last session's date under clock (b)); a turn gains
  ``w × exp(−|Δdays|/σ)`` by its save date. Under clock (a) every turn has one save date: no
  change.
* **sub-queries** — a question that names two or more of the conversation's speakers is asked
  again once per speaker (the others' names and "and"/"both" taken out), any other question
  once per part split at "and" or a comma (parts of three words or more); the rankings are
  fused by reciprocal rank, ``1/(k + rank)`` of the whole question plus ``w ×`` that of each
  sub-query (multi-hop questions gather answers of several people or parts).
* **same-speaker spreading** — each of the ``m`` best turns passes ``w ×`` its score's share of
  the best's to the other turns of its speaker that share its rare words (in at most ``d`` turns),
  by the share of those words they hold (one person's answers about one thing across sessions).

The default includes the speaker order (``RecallConfig.speaker_weight`` 0.2); the row below
it turns the order off. Weights are on the score's scale (``10 ×`` relevance is one unit of
relevance). The best setting
of each technique is chosen on the tuning half (conversations 0–4, mean turn R@10 of both
clocks); the held-out half (5–9) and all ten are reported. ``--out`` replaces the file's
``## Query-side boosts`` section (appended when absent); the rest of the file is kept.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import msgspec
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_eval import (CLOCKS, HELD_OUT, NOW_A, TUNING, _build, load_locomo,  # noqa: E402
                         question_metrics, variant)
from quality_memory import embed_cached, replace_section  # noqa: E402

SECTION = "## Query-side boosts"
REPEATS = (1, 2)
DAY = 86400.0
QUESTION_WORDS = {"what", "when", "where", "who", "whom", "whose", "which", "why", "how", "did",
                  "does", "do", "is", "was", "were", "are", "has", "have", "had", "would",
                  "could", "can", "should", "will", "in", "on", "after", "before", "the", "a",
                  "an", "i", "if", "and", "or", "of", "to", "for", "at", "by", "with", "from",
                  "as", "according", "besides", "apart", "other", "both", "between", "during",
                  "since"}
MONTHS = {m: i + 1 for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"])}
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
UNITS = {"day": 1.0, "week": 7.0, "month": 30.44, "year": 365.25}
NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a few": 3, "few": 3, "couple": 2,
           "a couple of": 2}
AGO_RE = re.compile(r"\b(\d+|a couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine"
                    r"|ten)\s+(day|week|month|year)s?\s+ago\b", re.I)
LAST_RE = re.compile(r"\blast\s+(week|weekend|month|year|" + "|".join(WEEKDAYS) + r")\b", re.I)
YESTERDAY_RE = re.compile(r"\byesterday\b", re.I)
MONTH_PAT = "|".join(MONTHS)
MDY_RE = re.compile(rf"\b({MONTH_PAT})\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
DMY_RE = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({MONTH_PAT}),?\s+(\d{{4}})\b", re.I)
MY_RE = re.compile(rf"\b({MONTH_PAT})\s+(\d{{4}})\b", re.I)
QUOTED_RE = re.compile(r"\"([^\"]+)\"|“([^”]+)”")
WORD_RE = re.compile(r"[A-Za-z][\w'-]*")


def question_dates(question: str, now: float) -> list[float]:
    """The dates (unix seconds) a question names, relative ones resolved against ``now``."""
    out = []
    at = datetime.fromtimestamp(now, tz=timezone.utc)
    for m in AGO_RE.finditer(question):
        n = m.group(1).lower()
        count = float(n) if n.isdigit() else float(NUMBERS.get(n, 1))
        out.append(now - count * UNITS[m.group(2).lower()] * DAY)
    for m in LAST_RE.finditer(question):
        what = m.group(1).lower()
        if what in WEEKDAYS:
            back = (at.weekday() - WEEKDAYS.index(what)) % 7 or 7
            out.append(now - back * DAY)
        elif what == "weekend":
            back = (at.weekday() - 5) % 7 or 7
            out.append(now - back * DAY)
        else:
            out.append(now - UNITS[what] * DAY)
    if YESTERDAY_RE.search(question):
        out.append(now - DAY)
    for m in MDY_RE.finditer(question):
        out.append(_date(int(m.group(3)), MONTHS[m.group(1).lower()], int(m.group(2))))
    for m in DMY_RE.finditer(question):
        out.append(_date(int(m.group(3)), MONTHS[m.group(2).lower()], int(m.group(1))))
    if not out:
        for m in MY_RE.finditer(question):
            out.append(_date(int(m.group(2)), MONTHS[m.group(1).lower()], 15))
    return [t for t in out if not math.isnan(t)]


def _date(year: int, month: int, day: int) -> float:
    try:
        return datetime(year, month, day, tzinfo=timezone.utc).timestamp()
    except ValueError:
        return float("nan")


def question_names(question: str) -> list[str]:
    """Lower-cased names (capitalised words after the first word, not question words) and quoted
    phrases of a question."""
    out = [next(g for g in m.groups() if g).lower() for m in QUOTED_RE.finditer(question)]
    for i, m in enumerate(WORD_RE.finditer(question)):
        w = m.group(0)
        base = w[:-2] if w.endswith("'s") else w
        if i > 0 and w[0].isupper() and base.lower() not in QUESTION_WORDS:
            out.append(base.lower())
    return list(dict.fromkeys(out))


# --------------------------------------------------------------------------- techniques
def session_best(scores, session, w, mode):
    """Each turn's score plus ``w ×`` its session's best score (``max``) or mean of two best."""
    out = scores.copy()
    for s in np.unique(session):
        rows = session == s
        top = np.sort(scores[rows])[::-1]
        best = top[0] if mode == "max" else top[:2].mean()
        out[rows] += w * best
    return out


def names_boost(scores, texts, names, w):
    if not names:
        return scores
    share = np.array([sum(n in t for n in names) / len(names) for t in texts])
    return scores + w * share


def temporal_boost(scores, saved_at, dates, w, sigma_days):
    if not dates:
        return scores
    near = np.zeros_like(scores)
    for d in dates:
        near = np.maximum(near, np.exp(-np.abs(saved_at - d) / (sigma_days * DAY)))
    return scores + w * near


def greedy_again(scores, penalty, depth=60):
    """The top ``depth`` taken again one by one, each time the best of ``scores[r] −
    penalty(r, taken)``; the rest keep their order below them."""
    out = scores.copy()
    top = list(np.argsort(-scores, kind="stable")[:depth])
    taken: list[int] = []
    while top:
        gain = [scores[r] - penalty(r, taken) for r in top]
        taken.append(top.pop(int(np.argmax(gain))))
    hi = scores[taken[0]] + 1000.0 if taken else 0.0
    for k, r in enumerate(taken):
        out[r] = hi - k
    return out


def session_diversity(scores, session, cap, lam):
    def penalty(r, taken):
        same = sum(1 for t in taken if session[t] == session[r])
        return lam * max(0, same - cap + 1)
    return greedy_again(scores, penalty)


def mmr(scores, vecs, mu):
    def penalty(r, taken):
        return mu * float(np.max(vecs[taken] @ vecs[r])) if taken else 0.0
    return greedy_again(scores, penalty)


# the re-query techniques: (kind, a, b) keys scored_rankings recalls again for
ROCCHIO = [("rocchio", m, beta) for m in (3, 5, 10) for beta in (0.3, 0.6, 1.0)]
RM3 = [("rm3", m, k) for m in (3, 5, 10) for k in (3, 5, 10)]
SPEAKER_OFF = ("speaker", 0.0, 0)
SUBQ = [("sub", w, k) for w in (0.3, 0.5, 1.0) for k in (10, 60)]


def techniques() -> dict[str, list[tuple[str, callable]]]:
    """Per technique, its settings as (label, rescore(scores, ctx) or a re-query key)."""
    diversity = [(f"session diversity, cap {c}, λ {lam}",
                  lambda s, c_, cap=c, lam=lam: session_diversity(s, c_["session"], cap, lam))
                 for c in (1, 2, 3) for lam in (0.3, 1.0)]
    mmrs = [(f"MMR, μ {mu}", lambda s, c, mu=mu: mmr(s, c["vecs"], mu))
            for mu in (0.5, 1.0, 2.0, 4.0)]
    rocchio = [(f"Rocchio, m {m}, β {b}", key) for key in ROCCHIO for _, m, b in [key]]
    rm3 = [(f"RM3 expansion, m {m}, {k} words", key) for key in RM3 for _, m, k in [key]]
    sess = [(f"session {mode}, w {w}",
             lambda s, c, w=w, mode=mode: session_best(s, c["session"], w, mode))
            for mode in ("max", "top2") for w in (0.05, 0.1, 0.2, 0.3)]
    names = [(f"names and quoted phrases, w {w}",
              lambda s, c, w=w: names_boost(s, c["lower"], c["names"], w))
             for w in (0.5, 1.0, 2.0, 4.0, 8.0)]
    temporal = [(f"temporal resolver, w {w}, σ {sigma} days",
                 lambda s, c, w=w, sigma=sigma: temporal_boost(s, c["saved_at"], c["dates"], w,
                                                               sigma))
                for w in (1.0, 2.0, 4.0, 8.0) for sigma in (3.0, 10.0, 30.0)]
    repeated = [(f"names repeated {r}× in the BM25 query", r) for r in REPEATS]
    subq = [(f"sub-queries, w {w}, k {k}", key) for key in SUBQ for _, w, k in [key]]
    spreading = [(f"same-speaker spreading, m {m}, w {w}, d {d}",
                  lambda s, c, m=m, w=w, d=d: speaker_spread(s, c["speaker"], c["rare"][d], m, w))
                 for m in (1, 3) for w in (0.5, 1.0, 2.0) for d in (3, 10)]
    return {"session best": sess, "session diversity": diversity, "MMR": mmrs,
            "Rocchio": rocchio, "RM3 expansion": rm3, "names and quoted phrases": names,
            "names in the BM25 query": repeated, "temporal resolver": temporal,
            "sub-queries": subq, "same-speaker spreading": spreading}


# --------------------------------------------------------------------------- evaluation
def scored_rankings(conv, vecs, qvecs, embedder, clock):
    """Every question's (entry rows, scores), with the entries' turns, texts, sessions, dates
    and the recall time."""
    store, id_turns, _ = _build(conv, vecs, embedder, variant("default"), clock)
    now = NOW_A if clock == "now" else max(t[3] for t in conv["turns"])
    qs = [q for q in conv["questions"] if q["category"] in (1, 2, 3, 4)]
    q_idx = [i for i, q in enumerate(conv["questions"]) if q["category"] in (1, 2, 3, 4)]
    entries = list(id_turns)
    questions = [q["question"] for q in qs]
    qv = qvecs[q_idx]
    texts = {0: questions}
    for r in REPEATS:  # the names appended r times to the query's text (BM25 side only)
        texts[r] = [" ".join([q["question"]] + question_names(q["question"]) * r) for q in qs]
    scores = {r: _scores(store, t, qv, entries) for r, t in texts.items()}
    by_dia = {t[0]: t for t in conv["turns"]}
    turn_row = {t[0]: i for i, t in enumerate(conv["turns"])}
    first = [by_dia[id_turns[e][0]] for e in entries]
    ctx = {"session": np.array([t[1] for t in first]),
           # what the store knows of a turn's date: its save time (one instant under clock (a))
           "saved_at": np.array([t[3] if clock == "dated" else NOW_A for t in first]),
           "lower": [t[2].lower() for t in first],
           "vecs": vecs[[turn_row[id_turns[e][0]] for e in entries]],
           "turns": [id_turns[e] for e in entries],
           "speaker": np.array([t[2].split(":")[0] for t in first])}
    ctx["rare"] = {d: rare_words(ctx["lower"], d) for d in (3, 10)}
    top = np.argsort(-scores[0], axis=1, kind="stable")
    for key in ROCCHIO:
        _, m, beta = key
        v = qv + beta * ctx["vecs"][top[:, :m]].mean(axis=1)
        v = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
        scores[key] = _scores(store, questions, v, entries)
    words = expansion_words(ctx["lower"])
    for key in RM3:
        _, m, k = key
        expanded = [" ".join([q] + words(q, top[j, :m], k)) for j, q in enumerate(questions)]
        scores[key] = _scores(store, expanded, qv, entries)
    speakers = sorted({t[2].split(":")[0] for t in conv["turns"]})
    parts = [sub_queries(q, speakers) for q in questions]
    flat = [p for ps in parts for p in ps]
    owner = np.array([j for j, ps in enumerate(parts) for _ in ps], np.int64)
    sub = (_scores(store, flat, embedder.embed(flat), entries) if flat
           else np.zeros((0, len(entries))))
    for key in SUBQ:
        _, w, k = key
        fused = reciprocal_ranks(scores[0], k)
        np.add.at(fused, owner, w * reciprocal_ranks(sub, k))
        scores[key] = np.where(fused > 0, fused, -np.inf)
    base = store.config
    store.config = msgspec.structs.replace(
        base, recall=msgspec.structs.replace(base.recall, speaker_weight=SPEAKER_OFF[1]))
    scores[SPEAKER_OFF] = _scores(store, questions, qv, entries)
    store.close()
    return ctx, now, [(q, {r: scores[r][j] for r in scores}) for j, q in enumerate(qs)]


def rare_words(lower_texts, max_df: int) -> np.ndarray:
    """(turns, words) incidence of the words (no stop words, four letters or more, the
    speaker's name left out) held by at most ``max_df`` turns."""
    from maclaw_fast.text.stopwords import DEFAULT_STOP_WORDS

    docs = [{w for w in re.findall(r"[a-z][a-z'-]+", t.split(":", 1)[-1])
             if len(w) > 3 and w not in DEFAULT_STOP_WORDS} for t in lower_texts]
    df: dict[str, int] = {}
    for d in docs:
        for w in d:
            df[w] = df.get(w, 0) + 1
    vocab = {w: i for i, w in enumerate(w for w, n in df.items() if n <= max_df)}
    out = np.zeros((len(docs), len(vocab)), np.float32)
    for r, d in enumerate(docs):
        out[r, [vocab[w] for w in d if w in vocab]] = 1.0
    return out


def speaker_spread(scores, speaker, rare, m, w):
    """The docstring's same-speaker spreading from the ``m`` best turns."""
    out = scores.copy()
    top = np.argsort(-scores, kind="stable")[:m]
    best = scores[top[0]]
    for r in top:
        own = rare[r].sum()
        if own == 0 or not np.isfinite(scores[r]) or best <= 0:
            continue
        share = (rare @ rare[r]) / own
        share[r] = 0.0
        share[speaker != speaker[r]] = 0.0
        out += w * (scores[r] / best) * share
    return out


def sub_queries(question: str, speakers: list[str]) -> list[str]:
    """The parts a question is asked again as (none: it stays whole); the docstring's rule."""
    named = [n for n in speakers if re.search(rf"\b{re.escape(n)}\b", question)]
    if len(named) >= 2:
        out = []
        for n in named:
            s = question
            for m in named:
                if m != n:
                    s = re.sub(rf"\b{re.escape(m)}('s)?\b", "", s)
            s = re.sub(r"\b(and|both)\b", "", s)
            out.append(re.sub(r"\s+", " ", s).strip())
        return out
    parts = [p.strip() for p in re.split(r"\band\b|,", question) if len(p.split()) >= 3]
    return parts if len(parts) >= 2 else []


def reciprocal_ranks(scores: np.ndarray, k: float) -> np.ndarray:
    """``1/(k + rank)`` (rank from 0) of each returned entry of each row, 0 for the others."""
    order = np.argsort(-scores, axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(scores.shape[1])[None, :], axis=1)
    return np.where(np.isfinite(scores), 1.0 / (k + rank), 0.0)


def expansion_words(lower_texts):
    """``words(question, rows, k)``: the ``k`` words of ``rows``' texts with the largest summed
    tf × idf (idf over every turn), none a stop word, a question word or in the question."""
    from maclaw_fast.text.stopwords import DEFAULT_STOP_WORDS

    docs = [re.findall(r"[a-z][a-z'-]+", t) for t in lower_texts]
    df: dict[str, int] = {}
    for d in docs:
        for w in set(d):
            df[w] = df.get(w, 0) + 1
    n = len(docs)

    def words(question, rows, k):
        asked = set(re.findall(r"[a-z][a-z'-]+", question.lower()))
        weight: dict[str, float] = {}
        for r in rows:
            for w in docs[r]:
                if w not in asked and w not in DEFAULT_STOP_WORDS and len(w) > 2:
                    weight[w] = weight.get(w, 0.0) + math.log(n / df[w])
        return sorted(weight, key=lambda w: -weight[w])[:k]
    return words


def _scores(store, texts, qvecs, entries):
    """Each query's score of every entry (−inf for one not returned)."""
    table = store.recall_batch_arrow(texts, reinforce=False, query_vectors=qvecs)
    ids = table.column("id").to_pylist()
    qi = table.column("query_index").to_numpy()
    score = table.column("score").to_numpy()
    row_of = {e: i for i, e in enumerate(entries)}
    out = np.full((len(texts), len(entries)), -np.inf)
    for k in range(len(ids)):
        out[qi[k], row_of[ids[k]]] = score[k]
    return out


def metrics_of(ctx, q, scores):
    order = np.argsort(-scores, kind="stable")
    ranking = [d for r in order if np.isfinite(scores[r]) for d in ctx["turns"][r]]
    return question_metrics(ranking, q["gold"])


def evaluate(convs, tv, qv, embedder, log=print):
    """``{label: {(clock, conv): [metrics with category]}}`` for the default and each setting."""
    settings = [("default", None), ("speaker order off", SPEAKER_OFF)] + [
        s for ss in techniques().values() for s in ss]
    res = {label: {} for label, _ in settings}
    t0 = time.perf_counter()
    for ci, conv in enumerate(convs):
        for clock in CLOCKS:
            ctx, now, rows = scored_rankings(conv, tv[ci], qv[ci], embedder, clock)
            for label, fn in settings:
                got = []
                for q, by_repeat in rows:
                    if not callable(fn) and fn is not None:  # recalled again, not re-scored
                        got.append(dict(metrics_of(ctx, q, by_repeat[fn]),
                                        category=q["category"]))
                        continue
                    s = by_repeat[0]
                    c = dict(ctx, names=question_names(q["question"]),
                             dates=question_dates(q["question"], now))
                    m = metrics_of(ctx, q, s if fn is None else fn(s, c))
                    got.append(dict(m, category=q["category"]))
                res[label][(clock, ci)] = got
        log(f"  conversation {ci}: {time.perf_counter() - t0:.1f} s")
    return res


def mean(res, label, conv_ids, metric="R@10", clocks=CLOCKS, category=None):
    vals = [m[metric] for clock in clocks for ci in conv_ids for m in res[label][(clock, ci)]
            if category is None or m["category"] == category]
    return float(np.mean(vals)) if vals else float("nan")


def report(res, seconds: float) -> str:
    all10 = TUNING + HELD_OUT
    lines = [SECTION, "",
             f"Generated by `python benchmarks/locomo_boosts.py` ({time.strftime('%Y-%m-%d')}, "
             f"{seconds:.0f} s): the default recall's full ranking re-scored, or the questions "
             "recalled again, by each technique (protocol: the script's docstring). Turn R@10, mean of clocks (a) and (b) unless "
             "said; the setting of each technique chosen on the tuning half (0–4).", "",
             "| technique (best setting on 0–4) | R@10 tune 0–4 | R@10 held-out 5–9 | R@10 all "
             "| (b) all | session R@10 all | multi-hop | temporal | open-domain | single-hop "
             "| multi-hop 5–9 | open-domain 5–9 | lifts tune / held-out by > 0.002 |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def row(name, label, kept):
        cats = [f"{mean(res, label, all10, category=c):.3f}" for c in (1, 2, 3, 4)]
        cats += [f"{mean(res, label, HELD_OUT, category=c):.3f}" for c in (1, 3)]
        return (f"| {name} | {mean(res, label, TUNING):.3f} | {mean(res, label, HELD_OUT):.3f} "
                f"| {mean(res, label, all10):.3f} | "
                f"{mean(res, label, all10, clocks=('dated',)):.3f} | "
                f"{mean(res, label, all10, 'S@10'):.3f} | " + " | ".join(cats) + f" | {kept} |")

    base_tune, base_held = mean(res, "default", TUNING), mean(res, "default", HELD_OUT)
    lines.append(row("default (no boost)", "default", "—"))
    lines.append(row("speaker order off (`speaker_weight` 0)", "speaker order off", "—"))
    sweep = ["", "Every setting (tuning half 0–4, turn R@10):", "",
             "| setting | R@10 tune 0–4 | multi-hop | temporal | open-domain |",
             "|---|---|---|---|---|"]
    for tech, settings in techniques().items():
        best = max(settings, key=lambda s: mean(res, s[0], TUNING))[0]
        tune = mean(res, best, TUNING) - base_tune
        held = mean(res, best, HELD_OUT) - base_held
        verdict = ("yes" if tune > 0.002 and held > 0.002 else
                   "held-out only" if held > 0.002 else "no")
        lines.append(row(f"{tech}: {best}", best, f"{verdict} ({tune:+.3f} / {held:+.3f})"))
        for label, _ in settings:
            sweep.append(f"| {label} | {mean(res, label, TUNING):.3f} | "
                         + " | ".join(f"{mean(res, label, TUNING, category=c):.3f}"
                                      for c in (1, 2, 3)) + " |")
    return "\n".join(lines + sweep) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1] / "data" / "eval"))
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "maclaw_fast_quality"))
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"
                                         / "quality_memory.md"))
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    from maclaw_fast.embedding.onnx import OnnxEmbedder

    embedder = OnnxEmbedder(threads=2, batch_size=64)
    convs = load_locomo(Path(args.data))
    cache = Path(args.cache) if args.cache else None
    tv = [embed_cached(embedder, [t[2] for t in c["turns"]], cache) for c in convs]
    qv = [embed_cached(embedder, [q["question"] for q in c["questions"]], cache) for c in convs]
    res = evaluate(convs, tv, qv, embedder, log=lambda m: print(m, file=sys.stderr, flush=True))
    text = report(res, time.perf_counter() - t0)
    replace_section(Path(args.out), SECTION, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
