package sp

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/tu"
	"github.com/spn-project/spn/internal/testkit/mirrortest"
)

// BenchmarkHopSizeDD measures the D&D hop sets of Table 3 (kmax 10) in the
// first hops file layout and in compact candidates, the measurement behind
// hops file version 2 (varint, data/codec.go; BenchmarkReadHopsDD reads
// it), and times computing them
// (the loop, one thread) so recomputing can be weighed against storing:
//
//	go test ./data/sp -run '^$' -bench HopSizeDD -benchtime 1x
//
// Encodings, per graph and hop:
//
//   - raw-MB: the hops file version 1 body (u32 nnz, i32 Ptr, i32 Idx);
//   - u16-MB: the same with uint16 node ids (D&D's largest graph has 5748
//     nodes);
//   - varint-MB: per row, uvarint count then uvarint gaps between sorted ids
//     (hops file version 2);
//   - dist4-MB: one 4-bit shortest-path distance per node pair (0 = farther
//     than kmax), from which every N_i(u) is a row scan.
func BenchmarkHopSizeDD(b *testing.B) {
	ds, err := tu.Load(filepath.Join(mirrortest.Dir(b), "tu", "DD.zip"), "")
	if err != nil {
		b.Fatal(err)
	}
	var hops *data.Hops
	for b.Loop() {
		if hops, err = Compute(context.Background(), ds.Graphs, 10, false, 1); err != nil {
			b.Fatal(err)
		}
	}
	var raw, u16, vint, dist4 int64
	var row []byte
	for gi, g := range hops.Graphs {
		n := int64(ds.Graphs[gi].N)
		dist4 += (n*n + 1) / 2
		for _, c := range g.Hop {
			raw += 4 + 4*int64(len(c.Ptr)) + 4*int64(len(c.Idx))
			u16 += 4 + 4*int64(len(c.Ptr)) + 2*int64(len(c.Idx))
			for u := 0; u < int(n); u++ {
				row = binary.AppendUvarint(row[:0], uint64(len(c.Row(u))))
				prev := int32(-1)
				for _, v := range c.Row(u) {
					row = binary.AppendUvarint(row, uint64(v-prev-1))
					prev = v
				}
				vint += int64(len(row))
			}
		}
	}
	b.ReportMetric(float64(raw)/1e6, "raw-MB")
	b.ReportMetric(float64(u16)/1e6, "u16-MB")
	b.ReportMetric(float64(vint)/1e6, "varint-MB")
	b.ReportMetric(float64(dist4)/1e6, "dist4-MB")
}
