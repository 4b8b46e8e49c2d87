"""NVIDIA device names accepted as target tags ("nvidia/<name>"), by compute capability.

The names follow the tags TVM users write (e.g. "nvidia/tesla-p100"); the compute
capability of each device is NVIDIA's published figure. Devices older than sm_50 (Kepler
and before) are left out: current CUDA drivers and LLVM's NVPTX back end no longer
target them."""

from __future__ import annotations

# compute capability -> device names (every listed device: 48 KiB shared memory per
# block, 64 Ki registers per block)
# fmt: off
DEVICES_BY_ARCH: dict[str, tuple[str, ...]] = {
    "sm_50": (
        "geforce-830m", "geforce-840m", "geforce-930m", "geforce-940m", "geforce-gtx-750",
        "geforce-gtx-750-ti", "geforce-gtx-850m", "geforce-gtx-860m-sm-50", "geforce-gtx-950m",
        "geforce-gtx-960m", "nvidia-nvs-810", "quadro-k1200", "quadro-k2200", "quadro-k620",
        "quadro-k620m", "quadro-m1000m", "quadro-m1200", "quadro-m2000m", "quadro-m3000m",
        "quadro-m4000m", "quadro-m5000m", "quadro-m500m", "quadro-m520", "quadro-m600m",
    ),
    "sm_52": (
        "geforce-910m", "geforce-gtx-950", "geforce-gtx-960", "geforce-gtx-965m",
        "geforce-gtx-970", "geforce-gtx-970m", "geforce-gtx-980", "geforce-gtx-980-ti",
        "geforce-gtx-980m", "geforce-gtx-titan-x", "quadro-m2000", "quadro-m2200",
        "quadro-m4000", "quadro-m5000", "quadro-m5500m", "quadro-m6000", "quadro-m6000-24gb",
        "quadro-m620", "tesla-m40", "tesla-m60",
    ),
    "sm_53": (
        "jetson-nano", "jetson-tx1", "tegra-x1",
    ),
    "sm_60": (
        "quadro-gp100", "tesla-p100",
    ),
    "sm_61": (
        "geforce-gtx-1050", "geforce-gtx-1060", "geforce-gtx-1070", "geforce-gtx-1070-ti",
        "geforce-gtx-1080", "geforce-gtx-1080-ti", "nvidia-titan-x", "nvidia-titan-xp", "p520",
        "p620", "quadro-p1000", "quadro-p2000", "quadro-p2200", "quadro-p3000", "quadro-p3200",
        "quadro-p400", "quadro-p4000", "quadro-p4200", "quadro-p500", "quadro-p5000",
        "quadro-p5200", "quadro-p600", "quadro-p6000", "quadro-p620", "tesla-p4", "tesla-p40",
    ),
    "sm_62": (
        "jetson-tx2",
    ),
    "sm_70": (
        "nvidia-titan-v", "nvidia-v100", "quadro-gv100",
    ),
    "sm_75": (
        "geforce-rtx-2060", "geforce-rtx-2070", "geforce-rtx-2080", "geforce-rtx-2080-ti",
        "nvidia-t4", "nvidia-titan-rtx", "quadro-rtx-4000", "quadro-rtx-5000",
        "quadro-rtx-6000", "quadro-rtx-8000", "rtx-3000", "rtx-4000", "rtx-5000", "t1000",
        "t2000",
    ),
    "sm_80": (
        "nvidia-a100", "nvidia-a30",
    ),
    "sm_86": (
        "geforce-rtx-3060", "geforce-rtx-3070", "geforce-rtx-3070-ti", "geforce-rtx-3080",
        "geforce-rtx-3080-ti", "geforce-rtx-3090", "geforce-rtx-3090-ti", "nvidia-a10",
        "nvidia-a10g", "nvidia-a16", "nvidia-a2", "nvidia-a40", "rtx-a6000",
    ),
    "sm_89": (
        "geforce-rtx-4090", "nvidia-l4",
    ),
    "sm_90": (
        "nvidia-h100", "nvidia-h200",
    ),
}
# fmt: on


def cuda_tags() -> dict[str, str]:
    """Every tag -> its target string ("cuda -arch=sm_XX")."""
    return {
        f"nvidia/{name}": f"cuda -arch={arch}"
        for arch, names in DEVICES_BY_ARCH.items()
        for name in names
    }
