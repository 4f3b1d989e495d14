package exec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spn-project/spn/internal/atomicfile"
	"github.com/spn-project/spn/internal/jsonpos"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/plan"
)

// PlanFileVersion is the format version of plan files.
const PlanFileVersion = 1

// PlanFile is a set of planned stages written to the cache, so that another
// process (a Slurm job, a test, any scheduler) can run one of them with
// `spn stage run KEY --plan FILE`. It holds everything a stage needs but
// the stage kinds' code: parameters and the inputs' kinds, keys and names
// (the inputs themselves are read from the cache).
type PlanFile struct {
	Version int        `json:"version"`
	Spec    string     `json:"spec"`
	Nodes   []PlanNode `json:"nodes"`
}

// PlanNode is one stage of a plan file.
type PlanNode struct {
	Key         string `json:"key"`
	Kind        string `json:"kind"`
	KindVersion string `json:"kind_version"`
	VKey        string `json:"vkey,omitempty"`
	// SeedKey is plan.Node.SeedKey where it is not Key (a GPU plan's).
	SeedKey string          `json:"seed_key,omitempty"`
	Name    string          `json:"name"`
	Params  json.RawMessage `json:"params"`
	Inputs  []cache.Input   `json:"inputs"`
}

// NewPlanFile describes the given nodes.
func NewPlanFile(spec string, nodes []*plan.Node) *PlanFile {
	f := &PlanFile{Version: PlanFileVersion, Spec: spec, Nodes: make([]PlanNode, len(nodes))}
	for i, n := range nodes {
		in := make([]cache.Input, len(n.Deps))
		for j, d := range n.Deps {
			in[j] = cache.Input{Kind: d.Kind, Key: d.Key, Name: d.Name}
		}
		f.Nodes[i] = PlanNode{Key: n.Key, Kind: n.Kind, KindVersion: n.Version, VKey: n.VKey,
			Name: n.Name, Params: n.JSON, Inputs: in}
		if n.SeedKey != n.Key {
			f.Nodes[i].SeedKey = n.SeedKey
		}
	}
	return f
}

// Write stores the plan file under dir (created if needed) as
// <sha256 of its content>.json, atomically, and returns its path. Equal
// plan files share one path.
func (f *PlanFile) Write(dir string) (string, error) {
	b, err := json.Marshal(f)
	if err != nil {
		return "", fmt.Errorf("encoding plan file: %w", err)
	}
	sum := sha256.Sum256(b)
	path := filepath.Join(dir, hex.EncodeToString(sum[:16])+".json")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// ReadPlanFile reads and checks a plan file.
func ReadPlanFile(path string) (*PlanFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading plan file: %w", err)
	}
	return ParsePlanFile(path, b)
}

// ParsePlanFile decodes and checks the content of a plan file; name is
// used in errors.
func ParsePlanFile(name string, b []byte) (*PlanFile, error) {
	var f PlanFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("plan file %w", jsonpos.Wrap(name, b, err))
	}
	if f.Version != PlanFileVersion {
		return nil, fmt.Errorf("plan file %s: format version %d, this spn reads %d", name, f.Version, PlanFileVersion)
	}
	seen := map[string]bool{}
	for i, n := range f.Nodes {
		switch {
		case n.Key == "" || n.Kind == "":
			return nil, fmt.Errorf("plan file %s: nodes[%d]: missing key or kind", name, i)
		case !validKey(n.Key):
			return nil, fmt.Errorf("plan file %s: nodes[%d]: invalid key %q", name, i, n.Key)
		case seen[n.Key]:
			return nil, fmt.Errorf("plan file %s: nodes[%d]: duplicate key %s", name, i, n.Key)
		}
		seen[n.Key] = true
		for j, in := range n.Inputs {
			if in.Kind == "" || !validKey(in.Key) {
				return nil, fmt.Errorf("plan file %s: nodes[%d].inputs[%d]: invalid input", name, i, j)
			}
		}
	}
	return &f, nil
}

// validKey accepts keys usable as file names: hex digits and letters only.
func validKey(k string) bool {
	if k == "" || len(k) > 128 {
		return false
	}
	for _, c := range k {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// Node returns the plan node of key, with its inputs as dependency nodes
// (key, kind and name only).
func (f *PlanFile) Node(key string) (*plan.Node, error) {
	for _, pn := range f.Nodes {
		if pn.Key != key {
			continue
		}
		deps := make([]*plan.Node, len(pn.Inputs))
		for i, in := range pn.Inputs {
			deps[i] = &plan.Node{Key: in.Key, Kind: in.Kind, Name: in.Name}
		}
		seedKey := pn.SeedKey
		if seedKey == "" {
			seedKey = pn.Key
		}
		return &plan.Node{Key: pn.Key, Kind: pn.Kind, Version: pn.KindVersion, VKey: pn.VKey,
			SeedKey: seedKey, Name: pn.Name, JSON: pn.Params, Deps: deps}, nil
	}
	return nil, errors.New("stage " + key + " is not in the plan file")
}
