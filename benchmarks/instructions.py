"""`python -m benchmarks.instructions`: the CPU instructions one session executes, for comparing engines.

    python -m benchmarks.instructions [--size M] [--workload steady] [--mode volcano] [--seed 1]

Wall time on a shared machine moves by 30-50% within minutes, for any engine, so a change worth 5% can
show up either way in side-by-side runs. An instruction count does not move: this runs the benchmark's
sessions under valgrind's cachegrind (`--cache-sim=no`, 20-50x slower than a plain run) and reports
what one session adds. Two processes run at once, one running a session after the set-up and one
running two; the difference is one session, the set-up (generating the cluster, compiling the policy)
cancelling out. Each process collects and freezes what the set-up left before its sessions and
collects after each one, with a fixed hash seed, so the count repeats to about 0.1% (M steady:
4.774 and 4.778 G in two runs), where wall time moves by tens of percent.

Instructions are not time: memory stalls and numpy's vectorised loops weigh differently in each. Read
a ratio of two engines' counts, and confirm a gain with side-by-side runs of `benchmarks.run`.

`--sessions N` (used by the two processes) runs N sessions without valgrind and prints nothing.
"""
from __future__ import annotations

import argparse
import gc
import os
import re
import shutil
import subprocess
import sys

from benchmarks import generate as gen
from benchmarks.run import MODES, policy_for

_COUNT = re.compile(r"I\s+refs:\s+([\d,]+)")


def run_sessions(size: str, workload: str, mode: str, seed: int, sessions: int) -> None:
    """What each measured process does: the set-up, then `sessions` sessions."""
    from vpolicy.engine.session import run_session

    generated = gen.generate(gen.SIZES[size], workload, seed=seed)
    policy = policy_for(workload)
    gc.collect()
    gc.freeze()  # the set-up's objects are never walked again: a collection below is the session's own
    for _ in range(sessions):
        run_session(generated.snapshot, policy, mode=mode)
        gc.collect()  # the session's cycles, inside the measured difference rather than in a later one


def session_instructions(size: str, workload: str, mode: str, seed: int) -> int:
    """Instructions of one session: (set-up + 2 sessions) - (set-up + 1 session), both under cachegrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("benchmarks.instructions: valgrind is not installed (apt install valgrind)")
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    procs = [subprocess.Popen([valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                               sys.executable, "-m", "benchmarks.instructions", "--size", size, "--workload", workload,
                               "--mode", mode, "--seed", str(seed), "--sessions", str(n)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for n in (1, 2)]
    counts = []
    for proc in procs:
        out, _ = proc.communicate()
        found = _COUNT.search(out)
        if proc.returncode != 0 or found is None:
            raise SystemExit(f"benchmarks.instructions: a measured process failed:\n{out[-2000:]}")
        counts.append(int(found.group(1).replace(",", "")))
    return counts[1] - counts[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.instructions", description=__doc__.split("\n")[0])
    ap.add_argument("--size", choices=sorted(gen.SIZES), default="M")
    ap.add_argument("--workload", choices=gen.WORKLOADS, default="steady")
    ap.add_argument("--mode", choices=MODES, default="volcano")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sessions", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.sessions is not None:
        run_sessions(args.size, args.workload, args.mode, args.seed, args.sessions)
        return 0
    count = session_instructions(args.size, args.workload, args.mode, args.seed)
    print(f"{args.size} {args.workload} {args.mode} seed {args.seed}: {count / 1e9:.3f} G instructions per session")
    return 0


if __name__ == "__main__":
    sys.exit(main())
