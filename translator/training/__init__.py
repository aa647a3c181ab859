"""Training: the Trainer (train_step, fit), its evaluation and state, the schedule, stopping on a
signal, the distributed helpers, and the `translator train` entry point (train.py).

May import: the ground, data, model, inference (greedy decoding and scores for evaluation).
Nothing of export or serve.
"""
