package rt

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/spn-project/spn/models/op"
)

var errBoom = errors.New("boom")

// failOp is an op whose forward pass fails with errBoom.
type failOp struct{}

func (failOp) Sig() op.Sig { return op.Sig{ID: "layer0.fail", In: [][]int{{2}}, Out: []int{2}} }

func (failOp) Forward([][]float32, []float32) error { return fmt.Errorf("forward: %w", errBoom) }

func (failOp) Backward([][]float32, []float32, []float32, [][]float32) error { return nil }

// TestVMError runs a graph whose op fails on Gorgonia's tape machine:
// vmError gives the op's error (named by the op's id) without the
// machine's framing, and keeps its chain; an error that is not the
// machine's comes back as it is.
func TestVMError(t *testing.T) {
	g := G.NewGraph()
	x := G.NewVector(g, G.Float32, G.WithShape(2), G.WithName("x"), G.WithValue(tensor.New(tensor.WithBacking([]float32{1, 2}))))
	if _, err := op.Apply(nil, failOp{}, x); err != nil {
		t.Fatal(err)
	}
	m := G.NewTapeMachine(g)
	defer m.Close()
	raw := m.RunAll()
	if raw == nil || !strings.Contains(raw.Error(), "Failed to execute instruction") {
		t.Fatalf("the failing op's graph: %v, want the tape machine's error", raw)
	}
	got := vmError(raw)
	if want := "layer0.fail: forward: boom"; got.Error() != want {
		t.Errorf("vmError:\n%v\nwant\n%s\n(the machine's error: %v)", got, want, raw)
	}
	if !errors.Is(got, errBoom) {
		t.Errorf("vmError(%v) lost the op's error chain", got)
	}
	if other := fmt.Errorf("x: %w", errBoom); vmError(other) != other {
		t.Errorf("vmError changed an error that is not the tape machine's")
	}
}
