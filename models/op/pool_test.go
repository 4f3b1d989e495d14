package op

import (
	"testing"

	"gorgonia.org/tensor"
)

// TestTensorPoolOff: a tensor returned to gorgonia/tensor's pool twice (as
// Gorgonia's UnbindAllNonInputs does with a shared value) is never handed
// to two new tensors: each keeps its own header, shape and data.
func TestTensorPoolOff(t *testing.T) {
	x := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float32{1, 2}))
	tensor.ReturnTensor(x)
	tensor.ReturnTensor(x)
	a := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float32{1, 2, 3}))
	b := tensor.New(tensor.WithShape(5), tensor.WithBacking([]float32{4, 5, 6, 7, 8}))
	if a == b {
		t.Fatal("two tensors got the same header from the pool")
	}
	if a.Size() != 3 || a.Data().([]float32)[0] != 1 || b.Size() != 5 {
		t.Fatalf("a has %d values (%v), b %d", a.Size(), a.Data(), b.Size())
	}
	if x.Size() == 0 {
		t.Fatal("a returned tensor was reset: its holder would see it change")
	}
}
