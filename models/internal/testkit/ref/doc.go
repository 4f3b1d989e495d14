// Package ref is the hand-written float32 reference of spn's SPN and GIN:
// layers with explicit Forward and Backward passes (linear map, input
// encoder, batch norm with ReLU, hop aggregation, pooling, dropout) over
// the parameters of models/param, and the models they make (HandWritten).
//
// It exists for tests only: the model kinds (models/spn, …) run on the
// ops of models/rt, and their tests compare them with this second,
// independent implementation. No non-test file may import it
// (TestOnlyTestsImportRef). A layer's Forward caches what its Backward
// needs; Backward accumulates parameter gradients into Param.G and
// returns the input gradient; every backward pass is checked against
// finite differences.
package ref
