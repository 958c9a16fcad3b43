"""Which vector kernels torch runs on: held to AVX2 on every x86-64 CPU that has it, or as the machine offers.

torch (ATen), oneDNN and MKL each pick their CPU kernels from the instruction sets the processor offers:
on an AVX-512 machine a matrix product or a convolution sums in another order than on an AVX2 one, the
last bit of a weight differs, and self-play carries that bit into other moves and other games (the same
seed and config gave another cell on an AVX-512 machine than on an AVX2 one). Held (``avx2``, the default
of every ``pdx`` command), the three are told, before torch is imported, to use AVX2 code even where more
is offered, so a run's numbers no longer depend on whether the CPU has AVX-512:

* ``ATEN_CPU_CAPABILITY=avx2``: torch's own vectorized kernels (element-wise math, reductions, softmax);
* ``ONEDNN_MAX_CPU_ISA=AVX2``: oneDNN's JIT kernels (convolutions, some matrix products);
* ``MKL_ENABLE_INSTRUCTIONS=AVX2`` and ``MKL_CBWR=AVX2``: MKL's dispatch (BLAS: ``nn.Linear``'s products)
  and its conditional numerical reproducibility branch, whose promise is the same results on any
  processor that runs that branch.

``native`` leaves the environment as it is (torch picks the widest kernels the CPU offers, or what the
user's own ``ATEN_CPU_CAPABILITY`` etc. say). The hold applies on x86-64 CPUs with AVX2 and FMA; other
architectures (ARM, POWER) and GPUs keep their own kernels, so their numbers are their own (a CUDA run is
not bit-reproducible across GPU models either). Every record says what was in force
(:func:`kernel_record`): the setting, torch's kernel ISA, threads, the CPU.

The setting travels to subprocesses through ``PDX_KERNELS`` (a sweep's cells, DDP workers), the way
``--threads`` travels through ``OMP_NUM_THREADS``. This module imports nothing heavy: the ``pdx`` entry
point calls :func:`apply_kernels` before anything imports torch.
"""

from __future__ import annotations

import os
import platform
import sys
from functools import cache
from pathlib import Path

__all__ = [
    "ENV",
    "HOLD",
    "KERNELS",
    "apply_kernels",
    "cpu_model",
    "cpu_vendor",
    "kernel_record",
    "kernels_setting",
]

ENV = "PDX_KERNELS"
KERNELS = ("avx2", "native")
# what the hold sets (the values every x86-64 CPU with AVX2 and FMA runs the same code for)
HOLD = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    "MKL_CBWR": "AVX2",
}
X86_64 = ("x86_64", "amd64")


def kernels_setting(value: str | None) -> str:
    """Parse ``--kernels`` / ``$PDX_KERNELS`` (None: the default, ``avx2``)."""
    if value is None:
        return "avx2"
    v = value.strip().lower()
    if v not in KERNELS:
        raise ValueError(f"--kernels must be one of {', '.join(KERNELS)}, got {value!r}")
    return v


@cache
def _cpuinfo() -> dict[str, str]:
    """The first processor's ``/proc/cpuinfo`` fields (empty where there is none)."""
    out: dict[str, str] = {}
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        if not line.strip():
            if out:
                break
            continue
        key, _, value = line.partition(":")
        out.setdefault(key.strip(), value.strip())
    return out


def cpu_model() -> str | None:
    """The CPU's model name (``/proc/cpuinfo``, else the platform's processor string)."""
    info = _cpuinfo()
    return info.get("model name") or info.get("cpu model") or platform.processor() or None


def cpu_vendor() -> str | None:
    """The CPU's vendor as ``/proc/cpuinfo`` names it (``GenuineIntel``, ``AuthenticAMD``; None: unknown).
    Held to AVX2, an Intel and an AMD CPU still differ: MKL runs another code path on each."""
    return _cpuinfo().get("vendor_id") or None


def cpu_offers() -> str | None:
    """The widest x86 vector ISA the CPU offers (``avx512``, ``avx2``, ``sse``; None: not x86-64 or unknown)."""
    if platform.machine().lower() not in X86_64:
        return None
    flags = set(_cpuinfo().get("flags", "").split())
    if not flags:
        return None
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return "avx512"
    if {"avx2", "fma"} <= flags:
        return "avx2"
    return "sse"


def can_hold() -> bool:
    """Whether the AVX2 hold applies here: an x86-64 CPU with AVX2 and FMA (None from /proc: assume so on
    x86-64, whose CPUs since 2013-2015 all have them)."""
    offers = cpu_offers()
    return platform.machine().lower() in X86_64 and offers in ("avx512", "avx2", None)


def apply_kernels(value: str | None = None) -> str:
    """Set the kernel hold for this process and its children, before torch is imported; returns the
    setting in force (``native`` where the hold cannot apply). ``value`` None: ``$PDX_KERNELS``, else
    ``avx2``. Raises ValueError on a bad value."""
    setting = kernels_setting(value if value is not None else os.environ.get(ENV))
    if setting == "avx2" and not can_hold():
        setting = "native"
    os.environ[ENV] = setting
    if setting == "avx2":
        os.environ.update(HOLD)  # the hold wins over a value already set: it is what the records promise
    return setting


def kernel_record() -> dict[str, str | int | None]:
    """What made a result, beyond the package versions: ``kernels`` (pdx's setting), ``cpu_capability``
    (torch's kernel ISA in force), the oneDNN and MKL settings, ``threads``, ``cpu`` (model) and
    ``cpu_offers`` (its widest ISA)."""
    torch = sys.modules.get("torch")
    capability = threads = None
    if torch is not None:
        capability = torch.backends.cpu.get_cpu_capability()
        threads = torch.get_num_threads()
    return {
        "kernels": os.environ.get(ENV, "native"),
        "cpu_capability": capability,
        "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA"),
        "mkl_enable_instructions": os.environ.get("MKL_ENABLE_INSTRUCTIONS"),
        "mkl_cbwr": os.environ.get("MKL_CBWR"),
        "threads": threads,
        "cpu": cpu_model(),
        "cpu_vendor": cpu_vendor(),
        "cpu_offers": cpu_offers(),
        "machine": platform.machine(),
    }
