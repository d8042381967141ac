"""The always-on block of recall (design R4): which self-identity entries lead, which user facts
lead, and the assembly of the hit list within the entry limit and the token budget."""

import numpy as np
from numba import njit

# why a selected row is a hit (RecallHit.reason by index: scored, graph, self_identity,
# user_fact)
KIND_RANKED = 0
KIND_IDENTITY = 2
KIND_USER_FACT = 3


@njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, nogil=True, error_model="numpy")
def _identity_before(a, b, access, updated_at, seq):
    """Row ``a`` leads row ``b``: more important (self-identity entries share one category
    weight, so the access count decides), then more recent, then saved first."""
    if access[a] != access[b]:
        return access[a] > access[b]
    if updated_at[a] != updated_at[b]:
        return updated_at[a] > updated_at[b]
    return seq[a] < seq[b]


@njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, nogil=True, error_model="numpy")
def pick_identity(fixed_rows, eligible, access, updated_at, seq, max_identity):
    """The at most ``max_identity`` ``eligible`` rows of ``fixed_rows`` that lead every recall,
    most important first, then most recent (an insertion into a list of a few rows)."""
    out = np.empty(max(max_identity, 0), np.int64)
    m = 0
    for r in fixed_rows:
        if max_identity <= 0 or not eligible[r]:
            continue
        if m < max_identity:
            pos = m
            m += 1
        elif _identity_before(r, out[m - 1], access, updated_at, seq):
            pos = m - 1
        else:
            continue
        while pos > 0 and _identity_before(r, out[pos - 1], access, updated_at, seq):
            out[pos] = out[pos - 1]
            pos -= 1
        out[pos] = r
    return out[:m]


@njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, nogil=True, error_model="numpy")
def _in(r, rows, m):
    for j in range(m):
        if rows[j] == r:
            return True
    return False


@njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, nogil=True, error_model="numpy")
def kth_relevance(rel, scored, k):
    """The ``k``-th largest ``rel`` among the ``scored`` rows (the least of them when fewer;
    inf when there are none or ``k`` ≤ 0): the bar a leading user fact reaches."""
    top = np.empty(max(k, 1))
    m = 0
    for i in range(rel.shape[0]):
        if not scored[i] or k <= 0:
            continue
        v = rel[i]
        if m < k:
            pos = m
            m += 1
        elif v > top[k - 1]:
            pos = k - 1
        else:
            continue
        while pos > 0 and v > top[pos - 1]:
            top[pos] = top[pos - 1]
            pos -= 1
        top[pos] = v
    return top[m - 1] if m > 0 else np.inf


@njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, nogil=True, error_model="numpy")
def lead_facts(user_facts, scored, rel, graph, seq, bar, max_user_facts):
    """The user facts that lead a recall (design R4): the ``scored`` rows of ``user_facts`` whose
    relevance (``rel + graph``, with what the walk gave them) is above 0 and at least ``bar``
    (:func:`kth_relevance`: a fact among the query's best matches leads however its category
    weighs), the ``max_user_facts`` most relevant, best first (ties: lower ``seq``)."""
    lead = np.empty(max(max_user_facts, 0), np.int64)
    best = np.empty(max(max_user_facts, 0))
    n_lead = 0
    for r in user_facts:
        v = rel[r] + graph[r]
        if not (scored[r] and v > 0.0 and v >= bar) or max_user_facts <= 0:
            continue
        if n_lead < max_user_facts:
            pos = n_lead
            n_lead += 1
        elif v > best[n_lead - 1] or (v == best[n_lead - 1] and seq[r] < seq[lead[n_lead - 1]]):
            pos = n_lead - 1
        else:
            continue
        while pos > 0 and (v > best[pos - 1] or (v == best[pos - 1]
                                                 and seq[r] < seq[lead[pos - 1]])):
            lead[pos] = lead[pos - 1]
            best[pos] = best[pos - 1]
            pos -= 1
        lead[pos] = r
        best[pos] = v
    return lead[:n_lead]


@njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, nogil=True, error_model="numpy")
def select_hits(fixed, lead, ranked, tokens, max_entries, budget, out_rows, out_kind):
    """Assemble a recall: the ``fixed`` rows always (they count towards ``max_entries``); then
    the ``lead`` user facts (:func:`lead_facts`); then the other ``ranked`` rows in order (-1:
    none). Rows after the fixed ones are taken while fewer than ``max_entries``; one over the
    remaining token ``budget`` is skipped, not a stop. Writes rows and :data:`KIND_*` codes,
    returns the count."""
    n = 0
    used = 0
    for r in fixed:
        out_rows[n] = r
        out_kind[n] = KIND_IDENTITY
        n += 1
        used += tokens[r]
    n_fixed = n
    for r in lead:
        if n >= max_entries:
            break
        if used + tokens[r] > budget:
            continue
        out_rows[n] = r
        out_kind[n] = KIND_USER_FACT
        n += 1
        used += tokens[r]
    for r in ranked:
        if n >= max_entries:
            break
        if r < 0 or _in(r, fixed, n_fixed) or _in(r, lead, lead.shape[0]):
            continue
        if used + tokens[r] > budget:
            continue
        out_rows[n] = r
        out_kind[n] = KIND_RANKED
        n += 1
        used += tokens[r]
    return n


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def cos_range(cos, eligible):
    """(lowest, highest) cosine among the ``eligible`` rows ((inf, -inf) when none): the
    min-max normalisation of the cosines over a recall's candidates (design R3)."""
    lo = np.inf
    hi = -np.inf
    for i in range(cos.shape[0]):
        if eligible[i]:
            c = np.float64(cos[i])
            lo = min(lo, c)
            hi = max(hi, c)
    return lo, hi


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def norm_cos(c, cos_mode, c_lo, c_hi):
    """A row's cosine as fused: ``max(c, 0)`` (``cos_mode`` 0, raw); min-max over the
    candidates (1): ``(c − lo)/(hi − lo)``, and when all candidates are equal 1 for a positive
    cosine, 0 otherwise; any other mode: ``max((c − lo)/(hi − lo), 0)`` (0 when ``hi ≤ lo``)
    with the ends :func:`cos_ends` gives, so a small cosine gap stays small."""
    c = np.float64(c)
    if cos_mode == 0:
        return max(c, 0.0)
    if cos_mode >= 2:
        return max((c - c_lo) / (c_hi - c_lo), 0.0) if c_hi > c_lo else 0.0
    if c_hi > c_lo:
        return (c - c_lo) / (c_hi - c_lo)
    return 1.0 if c > 0.0 else 0.0


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def norm_cos_rows(cos, cos_mode, c_lo, c_hi, out):
    """:func:`norm_cos` of every row into ``out`` (the same bits): one loop per case, each
    without a branch, so it runs on vector registers (kernels leave a division unchecked: its
    divisor is never 0 here)."""
    n = out.shape[0]
    span = c_hi - c_lo
    if cos_mode == 0:
        for i in range(n):
            out[i] = max(np.float64(cos[i]), 0.0)
    elif cos_mode >= 2 and c_hi > c_lo:
        for i in range(n):
            out[i] = max((np.float64(cos[i]) - c_lo) / span, 0.0)
    elif cos_mode >= 2:
        for i in range(n):
            out[i] = 0.0
    elif c_hi > c_lo:
        for i in range(n):
            out[i] = (np.float64(cos[i]) - c_lo) / span
    else:
        for i in range(n):
            out[i] = 1.0 if cos[i] > 0.0 else 0.0


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, error_model="numpy")
def cos_ends(cos, eligible, cos_mode, floor, spread):
    """The (lo, hi) :func:`norm_cos` maps a query's cosines with: the candidates' range
    (``cos_mode`` 1, min-max); the model's ``floor`` and 1 (2, floor); the candidates' range
    widened to at least ``spread × (1 − floor)`` (3, spread); the ``floor`` and the best
    candidate's cosine, at least ``floor + spread × (1 − floor)`` (4, floor to best). Modes 2–4
    keep a small gap small."""
    if cos_mode == 2:
        return floor, 1.0
    lo, hi = cos_range(cos, eligible)
    return ends_of_range(lo, hi, cos_mode, floor, spread)


@njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, nogil=True, error_model="numpy")
def ends_of_range(lo, hi, cos_mode, floor, spread):
    """:func:`cos_ends` given the candidates' cosine range ``lo``, ``hi`` (:func:`cos_range`;
    a caller that passes over the rows anyway takes it on the way)."""
    if cos_mode == 2:
        return floor, 1.0
    least = spread * (1.0 - floor)
    if cos_mode == 3:
        return lo, max(hi, lo + least)
    if cos_mode == 4:
        return floor, max(hi, floor + least)
    return lo, hi
