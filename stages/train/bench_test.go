package train

import (
	"math"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
)

func TestBenchValSize(t *testing.T) {
	nan := math.NaN()
	bin := func(targets ...[]float64) *data.Dataset {
		ds := &data.Dataset{Task: data.TaskBinary, NumTargets: 2}
		for _, tg := range targets {
			ds.Graphs = append(ds.Graphs, data.Graph{Target: tg})
		}
		return ds
	}
	for _, tc := range []struct {
		ds   *data.Dataset
		want int
	}{
		{&data.Dataset{Task: data.TaskClassification, Graphs: make([]data.Graph, 5)}, 1},
		{bin([]float64{1, nan}, []float64{1, 0}, []float64{0, 1}), 3},
		{bin([]float64{1, 0}, []float64{nan, 1}), 2},
		{bin([]float64{1, nan}, []float64{1, nan}), 2},
	} {
		if got := benchValSize(tc.ds); got != tc.want {
			t.Errorf("%+v: got %d, want %d", tc.ds.Graphs, got, tc.want)
		}
	}
}

func TestParseVmHWM(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		ok, err bool
	}{
		{"Name:\tspn\nVmPeak:\t 1 kB\nVmHWM:\t  2048 kB\nVmRSS:\t 1 kB\n", 2048 << 10, true, false},
		{"Name:\tspn\n", 0, false, false},
		{"VmHWM:\t12 MB\n", 0, false, true},
		{"VmHWM:\t-3 kB\n", 0, false, true},
		{"VmHWM:\n", 0, false, true},
	} {
		got, ok, err := parseVmHWM(strings.NewReader(tc.in))
		if got != tc.want || ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("%q: %d %v %v, want %d %v err=%v", tc.in, got, ok, err, tc.want, tc.ok, tc.err)
		}
	}
}

func FuzzParseVmHWM(f *testing.F) {
	f.Add("VmHWM:\t  2048 kB\n")
	f.Add("VmHWM: 9223372036854775807 kB")
	f.Add("VmHWM:")
	f.Fuzz(func(t *testing.T, s string) {
		v, ok, err := parseVmHWM(strings.NewReader(s))
		if v < 0 || (ok && err != nil) || (!ok && v != 0) {
			t.Fatalf("%q: %d %v %v", s, v, ok, err)
		}
	})
}
