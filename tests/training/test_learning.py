"""The model learns something real: reversing sequences, judged by exact-match greedy decoding."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
import torch
import torch.nn.functional as F

from translator.config import ModelConfig
from translator.data.batching import BilingualDataset, collate
from translator.inference.decode import greedy_decode
from translator.model.transformer import build_model
from translator.specials import EOS_ID, PAD_ID

VOCAB = 20  # ids 0-3 are the specials; 4..19 are the 16 "words"
FIRST_WORD = EOS_ID + 1
STEPS, WARMUP, BATCH, PEAK_LR = 400, 40, 64, 2e-3


def random_sequence(rng: random.Random) -> list[int]:
    return [rng.randrange(FIRST_WORD, VOCAB) for _ in range(rng.randint(3, 8))]


def exact_match(model: torch.nn.Module, sources: list[list[int]]) -> float:
    """Share of sources whose greedy output is exactly the reversed source."""
    src = collate([BilingualDataset(sources, sources)[i] for i in range(len(sources))]).src
    outputs = greedy_decode(model, src, max_len_a=1.0, max_len_b=2)
    return sum(out == s[::-1] for out, s in zip(outputs, sources, strict=True)) / len(sources)


@pytest.fixture
def one_thread() -> Iterator[None]:
    """A model this small trains fastest on one thread, and does not slow to a crawl when the
    machine's other core is busy."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_transformer_learns_to_reverse_sequences(one_thread: None) -> None:
    torch.manual_seed(0)
    rng = random.Random(0)
    held_out = [random_sequence(random.Random(1000 + i)) for i in range(200)]
    unseen = {tuple(s) for s in held_out}

    cfg = ModelConfig(
        d_model=64,
        n_heads=2,
        encoder_layers=2,
        decoder_layers=2,
        d_ff=128,
        dropout=0.0,
        max_positions=16,
    )
    model = build_model(cfg, VOCAB, VOCAB)
    assert exact_match(model, held_out) < 0.05  # an untrained model cannot do it

    optimizer = torch.optim.Adam(model.parameters(), lr=PEAK_LR, betas=(0.9, 0.98))
    schedule = torch.optim.lr_scheduler.LambdaLR(  # linear warmup, then linear decay to zero
        optimizer, lambda s: min((s + 1) / WARMUP, (STEPS - s) / (STEPS - WARMUP))
    )
    model.train()
    losses = []
    for _ in range(STEPS):
        sources: list[list[int]] = []
        while len(sources) < BATCH:
            seq = random_sequence(rng)
            if tuple(seq) not in unseen:  # held-out sequences are never trained on
                sources.append(seq)
        data = BilingualDataset(sources, [s[::-1] for s in sources])
        batch = collate([data[i] for i in range(len(data))])
        logits = model(batch.src, batch.tgt_in)  # (B, T, V)
        loss = F.cross_entropy(
            logits.reshape(-1, VOCAB), batch.tgt_out.reshape(-1), ignore_index=PAD_ID
        )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(loss.item())

    assert sum(losses[-20:]) / 20 < 0.05, losses[-20:]
    accuracy = exact_match(model, held_out)
    assert accuracy >= 0.9, accuracy
