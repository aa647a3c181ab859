"""Serving: `translator serve`, the HTTP app and its page, over either engine.

May import: the ground, data, model, inference, export. Nothing of training.
"""
