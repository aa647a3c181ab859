"""Model: the encoder-decoder Transformer ("Attention Is All You Need"), with a KV cache.

May import: the ground (config, specials). Nothing of data or training, nor of the wings above.
"""
