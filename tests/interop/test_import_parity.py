"""An imported Marian model computes what transformers computes: the same ids from its
tokenizers, the same logits, the same greedy and beam-4 outputs token for token (200 dev
sentences, one vocabulary and one per side). Each check is shown to fail when one piece of the
mapping is broken on purpose: the position layout, the logits bias, the target's tokenizer."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from marian_models import REAL, dev

from translator.data.sentencepiece import SentencePieceTokenizer
from translator.inference.decode import translate_ids
from translator.inference.predict import LoadedModel, load_model
from translator.interop.importer import _tokenizers
from translator.interop.marian import read_marian_dir
from translator.model.transformer import build_model
from translator.specials import EOS_ID, PAD_ID, SOS_ID

N = 200


def hf(marian: Path):
    from transformers import MarianMTModel, MarianTokenizer

    return MarianMTModel.from_pretrained(str(marian)).eval(), MarianTokenizer.from_pretrained(
        str(marian)
    )


def marian_ids(marian: Path) -> tuple[list[int], list[int]]:
    """For each of this tool's ids, the Marian id (source side, target side)."""
    _, _, src, tgt = _tokenizers(read_marian_dir(marian), None)
    return src, tgt


def load(run_dir: Path) -> LoadedModel:
    return load_model(run_dir / "latest.pt", run_dir, torch.device("cpu"))


def test_ids_and_text_are_marian_tokenizers(marian: Path, imported: Path) -> None:
    model, tok = hf(marian)
    loaded = load(imported)
    src_ids, tgt_ids = marian_ids(marian)
    pairs = dev(N)
    theirs_src = tok([s for s, _ in pairs]).input_ids
    theirs_tgt = tok(text_target=[t for _, t in pairs]).input_ids
    for (en, it), s, t in zip(pairs, theirs_src, theirs_tgt, strict=True):
        ours_src = loaded.src_tokenizer.encode(en).ids
        ours_tgt = loaded.tgt_tokenizer.encode(it).ids
        assert [src_ids[i] for i in ours_src] + [0] == s, en
        assert [tgt_ids[i] for i in ours_tgt] + [0] == t, it
        # decoding: the text MarianTokenizer gives back for the same ids
        assert loaded.tgt_tokenizer.decode(ours_tgt) == tok.decode(t, skip_special_tokens=True)


def max_logit_gap(loaded: LoadedModel, marian: Path, pairs: list[tuple[str, str]]) -> float:
    """The largest difference of any logit, teacher-forced on the reference, of each pair."""
    model, _ = hf(marian)
    src_ids, tgt_ids = marian_ids(marian)
    real = [i for i in range(len(tgt_ids)) if i not in (PAD_ID, SOS_ID)]  # <pad>: banned anyway
    gap = 0.0
    with torch.no_grad():
        for en, it in pairs:
            src = loaded.src_tokenizer.encode(en).ids
            tgt = loaded.tgt_tokenizer.encode(it).ids
            ours = loaded.model(
                torch.tensor([[SOS_ID, *src, EOS_ID]]), torch.tensor([[SOS_ID, *tgt]])
            )[0]
            theirs = model(
                input_ids=torch.tensor([[src_ids[i] for i in src] + [0]]),
                decoder_input_ids=torch.tensor([[tgt_ids[SOS_ID]] + [tgt_ids[i] for i in tgt]]),
            ).logits[0][:, torch.tensor(tgt_ids)]
            gap = max(gap, (ours - theirs)[:, real].abs().max().item())
    return gap


def test_logits_equal_transformers(marian: Path, imported: Path) -> None:
    assert max_logit_gap(load(imported), marian, dev(N)) < 1e-4


@pytest.mark.parametrize("beam", [1, 4])
def test_outputs_equal_generate(marian: Path, imported: Path, beam: int) -> None:
    loaded = load(imported)
    model, tok = hf(marian)
    _, tgt_ids = marian_ids(marian)
    ours_of = {m: o for o, m in enumerate(tgt_ids) if o != PAD_ID}  # Marian <pad> -> [SOS]
    sentences = [s for s, _ in dev(N)]
    decode = dataclasses.replace(loaded.config.decode, beam=beam)
    ours, theirs = [], []
    for i in range(0, N, 50):
        chunk = sentences[i : i + 50]
        rows = [[SOS_ID, *loaded.src_tokenizer.encode(s).ids, EOS_ID] for s in chunk]
        width = max(map(len, rows))
        src = torch.tensor([r + [PAD_ID] * (width - len(r)) for r in rows])
        ours += translate_ids(loaded.model, src, decode, beam=beam)
        generated = model.generate(**tok(chunk, return_tensors="pt", padding=True), num_beams=beam)
        for row in generated.tolist():
            out = []
            for t in row[1:]:
                if t == 0:
                    break
                if t != tgt_ids[PAD_ID]:
                    out.append(ours_of[t])
            theirs.append(out)
    differ = [(a, b) for a, b in zip(ours, theirs, strict=True) if a != b]
    assert not differ, f"{len(differ)} of {N} outputs differ, e.g. {differ[0]}"
    least = N // 5 if REAL else 5  # the toy language's twenty words give few distinct outputs
    assert len({tuple(o) for o in ours}) > least, "the outputs hardly depend on the input"


# ----------------------------------------------------------------------------- broken on purpose


def test_a_wrong_position_layout_breaks_the_logits(marian_shared: Path, tmp_path: Path) -> None:
    loaded = load(_imported(marian_shared, tmp_path))
    model = dataclasses.replace(loaded.config.model, positions="sinusoidal")
    rebuilt = build_model(model, loaded.src_tokenizer.get_vocab_size(),
                          loaded.tgt_tokenizer.get_vocab_size(), shared_vocab=True)  # fmt: skip
    rebuilt.load_state_dict(loaded.model.state_dict())
    loaded.model = rebuilt.eval()
    assert max_logit_gap(loaded, marian_shared, dev(20)) > 1e-2


def test_a_missing_logits_bias_breaks_the_logits(marian_shared: Path, tmp_path: Path) -> None:
    loaded = load(_imported(marian_shared, tmp_path))
    with torch.no_grad():
        loaded.model.output.bias.zero_()
    assert max_logit_gap(loaded, marian_shared, dev(20)) > 1e-2


def test_a_target_read_with_the_source_model_breaks_the_ids(marian_shared: Path) -> None:
    _, tok = hf(marian_shared)
    src, tgt = _tokenizers(read_marian_dir(marian_shared), None)[:2]
    wrong = SentencePieceTokenizer(src.model, tgt.pieces)  # the target encoded with source.spm
    _, tgt_ids = marian_ids(marian_shared)
    targets = [t for _, t in dev(N)]
    theirs = tok(text_target=targets).input_ids
    differ = sum([tgt_ids[i] for i in wrong.encode(t).ids] + [0] != ids
                 for t, ids in zip(targets, theirs, strict=True))  # fmt: skip
    assert differ > N // 4


def _imported(marian: Path, tmp_path: Path) -> Path:
    from translator.interop.importer import import_model

    return import_model(str(marian), "imp", tmp_path / "weights")
