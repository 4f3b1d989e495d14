package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/spn-project/spn/schema"
)

// jsonHash is hashOf as the bytes json.Marshal gives: the definition the
// cache's keys were made with, which hashOf must keep.
func jsonHash(t testing.TB, d keyDoc) string {
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestHashOfMatchesJSON: hashOf hashes exactly json.Marshal's encoding of
// a key document whose parameters are json.Marshal's output (as the
// builder's always are), for the key, version-free key and seed key of
// every node of a large plan and of a CUDA one, and for documents with
// nothing to encode, strings json escapes (quotes, controls, HTML, non-
// ASCII) and nil or empty dependency lists.
func TestHashOfMatchesJSON(t *testing.T) {
	html, err := json.Marshal(map[string]string{"x": "<&>\u2028"}) // escaped as json.Marshal does
	if err != nil {
		t.Fatal(err)
	}
	docs := []keyDoc{
		{Kind: "train", Version: "3", Params: json.RawMessage(`{"a":1}`), Deps: []string{"ab", "cd"}},
		{Kind: "train", Params: json.RawMessage(`{}`), Deps: []string{}},
		{Kind: "generate", Version: "1", Params: html},
		{},
		{Kind: `q"uo\te`, Version: "3+rspn.2", Params: json.RawMessage(`null`), Deps: []string{"\x00\n\t", "é", "<a&b>", "\u2028"}},
		{Kind: "\x7f\xff", Version: "v", Params: json.RawMessage(`[1,2]`), Deps: []string{""}},
	}
	for _, d := range docs {
		if got, want := hashOf(d), jsonHash(t, d); got != want {
			t.Errorf("hashOf(%+v) = %s, json.Marshal's %s", d, got, want)
		}
	}
	cuda := testSpec()
	cuda.Device = "cuda" // train stages get a seed key of their own
	for _, spec := range []*schema.Spec{bigSpec(), cuda} {
		p, err := Build(spec, testRegistry(nil))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range p.Nodes {
			keys, vkeys, seeds := make([]string, len(n.Deps)), make([]string, len(n.Deps)), make([]string, len(n.Deps))
			for i, d := range n.Deps {
				keys[i], vkeys[i], seeds[i] = d.Key, d.VKey, d.SeedKey
			}
			if want := jsonHash(t, keyDoc{Kind: n.Kind, Version: n.Version, Params: n.JSON, Deps: keys}); n.Key != want {
				t.Fatalf("%s: key %s, json.Marshal's hash %s", n.Name, n.Key, want)
			}
			if want := jsonHash(t, keyDoc{Kind: n.Kind, Params: n.JSON, Deps: vkeys}); n.VKey != want {
				t.Fatalf("%s: version-free key %s, json.Marshal's hash %s", n.Name, n.VKey, want)
			}
			cpu, _ := seedParams(n.Params)
			raw, err := json.Marshal(cpu)
			if err != nil {
				t.Fatal(err)
			}
			if want := jsonHash(t, keyDoc{Kind: n.Kind, Version: n.Version, Params: raw, Deps: seeds}); n.SeedKey != want {
				t.Fatalf("%s: seed key %s, json.Marshal's hash %s", n.Name, n.SeedKey, want)
			}
		}
		if spec == cuda && seedKeysAreKeys(p) {
			t.Fatal("the CUDA plan has no seed key that differs from its key: the seed-key hash is not checked")
		}
	}
}

// seedKeysAreKeys reports whether every node's seed key is its key.
func seedKeysAreKeys(p *Plan) bool {
	for _, n := range p.Nodes {
		if n.SeedKey != n.Key {
			return false
		}
	}
	return true
}

// FuzzHashOf: hashOf agrees with json.Marshal's encoding for any strings.
func FuzzHashOf(f *testing.F) {
	f.Add("train", "3", "ab", "cd", true)
	f.Add(`"<\>&`, "", "\xff", "\u2028", false)
	f.Fuzz(func(t *testing.T, kind, version, dep0, dep1 string, withDeps bool) {
		d := keyDoc{Kind: kind, Version: version, Params: json.RawMessage(`{"k":1}`)}
		if withDeps {
			d.Deps = []string{dep0, dep1}
		}
		if got, want := hashOf(d), jsonHash(t, d); got != want {
			t.Errorf("hashOf(%q) = %s, json.Marshal's %s", d, got, want)
		}
	})
}
