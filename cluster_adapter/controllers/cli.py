"""`vpolicy controllers` and `vpolicy webhook`: the controller manager and the admission webhook as
`vpolicy` subcommands (entry point group `vpolicy.commands`, declared in pyproject.toml).

    vpolicy controllers --kubeconfig FILE [--controllers '*,-gc'] [--once] [--leader-elect]
                        [--worker-threads N] [--scheduler-name volcano] [--max-requeue-num 15] ...
    vpolicy webhook --tls-cert FILE --tls-key FILE [--port 8443] [--address ADDR] [--kubeconfig FILE]

Exit codes: 0 stopped (SIGTERM, or `--once` done); 1 bad input (flags, kubeconfig, an unknown
controller, unreadable certificates); 3 the lease was lost (restart to rejoin the election).
"""
from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import Any, cast

from cluster_adapter.config import ApplySettings, ClientSettings, LeaderSettings
from cluster_adapter.controllers import framework
from cluster_adapter.controllers.options import LOCK_NAME, ManagerSettings
from cluster_adapter.kube import client as kube

EXIT_OK, EXIT_BAD_INPUT = 0, 1
_DEFAULTS = ManagerSettings()
_LEADER = LeaderSettings()


def register_controllers(subparsers: Any) -> None:
    p = subparsers.add_parser("controllers", help="run Volcano's controllers (job, podgroup, queue, cronjob, gc)")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: the pod's service account)")
    p.add_argument("--context", default="", help="kubeconfig context (default: the current one)")
    p.add_argument("--controllers", default="*",
                   help="'*' enables all, 'foo' enables foo, '-foo' disables foo (e.g. '*,-gc'); names: "
                        "job, pg, queue, cronjob, gc (with or without '-controller')")
    p.add_argument("--once", action="store_true", help="reconcile every object until quiet, then exit")
    p.add_argument("--leader-elect", action="store_true", help=f"hold the Lease {LOCK_NAME} to write")
    p.add_argument("--lock-namespace", default=_LEADER.namespace)
    p.add_argument("--worker-threads", type=int, default=_DEFAULTS.worker_threads, help="job controller workers")
    p.add_argument("--worker-threads-for-podgroup", type=int, default=_DEFAULTS.worker_threads_for_podgroup)
    p.add_argument("--worker-threads-for-queue", type=int, default=_DEFAULTS.worker_threads_for_queue)
    p.add_argument("--worker-threads-for-gc", type=int, default=_DEFAULTS.worker_threads_for_gc)
    p.add_argument("--worker-threads-for-cronjob", type=int, default=_DEFAULTS.worker_threads_for_cronjob)
    p.add_argument("--max-requeue-num", type=int, default=_DEFAULTS.max_requeue_num)
    p.add_argument("--scheduler-name", action="append", default=None,
                   help="pods of this scheduler get PodGroups (repeatable; default volcano)")
    p.add_argument("--kube-api-qps", type=float, default=_DEFAULTS.client.qps)
    p.add_argument("--kube-api-burst", type=int, default=_DEFAULTS.client.burst)
    p.add_argument("--ssh-key-file-path", default=_DEFAULTS.ssh_key_file_path)
    p.add_argument("--ssh-private-key", default="", help="a PEM private key for every ssh plugin (default: new)")
    p.add_argument("--clock-speed", type=float, default=1.0, metavar="FACTOR",
                   help="run the controllers' clock FACTOR times faster than wall time (cron schedules, "
                        "timeouts, TTLs), for tests and demonstrations (default 1)")
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    p.set_defaults(extension=main_controllers)


def register_webhook(subparsers: Any) -> None:
    p = subparsers.add_parser("webhook", help="serve Volcano's admission webhooks (AdmissionReview over HTTPS)")
    p.add_argument("--tls-cert", required=True, help="PEM certificate (chain) of the server")
    p.add_argument("--tls-key", required=True, help="PEM private key of the server")
    p.add_argument("--port", type=int, default=8443, help="0 = any free port (printed on the first line)")
    p.add_argument("--address", default="0.0.0.0",  # noqa: S104  # reason: the API server calls in from outside
                   help="address to listen on")
    p.add_argument("--kubeconfig", help="read queues from this cluster for the queue checks (default: the pod's "
                                        "service account; --no-cluster skips those checks)")
    p.add_argument("--no-cluster", action="store_true", help="validate without looking anything up")
    p.add_argument("--scheduler-name", default="volcano", help="the job webhook's default schedulerName")
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    p.set_defaults(extension=main_webhook)


def settings_from(args: argparse.Namespace) -> ManagerSettings:
    names = tuple(args.scheduler_name or _DEFAULTS.scheduler_names)
    return ManagerSettings(
        controllers=args.controllers, once=args.once, worker_threads=args.worker_threads,
        worker_threads_for_podgroup=args.worker_threads_for_podgroup,
        worker_threads_for_queue=args.worker_threads_for_queue, worker_threads_for_gc=args.worker_threads_for_gc,
        worker_threads_for_cronjob=args.worker_threads_for_cronjob, max_requeue_num=args.max_requeue_num,
        scheduler_names=names, ssh_key_file_path=args.ssh_key_file_path, ssh_private_key=args.ssh_private_key,
        client=ClientSettings(context=args.context, qps=args.kube_api_qps, burst=args.kube_api_burst),
        leader=LeaderSettings(enabled=args.leader_elect, namespace=args.lock_namespace, name=LOCK_NAME),
        apply=ApplySettings())


def main_controllers(args: argparse.Namespace) -> int:
    from cluster_adapter.controllers.clock import ScaledClock
    from cluster_adapter.controllers.manager import ControllerManager  # the command's own import cost only

    _logging(args.log_level)
    settings = settings_from(args)
    if not args.clock_speed > 0:
        print(f"error[controllers.clock-speed]: --clock-speed must be > 0, not {args.clock_speed}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        framework.select(settings.controllers, list(framework.load_builtin()))
    except framework.UnknownControllerError as exc:
        print(f"error[controllers.unknown]: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        client = kube.connect(args.kubeconfig, settings.client)
    except kube.APIError as exc:
        print(f"error[controllers.kubeconfig]: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        clock = ScaledClock(args.clock_speed) if args.clock_speed != 1.0 else None
        manager = ControllerManager(client, settings, stop=stop, clock=clock)
        return manager.run_once() if settings.once else manager.run()
    except kube.APIError as exc:
        print(f"error[controllers.api]: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        client.close()


def main_webhook(args: argparse.Namespace) -> int:
    from cluster_adapter.controllers import webhook

    _logging(args.log_level)
    client = None
    if not args.no_cluster:
        try:
            client = kube.connect(args.kubeconfig, ClientSettings())
        except kube.APIError as exc:
            print(f"error[webhook.kubeconfig]: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    try:
        server = webhook.serve(args.address, args.port, cert=args.tls_cert, key=args.tls_key,
                               lookup=webhook.ClusterLookup(client) if client else None,
                               scheduler_name=args.scheduler_name)
    except (OSError, ValueError) as exc:
        print(f"error[webhook.tls]: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    host, port = cast(tuple[str, int], server.server_address[:2])  # getsockname() of an AF_INET socket
    print(f"serving admission webhooks on https://{host}:{port}", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    stop.wait()
    server.shutdown()
    server.server_close()
    if client is not None:
        client.close()
    return EXIT_OK


def _logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
