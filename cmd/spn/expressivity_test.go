package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spn-project/spn/data/expressivity"
	"github.com/spn-project/spn/internal/testkit/mirrortest"
	"github.com/spn-project/spn/models/separation"

	"github.com/spn-project/spn/internal/testkit/golden"
)

// exprRun runs `spn expressivity args...`.
func exprRun(env map[string]string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }}
	code = a.main(append([]string{"expressivity"}, args...))
	return code, out.String(), errb.String()
}

// TestExpressivityGolden checks the output and exit code of spn
// expressivity against golden files (go test -update rewrites them).
func TestExpressivityGolden(t *testing.T) {
	pairs := filepath.Join("testdata", "expressivity", "pairs.jsonl")
	tests := []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"paper", []string{"--paper"}, exitOK},
		{"paper_json", []string{"--paper", "--json", "--spn-seeds", "0"}, exitOK},
		{"paper_unreachable", []string{"--paper", "--unreachable", "--spn-seeds", "0"}, exitOK},
		{"pairs", []string{pairs, "--spn-seeds", "2"}, exitOK},
		{"pairs_k_unreachable", []string{pairs, "--k", "1,3-4", "--unreachable", "--spn-seeds", "0"}, exitOK},
		{"bad_line", []string{filepath.Join("testdata", "expressivity", "bad.jsonl")}, exitUsage},
		{"bad_k", []string{"--paper", "--k", "0-2"}, exitUsage},
		{"bad_k_range", []string{"--paper", "--k", "3-1"}, exitUsage},
		{"bad_seeds", []string{"--paper", "--spn-seeds", "-1"}, exitUsage},
		{"paper_and_file", []string{"--paper", pairs}, exitUsage},
		{"no_input", nil, exitUsage},
		{"missing_file", []string{filepath.Join("testdata", "expressivity", "nope.jsonl")}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := exprRun(nil, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, tt.wantCode, stderr)
			}
			golden.Check(t, filepath.Join("testdata", "expressivity", tt.name+".golden"), []byte("stdout:\n"+stdout+"stderr:\n"+stderr))
		})
	}
}

// TestExpressivityConcreteSPN checks the concrete SPNs against the
// refinement on the paper's pairs and the test pairs: an SPN never
// separates what SP-MPNN(k) refinement does not (it is the upper bound),
// and SPN(k = 1), whose α has one entry, separates exactly what 1-WL does.
// With --unreachable (SPNs and refinement over N_∞ too), SPN(k = 1)
// separates exactly what its refinement does: C6 against two triangles,
// which 1-WL does not.
func TestExpressivityConcreteSPN(t *testing.T) {
	pairs := filepath.Join("testdata", "expressivity", "pairs.jsonl")
	for _, args := range [][]string{{"--paper"}, {pairs}, {pairs, "--unreachable"}} {
		unreachable := slices.Contains(args, "--unreachable")
		code, stdout, stderr := exprRun(nil, append(args, "--json", "--spn-seeds", "3")...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var rep expressivity.Report
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.BoundViolations != 0 {
			t.Errorf("%v: %d bound violations", args, rep.BoundViolations)
		}
		for _, p := range rep.Pairs {
			if len(p.SPN) != len(p.SPMPNN) {
				t.Fatalf("%s: %d SPN results for %d ks", p.Name, len(p.SPN), len(p.SPMPNN))
			}
			for i, s := range p.SPN {
				if s.K != p.SPMPNN[i].K || s.Seeds != 3 {
					t.Errorf("%s: SPN result %d: %+v", p.Name, i, s)
				}
				if s.Separates() && !p.SPMPNN[i].Distinguishes {
					t.Errorf("%s: SPN(k=%d) separates (rel. diff %g) what the refinement does not", p.Name, s.K, s.MaxRelDiff)
				}
				if !s.Separates() && s.MaxRelDiff > separation.Tolerance {
					t.Errorf("%s: k=%d: max diff %g above the tolerance but not separating", p.Name, s.K, s.MaxRelDiff)
				}
			}
			switch {
			case p.SPN[0].K != 1:
			case !unreachable && p.SPN[0].Separates() != p.WL:
				t.Errorf("%s: SPN(k=1) separates %v, 1-WL %v", p.Name, p.SPN[0].Separates(), p.WL)
			case unreachable && p.SPN[0].Separates() != p.SPMPNN[0].Distinguishes:
				t.Errorf("%s: SPN(k=1) with N_∞ separates %v, its refinement %v", p.Name, p.SPN[0].Separates(), p.SPMPNN[0].Distinguishes)
			}
			if unreachable && p.Name == "C6 vs 2xC3" && (p.WL || !p.SPN[0].Separates()) {
				t.Errorf("%s with N_∞: 1-WL %v, SPN(k=1) %v; want no, yes", p.Name, p.WL, p.SPN[0].Separates())
			}
		}
	}
}

// TestExpressivityPaperFast checks that --paper answers well under a second
// (a smoke bound on a loaded machine, not a benchmark).
func TestExpressivityPaperFast(t *testing.T) {
	start := time.Now()
	if code, _, stderr := exprRun(nil, "--paper", "--spn-seeds", "0"); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("--paper took %v", d)
	}
}

// TestExpressivityEXP runs EXP and CEXP from the mirror: EXP's pairs are
// 1-WL-equivalent by construction, CEXP corrupts half of them.
func TestExpressivityEXP(t *testing.T) {
	if testing.Short() {
		t.Skip("reads EXP and CEXP")
	}
	mirror := mirrortest.Dir(t)
	for _, tc := range []struct {
		name string
		wl   int
	}{{"EXP", 0}, {"CEXP", 300}} {
		code, stdout, stderr := exprRun(nil, tc.name, "--mirror", mirror, "--data-dir", t.TempDir(), "--k", "1-3", "--spn-seeds", "1", "--json")
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", tc.name, code, stderr)
		}
		var rep expressivity.Report
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatal(err)
		}
		counts := map[string]int{}
		for _, c := range rep.Counts {
			if c.Pairs != 600 {
				t.Errorf("%s: %+v: want 600 pairs", tc.name, c)
			}
			key := c.Method
			if c.K > 0 {
				key += "/" + string(rune('0'+c.K))
			}
			counts[key] = c.Separated
		}
		if counts["1-WL"] != tc.wl || counts["SP-MPNN/1"] != tc.wl {
			t.Errorf("%s: 1-WL separates %d, SP-MPNN(1) %d, want %d", tc.name, counts["1-WL"], counts["SP-MPNN/1"], tc.wl)
		}
		if rep.BoundViolations != 0 {
			t.Errorf("%s: %d bound violations", tc.name, rep.BoundViolations)
		}
		t.Logf("%s: %v", tc.name, counts)
	}
}

// exprOptions: -h prints the help and yields no options and no error;
// the input is the one positional argument, none with --paper.
func TestExpressivityOptions(t *testing.T) {
	var errb bytes.Buffer
	a := &app{stdout: &bytes.Buffer{}, stderr: &errb, getenv: func(string) string { return "" }}
	opt, err := a.exprOptions([]string{"-h"})
	if opt != nil || err != nil || !strings.HasPrefix(errb.String(), "Decide which graph pairs") {
		t.Errorf("-h: %+v, %v, %q", opt, err, errb.String())
	}
	opt, err = a.exprOptions([]string{"pairs.jsonl", "--k", "1-3", "--spn-seeds", "0", "--json"})
	if err != nil || opt.paper || opt.input != "pairs.jsonl" || !slices.Equal(opt.ks, []int{1, 2, 3}) || opt.seeds != 0 || !opt.asJSON {
		t.Errorf("file: %+v, %v", opt, err)
	}
	opt, err = a.exprOptions([]string{"--paper", "--unreachable"})
	if err != nil || !opt.paper || opt.input != "" || opt.ks != nil || !opt.unreachable || opt.seeds != 3 {
		t.Errorf("paper: %+v, %v", opt, err)
	}
	if _, err := a.exprOptions([]string{"--paper", "x"}); exitCode(err) != exitUsage {
		t.Errorf("--paper with a file: %v", err)
	}
}
