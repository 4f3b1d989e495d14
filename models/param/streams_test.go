package param

import (
	"math/rand/v2"
	"testing"
)

// TestStreamsDistinct checks that the model's random streams are
// different generators for the same seed: two uses sharing a stream
// constant would draw the same numbers, and switching one on would shift
// the other's draws.
func TestStreamsDistinct(t *testing.T) {
	streams := []struct {
		name string
		new  func(uint64) *rand.Rand
	}{
		{"NewInit", NewInit},
		{"HopLogitInit", HopLogitInit},
		{"GlobalReadInit", GlobalReadInit},
		{"MaskStream", MaskStream},
	}
	first := map[uint64]string{}
	for _, s := range streams {
		a, b := s.new(42).Uint64(), s.new(42).Uint64()
		if a != b {
			t.Errorf("%s(42) draws %#x then %#x: not reproducible", s.name, a, b)
		}
		if o, dup := first[a]; dup {
			t.Errorf("%s and %s draw the same first number from seed 42: one stream", o, s.name)
		}
		first[a] = s.name
		if s.new(43).Uint64() == a {
			t.Errorf("%s draws the same from seeds 42 and 43", s.name)
		}
	}
}
