package schema

import (
	"strings"
	"testing"
)

func TestParseDevice(t *testing.T) {
	for _, c := range []struct {
		in      string
		kind    string
		ordinal int
	}{
		{"cpu", DeviceCPU, 0}, {"auto", DeviceAuto, 0}, {"cuda", DeviceCUDA, 0},
		{"cuda:0", DeviceCUDA, 0}, {"cuda:3", DeviceCUDA, 3}, {"cuda:15", DeviceCUDA, 15},
	} {
		k, o, err := ParseDevice(c.in)
		if err != nil || k != c.kind || o != c.ordinal {
			t.Errorf("ParseDevice(%q) = %q, %d, %v; want %q, %d", c.in, k, o, err, c.kind, c.ordinal)
		}
	}
	for _, bad := range []string{"", "gpu", "CPU", "cuda:", "cuda:-1", "cuda:+1", "cuda:01", "cuda:x", "cuda: 1", "cuda:99999", "cuda:1:2", "rocm"} {
		_, _, err := ParseDevice(bad)
		if err == nil || !strings.Contains(err.Error(), `is not a device: use "cpu", "auto", "cuda" or "cuda:N"`) {
			t.Errorf("ParseDevice(%q): %v", bad, err)
		}
	}
}

func FuzzParseDevice(f *testing.F) {
	for _, s := range []string{"cpu", "auto", "cuda", "cuda:7", "cuda:07", "cuda:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, o, err := ParseDevice(s)
		if err != nil {
			return
		}
		if o < 0 || (k != DeviceCUDA && o != 0) {
			t.Fatalf("ParseDevice(%q) = %q, %d", s, k, o)
		}
	})
}

// TestSpecDevices loads a spec with every device form: each loads as
// written (commands resolve "auto" and "cuda").
func TestSpecDevices(t *testing.T) {
	for _, d := range []string{"cpu", "auto", "cuda", "cuda:2"} {
		src := "package spn\nname: \"d\"\ndevice: \"" + d + "\"\nexperiments: a: {dataset: {kind: \"prox\", h: 3}, model: kind: \"spn\"}\n"
		spec, err := LoadBytes("d.cue", []byte(src), Options{Models: testModels})
		if err != nil {
			t.Fatalf("device %q: %v", d, err)
		}
		if spec.Device != d {
			t.Errorf("device %q loaded as %q", d, spec.Device)
		}
	}
}
