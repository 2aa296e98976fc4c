// Command oracle runs one scheduling session of Volcano's own scheduler (volcano.sh/volcano, the
// version pinned in go.mod) on a cluster dump and a volcano-scheduler.conf, and prints what it decided
// as vpolicy's decision document, so that `python -m conformance.run` can compare the two engines.
//
//	oracle --cluster PATH [--cluster PATH ...] [--conf FILE]
//	oracle --batch < cases.jsonl     (one {"id", "cluster": "<yaml>", "conf": "<conf>"} per line)
//
// Without --conf, the ConfigMap holding volcano-scheduler.conf in the dump is used, else Volcano's
// built-in default conf. Exit status: 0 decided, 1 bad input (one line on stderr).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"volcano.sh/volcano/cmd/scheduler/app/options"
	"volcano.sh/volcano/pkg/scheduler"
	// Register Volcano's actions and plugins, as its scheduler binary does.
	_ "volcano.sh/volcano/pkg/scheduler/actions"
	_ "volcano.sh/volcano/pkg/scheduler/plugins"
)

type pathList []string

func (p *pathList) String() string     { return strings.Join(*p, ",") }
func (p *pathList) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	var clusters pathList
	flag.Var(&clusters, "cluster", "cluster dump: file, folder or - (repeatable)")
	confPath := flag.String("conf", "", "volcano-scheduler.conf, or a ConfigMap holding it")
	batch := flag.Bool("batch", false, "read JSON-lines cases on stdin, write one document per line")
	verbosity := flag.String("v", "0", "klog verbosity of Volcano's own logging (to stderr)")
	cpuProfile := flag.String("cpuprofile", "", "write a Go CPU profile of the whole run to this file")
	flag.StringVar(&backfillFlavour, "backfill", "main",
		"main: the backfill of Volcano's main branch (backfill_main.go); v1.10: v1.10.0's own")
	ties := flag.String("ties", "random", "random: Volcano's own draw among equally scored nodes; first: the one first in the dump (ties.go)")
	flag.StringVar(&allocateFlavour, "allocate", "main",
		"main: allocate putting a job back as Volcano's main branch does (allocate_main.go); v1.10: v1.10.0's own")
	flag.StringVar(&reclaimFlavour, "reclaim", "main",
		"main: the reclaim loop of Volcano's main branch as the reference reads it (reclaim_main.go); v1.10: v1.10.0's own")
	flag.Parse()
	if backfillFlavour != "main" && backfillFlavour != "v1.10" {
		fail("oracle: --backfill must be main or v1.10")
	}
	if allocateFlavour != "main" && allocateFlavour != "v1.10" {
		fail("oracle: --allocate must be main or v1.10")
	}
	if reclaimFlavour != "main" && reclaimFlavour != "v1.10" {
		fail("oracle: --reclaim must be main or v1.10")
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fail(err.Error())
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err.Error())
		}
		defer pprof.StopCPUProfile()
	}
	quietKlog(*verbosity)
	serverDefaults()

	if *batch {
		if code := runBatch(); code != 0 {
			os.Exit(code)
		}
		return
	}
	if len(clusters) == 0 {
		fail("oracle: --cluster is required")
	}
	c, err := readPaths(clusters)
	if err != nil {
		fail(err.Error())
	}
	confStr := c.Conf
	if *confPath != "" {
		if confStr, err = confText(*confPath); err != nil {
			fail(err.Error())
		}
	}
	if confStr == "" {
		confStr = scheduler.DefaultSchedulerConf
	}
	doc, err := runSession(c, confStr, *ties)
	if err != nil {
		fail(err.Error())
	}
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", "  ")
	if err := out.Encode(doc); err != nil {
		fail(err.Error())
	}
}

type batchCase struct {
	ID      string `json:"id"`
	Cluster string `json:"cluster"`
	Conf    string `json:"conf"`
	Ties    string `json:"ties,omitempty"` // random (the default) or first (ties.go)
}

type batchResult struct {
	ID       string    `json:"id"`
	Error    string    `json:"error,omitempty"`
	Document *document `json:"document,omitempty"`
}

// runBatch answers many cases in one process: Volcano's start-up (plugin registration, Kubernetes
// scheme set-up) then costs once, not per generated cluster.
func runBatch() int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<30)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		line := in.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var bc batchCase
		res := batchResult{}
		if err := json.Unmarshal(line, &bc); err != nil {
			res.Error = "bad case: " + err.Error()
		} else {
			res.ID = bc.ID
			res.Document, res.Error = runCase(bc)
		}
		if err := out.Encode(res); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "oracle: stdin:", err)
		return 1
	}
	return 0
}

// runCase answers one case; a panic inside Volcano (its asserts panic, e.g. proportion's Resource.Sub
// when guarantees exceed the cluster) becomes the case's error, prefixed "volcano panicked:".
func runCase(bc batchCase) (doc *document, errText string) {
	defer func() {
		if r := recover(); r != nil {
			doc, errText = nil, fmt.Sprintf("volcano panicked: %v", r)
		}
	}()
	c := &cluster{}
	if err := c.addStream(bc.ID, []byte(bc.Cluster)); err != nil {
		return nil, err.Error()
	}
	c.fillIdentity()
	confStr := bc.Conf
	if confStr == "" {
		confStr = c.Conf
	}
	if confStr == "" {
		confStr = scheduler.DefaultSchedulerConf
	}
	doc, err := runSession(c, confStr, bc.Ties)
	if err != nil {
		return nil, err.Error()
	}
	return doc, ""
}

// serverDefaults sets the scheduler's command-line options to the defaults vc-scheduler starts with
// (its own flag set, parsed empty): the share of nodes searched per task, priority classes on.
func serverDefaults() {
	s := options.NewServerOption()
	fs := pflag.NewFlagSet("vc-scheduler", pflag.ContinueOnError)
	s.AddFlags(fs)
	if err := fs.Parse(nil); err != nil {
		fail("oracle: scheduler defaults: " + err.Error())
	}
	s.RegisterOptions()
}

func quietKlog(v string) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", v)
	_ = fs.Set("logtostderr", "true")
	if v == "0" {
		_ = fs.Set("stderrthreshold", "FATAL")
		klog.SetOutput(discard{})
		_ = fs.Set("logtostderr", "false")
		_ = fs.Set("alsologtostderr", "false")
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func fail(msg string) {
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(1)
}
