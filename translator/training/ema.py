"""An exponential moving average of the weights (`train.ema_decay`), kept beside training.

After every optimizer step each averaged tensor moves towards the live weights:
ema <- ema + (1 - d) * (weights - ema), with d = min(decay, (1 + step) / (10 + step)), so the
first steps, whose weights are far from any good model, fade out quickly. The average is kept in
float32 whatever the autocast, saved in every checkpoint (a resumed run goes on averaging exactly
as an uninterrupted one), and written at the end as ema.pt, a weights-only checkpoint.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class WeightAverage:
    def __init__(self, model: nn.Module, decay: float) -> None:
        self.decay = decay
        self.names = [name for name, _ in model.named_parameters()]
        self.params = [p for _, p in model.named_parameters()]
        self.restart()

    def restart(self) -> None:
        """Start the average at the current weights."""
        self.average = [p.detach().float().clone() for p in self.params]

    def rate(self, step: int) -> float:
        """The decay used after optimizer step `step` (counted from 1)."""
        return min(self.decay, (1 + step) / (10 + step))

    @torch.no_grad()
    def update(self, step: int) -> None:
        weight = 1.0 - self.rate(step)
        torch._foreach_lerp_(self.average, [p.detach().float() for p in self.params], weight)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {name: t.clone() for name, t in zip(self.names, self.average, strict=True)}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        if set(state) != set(self.names):
            raise KeyError(f"the weight average holds other parameters ({len(state)} tensors)")
        for name, tensor in zip(self.names, self.average, strict=True):
            tensor.copy_(state[name])

    def model_state(self, model: nn.Module) -> dict[str, Any]:
        """`model`'s state dict with the averaged weights in place of its parameters."""
        state = model.state_dict()
        for name, tensor in zip(self.names, self.average, strict=True):
            state[name] = tensor.to(state[name].dtype).clone()
        return state
