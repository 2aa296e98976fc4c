package main

// One scheduling session of Volcano's own scheduler over a cache filled like its unit-test helper
// (pkg/scheduler/uthelper) fills one: the mock scheduler cache with fake clients, no API server,
// every object added through the cache's event handlers. Actions run as the scheduler's runOnce
// runs them. What the session decided is read back from the cache and the session's jobs.

import (
	"fmt"
	"sort"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"volcano.sh/volcano/pkg/scheduler"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/cache"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/util"
)

// evictionLog is the cache's Evictor: it records each evicted pod with the reason the action gave
// (Volcano passes "preempt" or "reclaim"). The cache calls it from a goroutine.
type evictionLog struct {
	mu      sync.Mutex
	reasons map[string]string
}

func (e *evictionLog) Evict(pod *v1.Pod, reason string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reasons[pod.Namespace+"/"+pod.Name] = reason
	return nil
}

func (e *evictionLog) waitFor(keys []string, limit time.Duration) map[string]string {
	deadline := time.Now().Add(limit)
	for {
		e.mu.Lock()
		done := true
		for _, k := range keys {
			if _, ok := e.reasons[k]; !ok {
				done = false
				break
			}
		}
		if done || time.Now().After(deadline) {
			out := make(map[string]string, len(e.reasons))
			for k, v := range e.reasons {
				out[k] = v
			}
			e.mu.Unlock()
			return out
		}
		e.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
}

// statusSink is the cache's StatusUpdater: it accepts every update and hands the object back, as the
// API server would, so that the session's own podgroup status stays readable after CloseSession.
type statusSink struct{}

func (statusSink) UpdatePodStatus(pod *v1.Pod) (*v1.Pod, error)           { return pod, nil }
func (statusSink) UpdatePodGroup(pg *api.PodGroup) (*api.PodGroup, error) { return pg, nil }
func (statusSink) UpdateQueueStatus(queue *api.QueueInfo) error           { return nil }

type eviction struct {
	Pod    string `json:"pod"`
	Action string `json:"action"`
	For    string `json:"for"`
	Rule   string `json:"rule"`
}

type pgStatus struct {
	Phase      string              `json:"phase"`
	Conditions []map[string]string `json:"conditions"`
	// What decided the phase, so a reader can apply another version's rule (docs/conformance.md):
	// the phase the session held just before closing, its tasks by status, and minMember.
	SessionPhase string         `json:"session_phase,omitempty"`
	Tasks        map[string]int `json:"tasks,omitempty"`
	MinMember    int32          `json:"min_member"`
}

// document is vpolicy's decision document (DESIGN §4), as far as Volcano's session fills it.
type document struct {
	Binds     map[string]string `json:"binds"`
	Pipelined map[string]string `json:"pipelined"`
	// tasks left Allocated by a statement neither committed nor discarded (a job pipelined but not
	// ready): placed in the session, never dispatched; not compared, but they hold pod slots
	Allocated map[string]string   `json:"allocated,omitempty"`
	Evictions []eviction          `json:"evictions"`
	PodGroups map[string]pgStatus `json:"podgroups"`
	Stats     map[string]any      `json:"stats"`
}

// backfillFlavour picks the backfill action: "main" (backfill_main.go) or "v1.10" (Volcano's own).
var backfillFlavour = "main"

// reclaimFlavour picks the reclaim action: "main" (reclaim_main.go) or "v1.10" (Volcano's own).
var reclaimFlavour = "main"

// runSession fills a fresh cache with the cluster, opens a session with the conf, runs its actions,
// closes it, and returns what it decided. ties "first": equally scored nodes go to the one first in
// the dump (ties.go), else Volcano draws at random.
func runSession(c *cluster, confStr string, ties string) (*document, error) {
	actions, tiers, configurations, _, err := scheduler.UnmarshalSchedulerConf(confStr)
	if err != nil {
		return nil, fmt.Errorf("volcano-scheduler.conf: %v", err)
	}
	switch ties {
	case "", "random":
	case "first":
		tiers = withFirstOfEqualNodes(tiers)
	default:
		return nil, fmt.Errorf("ties must be random or first, not %q", ties)
	}
	nodeRank = make(map[string]int, len(c.Nodes))
	for i, n := range c.Nodes {
		nodeRank[n.Name] = i
	}
	evictions := &evictionLog{reasons: map[string]string{}}
	// An unbuffered FakeRecorder drops events; the default one blocks after 100 of them.
	sc := cache.NewCustomMockSchedulerCache("volcano", util.NewFakeBinder(0), evictions,
		statusSink{}, nil, nil, &record.FakeRecorder{})
	loadStart := time.Now()
	stopInformers, err := addVolumeObjects(sc, c)
	if err != nil {
		return nil, err
	}
	defer stopInformers()
	for _, n := range c.Nodes {
		if err := sc.AddOrUpdateNode(n); err != nil {
			return nil, fmt.Errorf("node %s: %v", n.Name, err)
		}
		if usage := nodeUsage(n); usage != nil { // what the cache's metrics source would have set (usage.go)
			sc.Nodes[n.Name].ResourceUsage = usage
		}
	}
	if err := refreshImageStates(sc, c); err != nil {
		return nil, err
	}
	for _, p := range c.Pods {
		sc.AddPod(p)
	}
	for _, pg := range c.PodGroups {
		sc.AddPodGroupV1beta1(pg)
	}
	for _, q := range c.Queues {
		sc.AddQueueV1beta1(q)
	}
	for _, pc := range c.PriorityClass {
		sc.AddPriorityClass(pc)
	}
	for _, rq := range c.ResourceQuotas {
		sc.AddResourceQuota(rq)
	}
	if err := addPluginObjects(sc, c); err != nil {
		return nil, err
	}
	loadMs := msSince(loadStart)

	releasingBefore := map[api.TaskID]bool{}
	for _, job := range sc.Jobs {
		for id, t := range job.Tasks {
			if t.Status == api.Releasing {
				releasingBefore[id] = true
			}
		}
	}

	// Binds reach the cache synchronously (Session.dispatch -> cache.AddBindTask), which queues
	// each on BindFlowChannel; read that queue here instead of running the cache's bind workers.
	var binds []*api.TaskInfo
	bindsDone := make(chan struct{})
	go func() {
		for t := range sc.BindFlowChannel {
			binds = append(binds, t)
		}
		close(bindsDone)
	}()

	for i, a := range actions {
		if a.Name() == "backfill" && backfillFlavour == "main" {
			actions[i] = &mainBackfill{}
		}
		if a.Name() == "allocate" && allocateFlavour == "main" {
			actions[i] = &mainAllocate{}
		}
		if a.Name() == "reclaim" && reclaimFlavour == "main" {
			actions[i] = &mainReclaim{}
		}
	}
	conf.EnabledActionMap = make(map[string]bool, len(actions))
	for _, a := range actions {
		conf.EnabledActionMap[a.Name()] = true
	}

	cpuStart := cpuMs()
	start := time.Now()
	ssn := framework.OpenSession(sc, tiers, configurations)
	openMs := msSince(start)
	actionMs := map[string]any{}
	for _, a := range actions {
		t := time.Now()
		a.Execute(ssn)
		actionMs[a.Name()] = map[string]float64{"ms": msSince(t)}
	}
	jobs := ssn.Jobs
	pipelined := map[string]string{}
	allocated := map[string]string{}
	for _, job := range jobs {
		for _, t := range job.TaskStatusIndex[api.Pipelined] {
			pipelined[t.Namespace+"/"+t.Name] = t.NodeName
		}
		for _, t := range job.TaskStatusIndex[api.Allocated] {
			allocated[t.Namespace+"/"+t.Name] = t.NodeName
		}
	}
	sessionPhase := map[api.JobID]string{}
	for id, job := range jobs {
		if job.PodGroup != nil {
			sessionPhase[id] = string(job.PodGroup.Status.Phase)
		}
	}
	closeStart := time.Now()
	framework.CloseSession(ssn)
	sessionMs := msSince(start)
	sessionCPUMs := cpuMs() - cpuStart
	closeMs := msSince(closeStart)
	close(sc.BindFlowChannel)
	<-bindsDone

	doc := &document{
		Binds:     map[string]string{},
		Pipelined: pipelined,
		Allocated: allocated,
		Evictions: []eviction{},
		PodGroups: map[string]pgStatus{},
	}
	for _, t := range binds {
		doc.Binds[t.Namespace+"/"+t.Name] = t.NodeName
	}

	var evicted []string
	forJob := map[string]string{}
	for _, job := range sc.Jobs {
		for id, t := range job.Tasks {
			if t.Status == api.Releasing && !releasingBefore[id] {
				key := t.Namespace + "/" + t.Name
				evicted = append(evicted, key)
				forJob[key] = ""
			}
		}
	}
	sort.Strings(evicted)
	reasons := evictions.waitFor(evicted, 5*time.Second)
	for _, key := range evicted {
		doc.Evictions = append(doc.Evictions, eviction{Pod: key, Action: reasons[key], For: forJob[key], Rule: "volcano"})
	}

	for id, job := range sc.Jobs {
		if _, inSession := jobs[id]; inSession || job.PodGroup == nil {
			continue
		}
		// Not in the session (JobValid refused it, or its queue is unknown): its phase is unchanged.
		doc.PodGroups[job.Namespace+"/"+job.PodGroup.Name] = pgStatus{Phase: string(job.PodGroup.Status.Phase),
			Conditions: []map[string]string{}}
	}
	for _, job := range jobs {
		if job.PodGroup == nil {
			continue
		}
		st := job.PodGroup.Status
		conds := []map[string]string{}
		for _, c := range st.Conditions {
			conds = append(conds, map[string]string{"type": string(c.Type), "reason": c.Reason, "message": c.Message})
		}
		tasks := map[string]int{}
		for status, index := range job.TaskStatusIndex {
			if len(index) > 0 {
				tasks[status.String()] = len(index)
			}
		}
		doc.PodGroups[job.Namespace+"/"+job.PodGroup.Name] = pgStatus{Phase: string(st.Phase), Conditions: conds,
			SessionPhase: sessionPhase[job.UID], Tasks: tasks, MinMember: job.PodGroup.Spec.MinMember}
	}
	doc.Stats = map[string]any{
		"engine":     "volcano",
		"session_ms": sessionMs,
		// user+system CPU of the whole process (every goroutine) over the session: on a shared
		// machine this moves less than wall time
		"session_cpu_ms": sessionCPUMs,
		"open_ms":        openMs,
		"close_ms":       closeMs,
		"load_ms":        loadMs,
		"actions":        actionMs,
	}
	return doc, nil
}

func cpuMs() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}

func msSince(t time.Time) float64 {
	return float64(time.Since(t).Nanoseconds()) / 1e6
}
