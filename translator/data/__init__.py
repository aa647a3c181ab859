"""Data: read sources -> clean -> tokenizers -> prepared (encoded) data -> batches.

read.py reads the hub or local files, clean.py normalises, drops and splits, tokenizer.py builds
the vocabularies, prepare.py encodes once per run and caches, batching.py buckets and pads.
May import: the ground (config, errors, specials, run). Nothing of model, training, inference,
export or serve.
"""
