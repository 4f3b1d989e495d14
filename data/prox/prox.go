// Package prox generates the h-Proximity datasets of Abboud, Dimitrov and
// Ceylan (LoG 2022, Appendix D), following the official SP-MPNN generator:
//
//   - Each graph is a layered graph: L levels of w nodes each (node id
//     level*w + j), consecutive levels completely connected, no edges within
//     a level. L and w are drawn once per graph, uniformly from the
//     inclusive ranges Config.Levels and Config.Width; the official code
//     draws np.random.randint(15, 25) and randint(3, 10), i.e. L in 15..24
//     and w in 3..9 (every level of a graph has the same width), which are
//     the defaults here.
//   - Colours (node labels, 10 in all): 0 white, 1 red, 2 blue, 3..9
//     auxiliary. A positive graph has 1, 2 or 3 red nodes (the pairs are
//     split evenly between the three counts) and every red node has exactly
//     MaxBlue = 2 blue nodes within h hops: blue nodes are sampled one at a
//     time among the nodes whose addition keeps every red node at or below
//     2 (rejection sampling, at most 200 colouring tries per graph, then a
//     fresh graph is drawn). Then 0..3 "distant" blue nodes are placed among
//     the nodes farther than h from every red node, and every remaining
//     node gets a colour drawn uniformly from {0, 3, ..., 9}.
//   - The negative twin is the positive graph plus one new edge, drawn
//     uniformly among the non-edges that bring some blue node that was
//     farther than h from some red node within h of it, so that red node
//     then has 3 blue nodes within h hops. (The official code accepts any
//     non-edge that creates a red-blue path of length <= h, even between a
//     pair that was already within h, which can leave the twin positive;
//     here every graph is checked by the independent checker in package
//     proxcheck and the twin is drawn so that it is truly negative.)
//     That is Config.Negatives "strict" (the default). With "code" the
//     twin follows the official rule instead (graph_modifier.py,
//     modify_add_edge): the new edge is drawn uniformly among the ordered
//     non-edges (src, dst) with min_r d(dst, r) + min_b d(src, b) < h on
//     the positive graph (r over red, b over blue nodes), labelled
//     negative whatever it does; a twin may then still satisfy the rule
//     (label noise: none at h = 1, about 40 % of twins at h = 3).
//     Candidates are checked by proxcheck.CodeEdge, an independent
//     implementation of that rule.
//   - Config.Balanced (beyond the paper) also gives the positive graph one
//     extra edge, drawn uniformly among the non-edges that keep it
//     positive and, when there are any, span as many levels as the twin's
//     edge (|level(u) − level(v)|), so both classes have exactly one edge
//     outside the level structure. Both graphs are checked by proxcheck.
//   - Config.ColourBlind (beyond the paper) sets every node label to 0
//     after generation and checking: the same graphs and classes without
//     colours, a control in which only structure can separate the classes.
//   - Class 1 is positive, class 0 negative; a pair's positive graph comes
//     first, then its negative twin.
//
// Splits: Config.Folds fixed folds over pairs (twins always share a fold,
// so no fold sees a graph's twin in another part). Pairs are shuffled
// within each red count and dealt round-robin into Folds parts, so every
// part has the same class balance (exactly 50/50) and red-count mix. Fold
// i tests on part i, validates on part (i+1) mod Folds and trains on the
// rest (80/10/10 for 10 folds).
package prox

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/proxcheck"
	"github.com/spn-project/spn/internal/par"
)

// Config parameterises the generator; zero fields take the defaults.
type Config struct {
	// H is the proximity threshold h (>= 1).
	H int
	// Graphs is the total number of graphs, even (default 9000).
	Graphs int
	// Levels and Width are inclusive [min, max] ranges (default [15, 24]
	// and [3, 9]).
	Levels, Width [2]int
	// Seed seeds every random choice.
	Seed int64
	// Folds is the number of folds (default 10, at least 3).
	Folds int
	// Negatives is how the negative twin's edge is drawn: NegStrict
	// ("strict", also "") or NegCode ("code", the official rule).
	Negatives string
	// Balanced gives every positive graph one extra edge that keeps it
	// positive.
	Balanced bool
	// ColourBlind sets every node label to 0 (White).
	ColourBlind bool
	// Threads bounds the worker goroutines (0: GOMAXPROCS); the output does
	// not depend on it.
	Threads int
}

// Values of Config.Negatives.
const (
	NegStrict = "strict"
	NegCode   = "code"
)

// Defaults of Config.
const (
	DefaultGraphs = 9000
	DefaultFolds  = 10
	// ColouringTries is the number of colouring attempts on one graph
	// before a new graph is drawn (as in the official code).
	ColouringTries = 200
	// maxRedraws bounds the fresh graphs drawn for one pair.
	maxRedraws = 10000
)

// DefaultLevels and DefaultWidth are the official generator's ranges.
var (
	DefaultLevels = [2]int{15, 24}
	DefaultWidth  = [2]int{3, 9}
)

// withDefaults fills zero fields and validates the configuration.
func (c Config) withDefaults() (Config, error) {
	if c.Graphs == 0 {
		c.Graphs = DefaultGraphs
	}
	if c.Levels == [2]int{} {
		c.Levels = DefaultLevels
	}
	if c.Width == [2]int{} {
		c.Width = DefaultWidth
	}
	if c.Folds == 0 {
		c.Folds = DefaultFolds
	}
	if c.Negatives == "" {
		c.Negatives = NegStrict
	}
	switch {
	case c.Negatives != NegStrict && c.Negatives != NegCode:
		return c, fmt.Errorf("negatives must be %q or %q, got %q", NegStrict, NegCode, c.Negatives)
	case c.H < 1:
		return c, fmt.Errorf("h must be >= 1, got %d", c.H)
	case c.Graphs < 2 || c.Graphs%2 != 0:
		return c, fmt.Errorf("graphs must be a positive even number, got %d", c.Graphs)
	case c.Levels[0] < 2 || c.Levels[1] < c.Levels[0]:
		return c, fmt.Errorf("levels range %v must satisfy 2 <= min <= max", c.Levels)
	case c.Width[0] < 1 || c.Width[1] < c.Width[0]:
		return c, fmt.Errorf("width range %v must satisfy 1 <= min <= max", c.Width)
	case c.Levels[0]*c.Width[0] < 3+2*3+3:
		return c, fmt.Errorf("graphs of %d nodes are too small for 3 red and 6 blue nodes", c.Levels[0]*c.Width[0])
	case c.Folds < 3:
		return c, fmt.Errorf("folds must be >= 3, got %d", c.Folds)
	case c.Graphs/2 < c.Folds:
		return c, fmt.Errorf("%d pairs cannot fill %d folds", c.Graphs/2, c.Folds)
	}
	return c, nil
}

// Validate reports what Generate would reject in cfg (after defaults),
// without generating anything; spn vet checks the same bounds.
func (c Config) Validate() error {
	_, err := c.withDefaults()
	return err
}

// Name returns the dataset name for threshold h, e.g. "prox-h3".
func Name(h int) string { return fmt.Sprintf("prox-h%d", h) }

// Generate builds the h-Proximity dataset described by cfg. Pair p is drawn
// from its own PCG stream (Seed, p), so the result does not depend on the
// number of threads.
func Generate(ctx context.Context, cfg Config) (*data.Dataset, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("generating h-proximity: %w", err)
	}
	pairs := cfg.Graphs / 2
	// Red counts 3, 2, 1 in blocks, as the official generator orders them.
	reds := make([]int, pairs)
	for p := range reds {
		reds[p] = 3 - p*3/pairs
	}
	graphs := make([]data.Graph, cfg.Graphs)
	err = par.Each(ctx, pairs, cfg.Threads, func(p int) error {
		rng := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(p)))
		pos, neg, err := pair(rng, cfg, reds[p])
		if err != nil {
			return fmt.Errorf("pair %d: %w", p, err)
		}
		graphs[2*p], graphs[2*p+1] = pos, neg
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("generating h-proximity (h=%d): %w", cfg.H, err)
	}
	if cfg.ColourBlind {
		for i := range graphs {
			clear(graphs[i].Labels)
		}
	}
	ds := &data.Dataset{
		Name:       Name(cfg.H),
		Graphs:     graphs,
		NumLabels:  proxcheck.NumColours,
		NumClasses: 2,
		Splits:     folds(cfg, reds),
	}
	if err := ds.Validate(); err != nil {
		return nil, fmt.Errorf("generating h-proximity: %w", err)
	}
	return ds, nil
}

// folds deals the pairs into cfg.Folds parts, stratified by red count.
func folds(cfg Config, reds []int) []data.Split {
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 1<<63|uint64(cfg.Folds)))
	parts := make([][]int, cfg.Folds)
	k := 0
	for r := 3; r >= 1; r-- {
		var group []int
		for p, c := range reds {
			if c == r {
				group = append(group, p)
			}
		}
		rng.Shuffle(len(group), func(i, j int) { group[i], group[j] = group[j], group[i] })
		for _, p := range group {
			parts[k%cfg.Folds] = append(parts[k%cfg.Folds], 2*p, 2*p+1)
			k++
		}
	}
	out := make([]data.Split, cfg.Folds)
	for i := range out {
		v := (i + 1) % cfg.Folds
		s := data.Split{Test: sorted(parts[i]), Val: sorted(parts[v])}
		var train []int
		for j, part := range parts {
			if j != i && j != v {
				train = append(train, part...)
			}
		}
		s.Train = sorted(train)
		out[i] = s
	}
	return out
}

func sorted(s []int) []int {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
