"""`python -m benchmarks.run`: time scheduling sessions on generated clusters, per engine mode.

    python -m benchmarks.run --size S|M|L --workload steady|fragmentation|preemption|reclaim
        [--mode volcano|optimize|both] [--runs 5] [--seed N] [--json]
        [--nodes N --pending-pods P] [--timeout SECONDS] [--profile FILE]
        [--optimize-budget 1s|unlimited]

Each mode runs in its own child process (the same command with `--child`), so `peak_rss_mb`
(getrusage's ru_maxrss) is that mode's alone; the child generates the snapshot, compiles the policy,
runs `--runs` sessions on the same snapshot, checks the last decision document with the independent
validator (`vpolicy.engine.validate`, when present) and prints one JSON object. The parent merges the
modes into one object (DESIGN §7's figures plus the optimize/volcano ratios) and prints it as JSON or
as a table (`benchmarks.table`).

`volcano` runs Volcano's built-in conf (`enqueue, allocate, backfill`; `enqueue, allocate, preempt,
backfill` for the preemption workload, `reclaim` in its place for the reclaim workload); `optimize` runs the same conf with `run_session(mode="optimize")`
(`vpolicy.engine.optimize`: GPU best fit over every feasible node, cheapest victim sets) within the
conf's session budget (1 s of optimize's own work beyond Volcano's runs, or `--optimize-budget`: an
evicting action's optimize run that does not fit keeps Volcano's, and `optimize_runs` says which run
each action kept), on the same snapshot, in
the same invocation (`--mode both`), so the ratios compare like with like. Timing covers
`run_session` only (session state built from the snapshot, every action, closing), as wall time and as
this process's CPU time (`session_cpu_ms_p50`: the machine is shared); generating the snapshot and
compiling the policy are reported apart. This module does not build clusters (`benchmarks.generate`) and asserts nothing about speed.
"""
from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from benchmarks import generate as gen
from vpolicy.engine import validate
from vpolicy.engine.session import CompiledPolicy, run_session
from vpolicy.harness.policy import UNLIMITED, from_conf, parse_budget
from vpolicy.load import conf as conf_loader
from vpolicy.model.snapshot import ClusterSnapshot

MODES = ("volcano", "optimize")
PREEMPT_ACTIONS = "enqueue, allocate, preempt, backfill"
# the evicting action each workload adds to Volcano's default conf, after allocate
EVICTING_ACTIONS = {"preemption": PREEMPT_ACTIONS, "reclaim": "enqueue, allocate, reclaim, backfill"}


def policy_for(workload: str, *, optimize_budget: str | None = None) -> CompiledPolicy:
    """Volcano's built-in conf; the preemption workload adds `preempt` before `backfill`, the reclaim
    workload `reclaim`. `optimize_budget` (`parse_budget`'s text) replaces the conf's session budget
    for optimize mode."""
    actions = EVICTING_ACTIONS.get(workload)
    if actions is None:
        policy = from_conf(conf_loader.default_conf())
    else:
        text = conf_loader.default_conf_text()
        first, rest = text.split("\n", 1)
        if not first.startswith("actions:"):
            raise RuntimeError(f"unexpected first line of Volcano's default conf: {first!r}")
        policy = from_conf(conf_loader.parse_conf_text(f'actions: "{actions}"\n{rest}',
                                                       file=f"<benchmark-volcano-{workload}>"))
    if optimize_budget is not None:
        policy = replace(policy, optimize_budget_s=parse_budget(optimize_budget))
    return policy


def measure_mode(generated: gen.Generated, mode: str, *, runs: int = 5, profile: str | None = None,
                 optimize_budget: str | None = None) -> dict[str, Any]:
    """Run `runs` sessions of `mode` on the generated snapshot in this process; the metrics of one mode.

    Every decision figure comes from the last run; `deterministic` says whether all runs decided the same.
    `optimize_budget`: see `policy_for`.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    kwargs: dict[str, Any] = {"mode": mode}
    t0 = time.perf_counter()
    policy = policy_for(generated.workload, optimize_budget=optimize_budget)
    compile_ms = (time.perf_counter() - t0) * 1000
    snapshot = generated.snapshot
    times: list[float] = []
    cpu_times: list[float] = []
    documents: list[tuple[Any, ...]] = []
    last = None
    for i in range(runs):
        profiler = cProfile.Profile() if profile and i == 0 else None
        t0, c0 = time.perf_counter(), time.process_time()
        if profiler is not None:
            profiler.enable()
        last = run_session(snapshot, policy, **kwargs)
        if profiler is not None:
            profiler.disable()
        times.append((time.perf_counter() - t0) * 1000)
        cpu_times.append((time.process_time() - c0) * 1000)
        if profiler is not None and profile:
            profiler.dump_stats(profile)
        documents.append(_decided(last.decisions.to_document()))
    assert last is not None
    document = last.decisions.to_document()
    metrics = decision_metrics(snapshot, document)
    session_s = statistics.median(times) / 1000
    stats: dict[str, Any] = dict(document.get("stats") or {})  # type: ignore[call-overload]  # reason: JSON object
    t0 = time.perf_counter()
    violations = validate_document(snapshot, document, policy)
    validate_ms = (time.perf_counter() - t0) * 1000
    return {
        "status": "ok",
        "actions": list(policy.actions),
        "runs": runs,
        "session_ms_p50": round(statistics.median(times), 1),
        "session_ms_max": round(max(times), 1),
        "session_ms_all": [round(t, 1) for t in times],
        # CPU time of this process: on a shared machine it shows how much of the wall time was waiting.
        "session_cpu_ms_p50": round(statistics.median(cpu_times), 1),
        **metrics,
        "pods_per_s": round(metrics["pods_placed"] / session_s, 1) if session_s > 0 else None,
        "actions_ms": {k: v.get("ms") for k, v in (stats.get("actions") or {}).items()},
        "rule_calls": stats.get("rule_calls"),
        "solver": stats.get("solver"),
        "optimize_budget_s": policy.optimize_budget_s if mode == "optimize" else None,
        "optimize_runs": stats.get("optimize"),
        "compile_ms": round(compile_ms, 1),
        "deterministic": all(d == documents[0] for d in documents),
        "violations": len(violations),
        "violation_codes": dict(Counter(v.code for v in violations)),
        "validate_ms": round(validate_ms, 1),
    }


def decision_metrics(snapshot: ClusterSnapshot, document: Mapping[str, Any]) -> dict[str, Any]:
    """Placed pods and GPUs (binds + pipelined) and evictions, counted from a decision document; the
    GPU pods pipelined (preemptors, in the preemption workload) by count and by a digest of their
    keys, and the keys themselves, so two modes can be seen to have placed the same preemptors (DESIGN
    §7's eviction ratio compares like with like only then), or optimize all of Volcano's and more."""
    pods = {p.key: p for p in snapshot.pods}
    placed = [*document["binds"], *document["pipelined"]]
    evicted = [e["pod"] for e in document["evictions"]]
    gpu_pipelined = sorted(k for k in document["pipelined"] if k in pods and gen.gpus(pods[k].resreq))
    return {
        "gpu_pods_pipelined": len(gpu_pipelined),
        "gpu_pods_pipelined_digest": hashlib.sha256("\n".join(gpu_pipelined).encode()).hexdigest()[:16],
        "gpu_pods_pipelined_keys": gpu_pipelined,
        "binds": len(document["binds"]),
        "pipelined": len(document["pipelined"]),
        "pods_placed": len(placed),
        "gpus_placed": sum(gen.gpus(pods[k].resreq) for k in placed if k in pods),
        "evictions": len(evicted),
        "evicted_gpu_pods": sum(1 for k in evicted if k in pods and gen.gpus(pods[k].resreq) > 0),
        "evicted_gpus": sum(gen.gpus(pods[k].resreq) for k in evicted if k in pods),
        "unschedulable_pods": len(document["unschedulable"]),
    }


def validate_document(snapshot: ClusterSnapshot, document: Mapping[str, Any], policy: CompiledPolicy) -> list[Any]:
    """The independent validator's violations (`vpolicy.engine.validate`, which shares no engine code)."""
    return list(validate.validate(snapshot, document, policy=policy))


def run_benchmark(size: gen.Size, workload: str, *, modes: Sequence[str], runs: int = 5, seed: int = 1,
                  timeout: float | None = None, profile: str | None = None,
                  optimize_budget: str | None = None) -> dict[str, Any]:
    """Every mode in its own child process; one JSON-ready object with the ratios between modes."""
    generated = gen.generate(size, workload, seed=seed)
    out: dict[str, Any] = {"size": size.name, "workload": workload, "seed": seed, **generated.summary(),
                           "machine": machine()}
    del generated
    for mode in modes:
        out[mode] = _child(size, workload, mode, runs=runs, seed=seed, timeout=timeout, profile=profile,
                           optimize_budget=optimize_budget)
    out["gpus_placed_optimize_over_volcano"] = _ratio(out, "gpus_placed")
    out["evicted_gpu_pods_optimize_over_volcano"] = _ratio(out, "evicted_gpu_pods")
    out["same_gpu_pods_pipelined"] = _same(out, "gpu_pods_pipelined_digest")
    out["optimize_pipelined_every_volcano_gpu_pod"] = _every_volcano_gpu_pod(out)
    return out


def machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}


def _ratio(out: Mapping[str, Any], key: str) -> float | None:
    volcano, optimize = out.get("volcano"), out.get("optimize")
    if not volcano or not optimize or volcano.get("status") != "ok" or optimize.get("status") != "ok":
        return None
    if volcano[key] == 0:
        return None if optimize[key] == 0 else float("inf")
    return round(float(optimize[key]) / float(volcano[key]), 3)


def _same(out: Mapping[str, Any], key: str) -> bool | None:
    """Whether both modes give the same `key`; None when either did not finish."""
    volcano, optimize = out.get("volcano"), out.get("optimize")
    if not volcano or not optimize or volcano.get("status") != "ok" or optimize.get("status") != "ok":
        return None
    return bool(volcano[key] == optimize[key])


def _every_volcano_gpu_pod(out: Mapping[str, Any]) -> bool | None:
    """Whether optimize pipelined every GPU pod Volcano pipelined (the same preemptors, and perhaps
    more: then the eviction ratio is for more placed at no more cost); None when either did not finish."""
    volcano, optimize = out.get("volcano"), out.get("optimize")
    if not volcano or not optimize or volcano.get("status") != "ok" or optimize.get("status") != "ok":
        return None
    return set(volcano["gpu_pods_pipelined_keys"]) <= set(optimize["gpu_pods_pipelined_keys"])


def _decided(document: Mapping[str, Any]) -> tuple[Any, ...]:
    """The decisions of a document, without its timings (which differ from run to run)."""
    return (document["binds"], document["pipelined"], document["evictions"], document["podgroups"])


def _child(size: gen.Size, workload: str, mode: str, *, runs: int, seed: int, timeout: float | None,
           profile: str | None, optimize_budget: str | None) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.run", "--child", "--mode", mode, "--workload", workload,
           "--size", size.name if size.name in gen.SIZES else "S", "--nodes", str(size.nodes),
           "--pending-pods", str(size.pending_pods), "--runs", str(runs), "--seed", str(seed)]
    if profile:
        cmd += ["--profile", f"{profile}.{mode}"]
    if optimize_budget is not None:
        cmd += ["--optimize-budget", optimize_budget]
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False,
                              cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "timeout_s": timeout, "note": f"no result within {timeout:g} s "
                f"({runs} run(s), snapshot generation included)"}
    if proc.returncode != 0:
        return {"status": "error", "returncode": proc.returncode, "stderr_tail": proc.stderr[-2000:],
                "wall_s": round(time.perf_counter() - started, 1)}
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def _child_main(args: argparse.Namespace) -> int:
    size = _size(args)
    t0 = time.perf_counter()
    generated = gen.generate(size, args.workload, seed=args.seed)
    generate_ms = (time.perf_counter() - t0) * 1000
    result = measure_mode(generated, args.mode, runs=args.runs, profile=args.profile,
                          optimize_budget=args.optimize_budget)
    result["generate_ms"] = round(generate_ms, 1)
    # ru_maxrss is in KiB on Linux (bytes on macOS).
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result["peak_rss_mb"] = round(rss / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)
    print(json.dumps(result))
    return 0


def _size(args: argparse.Namespace) -> gen.Size:
    base = gen.SIZES[args.size]
    if args.nodes is None and args.pending_pods is None:
        return base
    nodes = args.nodes if args.nodes is not None else base.nodes
    pods = args.pending_pods if args.pending_pods is not None else base.pending_pods
    if (nodes, pods) == (base.nodes, base.pending_pods):
        return base
    return gen.Size(f"custom-{nodes}n-{pods}p", nodes, pods)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--size", choices=sorted(gen.SIZES), default="S")
    p.add_argument("--workload", choices=gen.WORKLOADS, default="steady")
    p.add_argument("--mode", choices=(*MODES, "both"), default="volcano")
    p.add_argument("--runs", type=int, default=5, help="sessions per mode (default 5)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--nodes", type=int, help="override the size's node count (a custom size)")
    p.add_argument("--pending-pods", type=int, help="override the size's pending pod count (a custom size)")
    p.add_argument("--timeout", type=float, help="seconds per mode before its child process is stopped")
    p.add_argument("--profile", help="write a cProfile of the first session to FILE.<mode>")
    p.add_argument("--optimize-budget", type=budget_text, metavar="DURATION",
                   help=f"optimize mode's session budget: 800ms, 1s, 2m or {UNLIMITED} (default: the conf's, 1s)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return p


def budget_text(text: str) -> str:
    """`--optimize-budget`'s argparse type: the text, once `parse_budget` accepts it."""
    parse_budget(text)  # argparse turns its ValueError into a usage error
    return text


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.runs < 1:
        print("error: --runs must be at least 1", file=sys.stderr)
        return 2
    if args.child:
        return _child_main(args)
    modes = MODES if args.mode == "both" else (args.mode,)
    result = run_benchmark(_size(args), args.workload, modes=modes, runs=args.runs, seed=args.seed,
                           timeout=args.timeout, profile=args.profile, optimize_budget=args.optimize_budget)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        from benchmarks import table

        table.print_result(result)
    failed = [m for m in modes if result[m].get("status") in ("error",)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
