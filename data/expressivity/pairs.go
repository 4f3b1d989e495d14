package expressivity

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/jsonl"
)

// pairRecord is one line of a pairs file.
type pairRecord struct {
	Name string          `json:"name"`
	A    json.RawMessage `json:"a"`
	B    json.RawMessage `json:"b"`
}

// ReadPairs reads pairs of graphs as JSON Lines, one pair per line:
//
//	{"name": "c6-vs-2c3", "a": GRAPH, "b": GRAPH}
//
// GRAPH is a graph of spn's JSONL format ({"nodes": n, "edges": [[u, v],
// ...], "x": [...]}, data/jsonl; "x", "attrs", "y" and "target"
// optional). A missing name becomes "pair N" (N the 1-based line number).
// Blank lines are skipped; errors name file and line.
func ReadPairs(r io.Reader, file string) ([]Pair, error) {
	var out []Pair
	err := jsonl.Lines(r, file, func(no int, line []byte) error {
		p, err := parsePair(line, no)
		if err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no pairs", file)
	}
	return out, nil
}

func parsePair(line []byte, no int) (Pair, error) {
	var rec pairRecord
	if err := jsonl.DecodeLine(line, &rec); err != nil {
		return Pair{}, err
	}
	p := Pair{Name: rec.Name}
	if p.Name == "" {
		p.Name = fmt.Sprintf("pair %d", no)
	}
	for _, side := range []struct {
		key string
		raw json.RawMessage
		g   *data.Graph
	}{{"a", rec.A, &p.A}, {"b", rec.B, &p.B}} {
		if len(side.raw) == 0 || string(side.raw) == "null" {
			return Pair{}, fmt.Errorf("missing graph %q", side.key)
		}
		g, err := jsonl.ParseGraph(side.raw)
		if err != nil {
			return Pair{}, fmt.Errorf("graph %q: %w", side.key, err)
		}
		*side.g = g
	}
	return p, nil
}

// Consecutive pairs the graphs of ds as (0, 1), (2, 3), ..., the layout of
// EXP and CEXP; an odd count is an error.
func Consecutive(ds *data.Dataset) ([]Pair, error) {
	if len(ds.Graphs)%2 != 0 {
		return nil, fmt.Errorf("%s: %d graphs cannot be paired consecutively", ds.Name, len(ds.Graphs))
	}
	out := make([]Pair, len(ds.Graphs)/2)
	for i := range out {
		out[i] = Pair{Name: fmt.Sprintf("%s %d", ds.Name, i), A: ds.Graphs[2*i], B: ds.Graphs[2*i+1]}
	}
	return out, nil
}
