"""Inference: greedy, beam and MBR decoding over a KV cache, loading a run for prediction,
`translate` and `validate`, text in and out, attention maps.

May import: the ground, data, model. Nothing of training, export or serve.
"""
