"""Benchmarks for vpolicy's session engine: a seeded cluster/workload generator (`generate`), a runner that
times sessions per engine mode in separate processes (`run`), and its human-readable table (`table`).

Not part of the installed package; run from a checkout with `python -m benchmarks.run`. See
docs/performance.md for the commands, the sizes and the measured figures.
"""
