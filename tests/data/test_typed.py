"""Text as people type it (`data.noise`, data/typed.py): each form is what it says, the shares
are kept, validation pairs stay as written, the store holds the pairs as presented, and the
tokenizers learn the forms' pieces."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
from helpers import ROOT, write_jsonl
from hypothesis import given
from hypothesis import strategies as st

from translator.config import Config, load_config
from translator.data.build import prepare_store
from translator.data.tokenizer import decode_ids
from translator.data.typed import (
    FORMS,
    choose_forms,
    form_counts,
    present,
    present_drawn,
    title_case,
    unpunctuated,
    with_typos,
)
from translator.errors import ConfigError

SHARES = {"upper": 0.1, "lower": 0.2, "title": 0.05, "typos": 0.15}
SENTENCES = [
    ("Where is the station?", "Dov'è la stazione?"),
    ("Tom didn't vote for me.", "Tom non ha votato per me."),
    ("I like listening to music!", "Mi piace ascoltare la musica!"),
    ("Is there something you want to tell me?", "C'è qualcosa che mi vuoi dire?"),
]


def test_each_form_takes_its_share_of_the_training_pairs_only() -> None:
    n = 200_000
    train = np.random.default_rng(0).random(n) < 0.9
    forms = choose_forms(train, SHARES, seed=5)
    assert not forms[~train].any()  # validation pairs stay as written
    counts = form_counts(forms)
    for name in FORMS:
        expected = SHARES[name] * train.sum()
        assert abs(counts[name] - expected) < 5 * np.sqrt(expected), name
    assert np.array_equal(forms, choose_forms(train, SHARES, seed=5))
    assert not np.array_equal(forms, choose_forms(train, SHARES, seed=6))


def test_the_forms() -> None:
    assert unpunctuated("where is it?!") == "where is it"
    assert unpunctuated("...") == "..."  # nothing left: kept as written
    assert title_case("dov'è la stazione?") == "Dov'è La Stazione?"
    forms = np.array([1, 2, 3, 0], dtype=np.uint8)
    shown = list(present(SENTENCES, forms, seed=0, typo_words=0.25))
    assert shown[0] == ("WHERE IS THE STATION?", "DOV'È LA STAZIONE?")
    assert shown[1] == ("tom didn't vote for me", "Tom non ha votato per me.")
    assert shown[2] == ("I Like Listening To Music!", "Mi piace ascoltare la musica!")
    assert shown[3] == SENTENCES[3]


@given(
    text=st.text(alphabet=st.sampled_from("abcdeèxyz ',.?"), max_size=60),
    seed=st.integers(0, 2**16),
)
def test_a_typo_changes_a_word_by_one_letter_and_nothing_else(text: str, seed: int) -> None:
    typed = with_typos(text, random.Random(seed), 1.0)  # every word of two letters or more
    before, after = re.split(r"([^\W\d_]+)", text), re.split(r"([^\W\d_]+)", typed)
    assert [p for p in before[::2]] == [p for p in after[::2]]  # spaces and punctuation kept
    for old, new in zip(before[1::2], after[1::2], strict=True):
        assert abs(len(new) - len(old)) <= 1
        assert sorted(new) == sorted(old) or len(new) != len(old) or new == old


def test_typos_touch_the_source_only_and_the_stream_repeats() -> None:
    forms = np.full(len(SENTENCES), 4, dtype=np.uint8)
    shown = list(present(SENTENCES, forms, seed=3, typo_words=0.5))
    assert [t for _, t in shown] == [t for _, t in SENTENCES]
    assert [s for s, _ in shown] != [s for s, _ in SENTENCES]
    assert shown == list(present(SENTENCES, forms, seed=3, typo_words=0.5))


@pytest.mark.parametrize(
    "noise, match",
    [
        ("{caps: 0.1}", "data.noise.caps: no such form"),
        ("{upper: 1.5}", r"data.noise.upper must be in \[0, 1\)"),
        ("{upper: 0.6, lower: 0.6}", "add up to 1.2"),
    ],
)
def test_a_bad_noise_setting_is_one_line(noise: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        load_config(ROOT / "configs" / "tiny.yaml", [f"data.noise={noise}"])


def everyday_like(n: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    return [SENTENCES[rng.randrange(len(SENTENCES))] for _ in range(n)]


def store_for(tmp_path, noise: str, kind: str = "bpe") -> tuple[Config, object]:
    tmp_path.mkdir(exist_ok=True)
    corpus = write_jsonl(tmp_path / "c.jsonl", [
        (f"{s} {i}", f"{t} {i}") for i, (s, t) in enumerate(everyday_like(600, 0))
    ])  # fmt: skip
    config = load_config(
        ROOT / "configs" / "tiny.yaml",
        [f"data.source={corpus}", f"data.noise={noise}", f"tokenizer.kind={kind}",
         "tokenizer.vocab_size=300", "data.valid_size=50", "data.dedup=false"],
    )  # fmt: skip
    return config, prepare_store(config)


def test_the_store_holds_the_pairs_as_presented_and_validation_as_written(tmp_path) -> None:
    config, store = store_for(tmp_path, "{upper: 0.3, lower: 0.3}")
    src_tok, tgt_tok = store.tokenizers()
    train = store.dataset("train")
    shown = [decode_ids(src_tok, list(train[i]["encoder_input"])[1:-1]) for i in range(len(train))]
    upper = [s for s in shown if s == s.upper()]
    lower = [s for s in shown if s == s.lower() and not s.endswith(("?", ".", "!"))]
    targets = [decode_ids(tgt_tok, list(train[i]["label"])[:-1]) for i in range(len(train))]
    assert all(
        t[-1] in "?.!0123456789" and t != t.lower()
        for t, s in zip(targets, shown, strict=True)
        if s in lower
    )
    assert 0.2 * len(shown) < len(upper) < 0.4 * len(shown)
    assert 0.2 * len(shown) < len(lower) < 0.4 * len(shown)
    stats = store.stats()
    assert stats.forms == {"upper": len(upper), "lower": len(lower), "title": 0, "typos": 0}
    assert "shown as typed:" in stats.summary()
    valid = [src for src, _ in store.valid_pairs()]
    assert all(s != s.upper() and s[-1] in "?.!0123456789" for s in valid)


def test_the_tokenizers_learn_the_forms_they_will_see(tmp_path) -> None:
    """With capitals in the training pairs, capitals take fewer pieces than without."""
    caps = "WHERE IS THE STATION? I LIKE LISTENING TO MUSIC!"
    _, off = store_for(tmp_path / "off", "{}")
    _, on = store_for(tmp_path / "on", "{upper: 0.3}")
    pieces = [len(store.tokenizers()[0].encode(caps).ids) for store in (off, on)]
    assert pieces[1] < 0.8 * pieces[0], pieces


def test_a_change_to_the_forms_prepares_the_data_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The forms' version is part of the store key when (and only when) data.noise is on."""
    from translator.data import store

    on = load_config(ROOT / "configs" / "tiny.yaml", ["data.noise={typos: 0.1}"])
    off = load_config(ROOT / "configs" / "tiny.yaml")
    before_on, before_off = store.config_ident(on), store.config_ident(off)
    monkeypatch.setattr(store, "FORMS_VERSION", store.FORMS_VERSION + 1)
    assert store.config_ident(on) != before_on
    assert store.config_ident(off) == before_off


def test_drawn_forms_take_their_shares_and_repeat_with_the_seed() -> None:
    pairs = [("I saw Tom in Rome.", "Ho visto Tom a Roma.")] * 20_000
    counts: dict[str, int] = {}
    shown = list(present_drawn(pairs, SHARES, "7 swapped", 0.25, counts))
    assert sum(counts.values()) >= sum(s != pairs[0] for s in shown)  # a typo may miss
    for name in FORMS:
        expected = SHARES[name] * len(pairs)
        assert abs(counts[name] - expected) < 5 * np.sqrt(expected), name
    assert ("i saw tom in rome", "Ho visto Tom a Roma.") in shown  # lower: the source only
    assert ("I SAW TOM IN ROME.", "HO VISTO TOM A ROMA.") in shown
    assert shown == list(present_drawn(pairs, SHARES, "7 swapped", 0.25, {}))
    assert shown != list(present_drawn(pairs, SHARES, "8 swapped", 0.25, {}))


def test_name_swapped_pairs_are_shown_as_typed_too(tmp_path) -> None:
    """The extra pairs take the forms as the corpus's own do, and the data line counts them: a
    lower-case name (`tom`) is learnt from them."""
    names = ["Tom", "Mary", "Sami", "Layla", "John", "Emily"]
    rng = random.Random(0)
    pairs = [
        (f"I saw {name} at the station {i}.", f"Ho visto {name} alla stazione {i}.")
        for i, name in enumerate(rng.choice(names) for _ in range(400))
    ]
    corpus = write_jsonl(tmp_path / "c.jsonl", pairs)
    config = load_config(
        ROOT / "configs" / "tiny.yaml",
        [f"data.source={corpus}", "data.noise={lower: 0.5}", "data.swap_names=1",
         "tokenizer.kind=bpe", "tokenizer.vocab_size=300", "data.valid_size=20"],
    )  # fmt: skip
    store = prepare_store(config)
    stats = store.stats()
    src_tok, _ = store.tokenizers()
    train = store.dataset("train")
    shown = [decode_ids(src_tok, list(train[i]["encoder_input"])[1:-1]) for i in range(len(train))]
    extras = shown[len(shown) - stats.name_swapped :]
    assert stats.name_swapped > 300
    lower = [s for s in extras if s == s.lower()]
    assert 0.35 * len(extras) < len(lower) < 0.65 * len(extras)
    assert stats.forms["lower"] == sum(s == s.lower() for s in shown)
