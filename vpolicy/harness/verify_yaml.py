"""A `ClusterSnapshot` written back as Kubernetes manifests, so a counterexample can be dry-run.

`verify` and `diff --symbolic` build their small clusters as snapshots; a user needs them as the YAML
`vpolicy dry-run --cluster` reads (Cedar's concretizer: decode into the user's vocabulary). The objects
come from `vpolicy.load.manifest` (the loader's inverse, shared with the simulator's scenario export);
this module only drops the `root` and `default` queues the loader creates by itself and writes YAML.
"""
from __future__ import annotations

import io
from typing import Any

from ruamel.yaml import YAML

from vpolicy.load import manifest
from vpolicy.model import snapshot as snap


def manifests(snapshot: snap.ClusterSnapshot) -> list[dict[str, Any]]:
    """The snapshot as manifests (`vpolicy.load.manifest`, the loader's inverse), without the `root` and
    `default` queues the loader adds by itself, so a counterexample shows only what matters."""
    return [obj for obj in manifest.to_objects(snapshot)
            if not (obj["kind"] == "Queue" and _loader_default(_queue_named(snapshot, obj["metadata"]["name"])))]


def _queue_named(snapshot: snap.ClusterSnapshot, name: str) -> snap.Queue:
    return next(q for q in snapshot.queues if q.name == name)


def to_yaml(snapshot: snap.ClusterSnapshot, *, comment: str = "") -> str:
    yaml = YAML()
    yaml.default_flow_style = None
    yaml.width = 120
    buf = io.StringIO()
    if comment:
        buf.write("".join(f"# {line}\n" if line else "#\n" for line in comment.splitlines()))
    yaml.dump_all(manifests(snapshot), buf)
    return buf.getvalue()


timestamp = manifest.timestamp


def _loader_default(q: snap.Queue) -> bool:
    if q.name == snap.ROOT_QUEUE:
        return q == snap.Queue(name=snap.ROOT_QUEUE, weight=1, reclaimable=False)
    if q.name == snap.DEFAULT_QUEUE:
        return q == snap.Queue(name=snap.DEFAULT_QUEUE, weight=1, reclaimable=True)
    return False






