"""Device and precision choice."""

from __future__ import annotations

import pytest
import torch

from translator import device as device_module
from translator.cpu import has_int8_dot_product
from translator.device import autocast_dtype, cpu_has_native_bf16

CPU = torch.device("cpu")


@pytest.mark.parametrize("native", [True, False])
def test_auto_uses_bf16_on_cpus_with_bf16_instructions(monkeypatch, native: bool):
    monkeypatch.setattr(device_module, "cpu_has_native_bf16", lambda: native)
    assert autocast_dtype("auto", CPU) == (torch.bfloat16 if native else None)
    assert autocast_dtype("fp32", CPU) is None
    assert autocast_dtype("bf16", CPU) == torch.bfloat16


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ("fpu avx2 avx512f avx512_bf16 avx512_vnni", True),
        ("fpu avx2 amx_bf16 amx_tile", True),
        ("fpu avx2 avx512f avx512bw", False),
        ("fpu avx2 xavx512_bf16y", False),  # a longer flag that merely contains the name
    ],
)
def test_native_bf16_is_read_from_the_cpu_flags(tmp_path, flags: str, expected: bool):
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
    assert cpu_has_native_bf16(path) is expected


def test_no_cpuinfo_means_no_native_bf16(tmp_path):
    assert cpu_has_native_bf16(tmp_path / "missing") is False


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ("fpu avx2 avx512f avx512_vnni", True),
        ("fpu avx2 avx_vnni", True),
        ("fpu avx2 fma", False),  # AVX2 alone: int8 products saturate in 16 bits
    ],
)
def test_int8_dot_product_is_read_from_the_cpu_flags(tmp_path, flags: str, expected: bool):
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
    assert has_int8_dot_product(path) is expected
