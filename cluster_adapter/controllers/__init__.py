"""The controller manager: Volcano's vc-controller-manager for the live adapter (`vpolicy controllers`).

- `framework`  Controller base class, the registry (`@register`, `select('*,-gc')`);
- `manager`    one store + client for the enabled controllers; `run` (daemon), `run_once` (`--once`);
- `job/`       the vcjob controller (state machine, policies, PodGroup and pods, plugins);
- `podgroup`, `queue`, `cronjob`, `gc`   one controller each;
- `webhook`    the AdmissionReview server over `vpolicy.admission`'s pure validation/defaulting;
- `store`, `workqueue`, `api`, `events`, `clock`, `quantities`, `names`   shared plumbing.

Controllers use the adapter's client layer (`cluster_adapter.kube`) and informers; they never import
the scheduler (`cluster_adapter.scheduler`) or the GPU agent, and each other only through the API.
"""
