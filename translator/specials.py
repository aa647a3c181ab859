"""The special tokens and their fixed ids, the same in every vocabulary (ground: imports nothing).

The tokenizers put them first, in this order, so the model, the batches and the decoders can use
the ids without a tokenizer at hand.
"""

UNK, PAD, SOS, EOS = "[UNK]", "[PAD]", "[SOS]", "[EOS]"
SPECIAL_TOKENS = (UNK, PAD, SOS, EOS)
UNK_ID, PAD_ID, SOS_ID, EOS_ID = 0, 1, 2, 3
