"""Settings of the controller manager (from flags; defaults are Volcano's) and the options every
controller is initialised with (the shared client, store, clock, event recorder).

Settings are frozen dataclasses the CLI builds and tests build directly. `Options` is what
`Controller.initialize` receives: one object for all controllers, as Volcano's `framework.ControllerOption`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from cluster_adapter.config import ApplySettings, ClientSettings, InformerSettings, LeaderSettings
from cluster_adapter.controllers.api import Api
from cluster_adapter.controllers.clock import Clock
from cluster_adapter.controllers.events import Recorder
from cluster_adapter.controllers.store import Store

LOCK_NAME = "vc-controller-manager"  # Volcano's leader lock


@dataclass(frozen=True, slots=True)
class ManagerSettings:
    controllers: str = "*"  # --controllers: '*' all, 'foo' enables foo, '-foo' disables it
    once: bool = False
    worker_threads: int = 3  # --worker-threads (job controller)
    worker_threads_for_podgroup: int = 5
    worker_threads_for_queue: int = 5
    worker_threads_for_gc: int = 1
    worker_threads_for_cronjob: int = 3
    max_requeue_num: int = 15  # -1: retry forever
    scheduler_names: tuple[str, ...] = ("volcano",)  # --scheduler-name (repeatable)
    inherit_owner_annotations: bool = True
    ssh_key_file_path: str = "/root/.ssh"  # where the ssh plugin mounts the key Secret
    ssh_private_key: str = ""  # a PEM private key file to use for every job ("" = a new key per job)
    publish_not_ready_addresses: bool = False  # svc plugin defaults (per-job args override)
    disable_network_policy: bool = False
    client: ClientSettings = field(default_factory=lambda: ClientSettings(qps=50.0, burst=100))
    informers: InformerSettings = field(default_factory=InformerSettings)
    leader: LeaderSettings = field(default_factory=lambda: LeaderSettings(name=LOCK_NAME))
    apply: ApplySettings = field(default_factory=ApplySettings)

    def workers_for(self, controller: str) -> int:
        return {"job-controller": self.worker_threads, "pg-controller": self.worker_threads_for_podgroup,
                "queue-controller": self.worker_threads_for_queue, "gc-controller": self.worker_threads_for_gc,
                "cronjob-controller": self.worker_threads_for_cronjob}.get(controller, self.worker_threads)


@dataclass(frozen=True, slots=True)
class Options:
    settings: ManagerSettings
    api: Api
    store: Store
    clock: Clock
    events: Recorder
