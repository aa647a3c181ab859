"""What this CPU can do, read from /proc/cpuinfo on Linux (torch-free, for both engines)."""

from __future__ import annotations

import functools
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")


@functools.cache
def cpu_flags(cpuinfo_path: Path = CPUINFO) -> frozenset[str]:
    """The instruction-set flags of the first CPU listed; empty when /proc/cpuinfo is missing."""
    try:
        text = cpuinfo_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def has_int8_dot_product(cpuinfo_path: Path = CPUINFO) -> bool:
    """Whether int8 matrix products can accumulate without 16-bit saturation (AVX-512 VNNI or
    AVX-VNNI), or there is no /proc/cpuinfo to tell."""
    flags = cpu_flags(cpuinfo_path)
    return not flags or bool(flags & {"avx512_vnni", "avx_vnni"})
