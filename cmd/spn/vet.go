package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages/train"
)

const vetUsage = `Usage: spn vet [--mode full|smoke|paper-1split|evidence] FILE|DIR...

Validate experiment specs against the spn schema. A DIR stands for every
*.cue file below it (sorted, cue.mod skipped). Each problem is printed to
stderr as file:line:col: path: message; each valid file as "ok FILE" to
stdout. Exit status 0 when every file is valid, 2 otherwise.

Flags:
`

// cmdVet implements `spn vet`.
func cmdVet(a *app, args []string) error {
	fs := flag.NewFlagSet("vet", flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	mode := fs.String("mode", "", `load the specs in this mode: "full", "smoke", "paper-1split" or "evidence" (default: the spec's own mode)`)
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
	}
	if len(targets) == 0 {
		return usageErrf("vet", "want at least one spec FILE or DIR (see 'spn vet -h')")
	}
	files, err := vetFiles(targets)
	if err != nil {
		return usageErr("vet", err)
	}
	src.resolve(a)
	// Every file is checked: its problems are printed as it is, and the
	// exit status says whether any file had one.
	var invalid error
	for _, f := range files {
		stop := a.guardSpecMemory("vet", f)
		_, err := schema.Load(f, schema.Options{Mode: *mode, Models: train.Kind{}.Registry(), DataDir: src.dataDir})
		stop()
		if err != nil {
			fmt.Fprintln(a.stderr, specErr("vet", err))
			invalid = reported(exitUsage)
			continue
		}
		fmt.Fprintf(a.stdout, "ok %s\n", f)
	}
	return invalid
}

// vetFiles expands the command's arguments: files stay as given, a
// directory becomes every *.cue file below it in lexical order.
func vetFiles(targets []string) ([]string, error) {
	var files []string
	for _, t := range targets {
		info, err := os.Stat(t)
		if err != nil {
			return nil, fmt.Errorf("reading spec: %w", err)
		}
		if !info.IsDir() {
			files = append(files, t)
			continue
		}
		n := len(files)
		err = filepath.WalkDir(t, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return fmt.Errorf("walking %s: %w", path, err)
			}
			if d.IsDir() && d.Name() == "cue.mod" {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), ".cue") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(files) == n {
			return nil, fmt.Errorf("no .cue files under %s", t)
		}
	}
	return files, nil
}
