"""Device and precision choice."""

from __future__ import annotations

import pytest
import torch

from translator import device as device_module
from translator.device import autocast_dtype, cpu_has_native_bf16, resolve_device
from translator.errors import ConfigError

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
    ("cuda", "mps", "expected"), [(True, True, "cuda"), (False, True, "mps"), (False, False, "cpu")]
)
def test_device_choice_follows_what_torch_reports(
    monkeypatch: pytest.MonkeyPatch, cuda: bool, mps: bool, expected: str
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    assert resolve_device(None).type == expected
    assert resolve_device("cpu").type == "cpu"
    for name, there in (("cuda", cuda), ("mps", mps)):
        if there:
            assert resolve_device(name).type == name
        else:
            with pytest.raises(ConfigError, match=f"--device {name}: .* use --device cpu"):
                resolve_device(name)


def test_unknown_device_and_bf16_on_a_gpu_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="--device tpu: expected cpu, cuda or mps"):
        resolve_device("tpu")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: False)
    cuda = torch.device("cuda")
    assert device_module.autocast_dtype("auto", cuda) is None
    with pytest.raises(ConfigError, match="this GPU does not support bf16; use fp32"):
        device_module.autocast_dtype("bf16", cuda)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    assert device_module.autocast_dtype("auto", cuda) is torch.bfloat16
