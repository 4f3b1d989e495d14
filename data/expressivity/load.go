package expressivity

import (
	"context"
	"io"
	"os"
	"slices"

	"github.com/spn-project/spn/data/exp"
	"github.com/spn-project/spn/data/fetch"
)

// Sources is how Load reaches the inputs that are not files: the
// expressivity datasets (EXP, CEXP) through Fetcher, "-" through Stdin.
type Sources struct {
	Fetcher *fetch.Fetcher
	Stdin   io.Reader
}

// InputError is a PAIRS.jsonl input that cannot be opened or read: the
// user's to fix. Its message is Err's.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Load returns the pairs to analyse: with paper the paper's Section 4
// pairs (with their claims); else, for source EXP or CEXP, the dataset's
// consecutive graphs (DatasetPairs; by default with k up to its largest
// diameter); else the pairs of the PAIRS.jsonl file source ("-": Stdin).
// ks are the hop limits asked (nil: the default). A file that cannot be
// opened or read is an *InputError; the datasets' errors are returned
// as they are.
func Load(ctx context.Context, src Sources, source string, paper bool, ks []int) (*Input, error) {
	in := &Input{Source: source, Ks: ks}
	switch {
	case paper:
		in.Source = "paper"
		in.Paper = PaperPairs()
		for _, pp := range in.Paper {
			in.Pairs = append(in.Pairs, pp.Pair)
		}
	case slices.Contains(exp.Names(), source):
		in.Dataset = true
		ds, err := exp.Fetch(ctx, src.Fetcher, source)
		if err != nil {
			return nil, err
		}
		pairs, dks, err := DatasetPairs(ds)
		if err != nil {
			return nil, err
		}
		in.Pairs = pairs
		if in.Ks == nil {
			in.Ks = dks
		}
	default:
		r := src.Stdin
		if source != "-" {
			f, err := os.Open(source)
			if err != nil {
				return nil, &InputError{err}
			}
			defer f.Close()
			r = f
		} else {
			in.Source = "stdin"
		}
		var err error
		if in.Pairs, err = ReadPairs(r, in.Source); err != nil {
			return nil, &InputError{err}
		}
	}
	return in, nil
}
