package rt

import (
	"testing"

	G "gorgonia.org/gorgonia"
)

// smallGraph returns a compiled graph y = x + x over an r×c matrix x and
// its machine.
func smallGraph(t *testing.T, r, c int) (*G.ExprGraph, G.VM) {
	t.Helper()
	g := G.NewGraph()
	x := G.NewMatrix(g, G.Float32, G.WithShape(r, c), G.WithName("x"), G.WithInit(G.Ones()))
	if _, err := G.Add(x, x); err != nil {
		t.Fatal(err)
	}
	return g, G.NewTapeMachine(g)
}

// TestCacheEvictsAtByteCap checks the estimate of a graph's bytes and
// that the cache drops its oldest graphs when the next one would pass
// MaxBytes (and when Limit lowers the bounds), never holding more.
func TestCacheEvictsAtByteCap(t *testing.T) {
	g, vm := smallGraph(t, 10, 10)
	one := GraphBytes(g)
	if one != 2*4*100 { // x and x+x, 100 float32 each
		t.Fatalf("GraphBytes = %d, want %d", one, 2*4*100)
	}
	c := NewCache[int, string]()
	c.MaxBytes = 5 * one / 2 // room for two graphs
	c.Put(0, "g0", g, vm)
	for k := 1; k <= 4; k++ {
		g, vm := smallGraph(t, 10, 10)
		c.Put(k, "g"+string(rune('0'+k)), g, vm)
		if c.Bytes() > c.MaxBytes {
			t.Fatalf("after graph %d: %d bytes cached, cap %d", k, c.Bytes(), c.MaxBytes)
		}
		if c.Len() != 2 {
			t.Fatalf("after graph %d: %d graphs cached, want 2", k, c.Len())
		}
		if _, ok := c.Get(k - 2); ok && k >= 2 {
			t.Fatalf("after graph %d: graph %d still cached, want it evicted (oldest first)", k, k-2)
		}
		if v, ok := c.Get(k); !ok || v != "g"+string(rune('0'+k)) {
			t.Fatalf("after graph %d: Get(%d) = %q, %v", k, k, v, ok)
		}
	}
	big, bvm := smallGraph(t, 30, 30)
	c.Put(9, "big", big, bvm)
	if _, ok := c.Get(9); ok || c.Len() != 2 {
		t.Fatalf("a graph above the cap alone was cached (%d graphs)", c.Len())
	}
	c.Limit(32, one)
	if c.Len() != 1 || c.Bytes() != one {
		t.Fatalf("Limit to one graph's bytes: %d graphs, %d bytes", c.Len(), c.Bytes())
	}
	if _, ok := c.Get(4); !ok {
		t.Fatalf("Limit dropped the newest graph instead of the oldest")
	}
	c.Limit(0, one)
	if c.Len() != 0 || c.Bytes() != 0 {
		t.Fatalf("Limit(0): %d graphs, %d bytes", c.Len(), c.Bytes())
	}
	g, vm = smallGraph(t, 2, 2)
	c.Put(1, "x", g, vm)
	if c.Len() != 0 {
		t.Fatalf("MaxGraphs 0 cached a graph")
	}
}
