// Package lrgb fetches the upstream files of the Long Range Graph
// Benchmark's Peptides-func (Dwivedi et al., NeurIPS 2022 Datasets and
// Benchmarks): 15,535 peptides as SMILES with 10 binary function labels,
// and the official split. spn does not read them itself: the project
// script scripts/data/lrgb_peptides.py turns them into spn JSON Lines with
// RDKit and OGB's molecule features, and `spn data import` stores the
// result under the name peptides-func (docs/lrgb.md).
package lrgb

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spn-project/spn/data/fetch"
)

// Name is the dataset's name in `spn data fetch` and, once converted and
// imported, in a spec's dataset.
const Name = "peptides-func"

// Script converts the fetched files (relative to the repository root).
const Script = "scripts/data/lrgb_peptides.py"

// file is one upstream file with its pinned SHA-256.
type file struct {
	url, sha256 string
}

// files are the two upstream files. LRGB's loader pins their MD5s
// (701eb743e899f4d793f0e13c8fa5a1b4 and 5a0114bdadc80b94fc7ae974f13ef061,
// which the conversion script checks); these are the SHA-256s of the same
// bytes.
var files = []file{
	{fetch.PeptidesFuncCSV, "e314f7dfb1ac46ef83fe5f5aa4fe502ad4527da633b64e6b997cb0c452511de3"},
	{fetch.PeptidesFuncSplit, "4573079852cce8867ad2d734c5dd22d77538bbe9f628223a8d4b3b531f6fffd0"},
}

// URLs returns the upstream locations of the two files.
func URLs() []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.url
	}
	return out
}

// Fetch fetches (or finds in f.DataDir) the two files, each recorded in
// and checked against the data directory's lock file, and checks them
// against upstream's pinned SHA-256s: a difference is an error naming the
// file, or a warning with f.AcceptMismatch. It returns the folder that
// holds both, the conversion script's DIR.
func Fetch(ctx context.Context, f *fetch.Fetcher) (dir string, err error) {
	for _, up := range files {
		p, err := f.Get(ctx, up.url)
		if err != nil {
			return "", err
		}
		sum, err := fetch.FileSHA256(p)
		if err != nil {
			return "", err
		}
		if sum != up.sha256 {
			msg := fmt.Sprintf("%s: sha256 %s, upstream's is %s: this is not LRGB's %s", p, sum, up.sha256, filepath.Base(p))
			if !f.AcceptMismatch {
				return "", fmt.Errorf("%s; %s", msg, fetch.MismatchHint)
			}
			if f.Log != nil {
				f.Log.Warn("file differs from upstream's; accepted (--accept-data-mismatch)", "error", msg)
			}
		}
		dir = filepath.Dir(p)
	}
	return dir, nil
}
