package main

// The reclaim action as our reference reads Volcano's main branch (../shared/reference, §4.4), on the
// pinned v1.10.0 framework.
//
// v1.10.0's reclaim (pkg/scheduler/actions/reclaim/reclaim.go) differs in its loop, not in its plugins:
// it evicts through Session.Evict at once (no statement, nothing undone), counts only what it evicted
// against the request (reclaim.go:184-207), takes preemptors from every job with pending tasks, and
// drops a queue for the rest of the action when its next job has no task left or a task is not
// Allocatable or Preemptive (the `continue`s at reclaim.go:109-125 skip `queues.Push`). Main reclaims
// per job into one Statement committed only when the job is then pipelined, starts from the node's
// FutureIdle and evicts only while the task does not fit, and takes preemptors from starving jobs.
// vpolicy follows main, so the runner compares against this action (oracle flag --reclaim=main, the
// default; --reclaim=v1.10 runs Volcano's own). Only the loop is ours: JobValid, JobStarving,
// JobPipelined, queue/job/task order, Overused, Preemptive, PrePredicate, the preempt-flavour
// predicate, Reclaimable, the victim order and the Statement are v1.10.0's own code.
//
// Unlike backfill_main.go this is not checked line by line against main's source: the stored copies of
// main's reclaim.go differ between forks; the loop here is the reference's (and vpolicy's) reading.

import (
	v1 "k8s.io/api/core/v1"

	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/util"
)

type mainReclaim struct {
	errorCache bool
}

func (r *mainReclaim) Name() string  { return "reclaim" }
func (r *mainReclaim) Initialize()   {}
func (r *mainReclaim) UnInitialize() {}

func (r *mainReclaim) Execute(ssn *framework.Session) {
	r.errorCache = true
	framework.GetArgOfActionFromConf(ssn.Configurations, r.Name()).GetBool(&r.errorCache, conf.EnablePredicateErrCacheKey)

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
		if !found || !ssn.JobStarving(job) {
			continue
		}
		tasks := util.NewPriorityQueue(ssn.TaskOrderFn)
		for _, t := range job.TaskStatusIndex[api.Pending] {
			if !t.SchGated {
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
		if ssn.Overused(queue) {
			continue
		}
		jobs := jobsOf[queue.UID]
		if jobs.Empty() {
			continue
		}
		job := jobs.Pop().(*api.JobInfo)
		stmt := framework.NewStatement(ssn)
		tasks := tasksOf[job.UID]
		for ssn.JobStarving(job) && !tasks.Empty() {
			task := tasks.Pop().(*api.TaskInfo)
			if p := task.Pod.Spec.PreemptionPolicy; p != nil && *p == v1.PreemptNever {
				continue
			}
			// main's proportion answers Preemptive with the check v1.10.0's proportion gives only as
			// Allocatable (allocated + request within deserved, and an Open queue), which v1.10.0's
			// reclaim asks first (reclaim.go:117); v1.10.0's proportion has no Preemptive at all
			if !ssn.Allocatable(queue, task) || !ssn.Preemptive(queue, task) {
				continue
			}
			if err := ssn.PrePredicateFn(task); err != nil {
				continue
			}
			r.forTask(ssn, stmt, job, task)
		}
		if ssn.JobPipelined(job) {
			stmt.Commit()
		} else {
			stmt.Discard()
		}
		queues.Push(queue)
	}
}

// forTask tries the nodes in predicate order: on each, the reclaimable victims in victim order are
// evicted while the task does not fit the node's FutureIdle; the task is pipelined on the first node
// where it then fits, and a node where it never does keeps nothing.
func (r *mainReclaim) forTask(ssn *framework.Session, stmt *framework.Statement, job *api.JobInfo, task *api.TaskInfo) {
	helper := util.NewPredicateHelper()
	nodes, _ := helper.PredicateNodes(task, ssn.GetUnschedulableAndUnresolvableNodesForTask(task),
		ssn.PredicateForPreemptAction, r.errorCache)
	for _, n := range nodes {
		var reclaimees []*api.TaskInfo
		for _, t := range n.Tasks {
			if t.Status != api.Running || !t.Preemptable {
				continue
			}
			j, found := ssn.Jobs[t.Job]
			if !found || j.Queue == job.Queue || !ssn.Queues[j.Queue].Reclaimable() {
				continue
			}
			reclaimees = append(reclaimees, t.Clone())
		}
		if len(reclaimees) == 0 {
			continue
		}
		victims := ssn.Reclaimable(task, reclaimees)
		if err := util.ValidateVictims(task, n, victims); err != nil {
			continue
		}
		ordered := ssn.BuildVictimsPriorityQueue(victims)
		available := n.FutureIdle()
		var chosen []*api.TaskInfo
		for !ordered.Empty() && !task.InitResreq.LessEqual(available, api.Zero) {
			victim := ordered.Pop().(*api.TaskInfo)
			chosen = append(chosen, victim)
			available.Add(victim.Resreq)
		}
		if !task.InitResreq.LessEqual(available, api.Zero) {
			continue // nothing was evicted on this node: the evictions are only planned until it fits
		}
		for _, victim := range chosen {
			if err := stmt.Evict(victim, "reclaim"); err != nil {
				continue
			}
		}
		if err := stmt.Pipeline(task, n.Name, len(chosen) > 0); err == nil {
			return
		}
	}
}
