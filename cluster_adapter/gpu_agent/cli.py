"""`vpolicy agent`: the node agent's command line (GPU sharing and colocation), plugged into `vpolicy`.

    vpolicy agent --node NAME --kubeconfig FILE [--features auto|gpu|colocation|gpu,colocation]
                  [--period 10s] [--once]
                  GPU sharing:  [--mode hami-core|mig] [--split N] [--apply] [--env-dir DIR] [--fake-nvml H200x8[:mig]]
                  colocation:   [--cgroup-root /sys/fs/cgroup] [--proc-root /proc] [--cgroup-driver cgroupfs|systemd]
                                [--config-namespace volcano-system] [--oversubscription-ratio 60]
                                [--include-system-usage] [--sample-seconds 1] [--metrics-port N]
                                [--kubelet-root-dir /var/lib/kubelet]

`vpolicy/cli.py` finds it through the entry point group `vpolicy.commands` (pyproject.toml), so the
engine never imports the adapter. One binary, features switched by flags and by the
`volcano-agent-configuration` ConfigMap: with `--features auto` (the default) colocation always runs
(it acts only on nodes labelled `volcano.sh/colocation` or `volcano.sh/oversubscription`) and GPU
sharing runs where NVML opens (or `--fake-nvml` is given); naming `gpu` makes a missing NVML an error.
Without `--apply` MIG changes are only planned and printed. `--once` runs one pass of every enabled
handler; the colocation pass samples usage twice, `--sample-seconds` apart, to measure cpu rates.
Exit codes: 0 stopped (or `--once` done); 1 bad input (flags, a ConfigMap that does not validate, no
NVML when `gpu` is named) or the API unreachable with `--once`.
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
    p.add_argument("--features", default="auto", help="auto (default), or a comma list of gpu, colocation")
    p.add_argument("--cgroup-root", type=Path, default=Path("/sys/fs/cgroup"), help="the cgroup mount (default %(default)s)")
    p.add_argument("--proc-root", type=Path, default=Path("/proc"), help="the proc filesystem (default %(default)s)")
    p.add_argument("--cgroup-driver", choices=("cgroupfs", "systemd"),
                   help="the kubelet's cgroup driver (default: detected from the tree)")
    p.add_argument("--config-namespace", default="volcano-system",
                   help="namespace of the volcano-agent-configuration ConfigMap (default %(default)s)")
    p.add_argument("--oversubscription-ratio", type=int, default=60,
                   help="percent of idle cpu/memory lent to BE pods (default %(default)s)")
    p.add_argument("--include-system-usage", action="store_true",
                   help="count the whole machine's usage (system daemons too), not only the pods'")
    p.add_argument("--sample-seconds", type=float, default=1.0,
                   help="with --once: seconds between the two usage samples (default %(default)s)")
    p.add_argument("--kubelet-root-dir", type=Path, default=Path("/var/lib/kubelet"),
                   help="where the kubelet keeps cpu_manager_state: with the static policy, Guaranteed pods' "
                        "cpus are pinned and not lent (default %(default)s)")
    p.add_argument("--metrics-port", type=int, default=0,
                   help="serve the colocation side's /healthz and /metrics on this port (default: off)")
    p.set_defaults(extension=main)


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    features = {f.strip() for f in str(args.features).split(",") if f.strip()}
    unknown = features - {"auto", "gpu", "colocation"}
    if unknown or not features:
        print(f"vpolicy agent: --features: unknown {', '.join(sorted(unknown)) or '(empty)'}; "
              "write auto or a comma list of gpu, colocation", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.split < 1:
        print("vpolicy agent: --split must be at least 1", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not 0 < args.oversubscription_ratio <= 100:
        print("vpolicy agent: --oversubscription-ratio must be between 1 and 100", file=sys.stderr)
        return EXIT_BAD_INPUT
    auto = "auto" in features
    from cluster_adapter.gpu_agent import nvml

    backend: nvml.NvmlBackend | None = None
    if "gpu" in features or (auto and (args.fake_nvml or nvml_available())):
        try:
            backend = nvml.open_backend(fake=args.fake_nvml)
        except (nvml.NvmlError, ValueError) as exc:
            print(f"vpolicy agent: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    try:
        return _serve(args, backend, colocation=auto or "colocation" in features)
    finally:
        if backend is not None:
            backend.close()


def nvml_available() -> bool:
    """Whether NVML opens here (the auto mode runs GPU sharing only then)."""
    from cluster_adapter.gpu_agent import nvml

    try:
        nvml.open_backend().close()
        return True
    except nvml.NvmlError:
        return False


def _serve(args: argparse.Namespace, backend: Any, *, colocation: bool) -> int:
    from cluster_adapter.colocation import agent as coloc
    from cluster_adapter.colocation import api as coloc_api
    from cluster_adapter.colocation import cgroups, probes
    from cluster_adapter.gpu_agent import agent, api

    try:
        client = coloc_api.KubernetesColocationApi(args.kubeconfig)
    except api.ApiFailure as exc:
        print(f"vpolicy agent: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    gpu_agent = None
    if backend is not None:
        gpu_agent = agent.Agent(agent.AgentSettings(node=args.node, mode=args.mode, split=args.split,
                                                    apply_mig=args.apply), backend)
    colo_agent, source = None, coloc_api.ConfigSource(args.config_namespace)
    if colocation:
        tree = cgroups.CgroupTree.detect(args.cgroup_root, driver=args.cgroup_driver)
        writer = cgroups.writer_for(tree)
        settings = coloc.ColocationSettings(node=args.node, ratio_percent=args.oversubscription_ratio,
                                            include_system_usage=args.include_system_usage,
                                            pinned_guaranteed_cpus=coloc.cpu_manager_static(args.kubelet_root_dir))
        colo_agent = coloc.ColocationAgent(settings, writer, probes.CgroupProcProbe(writer, args.proc_root))
        logging.getLogger("vpolicy.agent").info("colocation: cgroup %s (%s driver) at %s", tree.version,
                                                tree.driver, tree.root)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    metrics, server = None, None
    if colo_agent is not None and args.metrics_port:
        from cluster_adapter.colocation import metrics as coloc_metrics

        metrics = coloc_metrics.AgentMetrics(args.node, clock=time.monotonic, stale_after_s=max(3 * args.period, 30))
        server = coloc_metrics.serve(metrics, "", args.metrics_port)
    if args.once and colo_agent is not None and args.sample_seconds > 0:
        _prime(colo_agent, client, args.sample_seconds)
    code = 0
    try:
        while True:
            if gpu_agent is not None:
                code |= api.run(gpu_agent, client, clock=time.time, period_s=0, stop=stop, env_dir=args.env_dir,
                                once=True)
            if colo_agent is not None:
                code |= coloc_api.run(colo_agent, client, source, clock=time.monotonic, period_s=0, stop=stop,
                                      once=True, metrics=metrics)
            if args.once:
                return code
            code = 0
            if stop.wait(args.period):
                return 0
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()


def _prime(colo_agent: Any, client: Any, seconds: float) -> None:
    """A first usage sample, so that the one pass of --once has cpu rates to work with."""
    from cluster_adapter.colocation import qos
    from cluster_adapter.gpu_agent.api import ApiFailure

    try:
        pods = qos.active_on(client.list_node_pods(colo_agent.settings.node), colo_agent.settings.node)
    except ApiFailure:
        return  # the pass reports it
    colo_agent.probe.sample(pods, time.monotonic())
    time.sleep(seconds)
