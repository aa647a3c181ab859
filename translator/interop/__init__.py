"""Interop: the formats of other tools. `translator import` reads a Hugging Face Transformers
Marian model (OPUS-MT) into a run; `translator export --format transformers` writes a run as one.

May import: the ground, data, model, inference. Nothing below imports it (the command line
does): the rest of the tool knows an imported run only as a run (config, tokenizers, checkpoint).
"""
