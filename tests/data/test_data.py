"""Data: reading local corpora (and their errors), cleaning, splitting, items, collate, batching."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from helpers import make_pairs, write_jsonl

from translator.config import DataConfig
from translator.data.batching import BilingualDataset, TokenBatchSampler, collate
from translator.data.clean import FilterStats, clean_pairs, split_indices
from translator.data.encode import encode_pairs
from translator.data.read import read_local_pairs, read_pairs
from translator.data.tokenizer import train_tokenizer
from translator.errors import DataError
from translator.specials import EOS_ID, PAD_ID, SOS_ID, UNK_ID

PAIRS = [("Hello, world!", "Ciao, mondo!"), ("The cat.", "Il gatto."), ("Tab\u00e8 ok", "Così è")]


# --------------------------------------------------------------------------- reading


def test_read_jsonl_opus_books_schema(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "pairs.jsonl", PAIRS)
    assert read_local_pairs(path, "en", "it") == PAIRS


def test_read_jsonl_swapped_direction_and_flat_records(tmp_path: Path) -> None:
    path = tmp_path / "flat.jsonl"
    lines = [json.dumps({"en": en, "it": it}) for en, it in PAIRS]
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")  # a trailing blank line is fine
    assert read_local_pairs(path, "it", "en") == [(it, en) for en, it in PAIRS]


def test_read_tsv(tmp_path: Path) -> None:
    path = tmp_path / "pairs.tsv"
    path.write_text("".join(f"{en}\t{it}\r\n" for en, it in PAIRS), encoding="utf-8")
    assert read_local_pairs(path, "en", "it") == PAIRS


@pytest.mark.parametrize("suffix", [".jsonl", ".tsv"])
def test_a_byte_order_mark_is_not_part_of_the_text(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"bom{suffix}"
    if suffix == ".jsonl":
        text = "".join(json.dumps({"translation": {"en": en, "it": it}}) + "\n" for en, it in PAIRS)
    else:
        text = "".join(f"{en}\t{it}\n" for en, it in PAIRS)
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert read_local_pairs(path, "en", "it") == PAIRS


def test_read_parquet_translation_struct(tmp_path: Path) -> None:
    path = tmp_path / "pairs.parquet"
    table = pa.table(
        {
            "id": [str(i) for i in range(len(PAIRS))],
            "translation": [{"en": en, "it": it} for en, it in PAIRS],
        }
    )
    pq.write_table(table, path)
    assert read_local_pairs(path, "en", "it") == PAIRS


def test_read_parquet_flat_columns(tmp_path: Path) -> None:
    path = tmp_path / "flat.parquet"
    pq.write_table(pa.table({"en": [p[0] for p in PAIRS], "it": [p[1] for p in PAIRS]}), path)
    assert read_local_pairs(path, "en", "it") == PAIRS


def test_read_pairs_dispatches_to_a_local_file(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "pairs.jsonl", PAIRS)
    assert read_pairs(DataConfig(source=str(path))) == PAIRS


# --------------------------------------------------------------------------- reading errors


def read_error(path: Path, lang_src: str = "en", lang_tgt: str = "it") -> str:
    with pytest.raises(DataError) as err:
        read_local_pairs(path, lang_src, lang_tgt)
    return str(err.value)


def test_malformed_json_names_file_and_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", PAIRS)
    with path.open("a", encoding="utf-8") as f:
        f.write('{"translation": {"en": "x", "it": \n')
    message = read_error(path)
    assert f"{path}:4:" in message and "malformed JSON" in message


def test_json_line_that_is_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "list.jsonl"
    path.write_text('["en", "it"]\n', encoding="utf-8")
    assert f"{path}:1:" in read_error(path)


def test_missing_language_names_line_and_languages_found(tmp_path: Path) -> None:
    path = tmp_path / "fr.jsonl"
    records = [{"translation": {"en": "a", "it": "b"}}, {"translation": {"en": "a", "fr": "b"}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    message = read_error(path)
    assert f"{path}:2:" in message
    assert "'it'" in message and "en, fr" in message


def test_wrong_language_pair_is_reported(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "pairs.jsonl", PAIRS)
    assert "'de'" in read_error(path, "en", "de")


def test_non_utf8_byte_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.tsv"
    path.write_bytes(b"one\tuno\ntwo\tdue\ncaf\xe9\tcaff\xe8\n")
    message = read_error(path)
    assert f"{path}:3:" in message and "UTF-8" in message and "0xe9" in message


@pytest.mark.parametrize("suffix", [".jsonl", ".tsv"])
@pytest.mark.parametrize("content", ["", "\n\n   \n"])
def test_empty_file(tmp_path: Path, suffix: str, content: str) -> None:
    path = tmp_path / f"empty{suffix}"
    path.write_text(content, encoding="utf-8")
    assert "no sentence pairs" in read_error(path)


@pytest.mark.parametrize("line", ["only one field", "a\tb\tc"])
def test_tsv_with_wrong_number_of_fields_names_the_line(tmp_path: Path, line: str) -> None:
    path = tmp_path / "bad.tsv"
    path.write_text(f"one\tuno\n{line}\n", encoding="utf-8")
    message = read_error(path)
    assert f"{path}:2:" in message
    assert f"found {len(line.split(chr(9)))}" in message


def test_parquet_without_the_languages_names_the_row(tmp_path: Path) -> None:
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"en": ["a", "b"], "fr": ["c", "d"]}), path)
    message = read_error(path)
    assert "row 1" in message and "'it'" in message


def test_unreadable_parquet(tmp_path: Path) -> None:
    path = tmp_path / "garbage.parquet"
    path.write_bytes(b"this is not parquet at all")
    assert "not a readable parquet file" in read_error(path)


def test_directory_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "dir.jsonl").mkdir()
    assert "directory" in read_error(tmp_path / "dir.jsonl")


@pytest.mark.parametrize("source", ["missing.jsonl", "missing.tsv", "sub/dir/missing"])
def test_nonexistent_local_path_is_a_data_error(source: str) -> None:
    with pytest.raises(DataError, match="file not found") as err:
        read_pairs(DataConfig(source=source))
    assert source in str(err.value)


# --------------------------------------------------------------------------- cleaning, splitting


def test_clean_pairs_counts_empty_and_duplicates() -> None:
    pairs = [
        ("a  b", "c d"),
        ("a b", " c\td "),  # a duplicate once whitespace is normalised
        ("", "x"),
        ("y", "   "),
        ("e", "f"),
        ("a b", "c d"),
    ]
    stats = FilterStats()
    assert clean_pairs(pairs, stats) == [("a b", "c d"), ("e", "f")]
    assert (stats.read, stats.empty, stats.duplicate) == (6, 2, 2)
    assert "6 pairs read" in stats.summary()

    stats = FilterStats()
    kept = clean_pairs(pairs, stats, DataConfig(dedup=False))
    assert kept == [("a b", "c d"), ("a b", "c d"), ("e", "f"), ("a b", "c d")]
    assert (stats.empty, stats.duplicate) == (2, 0)


@pytest.mark.parametrize(("n", "valid_size"), [(100, 10), (7, 3), (10, 50), (1, 1)])
def test_split_indices_is_a_seeded_partition(n: int, valid_size: int) -> None:
    train, valid = split_indices(n, valid_size, seed=3)
    assert sorted(train + valid) == list(range(n))  # disjoint, and covers everything
    assert len(valid) == min(valid_size, n // 2)
    assert split_indices(n, valid_size, seed=3) == (train, valid)


def test_split_indices_depends_on_the_seed() -> None:
    assert split_indices(1000, 100, seed=1)[1] != split_indices(1000, 100, seed=2)[1]


# --------------------------------------------------------------------------- items, collate


def test_dataset_item_layout() -> None:
    ds = BilingualDataset([[10, 11, 12], [20]], [[30, 31], [40, 41, 42, 43]])
    assert len(ds) == 2
    for i in range(len(ds)):
        item = ds[i]
        assert item["encoder_input"] == [SOS_ID, *ds.src_ids[i], EOS_ID]
        assert item["decoder_input"] == [SOS_ID, *ds.tgt_ids[i]]
        assert item["label"] == [*ds.tgt_ids[i], EOS_ID]
        assert item["decoder_input"][1:] == item["label"][:-1]
        assert len(item["decoder_input"]) == len(item["label"])
    assert ds.src_lengths().tolist() == [5, 3]
    assert ds.tgt_lengths().tolist() == [3, 5]


def test_collate_pads_to_the_batch_longest_and_counts_real_tokens() -> None:
    ds = BilingualDataset([[10, 11, 12], [20], [21, 22]], [[30], [40, 41, 42, 43], [44, 45]])
    batch = collate([ds[0], ds[2]])
    assert batch.src.tolist() == [[SOS_ID, 10, 11, 12, EOS_ID], [SOS_ID, 21, 22, EOS_ID, PAD_ID]]
    assert batch.tgt_in.tolist() == [[SOS_ID, 30, PAD_ID], [SOS_ID, 44, 45]]
    assert batch.tgt_out.tolist() == [[30, EOS_ID, PAD_ID], [44, 45, EOS_ID]]
    assert batch.n_src_tokens == int((batch.src != PAD_ID).sum()) == 9
    assert batch.n_tgt_tokens == int((batch.tgt_out != PAD_ID).sum()) == 5
    assert batch.padded_tokens == batch.src.numel() + batch.tgt_out.numel()
    # Teacher forcing: every real label has a real decoder input at the same position.
    assert torch.equal(batch.tgt_in != PAD_ID, batch.tgt_out != PAD_ID)


# --------------------------------------------------------------------------- token batches


def varied_dataset(n: int = 2000, seed: int = 0) -> BilingualDataset:
    """Sources of 1-60 tokens; targets within 3 tokens of their source."""
    rng = np.random.default_rng(seed)
    src_len = rng.integers(1, 61, n)
    tgt_len = np.maximum(1, src_len + rng.integers(-3, 4, n))
    return BilingualDataset(
        [list(range(4, 4 + s)) for s in src_len], [list(range(4, 4 + t)) for t in tgt_len]
    )


class ListSampler(TokenBatchSampler):
    """The sampler with its batches as lists, to compare with ==."""

    def batches(self, epoch: int) -> list[list[int]]:  # type: ignore[override]
        return [b.tolist() for b in super().batches(epoch)]


def sampler_for(ds: BilingualDataset, batch_tokens: int, seed: int = 0, shuffle: bool = True):
    return ListSampler(ds.src_lengths(), ds.tgt_lengths(), batch_tokens, seed, shuffle)


@pytest.mark.parametrize("batch_tokens", [64, 300, 1024])
@pytest.mark.parametrize("shuffle", [True, False])
def test_token_batches_respect_the_budget_and_cover_each_index_once(
    batch_tokens: int, shuffle: bool
) -> None:
    ds = varied_dataset(800)
    src, tgt = ds.src_lengths(), ds.tgt_lengths()
    batches = sampler_for(ds, batch_tokens, shuffle=shuffle).batches(epoch=0)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(ds)))
    for b in batches:
        assert b
        longest = max(int(src[b].max()), int(tgt[b].max()))
        assert len(b) * longest <= batch_tokens or len(b) == 1
        # The collated batch is exactly that shape: the budget holds for real tensors.
        batch = collate([ds[i] for i in b])
        assert batch.src.numel() <= max(batch_tokens, batch.src.size(1))
        assert batch.tgt_out.numel() <= max(batch_tokens, batch.tgt_out.size(1))


def test_an_over_long_example_gets_a_batch_of_its_own() -> None:
    ds = BilingualDataset([[5] * 3, [5] * 50, [5] * 4, [5] * 2], [[6] * 3, [6] * 2, [6] * 4, [6]])
    batches = sampler_for(ds, batch_tokens=20).batches(0)
    assert [1] in batches
    assert sorted(i for b in batches for i in b) == [0, 1, 2, 3]


def test_token_batches_are_a_function_of_seed_and_epoch() -> None:
    ds = varied_dataset(500)
    sampler = sampler_for(ds, 400, seed=7)
    first = sampler.batches(epoch=3)
    assert sampler_for(ds, 400, seed=7).batches(epoch=3) == first
    assert sampler.batches(epoch=4) != first
    assert sampler_for(ds, 400, seed=8).batches(epoch=3) != first
    # Another epoch is another order, and yet covers the same examples.
    assert sorted(i for b in sampler.batches(epoch=4) for i in b) == list(range(len(ds)))


def test_batch_order_is_shuffled_not_sorted_by_length() -> None:
    ds = varied_dataset(500)
    tgt = ds.tgt_lengths()

    def longest_target_per_batch(shuffle: bool) -> list[int]:
        return [int(tgt[b].max()) for b in sampler_for(ds, 400, shuffle=shuffle).batches(0)]

    unshuffled, shuffled = longest_target_per_batch(False), longest_target_per_batch(True)
    assert unshuffled == sorted(unshuffled)  # batches are built in order of target length
    assert shuffled != sorted(shuffled)  # ... but served in a random order


def test_token_batches_waste_little_padding() -> None:
    ds = varied_dataset(2000)
    real = padded = 0
    for b in sampler_for(ds, 1024).batches(0):
        batch = collate([ds[i] for i in b])
        real += batch.n_src_tokens + batch.n_tgt_tokens
        padded += batch.padded_tokens
    assert 1 - real / padded < 0.15


# --------------------------------------------------------------------------- encoding


def test_encode_pairs_drops_and_counts_too_long_pairs() -> None:
    pairs = make_pairs(60, seed=1, max_words=8)
    src_tok = train_tokenizer((s for s, _ in pairs), min_freq=1)
    tgt_tok = train_tokenizer((t for _, t in pairs), min_freq=1)
    max_len = 5  # sentences of up to 4 words plus "." fit
    stats = FilterStats()
    ds, kept = encode_pairs(pairs, src_tok, tgt_tok, max_len, stats)
    expected = [i for i, (s, t) in enumerate(pairs) if len(s.split()) <= 5 and len(t.split()) <= 5]
    assert 0 < len(expected) < len(pairs)
    assert kept == expected
    assert len(ds) == len(kept)
    assert stats.too_long == len(pairs) - len(kept)
    for row, i in enumerate(kept):
        assert ds.src_ids[row] == src_tok.encode(pairs[i][0]).ids
        assert ds.tgt_ids[row] == tgt_tok.encode(pairs[i][1]).ids
        assert UNK_ID not in ds.src_ids[row] + ds.tgt_ids[row]


def test_encode_pairs_of_nothing() -> None:
    tok = train_tokenizer(["a b"], min_freq=1)
    stats = FilterStats()
    ds, kept = encode_pairs([], tok, tok, 10, stats)
    assert len(ds) == 0 and kept == [] and stats.too_long == 0
