"""`vpolicy scheduler`: the live scheduler's command line, plugged into `vpolicy` as an extension.

The engine never imports the adapter. `vpolicy/cli.py` finds extra subcommands through the entry
point group `vpolicy.commands` (declared in pyproject.toml); `register` adds this one.

    vpolicy scheduler --kubeconfig FILE [--conf FILE | --policy FILE] [--period 1s] [--once]
                      [--leader-elect] [--scheduler-name volcano] [--metrics-port N]

Exit codes: 0 stopped (SIGTERM, or `--once` done); 1 bad input (policy, conf, kubeconfig) or the
cache never synced; 3 the lease was lost (restart to rejoin the election, as Volcano does).
"""
from __future__ import annotations

import argparse
import logging
import re
import signal
import sys
import threading
from typing import Any

import vpolicy
from cluster_adapter.config import (ApplySettings, ClientSettings, InformerSettings, LeaderSettings,
                                    SchedulerSettings)
from cluster_adapter.kube import client as kube
from cluster_adapter.metrics import Metrics
from cluster_adapter.scheduler import EXIT_BAD_INPUT, Scheduler

_LEADER, _SCHEDULER, _CLIENT = LeaderSettings(), SchedulerSettings(), ClientSettings()
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$")


def duration(text: str) -> float:
    """`1s`, `500ms`, `2m`, `1.5` (seconds) -> seconds."""
    match = _DURATION.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (write e.g. 1s, 500ms, 2m)")
    value, unit = float(match.group(1)), match.group(2) or "s"
    return value * {"ms": 0.001, "s": 1.0, "m": 60.0}[unit]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("scheduler", help="run the live scheduler against a Kubernetes API")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: the pod's service account)")
    p.add_argument("--context", default="", help="kubeconfig context (default: the current one)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--policy", help="a native policy file (policy NAME ...)")
    g.add_argument("--conf", help="a volcano-scheduler.conf (reloaded when the file changes)")
    p.add_argument("--period", type=duration, default=1.0, help="time between sessions (default 1s)")
    p.add_argument("--once", action="store_true", help="sync, run one session, apply it, exit")
    p.add_argument("--record", metavar="DIR", help="store every session's snapshot and decisions in DIR "
                                                   "(replay them under another policy with `vpolicy replay`)")
    p.add_argument("--leader-elect", action="store_true", help="hold a coordination.k8s.io Lease to write")
    p.add_argument("--lock-namespace", default=_LEADER.namespace, help="namespace of the Lease")
    p.add_argument("--lease-duration", type=duration, default=_LEADER.lease_duration_s)
    p.add_argument("--renew-deadline", type=duration, default=_LEADER.renew_deadline_s)
    p.add_argument("--retry-period", type=duration, default=_LEADER.retry_period_s)
    p.add_argument("--scheduler-name", default=_SCHEDULER.scheduler_name,
                   help="bind only pods with this spec.schedulerName (default volcano)")
    p.add_argument("--metrics-port", type=int, help="serve Prometheus metrics on this port at /metrics")
    p.add_argument("--metrics-address", default=_SCHEDULER.metrics_address)
    p.add_argument("--kube-api-qps", type=float, default=_CLIENT.qps)
    p.add_argument("--kube-api-burst", type=int, default=_CLIENT.burst)
    p.add_argument("--no-events", action="store_true", help="do not write Events")
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    p.set_defaults(extension=main)


def settings_from(args: argparse.Namespace) -> SchedulerSettings:
    leader = LeaderSettings(enabled=args.leader_elect, namespace=args.lock_namespace, name=args.scheduler_name,
                            lease_duration_s=args.lease_duration, renew_deadline_s=args.renew_deadline,
                            retry_period_s=args.retry_period)
    return SchedulerSettings(
        scheduler_name=args.scheduler_name, period_s=args.period, once=args.once, policy=args.policy,
        conf=args.conf, record=args.record, metrics_port=args.metrics_port, metrics_address=args.metrics_address,
        client=ClientSettings(context=args.context, qps=args.kube_api_qps, burst=args.kube_api_burst),
        informers=InformerSettings(), leader=leader, apply=ApplySettings(write_events=not args.no_events))


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = settings_from(args)
    if not (settings.leader.lease_duration_s > settings.leader.renew_deadline_s > settings.leader.retry_period_s > 0):
        print("error[scheduler.bad-leader-timing]: need lease-duration > renew-deadline > retry-period > 0",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        client = kube.connect(args.kubeconfig, settings.client)
    except kube.APIError as exc:
        print(f"error[scheduler.kubeconfig]: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    metrics = Metrics()
    stop = threading.Event()
    scheduler = Scheduler(client, settings, metrics=metrics, stop=stop)
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    if settings.metrics_port is not None:
        port = metrics.serve(settings.metrics_port, settings.metrics_address)
        logging.getLogger(__name__).info("metrics on %s:%d/metrics", settings.metrics_address, port)
    try:
        return scheduler.run()
    except vpolicy.PolicyError as exc:
        for diag in exc.diagnostics:
            print(diag.one_line(), file=sys.stderr)
        return EXIT_BAD_INPUT
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error[input.unreadable]: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        metrics.stop()
        client.close()
        for sig, handler in previous.items():  # a caller in the same process gets its handlers back
            signal.signal(sig, handler)
