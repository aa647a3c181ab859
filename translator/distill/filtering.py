"""`distill.min_chrf`: a teacher translation far from its reference (sentence chrF below the
threshold) is replaced by the reference, as the Bergamot pipeline filters its distilled data.

The filtered pairs are a file of their own beside the corpus's pairs.tsv, made once per
threshold under a lock of its own (two students of one corpus: the second waits, then reuses
it), published whole and proved whole when opened, like the corpus."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from translator.config import DataConfig
from translator.data.read import Source, iter_source
from translator.distill.corpus import PAIRS, iter_pairs_tsv, one_line
from translator.durable import file_digest, publish_text, published
from translator.errors import DataError
from translator.jsonfile import read_json_object
from translator.run.lock import run_lock

log = logging.getLogger("translator")


def filtered_pairs(
    corpus: Path, source: Source, data: DataConfig, threshold: float
) -> tuple[Path, dict[str, Any]]:
    """The corpus's pairs with each translation scoring below `threshold` against its reference
    replaced by the reference; made once (per threshold) and reused."""
    name = f"min_chrf-{threshold:g}"
    path, record_path = corpus / f"{name}.tsv", corpus / f"{name}.json"
    with run_lock(corpus, f"{name} of {corpus}", wait=True, file=f".{name}.lock"):
        record = _open_filtered(path, record_path)
        if record is not None:
            return path, record
        return path, _filter(corpus, source, data, threshold, path, record_path)


def _open_filtered(path: Path, record_path: Path) -> dict[str, Any] | None:
    """The record of the filtered file when it is there and whole; None when it was never made;
    a one-line DataError when it is not the file written."""
    if not record_path.is_file():
        return None
    record = read_json_object(record_path) or {}
    size, digest = record.get("size"), record.get("sha256")
    whole = isinstance(size, int) and isinstance(digest, str)
    if whole and path.is_file() and path.stat().st_size == size and file_digest(path) == digest:
        return record
    raise DataError(
        f"{path} is damaged (not the file written); delete it and {record_path.name} to filter "
        "again"
    )


def _filter(
    corpus: Path, source: Source, data: DataConfig, threshold: float, path: Path, record_path: Path
) -> dict[str, Any]:
    from sacrebleu.metrics import CHRF

    chrf = CHRF()
    replaced = total = 0
    with published(path) as f:
        pairs = zip(iter_pairs_tsv(corpus / PAIRS), iter_source(source, data), strict=True)
        for (src, out), (_, ref) in pairs:
            ref = one_line(ref)
            if chrf.sentence_score(out, [ref]).score < threshold:
                out, replaced = ref, replaced + 1
            f.write(f"{src}\t{out}\n")
            total += 1
    record = {"threshold": threshold, "pairs": total, "replaced": replaced,
              "size": path.stat().st_size, "sha256": file_digest(path)}  # fmt: skip
    publish_text(record_path, json.dumps(record, indent=1) + "\n")
    return record
