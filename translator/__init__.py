"""translator: train your own English->Italian Transformer, from scratch."""

import os

# oneDNN (PyTorch's CPU kernels for bf16) keeps one compiled kernel per input shape, up to 1,024 by
# default. Batches of sentences come in ever new shapes, so bf16 training grew by about 1.7 GB in
# 250 steps of cpu.yaml; with 64 kernels kept it levels off, at the same speed
# (scripts/bench_train.py; docs/experiments/quality.md, "Performance"). Set before torch makes its
# first kernel; a value the user exported wins.
os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "64")

__version__ = "0.1.0"
