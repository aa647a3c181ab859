"""Sources as users download them: JSONL, TSV and Parquet files, Moses pairs (prefix or two
paths), gzip, several sources, and errors that name the file and line without holding the file
in memory."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import make_pairs, write_jsonl

from translator.config import DataConfig, load_config
from translator.data.read import read_local_pairs, read_pairs, resolve_sources
from translator.errors import DataError

PAIRS = make_pairs(50, seed=4)
MIXED = [
    ("Hello, world!", "Ciao, mondo!"),
    ("The cat.", "Il gatto."),
    ("Tab\u00e8 ok", "Così è"),
]  # punctuation, accents


def write_moses(prefix: Path, pairs: list[tuple[str, str]], gz: bool = False) -> None:
    """`prefix.en` and `prefix.it`, one sentence a line (gzipped with `gz`)."""
    for side, lang in enumerate(("en", "it")):
        text = "".join(p[side] + "\n" for p in pairs).encode("utf-8")
        if gz:
            Path(f"{prefix}.{lang}.gz").write_bytes(gzip.compress(text))
        else:
            Path(f"{prefix}.{lang}").write_bytes(text)


def gzip_file(path: Path) -> Path:
    out = path.with_name(path.name + ".gz")
    out.write_bytes(gzip.compress(path.read_bytes()))
    path.unlink()
    return out


@pytest.mark.parametrize("gz", [False, True])
def test_moses_prefix_with_the_language_codes(tmp_path: Path, gz: bool) -> None:
    write_moses(tmp_path / "corpus.en-it", PAIRS, gz)
    cfg = DataConfig(source=str(tmp_path / "corpus.en-it"))
    assert [s.kind for s in resolve_sources(cfg)] == ["moses"]
    assert read_pairs(cfg) == PAIRS
    # the other direction reads the same files the other way round
    assert read_pairs(DataConfig(source=cfg.source, lang_src="it", lang_tgt="en")) == [
        (it, en) for en, it in PAIRS
    ]


def test_moses_as_two_paths(tmp_path: Path) -> None:
    write_moses(tmp_path / "a", PAIRS)
    entry = {"en": str(tmp_path / "a.en"), "it": str(tmp_path / "a.it")}
    assert read_pairs(DataConfig(source=entry)) == PAIRS


@pytest.mark.parametrize("suffix", [".jsonl", ".tsv"])
def test_gzipped_files_read_as_the_plain_ones(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"pairs{suffix}"
    if suffix == ".jsonl":
        write_jsonl(path, PAIRS)
    else:
        path.write_text("".join(f"{en}\t{it}\n" for en, it in PAIRS), encoding="utf-8")
    plain = read_pairs(DataConfig(source=str(path)))
    assert plain == PAIRS
    assert read_pairs(DataConfig(source=str(gzip_file(path)))) == plain


def test_unequal_moses_files_name_both_files_and_counts(tmp_path: Path) -> None:
    write_moses(tmp_path / "c", PAIRS)
    with open(tmp_path / "c.it", "a", encoding="utf-8") as f:
        f.write("una riga in più\nun'altra\n")
    with pytest.raises(DataError) as err:
        read_pairs(DataConfig(source=str(tmp_path / "c")))
    message = str(err.value)
    assert "c.en has 50 lines" in message and "c.it has 52" in message
    assert "\n" not in message


def test_a_missing_side_of_a_moses_pair_is_named(tmp_path: Path) -> None:
    write_moses(tmp_path / "d", PAIRS)
    (tmp_path / "d.it").unlink()
    with pytest.raises(DataError, match=r"no .*d\.it\[\.gz\]"):
        read_pairs(DataConfig(source=str(tmp_path / "d")))
    with pytest.raises(DataError, match="file not found"):
        read_pairs(DataConfig(source={"en": str(tmp_path / "d.en"), "it": "nowhere.it"}))


def test_a_bad_line_deep_in_a_gzipped_file_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    n_good = 60_000
    with path.open("w", encoding="utf-8") as f:
        record = json.dumps({"translation": {"en": "one two", "it": "uno due"}}) + "\n"
        f.writelines(record for _ in range(n_good))
        f.write('{"translation": {"en": "broken"\n')
    gz = gzip_file(path)
    with pytest.raises(DataError, match=rf"big\.jsonl\.gz:{n_good + 1}: malformed JSON"):
        for _ in read_pairs(DataConfig(source=str(gz))):
            pass


def test_non_utf8_in_a_moses_file_names_file_and_line(tmp_path: Path) -> None:
    write_moses(tmp_path / "e", PAIRS)
    with open(tmp_path / "e.it", "ab") as f:
        f.write(b"caff\xe8\n")
    with open(tmp_path / "e.en", "ab") as f:
        f.write(b"coffee\n")
    with pytest.raises(DataError, match=r"e\.it:51: not valid UTF-8"):
        read_pairs(DataConfig(source=str(tmp_path / "e")))


def test_several_sources_are_read_in_order_and_counted(tmp_path: Path) -> None:
    first, second = make_pairs(120, seed=1), make_pairs(80, seed=2)
    write_jsonl(tmp_path / "one.jsonl", first)
    write_moses(tmp_path / "two.en-it", second, gz=True)
    sources = [str(tmp_path / "one.jsonl"), str(tmp_path / "two.en-it")]
    cfg = DataConfig(source=sources)
    assert read_pairs(cfg) == first + second

    from translator.data.prepare import data_summary, prepare_data
    from translator.run.paths import RunPaths

    sets = [f"data.source={json.dumps(sources)}", "data.valid_size=10", "tokenizer.min_freq=1"]
    config = load_config(None, sets)
    paths = RunPaths.create("several")
    paths.make()
    data = prepare_data(config, paths)
    assert data.stats.per_source == [(sources[0], 120), (sources[1], 80)]
    assert data.stats.read == 200
    assert f"200 pairs read ({sources[0]} 120, {sources[1]} 80)" in data_summary(data)


def test_a_typo_in_a_list_of_sources_is_one_line(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "ok.jsonl", PAIRS)
    cfg = DataConfig(source=[str(tmp_path / "ok.jsonl"), str(tmp_path / "missing.jsonl")])
    with pytest.raises(DataError, match=r"file not found: .*missing\.jsonl"):
        resolve_sources(cfg)


def read_error(path: Path, lang_src: str = "en", lang_tgt: str = "it") -> str:
    with pytest.raises(DataError) as err:
        read_local_pairs(path, lang_src, lang_tgt)
    return str(err.value)


def test_read_jsonl_opus_books_schema(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "pairs.jsonl", MIXED)
    assert read_local_pairs(path, "en", "it") == MIXED


def test_read_jsonl_swapped_direction_and_flat_records(tmp_path: Path) -> None:
    path = tmp_path / "flat.jsonl"
    lines = [json.dumps({"en": en, "it": it}) for en, it in MIXED]
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")  # a trailing blank line is fine
    assert read_local_pairs(path, "it", "en") == [(it, en) for en, it in MIXED]


def test_read_tsv(tmp_path: Path) -> None:
    path = tmp_path / "pairs.tsv"
    path.write_text("".join(f"{en}\t{it}\r\n" for en, it in MIXED), encoding="utf-8")
    assert read_local_pairs(path, "en", "it") == MIXED


@pytest.mark.parametrize("suffix", [".jsonl", ".tsv"])
def test_a_byte_order_mark_is_not_part_of_the_text(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"bom{suffix}"
    if suffix == ".jsonl":
        text = "".join(json.dumps({"translation": {"en": en, "it": it}}) + "\n" for en, it in MIXED)
    else:
        text = "".join(f"{en}\t{it}\n" for en, it in MIXED)
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert read_local_pairs(path, "en", "it") == MIXED


def test_read_parquet_translation_struct(tmp_path: Path) -> None:
    path = tmp_path / "pairs.parquet"
    table = pa.table(
        {
            "id": [str(i) for i in range(len(MIXED))],
            "translation": [{"en": en, "it": it} for en, it in MIXED],
        }
    )
    pq.write_table(table, path)
    assert read_local_pairs(path, "en", "it") == MIXED


def test_read_parquet_flat_columns(tmp_path: Path) -> None:
    path = tmp_path / "flat.parquet"
    pq.write_table(pa.table({"en": [p[0] for p in MIXED], "it": [p[1] for p in MIXED]}), path)
    assert read_local_pairs(path, "en", "it") == MIXED


def test_read_pairs_dispatches_to_a_local_file(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "pairs.jsonl", MIXED)
    assert read_pairs(DataConfig(source=str(path))) == MIXED


def test_malformed_json_names_file_and_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", MIXED)
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
    path = write_jsonl(tmp_path / "pairs.jsonl", MIXED)
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
