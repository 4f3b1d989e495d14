package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/schema/findings"
	"github.com/spn-project/spn/stages/train"
)

const vetUsage = `Usage: spn vet [--all-modes | --mode MODE] [--format text|json|github|sarif] FILE|DIR...

Validate experiment specs against the spn schema, in every mode each spec
defines (its modes field, default "full" and "smoke"), or in the one mode
--mode names. A DIR stands for every *.cue file below it (sorted, cue.mod
skipped). As text, each problem is printed to stderr as
file:line:col: path: message, followed by the modes it was found in when
not in all of them, and each valid file as "ok FILE" to stdout; the other
formats print all problems to stdout (json: one array; github: workflow
commands; sarif: a SARIF 2.1.0 log), a problem found in several modes
once. Exit status 0 when every file is valid, 2 otherwise.

Flags:
`

// cmdVet implements `spn vet`.
func cmdVet(a *app, args []string) error {
	fs := flag.NewFlagSet("vet", flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	mode := fs.String("mode", "", `vet the specs in this mode only: "full", "smoke", "paper-1split" or "evidence" (default: every mode of each spec)`)
	allModes := fs.Bool("all-modes", false, "vet every mode in each spec's modes field (the default without --mode)")
	format := fs.String("format", "text", "output `format`: text, json, github or sarif")
	var src dataSource
	fs.StringVar(&src.dataDir, "data-dir", "", "`dir` of imported datasets, which file datasets may name (env "+envDataDir+", default "+defaultDataDir+")")
	usage := func(w io.Writer) {
		fs.SetOutput(w)
		fmt.Fprint(w, vetUsage)
		fs.PrintDefaults()
	}
	fs.Usage = func() {} // printed below, to stdout for -h and stderr otherwise
	var targets []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage(a.stdout)
				return nil
			}
			usage(a.stderr) // after the flag package's own message
			return reported(exitUsage)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if rest[0] == "--" {
			targets = append(targets, rest[1:]...)
			break
		}
		targets = append(targets, rest[0])
		args = rest[1:]
	}
	if *mode != "" {
		if err := schema.CheckMode(*mode); err != nil {
			return usageErrf("vet", "--%w", err)
		}
		if *allModes {
			return usageErrf("vet", "--all-modes and --mode %s exclude each other", *mode)
		}
	}
	if err := findings.CheckFormat(*format); err != nil {
		return usageErrf("vet", "--%w", err)
	}
	if len(targets) == 0 {
		return usageErrf("vet", "want at least one spec FILE or DIR (see 'spn vet -h')")
	}
	files, err := schema.SpecFiles(targets)
	if err != nil {
		return usageErr("vet", err)
	}
	// Every file is checked: as text its problems are printed as it is,
	// in the other formats all at the end; the exit status says whether
	// any file had one.
	text := *format == "text"
	src.resolve(a)
	var all []findings.Finding
	var invalid error
	for _, f := range files {
		stop := a.guardSpecMemory("vet", f)
		opt := schema.Options{Mode: *mode, Models: train.Kind{}.Registry(), DataDir: src.dataDir, Unimported: true}
		modes := []string{*mode}
		var err error
		if *mode == "" {
			modes, err = schema.LoadAllModes(f, opt)
		} else {
			_, err = schema.Load(f, opt)
		}
		stop()
		if err == nil {
			if text {
				fmt.Fprintf(a.stdout, "ok %s\n", f)
			}
			continue
		}
		invalid = reported(exitUsage)
		var errs schema.Errors
		if text && !errors.As(err, &errs) {
			fmt.Fprintln(a.stderr, specErr("vet", err))
			continue
		}
		found := findings.Merge(findings.FromError(f, err))
		if !text {
			all = append(all, found...)
			continue
		}
		for _, fd := range found {
			// The modes are news only when the problem is not in all.
			fmt.Fprintln(a.stderr, findings.Text(fd, len(fd.Modes) > 0 && !slices.Equal(fd.Modes, modes)))
		}
	}
	if !text {
		if err := findings.Write(a.stdout, findings.Merge(all), findings.Options{Format: *format, ToolVersion: version}); err != nil {
			return runtimeErr("vet", err)
		}
	}
	return invalid
}
