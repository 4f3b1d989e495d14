package models_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/internal/testkit/ref"
	"github.com/spn-project/spn/models/internal/testkit/refkind"
	"github.com/spn-project/spn/models/kernels"
)

func TestCheckpointRoundTrip(t *testing.T) {
	ds, hops := ref.TestData(t, 10)
	reg := refkind.HandWritten()
	be := kernels.CPU{Threads: 1}
	m, _ := reg.New(ref.TestConfig("spn", 2, "max", 0.2), 1, be)
	b := ref.BatchOf(t, ds, hops, []int{1, 2, 3}, 2)
	m.Forward(b, true) // moves the running statistics away from their initial values
	var buf bytes.Buffer
	if err := models.WriteCheckpoint(&buf, m); err != nil {
		t.Fatal(err)
	}
	m2, err := models.ReadCheckpoint(bytes.NewReader(buf.Bytes()), reg, be)
	if err != nil {
		t.Fatal(err)
	}
	o1, _ := m.Forward(b, false)
	o1 = slices.Clone(o1)
	o2, _ := m2.Forward(b, false)
	if !slices.Equal(o1, o2) {
		t.Fatalf("reloaded model gives %v, want %v", o2, o1)
	}
	var buf2 bytes.Buffer
	models.WriteCheckpoint(&buf2, m2)
	if !bytes.Equal(buf.Bytes(), buf2.Bytes()) {
		t.Fatal("re-saved checkpoint differs")
	}
	good := buf.String()
	tests := []struct{ name, edit, want string }{
		{"format", strings.Replace(good, `"spn-model"`, `"other"`, 1), `format "other"`},
		{"version", strings.Replace(good, `"version":1`, `"version":7`, 1), "version 7"},
		{"kind", strings.Replace(good, `"kind":"spn"`, `"kind":"gcn"`, 1), `model.kind "gcn" is unknown to this model registry`},
		{"name", strings.Replace(good, `"enc.emb"`, `"enc.xxx"`, 1), `parameter 0 is "enc.xxx", want "enc.emb"`},
		{"shape", strings.Replace(good, `"shape":[3,8]`, `"shape":[4,8]`, 1), "parameter enc.emb has shape [4 8]"},
		{"truncated", good[:len(good)/2], "reading checkpoint"},
		{"a value less", strings.Replace(good, `"values":[0.5570494,`, `"values":[`, 1), "reading checkpoint: parameter enc.emb has shape [3 8] and 23 values, want shape [3 8]"},
		{"wider", strings.Replace(good, `"hidden":8`, `"hidden":9`, 1), "reading checkpoint: parameter enc.emb has shape [3 8] and 24 values, want shape [3 9]"},
		// A model far larger than the file (but under MaxParamValues) is
		// not built to compare its parameters.
		{"much wider", strings.Replace(good, `"hidden":8`, `"hidden":1000`, 1), "reading checkpoint: 641 parameter values, the spn model of its config has 6030017"},
		{"far too wide", strings.Replace(good, `"hidden":8`, `"hidden":2000000`, 1), "reading checkpoint: config: model.kind \"spn\" with hidden = 2000000, layers = 3: 24000060000017 (2.4e+13) parameter values; at most 1073741824 (2^30) are allowed"},
		{"unknown field", strings.Replace(good, `{"format"`, `{"x":1,"format"`, 1), `unknown field "x"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := models.ReadCheckpoint(strings.NewReader(tc.edit), reg, be)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want containing %q", err, tc.want)
			}
		})
	}
}

// FuzzReadCheckpoint checks that any bytes give a model or an error, never
// a panic, and that an accepted checkpoint re-encodes to a valid one.
func FuzzReadCheckpoint(f *testing.F) {
	m, err := ref.NewSPN(ref.TestConfig("spn", 2, "sum", 0), 1)
	if err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	if err := models.WriteCheckpoint(&buf, m); err != nil {
		f.Fatal(err)
	}
	good := buf.Bytes()
	f.Add(good)
	f.Add(good[:len(good)/3])
	f.Add([]byte(`{"format":"spn-model","version":1,"config":{"model":{"kind":"gin","k":1,"layers":1,"hidden":1,"pool":"max"},"task":"regression","out":1}}`))
	f.Add([]byte(`{"format":"spn-model","version":1,"config":{"model":{"kind":"spn","k":1000000,"layers":1000000,"hidden":1000000},"task":"classification","out":2}}`))
	f.Add(bytes.Replace(good, []byte(`"hidden":8`), []byte(`"hidden":80000`), 1))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<20 {
			return
		}
		m, err := models.ReadCheckpoint(bytes.NewReader(b), refkind.HandWritten(), kernels.CPU{})
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := models.WriteCheckpoint(&out, m); err != nil {
			return // NaN-free JSON can still decode to values models.WriteCheckpoint refuses
		}
		if _, err := models.ReadCheckpoint(&out, refkind.HandWritten(), kernels.CPU{}); err != nil {
			t.Fatalf("re-encoded checkpoint fails to load: %v", err)
		}
	})
}
