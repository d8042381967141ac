"""The always-on block of recall (design R4): which self-identity entries lead, which user facts
lead, and the assembly of the hit list within the entry limit and the token budget."""

import numpy as np
from numba import njit

# why a selected row is a hit (RecallHit.reason by index: scored, graph, self_identity,
# user_fact)
KIND_RANKED = 0
KIND_IDENTITY = 2
KIND_USER_FACT = 3


@njit(cache=True, inline="always")
def _identity_before(a, b, access, updated_at, seq):
    """Row ``a`` leads row ``b``: more important (self-identity entries share one category
    weight, so the access count decides), then more recent, then saved first."""
    if access[a] != access[b]:
        return access[a] > access[b]
    if updated_at[a] != updated_at[b]:
        return updated_at[a] > updated_at[b]
    return seq[a] < seq[b]


@njit(cache=True)
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


@njit(cache=True, inline="always")
def _in(r, rows, m):
    for j in range(m):
        if rows[j] == r:
            return True
    return False


@njit(cache=True)
def select_hits(fixed, ranked, ranked_rel, user_fact, max_user_facts, lead_window, tokens,
                max_entries, budget, out_rows, out_kind):
    """Assemble a recall: the ``fixed`` rows always (they count towards ``max_entries``); then
    the user facts among the first ``lead_window`` ``ranked`` rows whose relevance
    (``ranked_rel``, aligned with ``ranked``) is above 0, at most ``max_user_facts``, by
    relevance (ties: rank order); then the other ``ranked`` rows in order. Rows after the fixed
    ones are taken while fewer than ``max_entries``; one over the remaining token ``budget`` is
    skipped, not a stop. Writes rows and :data:`KIND_*` codes, returns the count."""
    n = 0
    used = 0
    for r in fixed:
        out_rows[n] = r
        out_kind[n] = KIND_IDENTITY
        n += 1
        used += tokens[r]
    n_fixed = n
    # the leading user facts: an insertion by relevance into a list of a few rows
    lead = np.empty(max(max_user_facts, 0), np.int64)
    lead_rel = np.empty(max(max_user_facts, 0))
    n_lead = 0
    for j in range(min(lead_window, ranked.shape[0])):
        r = ranked[j]
        if max_user_facts <= 0 or r < 0 or not user_fact[r] or not ranked_rel[j] > 0.0:
            continue
        if n_lead < max_user_facts:
            pos = n_lead
            n_lead += 1
        elif ranked_rel[j] > lead_rel[n_lead - 1]:
            pos = n_lead - 1
        else:
            continue
        while pos > 0 and ranked_rel[j] > lead_rel[pos - 1]:
            lead[pos] = lead[pos - 1]
            lead_rel[pos] = lead_rel[pos - 1]
            pos -= 1
        lead[pos] = r
        lead_rel[pos] = ranked_rel[j]
    for j in range(n_lead):
        r = lead[j]
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
        if r < 0 or _in(r, fixed, n_fixed) or _in(r, lead, n_lead):
            continue
        if used + tokens[r] > budget:
            continue
        out_rows[n] = r
        out_kind[n] = KIND_RANKED
        n += 1
        used += tokens[r]
    return n


@njit(cache=True)
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


@njit(cache=True, inline="always")
def norm_cos(c, cos_mode, c_lo, c_hi):
    """A row's cosine as fused: ``max(c, 0)`` (``cos_mode`` 0, raw); min-max over the
    candidates (1): ``(c − lo)/(hi − lo)``, and when all candidates are equal 1 for a positive
    cosine, 0 otherwise; on the model's absolute scale (2): ``max((c − lo)/(hi − lo), 0)`` with
    ``lo`` the model's cosine floor and ``hi`` 1, so a small cosine gap stays small."""
    c = np.float64(c)
    if cos_mode == 0:
        return max(c, 0.0)
    if cos_mode == 2:
        return max((c - c_lo) / (c_hi - c_lo), 0.0) if c_hi > c_lo else 0.0
    if c_hi > c_lo:
        return (c - c_lo) / (c_hi - c_lo)
    return 1.0 if c > 0.0 else 0.0
