package rt

import (
	"testing"

	"gorgonia.org/tensor"

	"github.com/spn-project/spn/models/internal/testkit/enginetest"
	"github.com/spn-project/spn/models/param"
)

// TestDeviceAdamAligned: each parameter starts at a multiple of AdamAlign
// floats in DeviceAdam's arrays, so its device tensor is 256-byte
// aligned (cuBLAS reads the weights from aligned addresses), and the
// groups of parameters with the same flags cover their parameters.
func TestDeviceAdamAligned(t *testing.T) {
	e := enginetest.Emulated(t)
	var params []*param.Param
	for i, n := range []int{3, 70, 1, 64, 5} {
		p := &param.Param{Name: string(rune('a' + i)), Shape: []int{n}, W: make([]float32, n), G: make([]float32, n), NoDecay: i == 2}
		for j := range p.W {
			p.W[j] = float32(i + j)
		}
		params = append(params, p)
	}
	ts := map[*param.Param]*tensor.Dense{}
	a, err := NewDeviceAdamOf(e, ts, params, func(p *param.Param) []int { return p.Shape }, 0.01, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range params {
		if a.off[i]%AdamAlign != 0 {
			t.Errorf("parameter %s at %d floats, not a multiple of %d", p.Name, a.off[i], AdamAlign)
		}
		if addr := ts[p].Uintptr(); addr%256 != 0 {
			t.Errorf("parameter %s's device tensor at %#x, not 256-byte aligned", p.Name, addr)
		}
		in := 0
		for _, g := range a.groups {
			if a.off[i] >= g.off && a.off[i]+len(p.W) <= g.off+g.n {
				in++
			}
		}
		if in != 1 {
			t.Errorf("parameter %s is in %d groups, want 1", p.Name, in)
		}
	}
	if err := a.Step(); err != nil {
		t.Fatal(err)
	}
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	for i, p := range params {
		for j, w := range p.W {
			if w != float32(i+j) {
				t.Fatalf("parameter %s[%d] = %v after a step with zero gradients, want %d", p.Name, j, w, i+j)
			}
		}
	}
}
