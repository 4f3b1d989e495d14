package op

import "gorgonia.org/tensor"

// Gorgonia's tensor package keeps one process-wide pool of *tensor.Dense
// headers: tensor.New takes a header from it and tensor.ReturnTensor puts
// one back. Gorgonia returns values to it from ExprGraph.UnbindAll and
// UnbindAllNonInputs (which return a value shared by several nodes once
// per node), from the tape machine's Reset of device registers and from
// some of its linear algebra. A header returned twice is later handed to
// two tensors at once, and the first then silently reads the second's
// data (wrong numbers, or a size check failing far from the cause, while
// another model builds graphs in the same process).
//
// spn turns the pool off before any tensor exists (package
// initialisation, before any goroutine can build a graph): every header is
// then allocated for, and owned by, the value that uses it, and
// ReturnTensor is a no-op. spn itself never calls UnbindAll or
// UnbindAllNonInputs (TestNoUnbind in models/kinds checks the sources).
func init() { tensor.DontUsePool() }
