"""The node-side GPU agent: discovers GPUs with NVML, registers the node's vGPU inventory, hands pods the
devices the scheduler assigned them (HAMi-core environment, MIG instances).

Layout: `nvml` (the NVML Protocol, the real and the fake backend), `discovery` (inventory and Node
patches), `hami` (devices-to-allocate -> per-container devices and env), `mig` (the MIG instance plan),
`agent` (one tick's decisions), `api` (the loop against the Kubernetes API), `cli` (`vpolicy agent`).
It imports vpolicy's model only, and is independent of the scheduler and the controllers.
"""
