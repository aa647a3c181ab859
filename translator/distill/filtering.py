"""`distill.min_chrf`: a teacher translation far from its reference (sentence chrF below the
threshold) is replaced by the reference, as the Bergamot pipeline filters its distilled data.

The filtered pairs are a file of their own beside the corpus's pairs.tsv, made once per
threshold and proved whole when opened, like the corpus."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from translator.config import DataConfig
from translator.data.integrity import file_digest
from translator.data.read import Source, iter_source
from translator.distill.corpus import PAIRS, iter_pairs_tsv, one_line
from translator.errors import DataError

log = logging.getLogger("translator")


def filtered_pairs(
    corpus: Path, source: Source, data: DataConfig, threshold: float
) -> tuple[Path, dict[str, Any]]:
    """The corpus's pairs with each translation scoring below `threshold` against its reference
    replaced by the reference; made once (per threshold) and reused."""
    from sacrebleu.metrics import CHRF

    name = f"min_chrf-{threshold:g}"
    path, record_path = corpus / f"{name}.tsv", corpus / f"{name}.json"
    if record_path.is_file():
        try:
            record = json.loads(record_path.read_text(encoding="utf-8"))
            size, digest = record["size"], record["sha256"]
        except (ValueError, KeyError, TypeError):
            size = digest = None
        if path.is_file() and path.stat().st_size == size and file_digest(path) == digest:
            return path, record
        raise DataError(
            f"{path} is damaged (not the file written); delete it and {record_path.name} to "
            "filter again"
        )
    chrf = CHRF()
    tmp = corpus / f".{name}.tsv.tmp"
    replaced = total = 0
    with tmp.open("w", encoding="utf-8") as f:
        pairs = zip(iter_pairs_tsv(corpus / PAIRS), iter_source(source, data), strict=True)
        for (src, out), (_, ref) in pairs:
            ref = one_line(ref)
            if chrf.sentence_score(out, [ref]).score < threshold:
                out, replaced = ref, replaced + 1
            f.write(f"{src}\t{out}\n")
            total += 1
    tmp.replace(path)
    record = {"threshold": threshold, "pairs": total, "replaced": replaced,
              "size": path.stat().st_size, "sha256": file_digest(path)}  # fmt: skip
    tmp_record = corpus / f".{name}.json.tmp"
    tmp_record.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    tmp_record.replace(record_path)
    return path, record
