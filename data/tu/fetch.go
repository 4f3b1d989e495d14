package tu

import (
	"context"
	"fmt"
	"slices"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/data/known"
)

// Names are the TU datasets Fetch knows, with Errica splits.
var names = []string{"DD", "ENZYMES", "NCI1", "PROTEINS", "PROTEINS_full"}

// Names returns the dataset names Fetch accepts.
func Names() []string { return slices.Clone(names) }

// SplitsName returns the name of the Errica split file used for dataset
// name: PROTEINS uses PROTEINS_full's (same 1113 graphs in the same order).
func SplitsName(name string) string {
	if name == "PROTEINS" {
		return "PROTEINS_full"
	}
	return name
}

// URLs returns the upstream locations of a dataset's zip and split file.
func URLs(name string) (zipURL, splitsURL string) {
	return fetch.TUBase + name + ".zip", fetch.ErricaBase + SplitsName(name) + "_splits.json"
}

// Fetch fetches (or finds in f.DataDir) the zip and split file of the TU
// dataset name, loads them, checks both against their built-in content
// figures (fetch.Fetcher.Verify) and keeps the node inputs Errica et al. use (see
// ErricaFeatures).
func Fetch(ctx context.Context, f *fetch.Fetcher, name string) (*data.Dataset, error) {
	if !slices.Contains(names, name) {
		return nil, fmt.Errorf("unknown TU dataset %q (known: %v)", name, names)
	}
	zipURL, splitsURL := URLs(name)
	zp, err := f.Get(ctx, zipURL)
	if err != nil {
		return nil, err
	}
	sp, err := f.Get(ctx, splitsURL)
	if err != nil {
		return nil, err
	}
	ds, err := Load(zp, sp)
	if err != nil {
		return nil, fmt.Errorf("%w; %s", err, fetch.RefreshHint(name))
	}
	// The zip's figures are those of its graphs as read, before the
	// protocol drops attributes; the split file has its own.
	splits := ds.Splits
	ds.Splits = nil
	zipFigs := known.Of(ds)
	ds.Splits = splits
	if err := f.Verify(zp, zipURL, zipFigs); err != nil {
		return nil, err
	}
	if err := f.Verify(sp, splitsURL, known.OfSplits(splits)); err != nil {
		return nil, err
	}
	ErricaFeatures(ds)
	return ds, nil
}

// ErricaFeatures keeps the node inputs of Errica et al.'s protocol
// (gnn-comparison, datasets/manager.py): node labels for every dataset (one
// embedding row per distinct label value), and the real node attributes
// only for ENZYMES (18 attributes + 3 labels = their 21 features). PROTEINS
// and PROTEINS_full use the 3 labels only, so their attributes are dropped.
func ErricaFeatures(ds *data.Dataset) {
	if ds.Name == "ENZYMES" {
		return
	}
	ds.AttrDim = 0
	for i := range ds.Graphs {
		ds.Graphs[i].Attrs = nil
	}
}
