"""Write a pod's delayed volume bindings before the pod is bound (Volcano's BindVolumes, kube's volume
binder): a WaitForFirstConsumer claim the session matched to a PV gets that PV (the PV's `claimRef`, with
`pv.kubernetes.io/bound-by-controller: "yes"`, as kube's binder writes it; the PV controller then binds
the claim), and one left to its class's provisioner gets `volume.kubernetes.io/selected-node` (the
provisioner then creates the volume in the node's topology). The PV write carries the resourceVersion
the session saw, so a PV someone else took meanwhile is a conflict, not a theft; the pod is then not
bound and the next session matches again.

The pod is bound right after (the kubelet waits for its volumes); kube's binder instead waits for the
claims to be bound before it binds the pod. Every API failure comes back as a reason, never raised.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from cluster_adapter.config import ApplySettings
from cluster_adapter.kube import retry
from cluster_adapter.kube.client import (PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, APIError, KubeClient)

BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
SELECTED_NODE = "volume.kubernetes.io/selected-node"


class VolumeWriter:
    def __init__(self, client: KubeClient, settings: ApplySettings, *, gate: retry.Gate = retry.always,
                 on_error: Callable[[APIError], None] = lambda _: None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.client, self.settings, self.gate, self.on_error, self.sleep = client, settings, gate, on_error, sleep

    def write(self, claims: Mapping[str, str], node: str,
              lookup: Callable[[str, str, str], dict[str, Any] | None]) -> str:
        """Each claim (namespace/name) -> its PV ("" to provision on `node`); `lookup(resource, namespace,
        name)` reads the informers' copy. Returns why a write failed, "" when all went through."""
        for claim_key, pv_name in sorted(claims.items()):
            namespace, _, name = claim_key.partition("/")
            claim = lookup("persistentvolumeclaims", namespace, name)
            if claim is None:
                return f"claim {claim_key} is gone"
            try:
                if pv_name:
                    pv = lookup("persistentvolumes", "", pv_name)
                    if pv is None:
                        return f"volume {pv_name} for claim {claim_key} is gone"
                    patch = {"metadata": {"resourceVersion": (pv.get("metadata") or {}).get("resourceVersion", ""),
                                          "annotations": {BOUND_BY_CONTROLLER: "yes"}},
                             "spec": {"claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                                   "namespace": namespace, "name": name,
                                                   "uid": (claim.get("metadata") or {}).get("uid", "")}}}
                    self._patch(lambda: self.client.patch_object(PERSISTENT_VOLUMES, "", pv_name, patch))
                else:
                    patch = {"metadata": {"annotations": {SELECTED_NODE: node}}}
                    self._patch(lambda: self.client.patch_object(PERSISTENT_VOLUME_CLAIMS, namespace, name, patch))
            except APIError as exc:
                target = f"volume {pv_name}" if pv_name else "provisioning"
                return f"binding claim {claim_key} to {target} failed: {exc}"
        return ""

    def _patch(self, call: Callable[[], Any]) -> None:
        retry.attempt(call, settings=self.settings, gate=self.gate, on_error=self.on_error, sleep=self.sleep)
