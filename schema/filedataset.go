package schema

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/graphfile"
)

// MetricChecker checks that a metric suits a task with out outputs
// (models/metric.Check). A ModelChecker that is one also checks each
// file dataset's metric against its task.
type MetricChecker interface {
	CheckMetric(name string, task data.Task, out int) error
}

// FileDefaultFolds is the number of folds a file without its own split
// is dealt into when the spec gives none.
const FileDefaultFolds = 10

// fileChecks reads the graphs of a file dataset (kind "file") and checks
// the experiment against them, each problem at its field: exactly one of
// path and name, the file there and valid, the task fitting the file, the
// metric the task, the split fields the protocol. It fills d's File,
// SHA256 and Contents, and returns the dataset's number of folds (0 when
// the graphs could not be read or do not fit, whose folds are unknown).
func (l *loader) fileChecks(at func(...string) []string, d *Dataset, p Protocol) int {
	// The decoded values, not the file's fields: a dataset section may come
	// from a reference or a comprehension.
	hasPath, hasName := d.Path != "", d.Name != ""
	switch {
	case hasPath && hasName:
		l.errAt(at("dataset", "name"), "give path or name, not both: path reads a JSON Lines file beside the spec, name a dataset stored by `spn data import`")
		return 0
	case !hasPath && !hasName:
		l.errAt(at("dataset", "kind"), "a file dataset needs path (a JSON Lines file, relative to the spec's folder) or name (a dataset stored by `spn data import FILE --name NAME`)")
		return 0
	}
	if hasName && l.unimported && l.dataDir != "" {
		if _, err := os.Stat(graphfile.ImportedPath(l.dataDir, d.Name)); errors.Is(err, os.ErrNotExist) {
			if !slices.Contains(l.skipped, d.Name) {
				l.skipped = append(l.skipped, d.Name)
			}
			return 0
		}
	}
	src, field, err := l.fileSource(*d)
	if err != nil {
		l.errAt(at("dataset", field), "%v", err)
		return 0
	}
	if err := src.Fit(d.Task); err != nil {
		l.errAt(at("dataset", "task"), "%v", err)
		return 0
	}
	c := graphfile.ContentsOf(src.Dataset)
	d.File, d.SHA256, d.Contents = src.File, src.SHA256, &c
	if mc, ok := l.models.(MetricChecker); ok {
		out := c.Targets
		if d.Task == graphfile.Classification {
			out = c.Classes
		}
		if err := mc.CheckMetric(p.Metric, graphfile.DataTask(d.Task), out); err != nil {
			var fits []string
			for _, t := range graphfile.Tasks() {
				if mc.CheckMetric(p.Metric, graphfile.DataTask(t), 2) == nil {
					fits = append(fits, strconv.Quote(t))
				}
			}
			if len(fits) > 0 && !slices.Contains(fits, strconv.Quote(d.Task)) {
				err = fmt.Errorf("metric %q does not fit dataset task %q (it fits task %s)", p.Metric, d.Task, strings.Join(fits, ", "))
			}
			l.errAt(at("protocol", "metric"), "%v", err)
		}
	}
	if c.Splits {
		for f, set := range map[string]bool{"folds": d.Folds != 0, "seed": d.Seed != 0} {
			if set {
				l.errAt(at("dataset", f), "%s's lines carry \"split\": the file's split is the split, so %s is not used", src.Label, f)
			}
		}
		return 1
	}
	if p.Kind == "fixed" {
		l.errAt(at("protocol", "kind"), "protocol \"fixed\" uses the dataset's own split, but the lines of %s carry no \"split\": use \"holdout\" or \"errica\" (folds drawn from dataset.seed), or give every line a \"split\"", src.Label)
	}
	if d.Folds == 0 {
		d.Folds = FileDefaultFolds
	}
	n := c.Graphs
	if d.Limit > 0 {
		n = min(n, d.Limit)
	}
	if n < d.Folds {
		l.errAt(at("dataset", "folds"), "%d folds need at least %d graphs, and %s gives %d", d.Folds, d.Folds, src.Label, n)
	}
	return d.Folds
}

// fileSource reads the graphs a file dataset names, from the path (the
// field "path", relative to the spec file's folder) or the imported name
// (the field "name", below the loader's data dir), once per file and
// load, and sets d.File. The error's field is the one to blame.
func (l *loader) fileSource(d Dataset) (*graphfile.Source, string, error) {
	field, file := "path", ""
	if d.Path != "" {
		file = d.Path
		if !filepath.IsAbs(file) {
			file = filepath.Join(filepath.Dir(l.file), file)
		}
	} else {
		field = "name"
		if l.dataDir == "" {
			return nil, field, errors.New("no data dir to find an imported dataset in")
		}
		file = graphfile.ImportedPath(l.dataDir, d.Name)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, field, fmt.Errorf("resolving %s: %w", file, err)
	}
	if src, ok := l.sources[abs]; ok {
		return src, field, nil
	}
	var src *graphfile.Source
	if field == "path" {
		src, err = graphfile.ReadPath(abs, file)
		if errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("no file %s (a path is relative to the spec file's folder)", file)
		}
	} else {
		src, err = graphfile.ReadImported(l.dataDir, d.Name)
	}
	if err != nil {
		return nil, field, err
	}
	src.File = abs
	if l.sources == nil {
		l.sources = map[string]*graphfile.Source{}
	}
	l.sources[abs] = src
	return src, field, nil
}
