"""A Kubernetes API server good enough to test a scheduler against: kmock 0.8's emulator, extended.

Stock `kmock.KubernetesEmulator` is a JSON CRUD store over HTTP. `ClusterEmulator` adds what a real
API server does and a scheduler depends on (each item is tested in `tests/adapter/test_kubeemu.py`):
server-stamped metadata (namespace, uid, creationTimestamp, resourceVersion, generateName), 201 on
create, 409 on stale writes, PUT, merge / strategic-merge / JSON patches, `/status` isolation,
`pods/binding` and `pods/eviction` (with PodDisruptionBudgets), label and field selectors, watches that
resume from a resourceVersion, 410 Expired after compaction, bookmarks, `timeoutSeconds`, live events
on namespaced watches, and fault hooks that run before any state changes.

Only loopback addresses are ever bound. Run it in-process (`EmulatorThread`) or as a subprocess
(`python -m tests.adapter.kubeemu --port 0`, first stdout line = URL).
"""
from tests.adapter.kubeemu.emulator import Call, ClusterEmulator, Fault
from tests.adapter.kubeemu.resources import RESOURCES, Kind
from tests.adapter.kubeemu.server import EmulatorThread

__all__ = ["Call", "ClusterEmulator", "EmulatorThread", "Fault", "Kind", "RESOURCES"]
