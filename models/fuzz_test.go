package models

import (
	"bytes"
	"testing"

	"github.com/spn-project/spn/models/kernels"
)

// FuzzReadCheckpoint checks that any bytes give a model or an error, never
// a panic, and that an accepted checkpoint re-encodes to a valid one.
func FuzzReadCheckpoint(f *testing.F) {
	m, err := NewSPN(testConfig("spn", 2, "sum", 0), 1, kernels.CPU{})
	if err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteCheckpoint(&buf, m); err != nil {
		f.Fatal(err)
	}
	good := buf.Bytes()
	f.Add(good)
	f.Add(good[:len(good)/3])
	f.Add([]byte(`{"format":"spn-model","version":1,"config":{"model":{"kind":"gin","k":1,"layers":1,"hidden":1,"pool":"max"},"task":"regression","out":1}}`))
	f.Add([]byte(`{"format":"spn-model","version":1,"config":{"model":{"kind":"spn","k":1000000,"layers":1000000,"hidden":1000000},"task":"classification","out":2}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<20 {
			return
		}
		m, err := ReadCheckpoint(bytes.NewReader(b), HandWritten(), kernels.CPU{})
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := WriteCheckpoint(&out, m); err != nil {
			return // NaN-free JSON can still decode to values WriteCheckpoint refuses
		}
		if _, err := ReadCheckpoint(&out, HandWritten(), kernels.CPU{}); err != nil {
			t.Fatalf("re-encoded checkpoint fails to load: %v", err)
		}
	})
}
