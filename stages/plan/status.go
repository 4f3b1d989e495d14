package plan

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
)

// Store is what Resolve needs to know of a cache.
type Store interface {
	// Has reports whether the stage kind/key is complete.
	Has(kind, key string) (bool, error)
	// Last returns the key and kind version last stored for the
	// version-free hash vkey.
	Last(kind, vkey string) (key, version string, ok bool, err error)
}

// damageReporter is implemented by stores that verify what they hold
// (cache.Cache): Damaged says why a present stage is not served.
type damageReporter interface {
	Damaged(kind, key string) *cache.Damage
}

// lister is implemented by stores that list at once which stages and
// index entries they hold (cache.Cache): Resolve then asks Has, Damaged
// and Last only of those, where a large plan would otherwise try to open
// three files per stage. A stage written after the listing counts as
// absent, as it would had Resolve looked a moment earlier.
type lister interface {
	StageKeys(kind string) (map[string]bool, error)
	IndexKeys(kind string) (map[string]bool, error)
}

var _ lister = (*cache.Cache)(nil)

// listing says whether a stage or an index entry may be in a store: no
// only when the store is a lister and its listing lacks it.
type listing struct {
	ls            lister
	stages, index map[string]map[string]bool // kind → keys, listed on first use
}

func (l *listing) stage(kind, key string) (bool, error) {
	if l.ls == nil {
		return true, nil
	}
	return l.lookup(l.stages, l.ls.StageKeys, kind, key)
}

func (l *listing) indexed(kind, vkey string) (bool, error) {
	if l.ls == nil {
		return true, nil
	}
	return l.lookup(l.index, l.ls.IndexKeys, kind, vkey)
}

func (l *listing) lookup(lists map[string]map[string]bool, list func(string) (map[string]bool, error), kind, key string) (bool, error) {
	keys, ok := lists[kind]
	if !ok {
		var err error
		if keys, err = list(kind); err != nil {
			return false, err
		}
		lists[kind] = keys
	}
	return keys[key], nil
}

// Resolve sets every node's Status and Reason from the store. Reasons are
// "not in cache", "damaged in cache: FILE: PROBLEM", "input NAME must
// run", "code version changed (was V)", "input file changed" (a file
// dataset's file: the stage's key changed under the same version-free
// key) and "an input changed".
func (p *Plan) Resolve(s Store) error {
	l := &listing{stages: map[string]map[string]bool{}, index: map[string]map[string]bool{}}
	l.ls, _ = s.(lister)
	for _, n := range p.Nodes {
		there, err := l.stage(n.Kind, n.Key)
		ok := false
		if err == nil && there {
			ok, err = s.Has(n.Kind, n.Key)
		}
		if err != nil {
			return fmt.Errorf("resolving %s: %w", n.Name, err)
		}
		if ok {
			n.Status, n.Reason = Cached, ""
			continue
		}
		n.Status = ToRun
		var lastKey, lastVer string
		found, err := l.indexed(n.Kind, n.VKey)
		if err == nil && found {
			lastKey, lastVer, found, err = s.Last(n.Kind, n.VKey)
		}
		if err != nil {
			return fmt.Errorf("resolving %s: %w", n.Name, err)
		}
		var dep *Node
		for _, d := range n.Deps {
			if d.Status == ToRun {
				dep = d
				break
			}
		}
		var damage *cache.Damage
		if dr, ok := s.(damageReporter); ok && there {
			damage = dr.Damaged(n.Kind, n.Key)
		}
		switch {
		case damage != nil:
			n.Reason = "damaged in cache, runs again: " + damage.Error()
		case found && lastVer != n.Version:
			n.Reason = fmt.Sprintf("code version changed (was %s)", lastVer)
		case dep != nil:
			n.Reason = fmt.Sprintf("input %s must run", dep.Name)
		case found && lastKey != n.Key && readsFile(n):
			n.Reason = "input file changed"
		case found && lastKey != n.Key:
			n.Reason = "an input changed"
		default:
			n.Reason = "not in cache"
		}
	}
	return nil
}

// Counts returns how many nodes are cached and how many must run.
func (p *Plan) Counts() (cached, toRun int) {
	for _, n := range p.Nodes {
		switch n.Status {
		case Cached:
			cached++
		case ToRun:
			toRun++
		}
	}
	return cached, toRun
}

// WriteText writes one line per stage (status, kind, short key, name and,
// for stages to run, the reason) and a summary line.
func (p *Plan) WriteText(w io.Writer) error {
	for _, n := range p.Nodes {
		line := fmt.Sprintf("%-7s %-10s %s  %s", n.Status, n.Kind, n.ShortKey(), n.Name)
		if n.Reason != "" {
			line += "  (" + n.Reason + ")"
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return fmt.Errorf("writing plan: %w", err)
		}
	}
	c, r := p.Counts()
	if _, err := fmt.Fprintf(w, "%d stages: %d cached, %d to run\n", len(p.Nodes), c, r); err != nil {
		return fmt.Errorf("writing plan: %w", err)
	}
	return p.WriteDevice(w)
}

// WriteDevice writes how many train stages run on a GPU, when any do
// (nothing for a CPU plan).
func (p *Plan) WriteDevice(w io.Writer) error {
	gpu := 0
	for _, n := range p.Nodes {
		if n.Device() != "" {
			gpu++
		}
	}
	if gpu == 0 {
		return nil
	}
	if _, err := fmt.Fprintf(w, "%d train stages run on a GPU (device cuda)\n", gpu); err != nil {
		return fmt.Errorf("writing plan: %w", err)
	}
	return nil
}

// JSONNode is one stage in the JSON view of a plan.
type JSONNode struct {
	Key    string   `json:"key"`
	Kind   string   `json:"kind"`
	Name   string   `json:"name"`
	Deps   []string `json:"deps"`
	Status string   `json:"status"`
	Reason string   `json:"reason,omitempty"`
}

// WriteJSON writes the plan as an indented JSON list of JSONNode.
func (p *Plan) WriteJSON(w io.Writer) error {
	out := make([]JSONNode, len(p.Nodes))
	for i, n := range p.Nodes {
		deps := make([]string, len(n.Deps))
		for j, d := range n.Deps {
			deps[j] = d.Key
		}
		out[i] = JSONNode{Key: n.Key, Kind: n.Kind, Name: n.Name, Deps: deps, Status: n.Status.String(), Reason: n.Reason}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding plan: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing plan: %w", err)
	}
	return nil
}

// readsFile reports whether n's parameters name a file outside the cache
// (stages.FileParams), whose content then stands in its key but not in
// its version-free key.
func readsFile(n *Node) bool {
	fp, ok := n.Params.(stages.FileParams)
	return ok && fp.ReadsFile()
}
