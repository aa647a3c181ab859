"""Paragraphs and documents: dev sentences put k to a line and translated as that line, against the
same sentences translated one by one and joined; a subtitle file made from the dev set; the memory
of a long file.

    python scripts/bench_paragraphs.py --run cpu --beam 4                # one run, PyTorch
    python scripts/bench_paragraphs.py --run cpu --run adapted --beam 4   # a row set per run
    python scripts/bench_paragraphs.py --run cpu --beam 1 --srt --memory  # + files

- paragraphs: the dev set (2,000 pairs) in order, k = 3 and 6 consecutive sentences a line,
  joined by one space (references likewise). BLEU, chrF and the length ratio (sacreBLEU's
  sys_len / ref_len) of the k-a-line translations, with `decode.split_sentences` on (the
  default) and off (each line whole, as before), beside the one-by-one translations joined in the
  same groups. Case-sensitive sacreBLEU on the groups.
- --srt: an .srt file of 1,000 cues made from the dev set (a dev line of 8 words or more is
  spread over two cues, cut mid-sentence, so sentences run across cues), translated with
  `translate --input`; every cue number and timing line compared byte for byte, empty cues
  counted, and the time (fastest of 3) against translating the cues' texts as lines directly,
  and against the file's own sentences (cues joined, then split) as lines: the file's overhead.
- --memory: peak memory (max RSS) of `translator translate --input` on text files of 2,000 and
  10,000 lines (the dev set's English side, repeated), each in a process of its own.
Prints tables, then one JSON line.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sacrebleu
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from translator.config import apply_override, config_from_dict  # noqa: E402
from translator.inference.cues import _runs, _sentences, _units, parse_cues  # noqa: E402
from translator.inference.documents import translate_document  # noqa: E402
from translator.inference.predict import LoadedModel, load_model, translate_sentences  # noqa: E402
from translator.run.paths import find_checkpoint  # noqa: E402

DEV = ROOT.parent / "shared/data/en-it/tatoeba-dev.jsonl"


def with_split(loaded: LoadedModel, split: bool) -> LoadedModel:
    raw = loaded.config.to_dict()
    apply_override(raw, f"decode.split_sentences={str(split).lower()}")
    loaded.config = config_from_dict(raw, origin="bench")
    return loaded


def scores(hyps: list[str], refs: list[str]) -> dict[str, float]:
    bleu = sacrebleu.corpus_bleu(hyps, [refs])
    chrf = sacrebleu.corpus_chrf(hyps, [refs])
    return {"bleu": round(bleu.score, 2), "chrf": round(chrf.score, 2),
            "ratio": round(bleu.sys_len / bleu.ref_len, 3)}  # fmt: skip


def groups(items: list[str], k: int) -> list[str]:
    return [" ".join(items[i : i + k]) for i in range(0, len(items) - k + 1, k)]


def paragraphs(loaded: LoadedModel, pairs: list[tuple[str, str]], beam: int) -> dict:
    sources, refs = [s for s, _ in pairs], [t for _, t in pairs]
    figures: dict = {}
    with_split(loaded, True)
    alone = translate_sentences(loaded, sources, beam)
    figures["1_a_line"] = scores(alone, refs)
    for k in (3, 6):
        joined_refs = groups(refs, k)
        figures[f"{k}_one_by_one"] = scores(groups(alone, k), joined_refs)
        for split in (True, False):
            with_split(loaded, split)
            start = time.perf_counter()
            hyps = translate_sentences(loaded, groups(sources, k), beam)
            figures[f"{k}_a_line_split_{'on' if split else 'off'}"] = {
                **scores(hyps, joined_refs),
                "s": round(time.perf_counter() - start, 1),
            }
    with_split(loaded, True)
    return figures


def make_srt(sources: list[str], cues: int = 1000) -> tuple[str, list[str]]:
    """An .srt file of `cues` cues from `sources`, and the texts of its cues."""
    texts: list[str] = []
    for sentence in sources:
        words = sentence.split()
        if len(words) >= 8:
            texts += [" ".join(words[: len(words) // 2]), " ".join(words[len(words) // 2 :])]
        else:
            texts.append(sentence)
        if len(texts) >= cues:
            break
    texts = texts[:cues]
    blocks = []
    for n, text in enumerate(texts, start=1):
        start, end = n * 3000, n * 3000 + 2500
        stamp = [f"{t // 3600000:02d}:{t // 60000 % 60:02d}:{t // 1000 % 60:02d},{t % 1000:03d}"
                 for t in (start, end)]  # fmt: skip
        blocks.append(f"{n}\n{stamp[0]} --> {stamp[1]}\n{text}\n")
    return "\n".join(blocks), texts


def subtitles(loaded: LoadedModel, sources: list[str], beam: int) -> dict:
    srt, texts = make_srt(sources)

    def translate(lines: list[str], numbers: list[int]) -> list[str]:
        return translate_sentences(loaded, lines, beam, numbers)

    def by_file() -> str:
        sink = io.StringIO(newline="")
        translate_document(io.BytesIO(srt.encode()), sink, "srt", translate, "dev.srt")
        return sink.getvalue()

    def by_lines() -> list[str]:
        return translate(texts, list(range(1, len(texts) + 1)))

    cues = list(parse_cues(io.StringIO(srt), "srt", "dev.srt"))
    units = [unit for cue in cues for unit in _units(cue)]
    sentences = [s for run in _runs(units) for s, _, _ in _sentences(run)]

    def by_sentences() -> list[str]:  # the file's own sentences, as plain lines
        return translate(sentences, list(range(1, len(sentences) + 1)))

    times = {"file": [], "lines": [], "sentences": []}
    for _ in range(3):
        for name, fn in (("file", by_file), ("lines", by_lines), ("sentences", by_sentences)):
            start = time.perf_counter()
            result = fn()
            times[name].append(time.perf_counter() - start)
            if name == "file":
                out = result
    src_blocks, out_blocks = srt.split("\n\n"), out.split("\n\n")
    kept = sum(
        a.split("\n")[:2] == b.split("\n")[:2] for a, b in zip(src_blocks, out_blocks, strict=True)
    )
    empty = sum(not "".join(b.split("\n")[2:]).strip() for b in out_blocks)
    across = sum(not t.rstrip().endswith((".", "!", "?")) for t in texts)
    print("\nthe first cues translated:\n" + "\n\n".join(out_blocks[:4]) + "\n")
    best = {name: min(seconds) for name, seconds in times.items()}
    return {
        "cues": len(texts),
        "cues_mid_sentence": across,
        "number_and_timing_kept": kept,
        "empty_cues": empty,
        "s_file": round(best["file"], 2),
        "s_lines": round(best["lines"], 2),
        "speed_ratio": round(best["lines"] / best["file"], 3),
        "sentences": len(sentences),
        "s_sentences": round(best["sentences"], 2),
        "ratio_same_sentences": round(best["sentences"] / best["file"], 3),
    }


def peak_memory(run: str, sources: list[str], lines: int, beam: int, weights: Path) -> int:
    """Max RSS (KiB) of `translator translate --input` on a file of `lines` lines."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.txt"
        with path.open("w", encoding="utf-8") as f:
            for n in range(lines):
                f.write(sources[n % len(sources)] + "\n")
        out = Path(tmp) / "out.txt"
        cmd = [sys.executable, "-m", "translator", "translate", "--run", run, "--weights-dir",
               str(weights), "--beam", str(beam), "-i", str(path), "-o", str(out)]  # fmt: skip
        proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        assert status == 0, cmd
        return usage.ru_maxrss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="append", required=True)
    parser.add_argument("--beam", type=int, help="default: each run's own decode.beam")
    parser.add_argument("--dev", type=Path, default=DEV)
    parser.add_argument("--weights-dir", type=Path, default=Path("weights"))
    parser.add_argument("--srt", action="store_true")
    parser.add_argument("--memory", action="store_true")
    parser.add_argument("--no-paragraphs", action="store_true", help="only --srt / --memory")
    args = parser.parse_args()
    pairs = [tuple(json.loads(x)["translation"][k] for k in ("en", "it")) for x in args.dev.open()]
    figures: dict = {}
    for run in args.run:
        ckpt, run_dir = find_checkpoint(run, None, args.weights_dir)
        loaded = load_model(ckpt, run_dir, torch.device("cpu"))
        beam = args.beam or loaded.config.decode.beam
        threads = torch.get_num_threads()
        print(f"{run}: {ckpt} (step {loaded.step:,}), beam {beam}, {threads} threads")
        fig = {"checkpoint": str(ckpt), "step": loaded.step, "beam": beam}
        if not args.no_paragraphs:
            fig["paragraphs"] = paragraphs(loaded, pairs, beam)
            print(f"\n| {run} | BLEU | chrF | length ratio |\n|---|---|---|---|")
            for name, row in fig["paragraphs"].items():
                print(f"| {name} | {row['bleu']:.2f} | {row['chrf']:.2f} | {row['ratio']:.3f} |")
        if args.srt:
            fig["srt"] = subtitles(loaded, [s for s, _ in pairs], beam)
            print(json.dumps(fig["srt"]))
        if args.memory:
            sources = [s for s, _ in pairs]
            fig["max_rss_kib"] = {n: peak_memory(run, sources, n, beam, args.weights_dir)
                                  for n in (2000, 10000)}  # fmt: skip
            print(f"max RSS, KiB: {fig['max_rss_kib']}")
        figures[run] = fig
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
