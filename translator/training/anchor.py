"""A pull back toward the parent's weights while fine-tuning (`train.anchor`).

Fine-tuning on a small in-domain corpus moves the weights away from the parent's, and the model
forgets the general domain as they go. After every optimizer step each weight is moved back a
share lr x anchor of its distance to the parent's value (theta <- theta + lr * anchor *
(theta_parent - theta)): the L2-SP penalty of Li et al. (2018), "explicit inductive bias for
transfer learning", applied decoupled from Adam's scaling as AdamW applies weight decay
(Loshchilov & Hutter 2019), so its strength does not depend on the size of a weight's
gradients. The pull follows the learning-rate schedule. The parent's weights are kept in every
checkpoint, so that a resumed run pulls toward the same weights as an uninterrupted one.
"""

from __future__ import annotations

import torch
from torch import nn


class ParentAnchor:
    def __init__(self, model: nn.Module, strength: float) -> None:
        """Anchor at `model`'s current weights: the parent's, loaded before the first step."""
        self.strength = strength
        self.names = [name for name, _ in model.named_parameters()]
        self.params = [p for _, p in model.named_parameters()]
        self.anchor = [p.detach().clone() for p in self.params]

    @torch.no_grad()
    def pull(self, lr: float) -> None:
        """After an optimizer step at learning rate `lr`: each weight a share of the way back."""
        torch._foreach_lerp_(self.params, self.anchor, min(1.0, lr * self.strength))

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {name: t.clone() for name, t in zip(self.names, self.anchor, strict=True)}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        if set(state) != set(self.names):
            raise KeyError(f"the parent's weights hold other parameters ({len(state)} tensors)")
        for name, tensor in zip(self.names, self.anchor, strict=True):
            tensor.copy_(state[name])
