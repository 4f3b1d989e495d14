package tu

import (
	"fmt"
	"os"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/jsonpos"
)

// errica is one fold of an Errica et al. split file.
type errica struct {
	Test           []int `json:"test"`
	ModelSelection []struct {
		Train      []int `json:"train"`
		Validation []int `json:"validation"`
	} `json:"model_selection"`
}

// ReadSplitsFile reads an Errica split file for a dataset of n graphs.
func ReadSplitsFile(path string, n int) ([]data.Split, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading splits: %w", err)
	}
	s, err := ParseSplits(path, b, n)
	if err != nil {
		return nil, fmt.Errorf("reading splits: %w", err)
	}
	return s, nil
}

// ParseSplits decodes b, the Errica split file called name: a JSON list
// of folds
// {"test": [...], "model_selection": [{"train": [...], "validation": [...]}]}
// with exactly one model-selection entry each. It checks that indices lie
// in 0..n-1, that each fold's train, validation and test parts are disjoint
// and together hold every graph, and that every graph is tested in exactly
// one fold. Errors start with name (and the line and column, for JSON's).
func ParseSplits(name string, b []byte, n int) ([]data.Split, error) {
	var folds []errica
	if err := jsonpos.Strict(name, b, &folds); err != nil {
		return nil, err
	}
	out, err := checkFolds(folds, n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// checkFolds returns the splits of folds, after ParseSplits's checks.
func checkFolds(folds []errica, n int) ([]data.Split, error) {
	if len(folds) == 0 {
		return nil, fmt.Errorf("no folds")
	}
	tested := make([]int, n)
	out := make([]data.Split, len(folds))
	for i, f := range folds {
		if len(f.ModelSelection) != 1 {
			return nil, fmt.Errorf("fold %d: %d model_selection entries, want 1", i, len(f.ModelSelection))
		}
		s := data.Split{Train: f.ModelSelection[0].Train, Val: f.ModelSelection[0].Validation, Test: f.Test}
		if err := s.Validate(n); err != nil {
			return nil, fmt.Errorf("fold %d: %w", i, err)
		}
		if got := len(s.Train) + len(s.Val) + len(s.Test); got != n {
			return nil, fmt.Errorf("fold %d: train, validation and test hold %d graphs, dataset has %d", i, got, n)
		}
		for _, t := range s.Test {
			tested[t]++
		}
		out[i] = s
	}
	for g, c := range tested {
		if c != 1 {
			return nil, fmt.Errorf("graph %d is tested in %d folds, want exactly 1", g, c)
		}
	}
	return out, nil
}
