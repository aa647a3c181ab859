"""Export: the CTranslate2 conversion (`translator export`), its decoding engine, and
`translate/validate --model`.

May import: the ground, data, model, inference. Nothing of training or serve. engine.py stays
free of torch, so an exported model decodes without it.
"""
