"""Word dropout (`train.word_dropout`): source tokens of a training batch replaced by [UNK].

Sennrich et al. (2016) drop whole source words at random so that the model cannot lean on any one
of them; with subword pieces each piece is dropped on its own. The draws come from torch's
global generator, which every checkpoint saves, so a resumed run draws what an uninterrupted one
would. Only training steps are noised: validation, sampling and decoding see the source as is.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from translator.data.batching import Batch
from translator.specials import EOS_ID, PAD_ID, SOS_ID, UNK_ID


def drop_source_tokens(batch: Batch, rate: float) -> Batch:
    """`batch` with each source token other than [PAD], [SOS] and [EOS] turned into [UNK] with
    probability `rate`."""
    src = batch.src
    real = (src != PAD_ID) & (src != SOS_ID) & (src != EOS_ID)
    dropped = real & (torch.rand(src.shape, device=src.device) < rate)
    return replace(batch, src=src.masked_fill(dropped, UNK_ID))
