"""Where to compute: the device (CUDA, then MPS, then CPU) and the autocast precision."""

from __future__ import annotations

from pathlib import Path

import torch

from translator.cpu import CPUINFO, cpu_flags
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

    `auto` picks bf16 on CUDA GPUs that support it, and on CPUs that compute bf16 natively
    (AVX-512 BF16 or AMX). Measured with scripts/bench_train.py and a 500-step run on a 2-core
    AVX-512 BF16 machine, bf16 autocast trained cpu.yaml 1.3x faster with the same loss; CPUs
    without native bf16 only emulate it, slower than fp32, so they stay in fp32.
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


def cpu_has_native_bf16(cpuinfo_path: Path = CPUINFO) -> bool:
    """Whether the CPU has bf16 instructions (AVX-512 BF16 or AMX), from /proc/cpuinfo on Linux."""
    return bool(cpu_flags(cpuinfo_path) & {"avx512_bf16", "amx_bf16"})
