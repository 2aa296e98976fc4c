package main

// A deterministic choice among equally scored nodes, for telling a tie from a difference.
//
// Volcano's allocate and backfill ask the session's BestNodeFn first and fall back to
// util.SelectBestNode, which takes a node of the highest score at random
// (pkg/scheduler/util/scheduler_helper.go:145-160 at v1.10.0, main the same). vpolicy takes the
// highest-scored node that comes first in the dump. When a case is run with `"ties": "first"`, the
// oracle appends a last tier holding the plugin below: its BestNodeFn answers what SelectBestNode
// could have answered (a node of the highest score, nil where SelectBestNode finds none), choosing
// the one first in the dump. Its outcome is one of Volcano's possible outcomes, so a vpolicy outcome
// equal to it is a tie decided the other way, not a difference. A plugin of an earlier tier with its
// own BestNodeFn (task-topology) still decides first, as it does without this one.

import (
	"math"

	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

const firstNodePlugin = "conformance-first-of-equal-nodes"

// nodeRank is each node's place in the dump of the case being run (set by runSession).
var nodeRank = map[string]int{}

func init() {
	framework.RegisterPluginBuilder(firstNodePlugin, func(framework.Arguments) framework.Plugin {
		return firstOfEqualNodes{}
	})
}

type firstOfEqualNodes struct{}

func (firstOfEqualNodes) Name() string                      { return firstNodePlugin }
func (firstOfEqualNodes) OnSessionClose(*framework.Session) {}
func (firstOfEqualNodes) OnSessionOpen(ssn *framework.Session) {
	ssn.AddBestNodeFn(firstNodePlugin, firstBest)
}

// firstBest is SelectBestNode with the random draw replaced by the dump's order.
func firstBest(_ *api.TaskInfo, scores map[float64][]*api.NodeInfo) *api.NodeInfo {
	maxScore := -1.0 // SelectBestNode's start: no node when every score is below it
	var best []*api.NodeInfo
	for score, nodes := range scores {
		if score > maxScore {
			maxScore, best = score, nodes
		}
	}
	var chosen *api.NodeInfo
	rank := math.MaxInt
	for _, n := range best {
		if r, ok := nodeRank[n.Name]; ok && r < rank {
			chosen, rank = n, r
		}
	}
	return chosen
}

// withFirstOfEqualNodes is the conf's tiers with the plugin above in a tier of its own, last.
func withFirstOfEqualNodes(tiers []conf.Tier) []conf.Tier {
	enabled := true // the framework calls a plugin's BestNodeFn only when its option says so (isEnabled)
	option := conf.PluginOption{Name: firstNodePlugin, EnabledBestNode: &enabled}
	return append(append([]conf.Tier{}, tiers...), conf.Tier{Plugins: []conf.PluginOption{option}})
}
