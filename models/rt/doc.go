// Package rt is the Gorgonia runtime every model kind of spn builds on.
// Gorgonia holds the computation graph, differentiates it symbolically
// (gorgonia.Grad) and runs forward and backward on a TapeMachine, while
// every heavy node is a project op (models/op) calling the parallel,
// deterministic kernels of models/kernels.
//
// A message-passing kind (models/spn, models/gcn, …) embeds a Net (or
// AdjNet, HopNet), builds it with Net.Init and supplies its layers: each
// Layer's Step adds one layer to the graph, in the three parts of PyG's
// MessagePassing (the messages, their aggregation, the update of the node
// state). Net draws every kind's parameters in one order from
// param.NewInit (encoder, input term, layers, readout), implements Params
// and Buffers, and its BuildGraph wires the layers between Engine.Encode
// (the input encoding h⁰) and Engine.Finish (the layer-sum readout, the
// loss and its gradient) with a Builder. The kind adds CheckBatch and
// Prepare (the hop sets and per-batch data its ops read). The Engine owns
// the rest: bucketing of batch sizes (NodeBucket, GraphBucket), the one
// cache of compiled graphs, the arena of node-sized buffers, dropout
// masks, Step, Predict and the models.Model adaptor (Forward, Backward).
// Shared layers (MLP, the SP-MPNN hop weights Hops, the global readout,
// OGB's AtomEncoder, the gated readout) and the ops they use (linear,
// encoder, pooling, dropout, batch norm + ReLU, hop softmax, the losses)
// live here too; the parameters are models/param values (names and
// initialisation as the hand-written reference models), so the optimiser
// and the checkpoint code work unchanged on a model's Params().
package rt
