"""Name swapping: which words count as names, and what the added pairs look like."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import ROOT, make_pairs, write_jsonl

from translator.config import load_config
from translator.data.augment import iter_joined, name_inventory, swap_names
from translator.data.prepare import PreparedData, prepare_data
from translator.run.paths import RunPaths

PAIRS = [
    ("I saw Tom yesterday.", "Ho visto Tom ieri."),
    ("Tom is here.", "Tom è qui."),
    ("Ask Mary and Tom.", "Chiedi a Mary e a Tom."),
    ("Well, I'm going.", "Well, vado."),  # copied, but only ever sentence-initial
    ("Pay the bill, Bill.", "Paga il conto, Bill."),
    ("The bill is big.", "Il conto è grande."),  # `bill` is mostly lower case: not a name
    ("The bill is late.", "Il conto è in ritardo."),
    ("We flew to Rome.", "Siamo volati a Roma."),  # capitalised mid-sentence, never copied
    ("I know Linda.", "Conosco Linda."),
    ("A cat.", "Un gatto."),
]


def test_inventory_holds_copied_mid_sentence_names_only() -> None:
    assert name_inventory(PAIRS) == ["Tom", "Mary", "Linda"]


def _skeleton(text: str, names: set[str]) -> str:
    return re.sub(r"\b(" + "|".join(sorted(names)) + r")\b", "NAME", text)


def test_swapped_pairs_change_only_the_names_and_the_same_way_on_both_sides() -> None:
    names = set(name_inventory(PAIRS))
    out = swap_names(PAIRS, copies=3, seed=0)
    with_names = [
        p for p in PAIRS if names & set(re.findall(r"\w+", p[0])) & set(re.findall(r"\w+", p[1]))
    ]
    assert len(out) == 3 * len(with_names)
    originals = {(_skeleton(s, names), _skeleton(t, names)) for s, t in with_names}
    for src, tgt in out:
        assert (_skeleton(src, names), _skeleton(tgt, names)) in originals
        assert sorted(re.findall(r"\b(?:Tom|Mary|Linda)\b", src)) == sorted(
            re.findall(r"\b(?:Tom|Mary|Linda)\b", tgt)
        )
    assert set(out) - set(PAIRS), "some pair must get a different name"


def test_swapping_is_seeded_and_off_at_zero() -> None:
    assert swap_names(PAIRS, 2, seed=5) == swap_names(PAIRS, 2, seed=5)
    assert swap_names(PAIRS, 2, seed=5) != swap_names(PAIRS, 2, seed=6)
    assert swap_names(PAIRS, 0, seed=5) == []


def _prepare(name: str, source: Path, *overrides: str) -> PreparedData:
    config = load_config(ROOT / "configs" / "tiny.yaml", [f"data.source={source}", *overrides])
    paths = RunPaths.create(name)
    paths.make()
    return prepare_data(config, paths)


def test_only_the_training_split_is_augmented(tmp_path: Path) -> None:
    people = [(f"I met {n} today .", f"Ho incontrato {n} oggi .") for n in ("Tom", "Ann", "Bob")]
    # Too long for tiny.yaml's max_len: dropped, and counted once however many copies it gets.
    long = [
        (f"I met {n} " + "again and " * k + ".", f"Ho visto {n} " + "ancora e " * k + ".")
        for n in ("Tom", "Ann", "Bob")
        for k in (20, 30)
    ]
    source = write_jsonl(tmp_path / "names.jsonl", make_pairs(400) + people * 20 + long)
    plain = _prepare("plain", source)
    swapped = _prepare("swapped", source, "data.swap_names=2")
    assert swapped.valid.tgt_ids == plain.valid.tgt_ids
    assert swapped.valid_pairs == plain.valid_pairs
    assert swapped.stats.name_swapped > 0
    assert len(swapped.train) == len(plain.train) + swapped.stats.name_swapped
    assert plain.stats.too_long > 0
    assert swapped.stats.too_long == plain.stats.too_long
    assert "name-swapped pairs added" in swapped.stats.summary()


def test_joined_pairs_join_a_pair_with_the_next_on_both_sides() -> None:
    pairs = [(f"one {i} .", f"uno {i} .") for i in range(400)]
    joined = list(iter_joined(pairs, 0.25, seed=3))
    assert joined == list(iter_joined(pairs, 0.25, seed=3))  # seeded
    assert joined != list(iter_joined(pairs, 0.25, seed=4))
    assert 60 < len(joined) < 140  # about a quarter of the 399 pairs that have a next one
    for src, tgt in joined:
        i = int(src.split()[1])
        assert (src, tgt) == (f"one {i} . one {i + 1} .", f"uno {i} . uno {i + 1} .")
    assert list(iter_joined(pairs, 0.0, seed=3)) == []


def test_joined_pairs_go_to_training_only_and_are_counted(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "pairs.jsonl", make_pairs(400))
    plain = _prepare("plain", source)
    joined = _prepare("joined", source, "data.join_pairs=0.5")
    assert joined.valid_pairs == plain.valid_pairs
    assert list(joined.valid.tgt_ids) == list(plain.valid.tgt_ids)
    assert joined.stats.joined > 100
    assert len(joined.train) == len(plain.train) + joined.stats.joined
    longest = int(plain.train.tgt_lengths().max())
    assert int(joined.train.tgt_lengths().max()) > longest  # joined: longer inputs
    assert f"{joined.stats.joined:,} joined pairs added" in joined.stats.summary()
