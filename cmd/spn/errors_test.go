package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/golden"
)

// TestCommandErrorsGolden pins the message and exit status of the usage
// and validation errors of every command but data, vet and expressivity
// (which have their own goldens): testdata/command_errors.golden.
func TestCommandErrorsGolden(t *testing.T) {
	cases := [][]string{
		{"frobnicate"},
		{"plan"},
		{"run", "a.cue", "b.cue"},
		{"run", "testdata/small.cue", "--wait"},
		{"run", "testdata/small.cue", "--executor", "pbs"},
		{"run", "testdata/small.cue", "--executor", "slurm", "--hold", "--wait"},
		{"run", "testdata/small.cue", "--executor", "slurm", "--group", "node"},
		{"run", "testdata/small.cue", "--threads", "-2"},
		{"table"},
		{"table", "testdata/bad.cue"},
		{"status"},
		{"status", "testdata/bad.cue"},
		{"predict"},
		{"predict", "testdata/small.cue"},
		{"calibrate"},
		{"calibrate", "testdata/small.cue", "--epochs", "1"},
		{"calibrate", "testdata/bad.cue"},
		{"cache", "frobnicate"},
		{"cache", "verify", "x"},
		{"cache", "gc"},
		{"cache", "gc", "--mode", "full", "testdata/small.cue"},
		{"cache", "gc", "testdata/nope.cue"},
		{"cache", "gc", "testdata/bad.cue"},
		{"stage"},
		{"stage", "frobnicate"},
		{"stage", "run"},
		{"stage", "run", "--plan", "p.json", "--tasks", "t.txt", "KEY"},
		{"stage", "run", "--plan", "p.json", "--tasks", "t.txt"},
		{"stage", "run", "--plan", "testdata/nope.json", "KEY"},
		{"bench", "--epochs", "0"},
		{"bench", "--threads", "0"},
		{"bench", "MUTAG"},
	}
	var all bytes.Buffer
	for _, args := range cases {
		var out, errb bytes.Buffer
		a := &app{stdout: &out, stderr: &errb, getenv: func(k string) string {
			if k == envDataDir {
				return "DATA"
			}
			return ""
		}}
		code := a.main(args)
		if code == exitOK || out.Len() != 0 {
			t.Errorf("spn %s: exit %d, stdout %q", strings.Join(args, " "), code, out.String())
		}
		fmt.Fprintf(&all, "$ spn %s\nexit %d\n%s", strings.Join(args, " "), code, errb.String())
	}
	golden.Check(t, "testdata/command_errors.golden", all.Bytes())
}
