"""The vcjob controller (Volcano's `pkg/controllers/job`), in parts:

- `state`     the state machine of reference §14 as a pure table: (phase, action) -> what to do;
- `policies`  which action a request leads to (lifecycle policies, task-level before job-level);
- `build`     the PodGroup and pods a job implies (names, annotations, minMember, minResources);
- `plugins`   the job plugins env, svc and ssh;
- `controller` the controller itself: store handlers turn pod/job/PodGroup/Command changes into
              requests; a request is decided, then carried out by `sync` or `kill` against the API.
"""
