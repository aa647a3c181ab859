"""The CPU's features (cpu.py), read from /proc/cpuinfo."""

from __future__ import annotations

import pytest

from translator.cpu import has_int8_dot_product


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
