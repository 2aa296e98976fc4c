"""`vpolicy agent`: the node GPU agent's command line, plugged into `vpolicy` as an extension.

    vpolicy agent --node NAME --kubeconfig FILE [--mode hami-core|mig] [--split N] [--apply]
                  [--period 10s] [--once] [--env-dir DIR] [--fake-nvml H200x8[:mig]]

`vpolicy/cli.py` finds it through the entry point group `vpolicy.commands` (pyproject.toml), so the
engine never imports the adapter. Without `--apply` MIG changes are only planned and printed. Exit
codes: 0 stopped (or `--once` done); 1 bad input, no NVML, or the API unreachable with `--once`.
"""
from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from vpolicy.model import gpu

EXIT_OK, EXIT_BAD_INPUT = 0, 1


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("agent", help="run the GPU agent on a node (vGPU inventory, HAMi-core env, MIG)")
    p.add_argument("--node", required=True, help="this node's name")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: the pod's service account)")
    p.add_argument("--mode", choices=gpu.MODES, default=gpu.MODE_HAMI_CORE,
                   help="share cards with HAMi-core (default) or cut them into MIG instances")
    p.add_argument("--split", type=int, default=gpu.DEFAULT_SPLIT,
                   help=f"containers that may share one card (deviceSplitCount, default {gpu.DEFAULT_SPLIT})")
    p.add_argument("--apply", action="store_true", help="create/destroy MIG instances (default: plan only)")
    p.add_argument("--period", type=float, default=10.0, help="seconds between ticks (default 10)")
    p.add_argument("--once", action="store_true", help="one tick, then exit")
    p.add_argument("--env-dir", type=Path, help="write each container's environment to DIR/<ns>_<pod>_<ctr>.env")
    p.add_argument("--fake-nvml", metavar="MODELxN[:mig]", help="use a fake NVML (e.g. H200x8) instead of the GPU")
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    p.set_defaults(extension=main)


def main(args: argparse.Namespace) -> int:
    from cluster_adapter.gpu_agent import agent, api, nvml

    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.split < 1:
        print("vpolicy agent: --split must be at least 1", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        backend = nvml.open_backend(fake=args.fake_nvml)
    except (nvml.NvmlError, ValueError) as exc:
        print(f"vpolicy agent: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        client = api.KubernetesNodeApi(args.kubeconfig)
    except api.ApiFailure as exc:
        print(f"vpolicy agent: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    settings = agent.AgentSettings(node=args.node, mode=args.mode, split=args.split, apply_mig=args.apply)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        return api.run(agent.Agent(settings, backend), client, clock=time.time, period_s=args.period, stop=stop,
                       env_dir=args.env_dir, once=args.once)
    finally:
        backend.close()
