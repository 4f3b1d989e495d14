// Package kern holds spn's CUDA C kernel sources, embedded in the binary,
// and the table of their entry points.
//
// The kernels cover the SPN training step on a device: the hop
// aggregation over CSR hop sets and its gradient (hops.cu), the hop
// weights' softmax, bias + ReLU, the input encoding and the gradient of
// its label embeddings, the fill of a buffer with one value, the
// product with a device scalar, the moves between interleaved and
// stacked blocks of columns and the sum of stacked blocks (dense.cu),
// batch norm + ReLU in training and evaluation mode and layer norm
// (norm.cu), sum, mean and max pooling and the graph sums of the global
// readout (pool.cu), the
// softmax cross-entropy, the squared error and the multi-task binary
// cross-entropy with missing labels (loss.cu), the Adam update
// (adam.cu), dropout with a counter-based generator
// (dropout.cu), R-SPN's relation sums and combination terms with
// GNN-FiLM's gated readout, OGB's categorical embedding sums and E-SPN's
// edge messages (typed.cu), GCN's propagation (gcn.cu) and GAT's
// attention aggregation (gat.cu). Matrix products are cuBLAS's.
//
// They are written for correctness and determinism first: one thread per
// output value (or per output row or column, or per chunk of rows and
// column for a reduction over a batch's rows, whose partials a second
// launch or the consumer adds in chunk order), loops in a fixed order, no
// floating-point atomics, no shared memory and no __syncthreads. A
// kernel's result therefore does not depend on the launch configuration,
// and wherever the CPU kernels of models/kernels fix an order (row sums,
// column sums by chunks of kernels.ChunkRows rows) the kernels follow it,
// so that compiled without fused multiply-add (NVRTC's --fmad=false,
// Options) they give the CPU's bits. The package's test runs every kernel
// on the CPU through the system C compiler and compares it with the CPU
// ops. Tuning (shared memory, warp reductions, fusion) happens on a GPU.
//
// Source returns the one translation unit NVRTC compiles (spn.cuh, then
// every .cu file, each behind a #line directive naming it, so a compiler
// message names the file and line); Kernels lists its entry points with
// their parameters, for a launcher to marshal arguments.
package kern

import (
	"embed"
	"fmt"
	"math"
	"strings"

	"github.com/spn-project/spn/data/csr"
)

//go:embed spn.cuh *.cu
var files embed.FS

// Name is the program name of Source, for NVRTC.
const Name = "spn_kernels.cu"

// Header is the file of definitions every kernel file uses.
const Header = "spn.cuh"

// Files are the kernel files in the order Source joins them.
var Files = []string{"hops.cu", "dense.cu", "norm.cu", "pool.cu", "loss.cu", "adam.cu", "dropout.cu", "typed.cu", "gcn.cu", "gat.cu"}

// Options are the NVRTC options the kernels are compiled with, besides
// the architecture: no fused multiply-add, so that products and sums
// round as on the CPU.
func Options() []string { return []string{"--fmad=false"} }

// File returns the text of one embedded file (Header or one of Files).
func File(name string) (string, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("kern: no kernel file %q", name)
	}
	return string(b), nil
}

// Source returns the translation unit of every kernel: Header, then each
// of Files, each after a #line directive naming it.
func Source() string {
	var b strings.Builder
	for _, f := range append([]string{Header}, Files...) {
		text, err := File(f)
		if err != nil {
			panic(err) // the files are embedded: a missing one is a build mistake the tests catch
		}
		fmt.Fprintf(&b, "#line 1 %q\n%s", f, text)
		if !strings.HasSuffix(text, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// Kind is the C type of a kernel parameter.
type Kind int

// The parameter kinds: device pointers to float, double or int values,
// and scalars.
const (
	F32Ptr Kind = iota // float*
	F64Ptr             // double*
	I32Ptr             // int*
	I32                // int
	F32                // float
	F64                // double
	U64                // unsigned long long
)

// C returns the kind's C type.
func (k Kind) C() string {
	return [...]string{"float*", "double*", "int*", "int", "float", "double", "unsigned long long"}[k]
}

// Ptr reports whether the kind is a device pointer.
func (k Kind) Ptr() bool { return k <= I32Ptr }

// Param is one kernel parameter.
type Param struct {
	Name string
	Kind Kind
}

// Kernel is one entry point of Source.
type Kernel struct {
	Name   string
	File   string
	Params []Param
}

// ps builds a parameter list from alternating names and kinds.
func ps(args ...any) []Param {
	var out []Param
	for i := 0; i < len(args); i += 2 {
		out = append(out, Param{args[i].(string), args[i+1].(Kind)})
	}
	return out
}

// AddMany is the number of arrays one launch of spn_add_many adds.
const AddMany = 32

// ReadoutGroup is the number of readouts one launch of spn_readout_sum,
// spn_readout_masks, spn_readout_bias, spn_readout_product or
// spn_readout_product_backward takes, of relations one of spn_rel_sum
// or spn_rel_gather_t takes, and of node-state
// tensors one launch of the pooling kernels (spn_pool,
// spn_pool_backward, spn_pool_max, spn_pool_max_backward) pools.
const ReadoutGroup = 8

// numbered returns the n parameters name0, name1, ... of kind k.
func numbered(name string, n int, k Kind) []Param {
	var p []Param
	for j := range n {
		p = append(p, Param{fmt.Sprintf("%s%d", name, j), k})
	}
	return p
}

// group returns the ReadoutGroup float pointers name0, name1, ...
func group(name string) []Param { return numbered(name, ReadoutGroup, F32Ptr) }

// cat concatenates parameter lists.
func cat(lists ...[]Param) []Param {
	var p []Param
	for _, l := range lists {
		p = append(p, l...)
	}
	return p
}

// Kernels returns every entry point of Source with its parameters, in
// the order of the files. The emulation test checks the table against the
// sources by compiling calls built from it.
func Kernels() []Kernel {
	return []Kernel{
		{"spn_hop_aggregate", "hops.cu", ps("y", F32Ptr, "sums", F32Ptr, "x", F32Ptr, "ptr", I32Ptr, "idx", I32Ptr, "coef", F32Ptr, "eps", F32Ptr, "k", I32, "n", I32, "d", I32)},
		{"spn_row_dots", "hops.cu", ps("rp", F64Ptr, "g", F32Ptr, "xs", F32Ptr, "x1", F32Ptr, "T", I32, "h", F32Ptr, "hs", F32Ptr, "U", I32, "n", I32, "d", I32)},
		{"spn_dot_chunks", "hops.cu", ps("part", F64Ptr, "rp", F64Ptr, "M", I32, "n", I32)},
		{"spn_sum_chunks", "hops.cu", ps("out", F32Ptr, "out1", F32Ptr, "part", F64Ptr, "nc", I32, "M", I32, "m0", I32, "count", I32, "split", I32)},
		{"spn_softmax", "hops.cu", ps("a", F32Ptr, "logits", F32Ptr, "k", I32)},
		{"spn_softmax_backward", "hops.cu", ps("dl", F32Ptr, "a", F32Ptr, "da", F32Ptr, "k", I32)},
		{"spn_bias_relu", "dense.cu", ps("y", F32Ptr, "x", F32Ptr, "b", F32Ptr, "n", I32, "d", I32, "relu", I32)},
		{"spn_col_part", "dense.cu", ps("db", F32Ptr, "part", F32Ptr, "dz", F32Ptr, "n", I32, "d", I32)},
		{"spn_col_sums", "dense.cu", ps("db", F32Ptr, "part", F32Ptr, "nc", I32, "d", I32)},
		{"spn_fill", "dense.cu", ps("y", F32Ptr, "v", F32, "len", I32)},
		{"spn_add_many", "dense.cu", cat(ps("g", F32Ptr), numbered("x", AddMany, F32Ptr), numbered("o", AddMany, I32), numbered("n", AddMany, I32), ps("count", I32))},
		{"spn_readout_sum", "dense.cu", cat(ps("y", F32Ptr, "z", F32Ptr), group("b"), group("m"), ps("count", I32, "len", I32, "c", I32, "first", I32))},
		{"spn_readout_masks", "dense.cu", cat(ps("dr", F32Ptr, "dy", F32Ptr), group("m"), ps("count", I32, "len", I32))},
		{"spn_readout_bias", "dense.cu", cat(group("db"), ps("dr", F32Ptr, "count", I32, "n", I32, "c", I32, "stride", I32))},
		{"spn_readout_product", "dense.cu", cat(ps("z", F32Ptr, "p", F32Ptr), group("w"), ps("count", I32, "n", I32, "d", I32, "c", I32))},
		{"spn_readout_product_backward", "dense.cu", cat(ps("dp", F32Ptr), group("dw"), ps("p", F32Ptr), group("w"), ps("dr", F32Ptr, "count", I32, "n", I32, "d", I32, "c", I32, "stride", I32))},
		{"spn_ge_scalar", "dense.cu", ps("y", F32Ptr, "x", F32Ptr, "s", F32, "left", I32, "len", I32)},
		{"spn_scale", "dense.cu", ps("y", F32Ptr, "x", F32Ptr, "s", F32Ptr, "len", I32)},
		{"spn_encode", "dense.cu", ps("y", F32Ptr, "p", F32Ptr, "b", F32Ptr, "E", F32Ptr, "label", I32Ptr, "n", I32, "d", I32)},
		{"spn_embed_part", "dense.cu", ps("dE", F32Ptr, "part", F32Ptr, "dy", F32Ptr, "ptr", I32Ptr, "idx", I32Ptr, "L", I32, "K", I32, "d", I32)},
		{"spn_embed_backward", "dense.cu", ps("dE", F32Ptr, "part", F32Ptr, "ptr", I32Ptr, "L", I32, "K", I32, "d", I32)},
		{"spn_blocks", "dense.cu", ps("y", F32Ptr, "x", F32Ptr, "n", I32, "N", I32, "d", I32, "m", I32, "stack", I32)},
		{"spn_sum_blocks", "dense.cu", ps("y", F32Ptr, "x", F32Ptr, "len", I32, "m", I32)},
		{"spn_bn_part", "norm.cu", ps("part", F64Ptr, "msum", F64Ptr, "x", F32Ptr, "b", F32Ptr, "n", I32, "d", I32)},
		{"spn_bn_relu_train", "norm.cu", ps("xhat", F32Ptr, "y", F32Ptr, "inv", F32Ptr, "run_mean", F64Ptr, "run_var", F64Ptr, "x", F32Ptr, "b", F32Ptr, "msum", F64Ptr, "vsum", F64Ptr, "g", F32Ptr, "bt", F32Ptr, "n", I32, "d", I32, "momentum", F64, "eps", F64, "update", I32)},
		{"spn_bn_eval_stats", "norm.cu", ps("mu", F32Ptr, "inv", F32Ptr, "run_mean", F64Ptr, "run_var", F64Ptr, "d", I32, "eps", F64)},
		{"spn_bn_relu", "norm.cu", ps("xhat", F32Ptr, "y", F32Ptr, "x", F32Ptr, "b", F32Ptr, "mu", F32Ptr, "inv", F32Ptr, "g", F32Ptr, "bt", F32Ptr, "n", I32, "d", I32)},
		{"spn_relu_mask", "norm.cu", ps("dz", F32Ptr, "y", F32Ptr, "dy", F32Ptr, "len", I32)},
		{"spn_bn_backward_part", "norm.cu", ps("part", F64Ptr, "dz", F32Ptr, "y", F32Ptr, "dy", F32Ptr, "xhat", F32Ptr, "n", I32, "d", I32)},
		{"spn_bn_backward", "norm.cu", ps("dx", F32Ptr, "dg", F32Ptr, "db", F32Ptr, "dbias", F32Ptr, "bpart", F32Ptr, "dz", F32Ptr, "xhat", F32Ptr, "g", F32Ptr, "inv", F32Ptr, "part", F64Ptr, "n", I32, "d", I32, "train", I32)},
		{"spn_layer_norm", "norm.cu", ps("y", F32Ptr, "stats", F64Ptr, "x", F32Ptr, "g", F32Ptr, "b", F32Ptr, "n", I32, "d", I32, "eps", F64)},
		{"spn_layer_norm_backward", "norm.cu", ps("dx", F32Ptr, "dy", F32Ptr, "x", F32Ptr, "stats", F64Ptr, "g", F32Ptr, "n", I32, "d", I32)},
		{"spn_layer_norm_part", "norm.cu", ps("part", F64Ptr, "dy", F32Ptr, "x", F32Ptr, "stats", F64Ptr, "n", I32, "d", I32)},
		{"spn_layer_norm_params", "norm.cu", ps("dg", F32Ptr, "db", F32Ptr, "part", F64Ptr, "nc", I32, "d", I32)},
		{"spn_pool", "pool.cu", cat(ps("y", F32Ptr), group("x"), ps("off", I32Ptr, "G", I32, "d", I32, "mean", I32, "count", I32))},
		{"spn_pool_backward", "pool.cu", cat(group("dx"), ps("dy", F32Ptr, "off", I32Ptr, "G", I32, "d", I32, "mean", I32, "count", I32))},
		{"spn_pool_max", "pool.cu", cat(ps("y", F32Ptr), group("x"), ps("off", I32Ptr, "G", I32, "d", I32, "count", I32))},
		{"spn_pool_max_backward", "pool.cu", cat(group("dx"), ps("dy", F32Ptr), group("x"), ps("off", I32Ptr, "G", I32, "d", I32, "count", I32))},
		{"spn_graph_sum_broadcast", "pool.cu", ps("y", F32Ptr, "x", F32Ptr, "off", I32Ptr, "G", I32, "d", I32)},
		{"spn_cross_entropy", "loss.cu", ps("part", F64Ptr, "dz", F32Ptr, "logits", F32Ptr, "y", I32Ptr, "dl", F32Ptr, "G", I32, "c", I32)},
		{"spn_mean_loss", "loss.cu", ps("loss", F32Ptr, "part", F64Ptr, "G", I32)},
		{"spn_squared_error", "loss.cu", ps("part", F64Ptr, "dz", F32Ptr, "pred", F32Ptr, "target", F64Ptr, "dl", F32Ptr, "len", I32, "labelled", I32)},
		{"spn_bce", "loss.cu", ps("part", F64Ptr, "dz", F32Ptr, "z", F32Ptr, "y", F64Ptr, "dl", F32Ptr, "m", I32, "labelled", I32)},
		{"spn_bce_loss", "loss.cu", ps("loss", F32Ptr, "part", F64Ptr, "m", I32, "labelled", I32)},
		{"spn_adam", "adam.cu", ps("w", F32Ptr, "g", F32Ptr, "m", F32Ptr, "v", F32Ptr, "len", I32, "lr", F64, "beta1", F64, "beta2", F64, "eps", F64, "wd", F64, "bc1", F64, "bc2", F64, "decay", I32, "frozen", I32)},
		{"spn_dropout_mask", "dropout.cu", ps("mask", F32Ptr, "len", I32, "seed", U64, "step", U64, "p", F64, "scale", F32)},
		{"spn_mul", "dropout.cu", ps("y", F32Ptr, "x", F32Ptr, "s", F32Ptr, "len", I32)},
		{"spn_rel_sum", "typed.cu", cat(ps("y", F32Ptr), group("x"), ps("ptr", I32Ptr, "idx", I32Ptr, "r0", I32, "count", I32, "n", I32, "d", I32))},
		{"spn_rel_gather_t", "typed.cu", cat(group("g"), ps("dy", F32Ptr, "ptr", I32Ptr, "idx", I32Ptr, "r0", I32, "count", I32, "n", I32, "d", I32))},
		{"spn_combine_terms", "typed.cu", ps("y", F32Ptr, "S", F32Ptr, "R", F32Ptr, "alpha", F32Ptr, "eps", F32Ptr, "len", I32)},
		{"spn_combine_terms_backward", "typed.cu", ps("dS", F32Ptr, "dR", F32Ptr, "dy", F32Ptr, "alpha", F32Ptr, "eps", F32Ptr, "len", I32)},
		{"spn_gated_sum", "typed.cu", ps("y", F32Ptr, "z", F32Ptr, "tv", F32Ptr, "off", I32Ptr, "G", I32, "c", I32)},
		{"spn_gated_sum_backward", "typed.cu", ps("dz", F32Ptr, "dt", F32Ptr, "z", F32Ptr, "tv", F32Ptr, "dy", F32Ptr, "off", I32Ptr, "G", I32, "c", I32)},
		{"spn_copy_cols", "typed.cu", ps("y", F32Ptr, "x", F32Ptr, "n", I32, "w", I32, "ys", I32, "yo", I32, "xs", I32, "xo", I32)},
		{"spn_embed_sum", "typed.cu", ps("y", F32Ptr, "T", F32Ptr, "x", I32Ptr, "off", I32Ptr, "n", I32, "C", I32, "d", I32)},
		{"spn_edge_messages", "typed.cu", ps("y", F32Ptr, "h", F32Ptr, "e", F32Ptr, "ptr", I32Ptr, "idx", I32Ptr, "n", I32, "d", I32)},
		{"spn_edge_messages_mask", "typed.cu", ps("de", F32Ptr, "dy", F32Ptr, "h", F32Ptr, "e", F32Ptr, "ptr", I32Ptr, "idx", I32Ptr, "n", I32, "d", I32)},
		{"spn_gather_rows", "typed.cu", ps("y", F32Ptr, "x", F32Ptr, "ptr", I32Ptr, "idx", I32Ptr, "n", I32, "d", I32)},
		{"spn_gcn_propagate", "gcn.cu", ps("y", F32Ptr, "x", F32Ptr, "ptr", I32Ptr, "idx", I32Ptr, "w", F32Ptr, "self", F32Ptr, "n", I32, "d", I32)},
		{"spn_gat_forward", "gat.cu", ps("y", F32Ptr, "alpha", F32Ptr, "pre", F32Ptr, "z", F32Ptr, "aSrc", F32Ptr, "aDst", F32Ptr, "ptr", I32Ptr, "idx", I32Ptr, "n", I32, "H", I32, "d", I32)},
		{"spn_gat_backward_dp", "gat.cu", ps("g", F64Ptr, "dp", F32Ptr, "dy", F32Ptr, "z", F32Ptr, "alpha", F32Ptr, "pre", F32Ptr, "ptr", I32Ptr, "idx", I32Ptr, "n", I32, "H", I32, "d", I32)},
		{"spn_gat_backward_vec", "gat.cu", ps("psrc", F64Ptr, "pdst", F64Ptr, "g", F64Ptr, "z", F32Ptr, "ptr", I32Ptr, "idx", I32Ptr, "n", I32, "H", I32, "d", I32)},
		{"spn_gat_backward_dz", "gat.cu", ps("dz", F32Ptr, "dy", F32Ptr, "alpha", F32Ptr, "dp", F32Ptr, "aSrc", F32Ptr, "aDst", F32Ptr, "ptr", I32Ptr, "idx", I32Ptr, "rev", I32Ptr, "n", I32, "H", I32, "d", I32)},
	}
}

// PackHops lays out the hop sets N_1..N_k of n nodes as spn_hop_aggregate
// reads them: ptr holds k·(n+1) offsets into the one idx, row u of hop i
// at idx[ptr[i·(n+1)+u] .. ptr[i·(n+1)+u+1]). Every set must have n+1
// offsets and Ptr[n] = len(Idx), and all of them at most 2³¹−1 entries.
// It is PackedHops, then FillHopPtr and FillHopIdx into new arrays.
func PackHops(hops []csr.CSR, n int) (ptr, idx []int32, err error) {
	np, ni, err := PackedHops(hops, n)
	if err != nil {
		return nil, nil, err
	}
	ptr, idx = make([]int32, np), make([]int32, ni)
	FillHopPtr(ptr, hops)
	FillHopIdx(idx, hops)
	return ptr, idx, nil
}

// PackedHops checks the hop sets of n nodes as PackHops requires and
// returns the lengths of their layout's ptr and idx.
func PackedHops(hops []csr.CSR, n int) (nptr, nidx int, err error) {
	total := 0
	for i, h := range hops {
		if len(h.Ptr) != n+1 {
			return 0, 0, fmt.Errorf("kern: hop set %d has %d row offsets, want %d for %d nodes", i+1, len(h.Ptr), n+1, n)
		}
		if int(h.Ptr[n]) != len(h.Idx) {
			return 0, 0, fmt.Errorf("kern: hop set %d has %d entries, its offsets say %d", i+1, len(h.Idx), h.Ptr[n])
		}
		total += len(h.Idx)
	}
	if total > math.MaxInt32 {
		return 0, 0, fmt.Errorf("kern: %d hop entries, more than int32 offsets address", total)
	}
	return len(hops) * (n + 1), total, nil
}

// FillHopPtr writes the offsets of PackHops' layout of hops, which
// PackedHops has passed, into ptr (of the length it returned).
func FillHopPtr(ptr []int32, hops []csr.CSR) {
	off := int32(0)
	for _, h := range hops {
		dst := ptr[:len(h.Ptr)]
		for u, p := range h.Ptr {
			dst[u] = off + p
		}
		ptr = ptr[len(h.Ptr):]
		off += int32(len(h.Idx))
	}
}

// FillHopIdx writes the entries of PackHops' layout of hops, which
// PackedHops has passed, into idx (of the length it returned).
func FillHopIdx(idx []int32, hops []csr.CSR) {
	for _, h := range hops {
		idx = idx[copy(idx, h.Idx):]
	}
}
