// Package engine is the device tensor engine of spn's GPU path: a
// gorgonia.org/tensor Engine whose memory is device memory of a
// models/cuda Context, so that a Gorgonia TapeMachine built with
// gorgonia.WithEngine runs a graph whose values stay on the device.
//
// # What exists
//
// Engine implements tensor.Engine (Alloc, Free, Memset and Memclr with a
// fill kernel; Memcpy and Accessible refuse, see below) and tensor.Adder
// for float32 tensors of equal shapes, the one Gorgonia built-in
// arithmetic the spn graph runs (the readout sum and the gradient sums of
// nodes with several consumers). For the baseline's graph, which is
// Gorgonia's own ops (builtin.go), it implements tensor.MatMuler (cuBLAS,
// either operand a transposed view), Muler (elementwise), Gteer (with a
// scalar, the result in the tensor's type: Rectify's mask), Repeater (a
// row along axis 0: BroadcastAdd) and Sumer (along axis 0: the
// gradient of the repeat); their other forms are refused.
//
// Tensor, Scratch, FromHost and ToHost make device tensors and move
// values across, View makes a scratch tensor over memory the engine does
// not own (an array of a cuda.Pack), Scratch64 gives an op a float64
// buffer for its partial sums, Zeros zeroed memory for the gradients a
// backward op adds to (one zeroing launch per run once the run's size
// is known), Buffer gives a device op the cuda.Buffer
// behind a device tensor, and Reset frees one run's scratch memory (and
// forgets the views). models/op's DeviceOp and ApplyDevice are the
// adaptor of a primitive's device math, as Op and Apply are of its CPU
// math.
//
// Scratch memory is an arena: a run carves its scratch values one after
// another from one allocation, and Reset gives the whole of it back for
// the next run, so that a training step makes no cuMemAlloc or cuMemFree
// (synchronous calls; cuMemFree waits for the device) once the arena
// holds the largest run so far, as PyTorch's caching allocator does
// after its warm-up. A run that does not fit allocates the rest value by
// value, and Reset frees those and grows the arena to that run's size
// (rounded up to a quarter-power of two). The device thus holds about
// one run's scratch, where a pool of allocations by size class would
// hold one for every size the batches reached (docs/performance.md,
// "Memory"). A non-scratch allocation
// that finds the device full frees the idle arena and tries once more;
// Trim frees it on demand, Kept says how large it is, and the context's
// Memory counts it as allocated.
//
// Device math exists for every op of the spn graph (classification, sum
// or mean pooling, without the global readout), each beside its CPU math
// on the same type: the input encoder, the fused MLP and its parts, the
// linear map (cuBLAS), batch norm + ReLU
// (running statistics on the device, rt.DeviceBN), the hop softmax,
// HopCombine (hop sets packed on the device, nbop.DeviceHops),
// sum and mean pooling and the cross-entropy (graph offsets and classes
// on the device, rt.DeviceBatch, which also holds the node inputs),
// dropout, and op.Dot.
//
// The tests (enginetest opens an engine on the emulated device or on
// GPU 0) run Gorgonia graphs with fan-out through a TapeMachine on the
// device against the CPU's bits, and optest.CheckDevice runs each op
// with device math on both devices and compares its output and
// gradients.
//
// models/rt's Engine.UseDevice runs a model's training steps,
// evaluation (Predict) and Forward/Backward adaptor on an engine: the
// same graph built with ApplyDevice, a TapeMachine with the engine,
// parameters bound to device tensors, the batch, the dropout masks and
// the kind's data (rt.DevicePreparer) sent in one packed copy per run
// (cuda.Pack), the loss and the outputs downloaded after it. SPN and GIN
// train that way on the emulated device with the CPU's losses within
// 1e-5 over 20 Adam steps (models/spn's TestStepOnDevice). With
// rt.DeviceAdam the parameters, gradients and Adam's moments stay on the
// device: a training step makes one copy to the device and two back (the
// loss and the outputs), an evaluation batch one each way
// (TestDeviceCalls); rt.Engine.StepAsync makes a step's copies
// asynchronously, through page-locked memory, so that the host does not
// wait for the device until it resolves the step.
//
// models/fit trains a model this way (fit.Options.Host: the steps,
// pipelined, DeviceAdam and the evaluation on the device; a CPU host
// model receives the parameters and the running statistics,
// rt.Engine.SyncHost, only for the checkpoint of a newly selected
// epoch), and Open makes an engine on a GPU for the train stage.
//
// R-SPN (with GNN-FiLM's gated readout, regressing), E-SPN (with the
// AtomEncoder and its BondEncoders, multi-task binary classification),
// GCN and GAT train the same way (models/rspn's, models/espn's,
// models/gcn's and models/gat's TestStepOnDevice). The baseline trains
// through its own Forward and Backward on the device
// (baseline.Model.UseDevice, with rt.NewDeviceAdamOf).
//
// What does not exist: dropout masks drawn on the device (they are drawn
// on the host from the model's generator, as on the CPU path, and packed
// with the batch); device math for the kind graphormer.
//
// # How Gorgonia v0.9.18 runs values (the facts the design rests on)
//
//   - NewTapeMachine (vm_tape.go:45) gives every bound value the
//     machine's engine (setEngine, values_utils.go:241), and execOp.exec
//     (vm_tape_nocuda.go:19) gives it to every op result; WithEngine
//     (vm.go:319) sets that engine. Without the cuda build tag every
//     register is a CPU register, and an alloc instruction (host memory
//     for the CPU, alloc.exec, vm_tape.go:584) is emitted only for ops
//     that call an extern (compile.go:372): Add does not
//     (op_math_noextern.go:6) and neither do models/op's ops. So every
//     value is whatever the op's Do returns, and an op that returns a
//     device tensor keeps the value on the device. The product
//     (linAlgBinOp) and the repeat (repeatOp) of the baseline's graph do
//     call an extern: their result is preallocated in host memory with
//     the machine's engine (alloc.exec, vm_tape.go:584) and given to the
//     engine through tensor.WithReuse; MatMul and RepeatReuse point such
//     a tensor at device memory (tensor.FromMemory) before writing.
//   - The only Gorgonia arithmetic in the spn graph is Add: the readout
//     sum (rt.Engine.Finish) and ReduceAdd (operations.go:329), which
//     Backpropagate (differentiation.go:244) uses to sum the gradients of
//     a node with several consumers. Add reaches tensor.Add
//     (tensor api_arith.go:20) through tBinOp.do
//     (operatorPointwise_binary.go:359), which calls an engine's Adder
//     when the tensors' engine is not a standard (host) engine, with
//     UseUnsafe (UnsafeDo) or WithReuse (UsePreallocDo) as options.
//   - The gradient seed of a scalar cost is a host *F32 constant (1),
//     which goes to the device as the argument of a fill kernel. No
//     Gorgonia code checks a value against its node's type (execOp.exec
//     binds what Do returns), so the loss node of the project's adaptor
//     (models/op), a scalar node, holds a device tensor of one value,
//     which the training step copies back with the outputs.
//   - gorgonia.Read (readInstr.exec, vm_tape.go:773) copies a value on
//     the host (CloneValue, then Dense.Clone's byte copy): reading a
//     device tensor that way would dereference device memory. The device
//     path takes the loss's, the outputs' and the gradients' device
//     tensors from their nodes (Node.Value) after the run, leaving the
//     gradients on the device for Adam.
//   - Concat (the gated readout) would go through the engine too
//     (Concater); the device graphs use a project op instead. The
//     baseline's Rectify is Gte with a scalar then Mul, its BroadcastAdd
//     Repeat then Add, and their gradients Mul and Sum along axis 0; the
//     gradient of Gorgonia's Sum of all values repeats a host scalar
//     (the cost's seed), so the baseline's device graph turns its output
//     gradient into a cost with op.Dot, not HadamardProd and Sum.
//
// # Design
//
// Gorgonia stays the graph, the autodiff and the executor. A device
// tensor is a *tensor.Dense over a Memory of this engine; its address
// (Uintptr) is not the device pointer but an address of the engine's own
// range, above the 48-bit virtual addresses of x86-64 and arm64, so that
// any host dereference of a device tensor faults at once, on the
// emulated device (whose device memory is host memory) as on a GPU. The
// engine maps an address back to its cuda.Buffer, and kernels get the
// buffer (Kernel.Launch checks the kinds and the context).
//
// The results of Add are fresh scratch tensors whatever the options
// (UseUnsafe, WithReuse) ask: Gorgonia uses the returned value, and no
// value a node is bound to is overwritten, so the gradient nodes' values
// are intact after a run (Gorgonia reuses registers).
//
// A primitive keeps one math per device on one type: models/op's Op
// (Forward/Backward over []float32) for the CPU and DeviceOp
// (DeviceForward/DeviceBackward over device buffers: kernel launches of
// models/cuda/kern, cuBLAS's Sgemm) for the device; the graph builder
// applies it with Apply or ApplyDevice, by the device of its
// environment. Gradient buffers are zeroed on the device (spn_fill), and
// the further gradients of an op are device tensors its gradient node
// keeps, returned by one node each without a copy. The parameters, Adam's
// moments and the batch data (features, hop sets packed by
// kern.PackHops, pooling offsets, classes) live in device buffers; a
// step uploads the batch once (one cuda.Pack: views into one device
// buffer, which a model keeps from run to run while it is large enough)
// and downloads the loss (a scalar output stays on the device until the
// step copies its 4 bytes back; the scalar gradient seed goes to the
// device as a kernel argument).
//
// Memcpy and Accessible refuse: the driver binding has no device-to-
// device copy, and a host view of device memory is what the design
// forbids. The tests' TapeMachine runs reach neither.
package engine
