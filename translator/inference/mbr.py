"""Minimum Bayes risk (MBR) selection: of a beam's hypotheses, the one the others agree with most.

Beam search outputs the hypothesis the model finds most probable; for a small model that is often
a short, safe guess. MBR reads the n-best list as a sample of what the translation could be and
outputs the consensus: the hypothesis with the highest total chrF against all the others (Kumar &
Byrne 2004; Freitag et al. 2022 with other utilities). The utility is sacreBLEU's sentence chrF
(character 1- to 6-grams, whitespace removed, recall weighted by beta = 2), computed here so that
each hypothesis's n-grams are counted once rather than once per pair.

A hypothesis over `LONGEST` times its source's length in characters is not chosen while another
is within it: a small model's beam holds the odd long guess for a short input (`he skied` ->
`Ha fatto un po' d'occhiata.`), and on a few words the others can agree with it most. It still
counts as evidence for the others.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

CHAR_ORDER = 6
BETA = 2.0
LONGEST = 3  # times the source's characters: longer hypotheses are chosen only if all are

NGrams = list[Counter[str]]


def char_ngrams(text: str) -> NGrams:
    """Counts of the character 1- to 6-grams of `text` with all whitespace removed."""
    chars = "".join(text.split())
    return [
        Counter(chars[i : i + n] for i in range(len(chars) - n + 1))
        for n in range(1, CHAR_ORDER + 1)
    ]


def chrf(hyp: NGrams, ref: NGrams) -> float:
    """sacreBLEU's sentence chrF (0-100) of `hyp` against `ref`, both from `char_ngrams`.

    Precision and recall are averaged over the orders that both sides have, then combined into
    one F-beta score (sacreBLEU's default, without epsilon smoothing).
    """
    precision = recall = 0.0
    orders = 0
    for h, r in zip(hyp, ref, strict=True):
        n_hyp, n_ref = sum(h.values()), sum(r.values())
        if n_hyp and n_ref:
            match = sum((h & r).values())
            precision += match / n_hyp
            recall += match / n_ref
            orders += 1
    if orders == 0 or precision + recall == 0:
        return 0.0
    precision, recall = precision / orders, recall / orders
    factor = BETA**2
    return 100 * (1 + factor) * precision * recall / (factor * precision + recall)


def consensus(texts: Sequence[str], allowed: Sequence[int] | None = None) -> int:
    """Index of the text with the highest total chrF against the other texts; the first on a tie.

    With the hypotheses in beam order, a tie goes to the one the model prefers. With `allowed`
    (indices, not empty), the choice is among those, every text still counting against them.
    """
    grams = [char_ngrams(t) for t in texts]
    choices = range(len(texts)) if allowed is None else allowed
    gains = {i: sum(chrf(grams[i], grams[j]) for j in range(len(texts)) if j != i) for i in choices}
    if not gains:
        return 0
    best = max(gains.values())
    # Sums in a different order round differently: equal texts must tie, so compare with slack.
    return next(i for i, gain in gains.items() if gain >= best - 1e-9)


def mbr_choice(
    candidates: list[list[int]],
    detokenize: Callable[[list[int]], str],
    source_chars: int | None = None,
) -> list[int]:
    """Of candidate outputs (ids, best first), the one whose text agrees most with the others';
    with `source_chars` (the length of the source as typed), one no longer than `LONGEST` times
    that where there is one."""
    if len(candidates) <= 1:
        return candidates[0] if candidates else []
    texts = [detokenize(c) for c in candidates]
    allowed = None
    if source_chars is not None:
        within = [i for i, t in enumerate(texts) if len(t) <= LONGEST * max(source_chars, 1)]
        allowed = within or None
    return candidates[consensus(texts, allowed)]
