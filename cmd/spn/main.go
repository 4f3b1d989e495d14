// Command spn validates, plans, runs and tabulates shortest-path GNN
// experiments described in CUE files.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync/atomic"

	"github.com/spn-project/spn/models/cuda"
)

// app carries what every command needs; it is built once in main.
type app struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	// signal is the number of the SIGINT or SIGTERM that stopped the
	// command (see signalContext), 0 while none has.
	signal atomic.Int32
	// handling counts the live signal contexts (signalContext): while
	// there is one, a signal is the command's to act on.
	handling atomic.Int32
	// cmd is the command being run, for catchSignals' message.
	cmd atomic.Value
	// cuda opens the CUDA libraries; nil means the system's loader.
	cuda cuda.Opener
}

// command is one sub-command of spn. It returns nil on success, else an
// error whose message app.exit prints and whose exitError code is the
// exit status.
type command struct {
	summary string
	run     func(a *app, args []string) error
}

func commands() map[string]command {
	return map[string]command{
		"version":      {"print the version", cmdVersion},
		"plan":         {"show a spec's stages and which must run", cmdPlan},
		"run":          {"run a spec's missing stages and write its tables", cmdRun},
		"table":        {"render a spec's tables from cached results", cmdTable},
		"report":       {"write a spec's HTML report (curves, hop weights, stages) from cached results", cmdReport},
		"vet":          {"validate spec files against the schema", cmdVet},
		"predict":      {"predict graphs from JSONL with an experiment's trained model", cmdPredict},
		"data":         {"fetch, inspect, export and import datasets", cmdData},
		"cache":        {"verify the stage cache, or remove what no spec uses", cmdCache},
		"stage":        {"run planned stages one by one from a plan file (used by Slurm jobs)", cmdStage},
		"calibrate":    {"measure per-epoch training times for spn plan --cost", cmdCalibrate},
		"status":       {"count a spec's stages per kind: cached, running, queued, failed, to run", cmdStatus},
		"bench":        {"train one epoch per workload and print graphs/s and peak memory", cmdBench},
		"expressivity": {"which graph pairs 1-WL, SP and SP-MPNN(k) distinguish; the paper's claims", cmdExpressivity},
	}
}

func main() {
	a := &app{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	a.catchSignals()
	setGC(a.getenv)
	os.Exit(a.main(os.Args[1:]))
}

// main runs the command that args name and returns the process's exit
// status.
func (a *app) main(args []string) int {
	return a.exit(a.dispatch(args))
}

// dispatch runs the command args[0] ("run" when args is empty).
func (a *app) dispatch(args []string) error {
	cmds := commands()
	if len(args) == 0 {
		args = []string{"run"}
	}
	name := args[0]
	if name == "help" || name == "-h" || name == "--help" {
		a.usage(cmds)
		return nil
	}
	c, ok := cmds[name]
	a.cmd.Store(name)
	if !ok {
		return usageErrf("", "unknown command %q (see 'spn help')", name)
	}
	return c.run(a, args[1:])
}

// exit prints a command's error to stderr and returns the exit status:
// exitSignal + the signal's number when SIGINT or SIGTERM stopped the
// command, else the error's code (exitOK for nil). The one place errors
// are printed: an exitError's message as it is, any other error after
// "spn: ".
func (a *app) exit(err error) int {
	var ee *exitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(a.stderr, msg)
		}
	default:
		fmt.Fprintf(a.stderr, "%s%v\n", prefix(""), err)
	}
	if s := a.signal.Load(); s != 0 {
		return exitSignal + int(s)
	}
	return exitCode(err)
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
