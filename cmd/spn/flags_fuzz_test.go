package main

import (
	"slices"
	"testing"
)

// FuzzParseGPUs: --gpus never panics; "all" is every ordinal below the
// device count, and any other list it accepts is of distinct ordinals
// that are not negative, one for each comma-separated field.
func FuzzParseGPUs(f *testing.F) {
	for _, s := range []string{"all", "0", "0,1,3", " 2 , 0", "0,0", "-1", "", "x", "1,,2"} {
		f.Add(s, 2)
	}
	f.Fuzz(func(t *testing.T, list string, devices int) {
		devices = min(max(devices, 0), 64)
		got, err := parseGPUs(list, devices)
		if err != nil {
			return
		}
		if list == "all" {
			if len(got) != devices {
				t.Fatalf("all of %d GPUs: %v", devices, got)
			}
			for i, o := range got {
				if o != i {
					t.Fatalf("all of %d GPUs: %v", devices, got)
				}
			}
			return
		}
		fields := 1
		for _, c := range list {
			if c == ',' {
				fields++
			}
		}
		if len(got) != fields {
			t.Fatalf("%q: %d ordinals %v for %d fields", list, len(got), got, fields)
		}
		seen := map[int]bool{}
		for _, o := range got {
			if o < 0 || seen[o] {
				t.Fatalf("%q: ordinals %v", list, got)
			}
			seen[o] = true
		}
	})
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
		ks, err := parseKs(s)
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
