"""A run's files (ground): its directories, checkpoints, the lock, checkpoint averaging, and
finding the checkpoint to load.

Below both training and inference, so `translate` loads a checkpoint without importing training.
May import: config, errors, specials, durable, jsonfile. Nothing of the wings.
"""
