"""The node agent's colocation features (Volcano's vc-agent): online and offline work sharing a node.

    config      the `volcano-agent-configuration` ConfigMap: schema, defaults, node overrides, validation
    qos         QoS levels (`volcano.sh/qos-level`: LC, HLS, LS, BE), Kubernetes QoS classes, pod requests
    cgroups     where the kubelet puts pod cgroups (v1/v2, cgroupfs/systemd) and one writer for both versions
    probes      node and pod usage from the cgroup tree and /proc, behind `UsageProbe`
    policy      the pure decisions: batch resource to publish, BE CPU quota, which BE pods to evict
    handlers    the per-pod cgroup handlers (CPU QoS, CPU burst, memory QoS, batch resources)
    agent       one pass (`ColocationAgent.tick`): probes in, cgroup writes done, API writes returned
    api         the Kubernetes calls it makes (Node, pods, ConfigMap, Eviction) and the run loop

The GPU agent (`cluster_adapter.gpu_agent`) is the other half of `vpolicy agent`; the two share nothing
but the command line.
"""
