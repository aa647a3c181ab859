"""translator: train your own English->Italian Transformer, from scratch."""

__version__ = "0.1.0"
