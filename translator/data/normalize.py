"""Text normalisation of the corpus: Unicode NFC, and Italian accents written as apostrophes.

Much subtitle text writes an accented final vowel as the vowel plus an apostrophe (`e'`, `perche'`,
`citta'`) where standard Italian writes `è`, `perché`, `città`. `restore_accents` puts the accent
back, leaving alone what really is an apostrophe:

- elisions, where the apostrophe joins the next word (`l'uomo`, `dell'acqua`, `un'altra`), and any
  apostrophe after a consonant (`quest' anno`);
- truncations of one syllable (`po'`, `de'`, `mo'`, `be'`, `so'`) and the imperatives `da'`,
  `fa'`, `sta'`, `va'`, `di'`; of the short words only those on an explicit list change (`e'` ->
  `è`, `piu'` -> `più`, `si'` -> `sì`, ...);
- a closing single quote (`'ciao'`): a word of two syllables or more changes only when the corpus
  itself also writes it with the accent (its lexicon), or when it ends like a future tense or an
  abstract noun (`sara'`, `faro'`, `citta'`), and never inside single quotes.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

GRAVE = {"a": "à", "e": "è", "i": "ì", "o": "ò", "u": "ù"}
ACUTE_E = "é"
# One-syllable words whose apostrophe always stands for an accent, and their accented form.
SHORT = {
    "e": "è",
    "piu": "più",
    "puo": "può",
    "cio": "ciò",
    "gia": "già",
    "giu": "giù",
    "li": "lì",
    "la": "là",
    "si": "sì",
}
# Endings that mark a final stressed vowel in words of two syllables or more.
STRESSED_ENDINGS = ("ta", "ra", "ro", "che")
# (anchored at a word's start: unanchored, a word without a final accent is rescanned from each
# of its letters)
ACCENTED_WORD = re.compile(r"(?<!\w)\w*[àèéìíòóùú](?!\w)")
# A word ending in a vowel and an apostrophe that does not join a following word.
# (It may follow an elision: `dov'e'` -> `dov'è`, `c'e'` -> `c'è`.)
CANDIDATE = re.compile(r"(?<!\w)(\w*[aeiouAEIOU])(['’])(?!\w)")
OPENING_QUOTE = re.compile(r"(?:^|(?<=[\s(\"«]))['‘’](?=\w)")


def nfc(text: str) -> str:
    """Unicode NFC: `e` + combining grave becomes the single character `è`."""
    return unicodedata.normalize("NFC", text)


def accent_lexicon(sentences: Iterable[str], min_count: int = 2) -> dict[str, int]:
    """Lower-cased words that end in an accented vowel, seen at least `min_count` times: counts."""
    found: Counter[str] = Counter()
    for sentence in sentences:
        if words := ACCENTED_WORD.findall(sentence):
            found.update(words)
    counts: Counter[str] = Counter()
    for word, n in found.items():
        counts[word.lower()] += n
    return {w: n for w, n in counts.items() if n >= min_count}


def restore_accents(text: str, lexicon: dict[str, int] | None = None) -> str:
    """`text` with apostrophe-written final accents made real accents (see the module doc)."""
    if "'" not in text and "’" not in text:
        return text
    quoted = OPENING_QUOTE.search(text) is not None

    def fix(match: re.Match[str]) -> str:
        word = match.group(1)
        accented = _accented(word.lower(), lexicon or {}, quoted)
        if accented is None:
            return match.group(0)
        return accented.upper() if word.isupper() and len(word) > 1 else _same_case(word, accented)

    return CANDIDATE.sub(fix, text)


def _accented(base: str, lexicon: dict[str, int], quoted: bool) -> str | None:
    if base in SHORT:
        return SHORT[base]
    if len(base) < 4 or quoted:
        return None
    stem, vowel = base[:-1], base[-1]
    if base.endswith("che"):
        return stem + ACUTE_E  # perché, finché, poiché: always acute in standard spelling
    forms = [stem + GRAVE[vowel]] + ([stem + ACUTE_E] if vowel == "e" else [])
    known = [f for f in forms if f in lexicon]
    if known:  # the accented form the corpus itself writes most often
        return max(known, key=lambda f: lexicon[f])
    if base.endswith(STRESSED_ENDINGS):
        return stem + GRAVE[vowel]
    return None


def _same_case(original: str, lowered: str) -> str:
    return lowered[0].upper() + lowered[1:] if original[0].isupper() else lowered
