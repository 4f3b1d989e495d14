// Package ogb reads OGB's MoleculeNet graph property prediction sets
// (ogbg-molbace, ogbg-molhiv, ...) from OGB's raw CSV layout, as OGB's own
// csv_mol_download zips ship them:
//
//	NAME/raw/num-node-list.csv.gz  one node count per graph
//	NAME/raw/num-edge-list.csv.gz  one edge count per graph
//	NAME/raw/node-feat.csv.gz      9 categorical atom features per node
//	NAME/raw/edge.csv.gz           one line "u,v" per bond, graph-local ids
//	NAME/raw/edge-feat.csv.gz      3 categorical bond features per bond
//	NAME/raw/graph-label.csv.gz    one line per graph, one column per task
//	NAME/split/scaffold/{train,valid,test}.csv.gz  graph indices
//
// Every file is header-less CSV. Atom and bond features stay categorical
// with OGB's full vocabularies (AtomFeatureDims, BondFeatureDims); missing
// labels (empty fields) stay missing (NaN in a data.TaskBinary dataset).
// The scaffold split is the dataset's one fixed split.
package ogb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/data/known"
)

// set describes one dataset OGB ships.
type set struct {
	name  string
	tasks int
	task  data.Task
}

// sets are the MoleculeNet sets of OGB spn reads, in OGB's order.
var sets = []set{
	{"bbbp", 1, data.TaskBinary},
	{"tox21", 12, data.TaskBinary},
	{"toxcast", 617, data.TaskBinary},
	{"sider", 27, data.TaskBinary},
	{"clintox", 2, data.TaskBinary},
	{"hiv", 1, data.TaskBinary},
	{"bace", 1, data.TaskBinary},
	{"esol", 1, data.TaskRegression},
	{"freesolv", 1, data.TaskRegression},
}

func lookup(name string) (set, bool) {
	for _, s := range sets {
		if s.name == name {
			return s, true
		}
	}
	return set{}, false
}

// Names returns the dataset names Fetch and Load accept (OGB's names
// without the "ogbg-mol" prefix).
func Names() []string {
	out := make([]string, len(sets))
	for i, s := range sets {
		out[i] = s.name
	}
	return out
}

// TaskOf returns the task of dataset name: data.TaskBinary for the
// classification sets (one or more binary tasks with missing labels),
// data.TaskRegression for esol and freesolv; ok is false for unknown names.
func TaskOf(name string) (t data.Task, ok bool) {
	s, ok := lookup(name)
	return s.task, ok
}

// NumTasks returns the number of tasks (label columns) of dataset name, or
// 0 for an unknown name.
func NumTasks(name string) int {
	s, _ := lookup(name)
	return s.tasks
}

// AtomFeatureDims returns the vocabulary sizes of OGB's 9 atom features
// (ogb/utils/features.py, get_atom_feature_dims): atomic number, chirality,
// degree, formal charge, number of Hs, radical electrons, hybridisation,
// aromatic, in ring; each list ends in a "misc" entry where OGB has one.
func AtomFeatureDims() []int { return []int{119, 5, 12, 12, 10, 6, 6, 2, 2} }

// BondFeatureDims returns the vocabulary sizes of OGB's 3 bond features
// (get_bond_feature_dims): bond type, stereo, conjugated.
func BondFeatureDims() []int { return []int{5, 6, 2} }

// Metric returns the metric OGB's Evaluator uses for dataset name
// ("rocauc" for the binary sets, "rmse" for esol and freesolv), or "" for
// an unknown name. Metric names are those of models/metric.
func Metric(name string) string {
	switch t, _ := TaskOf(name); t {
	case data.TaskBinary:
		return "rocauc"
	case data.TaskRegression:
		return "rmse"
	}
	return ""
}

// URL returns the upstream location of dataset name's zip.
func URL(name string) string { return fetch.OGBBase + name + ".zip" }

// Fetch fetches (or finds in f.DataDir) the zip of dataset name through f,
// which records its SHA-256 in the lock file and checks it on every later
// use, loads it and checks it against its built-in content figures.
func Fetch(ctx context.Context, f *fetch.Fetcher, name string) (*data.Dataset, error) {
	if _, ok := lookup(name); !ok {
		return nil, fmt.Errorf("unknown OGB dataset %q (known: %v)", name, Names())
	}
	zp, err := f.Get(ctx, URL(name))
	if err != nil {
		if f.Mirror != "" && errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("OGB dataset %q is not in the data mirror %s (no ogb/%s.zip there; without the mirror it is downloaded from %s): %w", name, f.Mirror, name, URL(name), err)
		}
		return nil, fmt.Errorf("OGB dataset %q: %w", name, err)
	}
	ds, err := Load(zp, name)
	if err != nil {
		return nil, err
	}
	if err := f.Verify(zp, URL(name), known.Of(ds)); err != nil {
		return nil, err
	}
	return ds, nil
}
