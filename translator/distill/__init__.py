"""Distillation (`translator distill`): the teacher translates the training corpus once (kept and
reused, like a prepared store), and a small student is trained on its translations.

May import: the ground, data, model, inference, training (to train the student) and export (to
translate with CTranslate2). A stage above both; nothing below imports it.
"""
