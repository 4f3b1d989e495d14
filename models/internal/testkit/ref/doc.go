// Package ref is the hand-written reference of spn's SPN and GIN: layers
// with explicit Forward and Backward passes (linear map, input encoder,
// batch norm with ReLU, hop aggregation, pooling, dropout) written as plain
// float64 loops straight from their equations, over the float32 parameters
// of models/param, and the models they make (NewSPN, NewGIN; refkind
// registers them as model kinds).
//
// It exists for tests only: the model kinds (models/spn, …) run on the
// kernels of models/kernels and the ops of models/rt, and their tests
// compare them with this second, independent implementation, which
// imports no kernel, no runtime op and no Gorgonia (internal/layering
// checks it), so that a bug in those cannot pass on both sides. A layer's
// Forward keeps what its Backward needs; Backward accumulates parameter
// gradients into Param.G and returns the input gradient; every backward
// pass is checked against finite differences of its forward pass and of a
// second forward written from the formula.
package ref
