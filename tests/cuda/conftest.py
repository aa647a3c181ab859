"""The `cuda` marker: a test that needs a CUDA GPU skips, saying so, where there is none."""

from __future__ import annotations

import pytest
import torch


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("cuda") is not None and not torch.cuda.is_available():
        pytest.skip(
            "needs a CUDA GPU (torch.cuda.is_available() is False here); "
            "on a GPU machine: scripts/gpu_check.sh OUT_DIR"
        )
