package device

import (
	"testing"

	"github.com/spn-project/spn/models/cuda"
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
		got, err := ParseGPUs(list, devices)
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

// TestOneModel: GPUs of two models (or two compute capabilities) are
// refused, naming both.
func TestOneModel(t *testing.T) {
	h200 := cuda.Device{Ordinal: 0, Name: "NVIDIA H200", Major: 9}
	if err := OneModel([]cuda.Device{h200, {Ordinal: 1, Name: "NVIDIA H200", Major: 9}}); err != nil {
		t.Errorf("two H200s: %v", err)
	}
	err := OneModel([]cuda.Device{h200, {Ordinal: 1, Name: "NVIDIA H200", Major: 9}, {Ordinal: 3, Name: "NVIDIA A100-SXM4-80GB", Major: 8}})
	want := "cuda:0 is NVIDIA H200 (compute capability 9.0) and cuda:3 NVIDIA A100-SXM4-80GB (8.0): results would depend on which GPU a stage ran on; give GPUs of one model"
	if err == nil || err.Error() != want {
		t.Errorf("an H200 and an A100: %v, want %s", err, want)
	}
}
