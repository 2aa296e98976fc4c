"""`vpolicy simulate` and `vpolicy replay`: scheduling sessions over time on a simulated cluster.

- `workload`: the workload file (YAML, strict, `workload.*` diagnostics) and its expansion per seed;
  `trace` reads a CSV trace into the same model; `generate` makes a seeded workload for a cluster.
- `simulate`: the discrete-event loop (arrivals, sessions, binds, finishes, evictions, queue events).
- `metrics`: the arithmetic (percentiles, Jain's index, time-weighted means) over what a run observed.
- `report`: metrics.json, CSV timelines, PNG plots, index.html and the terminal summary.
- `codec`, `record`, `replay`, `manifest`: sessions recorded compactly, re-run under another policy,
  and exported as scenario files.

The package sits beside `vpolicy.harness` (same layer): it drives the engine, never changes it.
"""
