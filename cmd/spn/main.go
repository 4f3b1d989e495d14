// Command spn validates, plans, runs and tabulates shortest-path GNN
// experiments described in CUE files.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
)

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // a run failed
	exitUsage = 2 // usage or validation error
)

// app carries what every command needs; it is built once in main.
type app struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

// command is one sub-command of spn.
type command struct {
	summary string
	run     func(a *app, args []string) int
}

func commands() map[string]command {
	return map[string]command{
		"version":      {"print the version", cmdVersion},
		"plan":         {"show a spec's stages and which must run", cmdPlan},
		"run":          {"run a spec's missing stages and write its tables", cmdRun},
		"table":        {"render a spec's tables from cached results", cmdTable},
		"vet":          {"validate spec files against the schema", cmdVet},
		"predict":      {"predict graphs from JSONL with an experiment's trained model", cmdPredict},
		"data":         {"fetch, inspect, export and import datasets", cmdData},
		"cache":        {"verify the stage cache, or remove what no spec uses", cmdCache},
		"stage":        {"run planned stages one by one from a plan file (used by Slurm jobs)", cmdStage},
		"calibrate":    {"measure per-epoch training times for spn plan --cost", cmdCalibrate},
		"status":       {"count a spec's stages per kind: cached, running, queued, failed, to run", cmdStatus},
		"bench":        {"train one epoch per workload and print graphs/s and peak memory", cmdBench},
		"expressivity": {"which graph pairs 1-WL, SP and SP-MPNN(k) distinguish; the paper's claims", cmdExpressivity},
		// Engine commands (vet, plan, run, table) are registered in engine.go,
		// data commands in data.go, predict/bench in predict.go.
	}
}

func main() {
	a := &app{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	setGC(a.getenv)
	os.Exit(a.main(os.Args[1:]))
}

func (a *app) main(args []string) int {
	cmds := commands()
	if len(args) == 0 {
		args = []string{"run"}
	}
	name := args[0]
	if name == "help" || name == "-h" || name == "--help" {
		a.usage(cmds)
		return exitOK
	}
	c, ok := cmds[name]
	if !ok {
		fmt.Fprintf(a.stderr, "spn: unknown command %q (see 'spn help')\n", name)
		return exitUsage
	}
	return c.run(a, args[1:])
}

func (a *app) usage(cmds map[string]command) {
	fmt.Fprintln(a.stdout, "spn: shortest path networks, reproducibly\n\nUsage: spn COMMAND [flags] [args]\n\nCommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(a.stdout, "  %-12s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(a.stdout, "\nRun 'spn COMMAND -h' for a command's flags.")
}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func cmdVersion(a *app, args []string) int {
	fmt.Fprintf(a.stdout, "spn %s\n", version)
	return exitOK
}
