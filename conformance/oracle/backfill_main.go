package main

// The backfill action as Volcano's main branch runs it, on the pinned v1.10.0 framework.
//
// The oracle can only build v1.10.0 (docs/conformance.md, "Which Volcano"), whose backfill is the older
// loop: every best-effort task in one flattened queue/job/task order, each allocated on its own through
// Session.Allocate, and a `break` out of the whole action at the first task that passes no node
// (pkg/scheduler/actions/backfill/backfill.go:74,80 at v1.10.0). Main rewrote it (backfill.go,
// allocateResources and allocateTasksForJob): queues served in turns, one job per turn, the job's tasks
// placed into one Statement until JobReady, a task that passes no node skipped, the statement committed
// when the job is ready and discarded otherwise, a predicate helper (per-role error cache) per turn.
// vpolicy follows main, so the runner compares against this action (oracle flag --backfill=main, the
// default; --backfill=v1.10 runs Volcano's own). Everything it calls is Volcano's v1.10.0 code: queue,
// job and task order, PrePredicate, the allocate-flavour predicate, node scoring, JobReady, Statement.
//
// One rule of main's predicates plugin is applied here too: a node whose pod slots are all taken fails
// (main returns the NodePodNumberExceeded status it records; v1.10.0 records it and passes the node,
// plugins/predicates/predicates.go:395-403, where allocate's resource check covers it but backfill has
// none).

import (
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/util"
)

type mainBackfill struct {
	errorCache bool
}

func (b *mainBackfill) Name() string  { return "backfill" }
func (b *mainBackfill) Initialize()   {}
func (b *mainBackfill) UnInitialize() {}

func (b *mainBackfill) Execute(ssn *framework.Session) {
	b.errorCache = true
	framework.GetArgOfActionFromConf(ssn.Configurations, b.Name()).GetBool(&b.errorCache, conf.EnablePredicateErrCacheKey)

	queues := util.NewPriorityQueue(ssn.QueueOrderFn)
	jobsOf := map[api.QueueID]*util.PriorityQueue{}
	tasksOf := map[api.JobID]*util.PriorityQueue{}
	for _, job := range ssn.Jobs {
		if job.IsPending() {
			continue
		}
		if vr := ssn.JobValid(job); vr != nil && !vr.Pass {
			continue
		}
		queue, found := ssn.Queues[job.Queue]
		if !found {
			continue
		}
		tasks := util.NewPriorityQueue(ssn.TaskOrderFn)
		for _, t := range job.TaskStatusIndex[api.Pending] {
			if t.BestEffort && !t.SchGated {
				tasks.Push(t)
			}
		}
		for _, t := range job.TaskStatusIndex[api.Pipelined] {
			if !t.BestEffort {
				continue
			}
			if err := framework.NewStatement(ssn).UnPipeline(t); err == nil {
				tasks.Push(t)
			}
		}
		if tasks.Empty() {
			continue
		}
		if _, ok := jobsOf[queue.UID]; !ok {
			jobsOf[queue.UID] = util.NewPriorityQueue(ssn.JobOrderFn)
			queues.Push(queue)
		}
		jobsOf[queue.UID].Push(job)
		tasksOf[job.UID] = tasks
	}

	for !queues.Empty() {
		queue := queues.Pop().(*api.QueueInfo)
		jobs := jobsOf[queue.UID]
		if jobs == nil || jobs.Empty() {
			continue
		}
		job := jobs.Pop().(*api.JobInfo)
		tasks := tasksOf[job.UID]
		if tasks == nil || tasks.Empty() {
			queues.Push(queue)
			continue
		}
		stmt := framework.NewStatement(ssn)
		placed := b.turn(ssn, stmt, job, tasks)
		if placed > 0 && ssn.JobReady(job) {
			stmt.Commit()
			if !tasks.Empty() {
				jobs.Push(job)
			}
		} else {
			stmt.Discard()
		}
		queues.Push(queue)
	}
}

// turn places the job's tasks until it is ready; it answers how many it placed.
func (b *mainBackfill) turn(ssn *framework.Session, stmt *framework.Statement, job *api.JobInfo, tasks *util.PriorityQueue) int {
	helper := util.NewPredicateHelper()
	predicate := func(task *api.TaskInfo, node *api.NodeInfo) error {
		if node.Allocatable.MaxTaskNum <= len(node.Tasks) {
			return api.NewFitError(task, node, api.NodePodNumberExceeded)
		}
		return ssn.PredicateForAllocateAction(task, node)
	}
	placed := 0
	for !tasks.Empty() {
		task := tasks.Pop().(*api.TaskInfo)
		if err := ssn.PrePredicateFn(task); err != nil {
			fe := api.NewFitErrors()
			for _, n := range ssn.Nodes {
				fe.SetNodeError(n.Name, err)
			}
			job.NodesFitErrors[task.UID] = fe
			continue
		}
		nodes, fitErrors := helper.PredicateNodes(task, ssn.NodeList, predicate, b.errorCache)
		if len(nodes) == 0 {
			job.NodesFitErrors[task.UID] = fitErrors
			continue
		}
		node := nodes[0]
		if len(nodes) > 1 {
			scores := util.PrioritizeNodes(task, nodes, ssn.BatchNodeOrderFn, ssn.NodeOrderMapFn, ssn.NodeOrderReduceFn)
			if best := ssn.BestNodeFn(task, scores); best != nil {
				node = best
			} else {
				node = util.SelectBestNode(scores)
			}
		}
		if err := stmt.Allocate(task, node); err != nil {
			fe := api.NewFitErrors()
			fe.SetNodeError(node.Name, err)
			job.NodesFitErrors[task.UID] = fe
			continue
		}
		placed++
		if ssn.JobReady(job) {
			break
		}
	}
	return placed
}
