package expressivity

import (
	"slices"
	"testing"
)

func TestParseKs(t *testing.T) {
	got, err := ParseKs("5, 1-3,2")
	if err != nil || len(got) != 4 || got[0] != 1 || got[3] != 5 {
		t.Errorf("ParseKs = %v, %v", got, err)
	}
	for _, bad := range []string{"x", "0", "2-1", "1-", "-3", "1,,2"} {
		if _, err := ParseKs(bad); err == nil {
			t.Errorf("ParseKs(%q) accepted", bad)
		}
	}
}

// FuzzParseKs: --k never panics, and what it accepts is a sorted list of
// distinct hop counts of at least 1 (nil for "").
func FuzzParseKs(f *testing.F) {
	for _, s := range []string{"", "1", "1,2,5", "1-4", "1-3,6", "5, 1-3,2", "0", "3-1", "1-", "-1", "1-65537", "a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 64 { // a range spans at most 2^16 values: keep an input's lists small
			return
		}
		ks, err := ParseKs(s)
		if err != nil {
			return
		}
		if s == "" && ks != nil || s != "" && len(ks) == 0 {
			t.Fatalf("%q: %v", s, ks)
		}
		if !slices.IsSorted(ks) || len(slices.Compact(slices.Clone(ks))) != len(ks) || len(ks) > 0 && ks[0] < 1 {
			t.Fatalf("%q: %v is not sorted distinct hop counts >= 1", s, ks)
		}
	})
}
