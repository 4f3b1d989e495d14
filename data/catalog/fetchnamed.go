package catalog

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/data/lrgb"
)

// CheckFetchable returns an error naming the first of names that Fetch
// does not fetch, and the names it does (Fetchable).
func CheckFetchable(names []string) error {
	known := Fetchable()
	for _, n := range names {
		if !slices.Contains(known, n) {
			return fmt.Errorf("cannot fetch %q (known: %s)", n, strings.Join(known, ", "))
		}
	}
	return nil
}

// Fetch fetches the fetchable dataset name through f. With refresh its
// upstream files (URLs) are forgotten first: fetched again, their new
// checksums recorded in the lock file (after a damaged or changed file).
// LRGB's Peptides-func is fetched as its two raw files, checked against
// upstream's SHA-256s, for the conversion script: lrgbDir is where they
// are (spn reads the converted set once imported). Any other dataset is
// fetched and parsed, every file checked against its built-in content
// figures (FetchKnown), so that a broken or changed file is reported now,
// not at training. f.Sources() lists the files served, also after an
// error.
func Fetch(ctx context.Context, f *fetch.Fetcher, name string, refresh bool) (lrgbDir string, err error) {
	if refresh {
		for _, u := range URLs(name) {
			if err := f.Forget(ctx, u); err != nil {
				return "", err
			}
		}
	}
	if name == lrgb.Name {
		return lrgb.Fetch(ctx, f)
	}
	_, err = FetchKnown(ctx, f, name)
	return "", err
}
