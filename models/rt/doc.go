// Package rt is the Gorgonia runtime every model kind of spn builds on.
// Gorgonia holds the computation graph, differentiates it symbolically
// (gorgonia.Grad) and runs forward and backward on a TapeMachine, while
// every heavy node is a project op (models/op) calling the parallel,
// deterministic kernels of models/kernels.
//
// A kind (models/spn, models/gcn, …) embeds an Engine and implements Arch:
// CheckBatch, Prepare (the hop sets and per-batch data its ops read) and
// BuildGraph, which wires the kind's layers between Engine.Encode (the
// input encoding h⁰) and Engine.Finish (the layer-sum readout, the loss
// and its gradient) with a Builder. The Engine owns the rest: bucketing
// of batch sizes (NodeBucket, GraphBucket), the one cache of compiled
// graphs, the arena of node-sized buffers, dropout masks, Step, Predict
// and the models.Model adaptor (Forward, Backward). Shared layers (MLP,
// the global readout, OGB's AtomEncoder) and the ops they use (linear,
// encoder, pooling, dropout, batch norm + ReLU, hop softmax, the losses)
// live here too; the parameters are models/param values (names and
// initialisation as the hand-written reference models), so the optimiser and the checkpoint
// code work unchanged on a model's Params().
package rt
