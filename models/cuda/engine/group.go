package engine

import (
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/kern"
)

// ForGroups calls f for the groups of at most kern.ReadoutGroup of n
// items (tensors, readouts, relations) that a kernel taking a group of
// pointers handles in one launch: from k0 = 0, count of them each; it
// stops at f's first error.
func ForGroups(n int, f func(k0, count int) error) error {
	for k0 := 0; k0 < n; k0 += kern.ReadoutGroup {
		if err := f(k0, min(n-k0, kern.ReadoutGroup)); err != nil {
			return err
		}
	}
	return nil
}

// GroupArgs returns the buffers bs (at most kern.ReadoutGroup) as a
// kernel's group of pointer arguments, nil after them.
func GroupArgs(bs []*cuda.Buffer) []any {
	args := make([]any, kern.ReadoutGroup)
	for j := range args {
		if j < len(bs) {
			args[j] = bs[j]
		} else {
			args[j] = (*cuda.Buffer)(nil)
		}
	}
	return args
}
