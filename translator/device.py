"""Where to compute: the device (CUDA, then MPS, then CPU) and the autocast precision."""

from __future__ import annotations

import torch

from translator.errors import ConfigError


def resolve_device(name: str | None) -> torch.device:
    """The requested device, or the best available: CUDA, then MPS, then CPU."""
    if name is None:
        if torch.cuda.is_available():
            return torch.device("cuda")
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda: no CUDA device is available; use --device cpu")
    if name == "mps" and not torch.backends.mps.is_available():
        raise ConfigError("--device mps: MPS is not available on this machine; use --device cpu")
    if name not in ("cpu", "cuda", "mps"):
        raise ConfigError(f"--device {name}: expected cpu, cuda or mps")
    return torch.device(name)


def autocast_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    """The autocast dtype for `train.precision`, or None for plain fp32.

    `auto` picks bf16 where the hardware runs it natively: CUDA GPUs with bf16, and CPUs with
    AVX-512 BF16 or AMX (there bf16 matmuls run 2-3x faster than fp32; see scripts/bench_train.py).
    """
    if precision == "fp32":
        return None
    if precision == "bf16":
        if device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise ConfigError("train.precision bf16: this GPU does not support bf16; use fp32")
        return torch.bfloat16
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    if device.type == "cpu" and cpu_has_native_bf16():
        return torch.bfloat16
    return None


def cpu_has_native_bf16() -> bool:
    """Whether this CPU has bf16 matrix instructions (AVX-512 BF16 or AMX)."""
    cpu = getattr(torch, "cpu", None)
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(cpu, name, lambda: False)()) for name in checks)
