package main

// Node usage for the usage plugin: Volcano's scheduler cache fills NodeInfo.ResourceUsage from its
// metrics source; the oracle has none, so it reads the same numbers from the node annotations a
// vpolicy dump carries them in (usage.volcano.sh/cpu-usage-avg, mem-usage-avg as percent,
// metrics-time as RFC 3339), under the period the plugin reads (source.NODE_METRICS_PERIOD, "10m").

import (
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"volcano.sh/volcano/pkg/scheduler/api"
)

const metricsPeriod = "10m"

// nodeUsage is the ResourceUsage a node's annotations describe; nil when it has none of them.
func nodeUsage(n *v1.Node) *api.NodeUsage {
	cpu, hasCPU := n.Annotations["usage.volcano.sh/cpu-usage-avg"]
	mem, hasMem := n.Annotations["usage.volcano.sh/mem-usage-avg"]
	at, hasTime := n.Annotations["usage.volcano.sh/metrics-time"]
	if !hasCPU && !hasMem && !hasTime {
		return nil
	}
	usage := &api.NodeUsage{CPUUsageAvg: map[string]float64{}, MEMUsageAvg: map[string]float64{}}
	if v, err := strconv.ParseFloat(cpu, 64); err == nil {
		usage.CPUUsageAvg[metricsPeriod] = v
	}
	if v, err := strconv.ParseFloat(mem, 64); err == nil {
		usage.MEMUsageAvg[metricsPeriod] = v
	}
	if t, err := time.Parse(time.RFC3339, at); err == nil {
		usage.MetricsTime = t
	}
	return usage
}
