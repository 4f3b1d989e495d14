package rt

import (
	"math"

	G "gorgonia.org/gorgonia"
)

// Cache is the one cache of compiled graphs of a model (the Engine's and
// the baseline's): values by key, the oldest dropped first, bounded by a
// count (MaxGraphs, 0: cache nothing) and by an estimate of the bytes the
// graphs' tensors hold (MaxBytes, GraphBytes). A dropped graph's machine
// is closed.
type Cache[K comparable, V any] struct {
	MaxGraphs int
	MaxBytes  int64
	entries   map[K]cacheEntry[V]
	order     []K
	bytes     int64
}

type cacheEntry[V any] struct {
	v     V
	vm    G.VM
	bytes int64
}

// NewCache returns an empty cache of at most MaxCachedGraphs graphs and
// MaxCachedBytes bytes.
func NewCache[K comparable, V any]() *Cache[K, V] {
	return &Cache[K, V]{MaxGraphs: MaxCachedGraphs, MaxBytes: MaxCachedBytes, entries: map[K]cacheEntry[V]{}}
}

// Get returns the value cached under k.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	e, ok := c.entries[k]
	return e.v, ok
}

// Put caches v, whose compiled graph is g on machine vm, under k (not
// cached in the map before), dropping the oldest graphs until it fits. A
// graph larger than MaxBytes alone (or MaxGraphs 0) is not cached; the
// caller keeps using it for the batch at hand.
func (c *Cache[K, V]) Put(k K, v V, g *G.ExprGraph, vm G.VM) {
	size := GraphBytes(g)
	if c.MaxGraphs <= 0 || size > c.MaxBytes {
		return
	}
	for len(c.order) > 0 && (len(c.order) >= c.MaxGraphs || c.bytes+size > c.MaxBytes) {
		c.evictOldest()
	}
	c.entries[k] = cacheEntry[V]{v: v, vm: vm, bytes: size}
	c.order = append(c.order, k)
	c.bytes += size
}

// OnDevice sets the limits of a cache of device graphs: MaxCachedDeviceGraphs
// graphs and no bound on their GraphBytes, whose values are the device
// engine's arena, not the graphs'.
func (c *Cache[K, V]) OnDevice() { c.Limit(MaxCachedDeviceGraphs, math.MaxInt64) }

// Limit sets MaxGraphs and MaxBytes and drops the oldest graphs beyond
// them.
func (c *Cache[K, V]) Limit(graphs int, bytes int64) {
	c.MaxGraphs, c.MaxBytes = graphs, bytes
	for len(c.order) > 0 && (len(c.order) > max(graphs, 0) || c.bytes > bytes) {
		c.evictOldest()
	}
}

// Len returns the number of cached graphs, Bytes their estimated bytes.
func (c *Cache[K, V]) Len() int { return len(c.order) }

// Bytes returns the estimated bytes of the cached graphs.
func (c *Cache[K, V]) Bytes() int64 { return c.bytes }

// evictOldest closes and drops the oldest cached graph.
func (c *Cache[K, V]) evictOldest() {
	old := c.order[0]
	e := c.entries[old]
	e.vm.Close()
	delete(c.entries, old)
	c.order = c.order[1:]
	c.bytes -= e.bytes
}

// GraphBytes estimates the bytes a compiled graph g holds after a run:
// 4 bytes (float32) per element of every node's tensor. It counts the
// values Gorgonia keeps for its own nodes and the op outputs (which come
// from the model's arena and are shared between its graphs), so it is an
// upper bound.
func GraphBytes(g *G.ExprGraph) int64 {
	var n int64
	for _, x := range g.AllNodes() {
		s := int64(1)
		for _, d := range x.Shape() {
			s *= int64(d)
		}
		n += 4 * s
	}
	return n
}
