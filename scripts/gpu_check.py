#!/usr/bin/env python3
"""Print what NVML sees on this machine and what the GPU agent would register, without changing anything.

    python scripts/gpu_check.py [--mode hami-core|mig] [--split N] [--fake-nvml H200x8[:mig]]

Read-only: it lists the driver, each GPU (index, minor, UUID, name, memory, MIG mode), every MIG
GPU-instance profile NVML offers (id, name, slices, memory, placements) and the GPU instances that
exist, then runs the agent's discovery as a dry run and prints the `volcano.sh/node-vgpu-register`
annotation, the MIG layouts and the extended resources it would write, and compares the MIG profile
tables vpolicy schedules with (vpolicy.model.gpu) with what NVML reports. It never calls an NVML
function that changes MIG mode, instances or any other device setting.

Exit codes: 0 done (also when there is no NVML or no GPU: it says so); 1 bad arguments.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cluster_adapter.gpu_agent import discovery, nvml  # noqa: E402  # reason: after the path fix above
from vpolicy.model import gpu  # noqa: E402  # reason: same


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", choices=gpu.MODES, default=gpu.MODE_HAMI_CORE)
    p.add_argument("--split", type=int, default=gpu.DEFAULT_SPLIT)
    p.add_argument("--fake-nvml", help="check a fake NVML instead (e.g. H200x8:mig)")
    args = p.parse_args(argv)
    try:
        backend = nvml.open_backend(fake=args.fake_nvml)
    except nvml.NvmlUnavailable as exc:
        print(f"no NVML on this machine: {exc}")
        print("nothing to check: run this on a GPU node (or pass --fake-nvml H200x8 to see the output format)")
        return 0
    except (nvml.NvmlError, ValueError) as exc:
        print(f"gpu_check: {exc}", file=sys.stderr)
        return 1
    try:
        return report(backend, mode=args.mode, split=args.split)
    finally:
        backend.close()


def report(backend: nvml.NvmlBackend, *, mode: str, split: int) -> int:
    try:
        print(f"driver: {backend.driver_version()}")
        gpus = backend.gpus()
    except nvml.NvmlError as exc:
        print(f"NVML answered with an error: {exc}")
        return 0
    if not gpus:
        print("NVML works but sees no GPU")
        return 0
    for g in gpus:
        mig = {None: "not supported", True: "enabled", False: "disabled"}[g.mig_enabled]
        print(f"GPU {g.index} (minor {g.minor}) {g.uuid}: {g.name}, {g.memory_mib} MiB, MIG {mig}")
        for prof in g.mig_profiles:
            places = " ".join(f"{s}+{n}" for s, n in prof.placements)
            print(f"  profile {prof.index} id {prof.id}: {prof.name} {prof.slices} slices x{prof.instance_count}, "
                  f"{prof.memory_mib} MiB, placements {places or '-'}")
        for inst in g.mig_instances:
            print(f"  instance GI {inst.gi_id}: {inst.profile} at {inst.start}+{inst.size} {inst.uuid}")
        _compare_tables(g)
    inventory = discovery.discover(gpus, mode=mode, split=split)
    print("dry run of the agent's discovery (nothing is written):")
    print(f"  {gpu.NODE_REGISTER}: {gpu.encode_inventory(inventory.cards)}")
    if mode == gpu.MODE_MIG:
        print(f"  {gpu.NODE_MIG_LAYOUT}: {gpu.encode_mig_layout(discovery.mig_layouts(gpus))}")
    for key, value in discovery.extended_resources(inventory).items():
        print(f"  {key}: {value}")
    return 0


def _compare_tables(g: nvml.GpuInfo) -> None:
    model = gpu.mig_model_for(f"NVIDIA-{g.name}")
    if model is None or not g.mig_profiles:
        return
    seen = {p.name: p for p in g.mig_profiles}
    for prof in model.profiles:
        real = seen.get(prof.name)
        if real is None:
            print(f"  table {model.name}: NVML offers no {prof.name}")
        elif real.memory_mib < prof.memory:
            print(f"  table {model.name}: {prof.name} is {real.memory_mib} MiB here, the table says {prof.memory}: "
                  "lower the table")
        else:
            print(f"  table {model.name}: {prof.name} ok ({real.memory_mib} MiB >= {prof.memory})")


if __name__ == "__main__":
    sys.exit(main())
