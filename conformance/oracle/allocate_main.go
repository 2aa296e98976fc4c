package main

// The allocate action with main's rule for putting a job back into its queue, on the pinned v1.10.0
// framework.
//
// v1.10.0 puts a job back only from inside its task loop, right after a placement left it ready with
// tasks to go (`if ssn.JobReady(job) && !tasks.Empty() { jobs.Push(job); break }`,
// pkg/scheduler/actions/allocate/allocate.go:307-310). A turn that ends at a task finding no node
// (NeedContinueAllocating false, or a PrePredicate failure) drops the job for the rest of the action, even
// when it is ready and other tasks are left. Main's allocateResources puts the job back after the turn
// whenever its task queue is not empty (`if tasks.Len() > 0 { jobs.Push(job) }`, for a job without a hard
// network topology), ready or not, and commits the statement allocateResourcesForTasks returns (the job
// ready). vpolicy follows main, so the runner compares against this action (oracle flag --allocate=main,
// the default; --allocate=v1.10 runs Volcano's own).
//
// Only the loop is ours; each step is v1.10.0's code, in v1.10.0's order: queue, job and task order,
// Overused, Allocatable, the role fit-error cache (TaskHasFitErrors), PrePredicate, the predicate helper
// with the resource check and the allocate-flavour predicate, NeedContinueAllocating, the Idle-then-
// FutureIdle node groups, scoring, BestNodeFn then SelectBestNode, Allocate or Pipeline, JobReady,
// JobPipelined, Statement.

import (
	"volcano.sh/apis/pkg/apis/scheduling"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/util"
)

// allocateFlavour picks the allocate action: "main" (this file) or "v1.10" (Volcano's own).
var allocateFlavour = "main"

type mainAllocate struct {
	errorCache bool
}

func (a *mainAllocate) Name() string  { return "allocate" }
func (a *mainAllocate) Initialize()   {}
func (a *mainAllocate) UnInitialize() {}

func (a *mainAllocate) Execute(ssn *framework.Session) {
	a.errorCache = true
	framework.GetArgOfActionFromConf(ssn.Configurations, a.Name()).GetBool(&a.errorCache, conf.EnablePredicateErrCacheKey)

	queues := util.NewPriorityQueue(ssn.QueueOrderFn)
	jobsOf := map[api.QueueID]*util.PriorityQueue{}
	for _, job := range ssn.Jobs {
		if job.IsPending() {
			if conf.EnabledActionMap["enqueue"] {
				continue
			}
			job.PodGroup.Status.Phase = scheduling.PodGroupInqueue // no enqueue action: admitted on the spot
		}
		if vr := ssn.JobValid(job); vr != nil && !vr.Pass {
			continue
		}
		queue, found := ssn.Queues[job.Queue]
		if !found {
			continue
		}
		if _, ok := jobsOf[queue.UID]; !ok {
			jobsOf[queue.UID] = util.NewPriorityQueue(ssn.JobOrderFn)
			queues.Push(queue)
		}
		jobsOf[queue.UID].Push(job)
	}

	tasksOf := map[api.JobID]*util.PriorityQueue{}
	for !queues.Empty() {
		queue := queues.Pop().(*api.QueueInfo)
		if ssn.Overused(queue) {
			continue
		}
		jobs := jobsOf[queue.UID]
		if jobs == nil || jobs.Empty() {
			continue
		}
		job := jobs.Pop().(*api.JobInfo)
		tasks, seen := tasksOf[job.UID]
		if !seen {
			tasks = util.NewPriorityQueue(ssn.TaskOrderFn)
			for _, t := range job.TaskStatusIndex[api.Pending] {
				if t.SchGated || t.Resreq.IsEmpty() { // gated, or best-effort: backfill's
					continue
				}
				tasks.Push(t)
			}
			tasksOf[job.UID] = tasks
		}
		if tasks.Empty() {
			queues.Push(queue)
			continue
		}
		stmt := a.turn(ssn, job, queue, tasks)
		if tasks.Len() > 0 { // main: back into the queue whenever tasks are left, ready or not
			jobs.Push(job)
		}
		if stmt != nil {
			stmt.Commit()
		}
		queues.Push(queue)
	}
}

// turn places the job's tasks until it is ready; it answers the statement to commit (the job is ready),
// or nil (discarded, or kept uncommitted for a pipelined job).
func (a *mainAllocate) turn(ssn *framework.Session, job *api.JobInfo, queue *api.QueueInfo, tasks *util.PriorityQueue) *framework.Statement {
	stmt := framework.NewStatement(ssn)
	helper := util.NewPredicateHelper()
	predicate := func(task *api.TaskInfo, node *api.NodeInfo) error {
		if ok, short := task.InitResreq.LessEqualWithResourcesName(node.FutureIdle(), api.Zero); !ok {
			return api.NewFitErrWithStatus(task, node, &api.Status{Code: api.Unschedulable,
				Reason: api.WrapInsufficientResourceReason(short)})
		}
		return ssn.PredicateForAllocateAction(task, node)
	}
	for !tasks.Empty() {
		task := tasks.Pop().(*api.TaskInfo)
		if !ssn.Allocatable(queue, task) {
			continue
		}
		if job.TaskHasFitErrors(task) {
			continue
		}
		if err := ssn.PrePredicateFn(task); err != nil {
			fe := api.NewFitErrors()
			for _, n := range ssn.NodeList {
				fe.SetNodeError(n.Name, err)
			}
			job.NodesFitErrors[task.UID] = fe
			break
		}
		nodes, fitErrors := helper.PredicateNodes(task, ssn.NodeList, predicate, a.errorCache)
		if len(nodes) == 0 {
			job.NodesFitErrors[task.UID] = fitErrors
			if job.NeedContinueAllocating() {
				continue
			}
			break
		}
		best := bestOf(ssn, task, nodes)
		if task.InitResreq.LessEqual(best.Idle, api.Zero) {
			_ = stmt.Allocate(task, best)
		} else if task.InitResreq.LessEqual(best.FutureIdle(), api.Zero) {
			_ = stmt.Pipeline(task, best.Name, false)
		}
		if ssn.JobReady(job) && !tasks.Empty() {
			break
		}
	}
	if ssn.JobReady(job) {
		return stmt
	}
	if !ssn.JobPipelined(job) {
		stmt.Discard()
	}
	return nil
}

// bestOf is the node allocate picks among those that passed: the nodes the request fits Idle on if
// any, else those it fits FutureIdle on; one alone is taken, several are scored.
func bestOf(ssn *framework.Session, task *api.TaskInfo, nodes []*api.NodeInfo) *api.NodeInfo {
	var idle, future []*api.NodeInfo
	for _, n := range nodes {
		if task.InitResreq.LessEqual(n.Idle, api.Zero) {
			idle = append(idle, n)
		} else if task.InitResreq.LessEqual(n.FutureIdle(), api.Zero) {
			future = append(future, n)
		}
	}
	for _, group := range [][]*api.NodeInfo{idle, future} {
		switch {
		case len(group) == 1:
			return group[0]
		case len(group) > 1:
			scores := util.PrioritizeNodes(task, group, ssn.BatchNodeOrderFn, ssn.NodeOrderMapFn, ssn.NodeOrderReduceFn)
			best := ssn.BestNodeFn(task, scores)
			if best == nil {
				best = util.SelectBestNode(scores)
			}
			if best != nil {
				return best
			}
		}
	}
	return nil
}
