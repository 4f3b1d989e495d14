package nbop

import (
	"errors"
	"fmt"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/cuda/kern"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
)

// DeviceHops are K sets of a batch on a device, packed by kern.PackHops,
// with their transposes packed the same way for the backward pass: the
// hop sets N_1..N_k of HopCombine (Data.Hop1 and Data.Hops), the
// higher hop sets N_2..N_k of GivenFirstHop and RelCombine, or
// R-SPN's relations. They are views of one packed copy (PackHops,
// PackSets, UploadHops).
type DeviceHops struct {
	K                    int
	Ptr, Idx, PtrT, IdxT *cuda.Buffer
	// owner holds the arrays of an UploadHops (nil for a PackHops).
	owner *cuda.Buffer
}

// PackHops adds the k hop sets of d and their transposes to pk: after
// pk's Upload the returned DeviceHops points at them on the device.
func PackHops(pk *cuda.Pack, d *Data, k int) (*DeviceHops, error) {
	if len(d.Hops) != k-1 || len(d.HopsT) != k-1 {
		return nil, fmt.Errorf("packing the hop sets: %d higher hop sets for k = %d", len(d.Hops), k)
	}
	return PackSets(pk, append([]data.CSR{d.Hop1}, d.Hops...), append([]data.CSR{d.Hop1T}, d.HopsT...), d.N)
}

// PackSets adds the sets (CSRs of n rows: hop sets or relations) and
// their transposes setsT to pk, each list packed by kern.PackHops: after
// pk's Upload the returned DeviceHops (K = len(sets)) points at them on
// the device.
func PackSets(pk *cuda.Pack, sets, setsT []data.CSR, n int) (*DeviceHops, error) {
	if len(setsT) != len(sets) {
		return nil, fmt.Errorf("packing the sets: %d sets, %d transposes", len(sets), len(setsT))
	}
	h := &DeviceHops{K: len(sets)}
	if err := packHops(pk, &h.Ptr, &h.Idx, sets, n); err != nil {
		return nil, fmt.Errorf("packing the sets: %w", err)
	}
	if ownTransposes(sets, setsT) {
		// Sets that are their own transposes (Data.Set, SetHop1) go to
		// the device once.
		return h, errors.Join(pk.Share(&h.PtrT, &h.Ptr), pk.Share(&h.IdxT, &h.Idx))
	}
	if err := packHops(pk, &h.PtrT, &h.IdxT, setsT, n); err != nil {
		return nil, fmt.Errorf("packing the transposes: %w", err)
	}
	return h, nil
}

// packHops lays out sets in pk as kern.PackHops does, writing them in
// place (cuda.Place): *ptr and *idx will point at them on the device.
func packHops(pk *cuda.Pack, ptr, idx **cuda.Buffer, sets []data.CSR, n int) error {
	np, ni, err := kern.PackedHops(sets, n)
	if err != nil {
		return err
	}
	// Each array is filled before the next Place, which may move pk's memory.
	kern.FillHopPtr(cuda.Place[int32](pk, ptr, np), sets)
	kern.FillHopIdx(cuda.Place[int32](pk, idx, ni), sets)
	return nil
}

// ownTransposes reports whether every transpose in setsT is its set in
// sets itself (sameArrays).
func ownTransposes(sets, setsT []data.CSR) bool {
	for i := range sets {
		if !sameArrays(sets[i], setsT[i]) {
			return false
		}
	}
	return true
}

// PackTyped adds what the R-SPN and E-SPN ops' device math reads of d
// to pk: the higher hop sets N_2..N_k of GivenFirstHop and RelCombine
// (Dev) and the relations (DevRel), with their transposes, the
// categorical node features when the batch has them (DevNodeCat), the
// edges when it has edge features (DevEdges) and the graph offsets
// (DevPtr, PackPtr). After pk's Upload these point at them; release
// drops the references.
func (d *Data) PackTyped(pk *cuda.Pack) (release func(), err error) {
	hops, err := PackSets(pk, d.Hops, d.HopsT, d.N)
	if err != nil {
		return nil, fmt.Errorf("higher hop sets: %w", err)
	}
	rel, err := PackSets(pk, d.Rel, d.RelT, d.N)
	if err != nil {
		return nil, fmt.Errorf("relations: %w", err)
	}
	var cat *DeviceCat
	if len(d.NodeOff) > 0 {
		if cat, err = PackCat(pk, d.NodeCat, d.NodeOff, d.N); err != nil {
			return nil, fmt.Errorf("node features: %w", err)
		}
	}
	var edges *DeviceEdges
	if len(d.EdgeOff) > 0 {
		if edges, err = d.packEdges(pk); err != nil {
			return nil, err
		}
	}
	d.Dev, d.DevRel, d.DevNodeCat, d.DevEdges = hops, rel, cat, edges
	dropPtr := d.PackPtr(pk)
	return func() {
		d.Dev, d.DevRel, d.DevNodeCat, d.DevEdges = nil, nil, nil, nil
		dropPtr()
	}, nil
}

// PackPtr adds d's graph offsets to pk (GlobalRead's device math reads
// them): after pk's Upload d.DevPtr points at them; release drops the
// reference.
func (d *Data) PackPtr(pk *cuda.Pack) (release func()) {
	cuda.Put(pk, &d.DevPtr, d.Ptr)
	return func() { d.DevPtr = nil }
}

// DeviceEdges are the adjacency of a batch's n nodes on a device (Ptr,
// Idx), the incoming entries of every node (InPtr, InIdx:
// kernels.IncomingEntries) and the entries' categorical edge features
// (Feat), views of one packed copy (PackTyped).
type DeviceEdges struct {
	Ptr, Idx, InPtr, InIdx *cuda.Buffer
	Feat                   *DeviceCat
	// N and E are the node and entry counts.
	N, E int
}

// packEdges adds d's adjacency, its incoming entries and the edge
// features to pk.
func (d *Data) packEdges(pk *cuda.Pack) (*DeviceEdges, error) {
	E := len(d.Adj.Idx)
	if len(d.Adj.Ptr) != d.N+1 || len(d.AdjIn.Ptr) != d.N+1 || len(d.AdjIn.Idx) != E {
		return nil, fmt.Errorf("packing the edges: adjacency of %d offsets and %d entries, incoming entries %d and %d, for %d nodes", len(d.Adj.Ptr), E, len(d.AdjIn.Ptr), len(d.AdjIn.Idx), d.N)
	}
	feat, err := PackCat(pk, d.EdgeFeat, d.EdgeOff, E)
	if err != nil {
		return nil, fmt.Errorf("edge features: %w", err)
	}
	ed := &DeviceEdges{Feat: feat, N: d.N, E: E}
	cuda.Put(pk, &ed.Ptr, d.Adj.Ptr)
	cuda.Put(pk, &ed.Idx, d.Adj.Idx)
	cuda.Put(pk, &ed.InPtr, d.AdjIn.Ptr)
	cuda.Put(pk, &ed.InIdx, d.AdjIn.Idx)
	return ed, nil
}

// UploadHops copies the k hop sets of d and their transposes to e's
// device in one copy (a pack of their own, which Free releases).
func UploadHops(e *engine.Engine, d *Data, k int) (*DeviceHops, error) {
	var pk cuda.Pack
	h, err := PackHops(&pk, d, k)
	if err != nil {
		return nil, err
	}
	if h.owner, err = pk.Upload(e.Context(), nil, 0); err != nil {
		return nil, fmt.Errorf("uploading the hop sets: %w", err)
	}
	return h, nil
}

// Free releases the device memory of an UploadHops (nothing for a
// PackHops, whose pack's buffer holds the arrays).
func (h *DeviceHops) Free() error {
	if h.owner == nil {
		return nil
	}
	return h.owner.Free()
}

// devInputs is inputs for device buffers (views of X's blocks).
func (o RelAgg) devInputs(in []*cuda.Buffer) ([]*cuda.Buffer, error) {
	return devBlocks(o.ID, o.N*o.W, func(block func(*cuda.Buffer, int) *cuda.Buffer) []*cuda.Buffer { return inputs(o, in, block) })
}

// devBlocks runs pick with a function returning block b of n values of a
// buffer (a view, cuda.Buffer.Slice; nil for nil), and returns its result
// or the first error of a view, naming the op id.
func devBlocks(id string, n int, pick func(block func(*cuda.Buffer, int) *cuda.Buffer) []*cuda.Buffer) ([]*cuda.Buffer, error) {
	var err error
	out := pick(func(x *cuda.Buffer, b int) *cuda.Buffer {
		if x == nil {
			return nil
		}
		v, e := x.Slice(b*n, n)
		if e != nil && err == nil {
			err = fmt.Errorf("%s: block %d of the stacked input: %w", id, b, e)
		}
		return v
	})
	return out, err
}

// relDev returns the relations on the device, or an error naming the op.
func (d *Data) relDev(id string, r int) (*DeviceHops, error) {
	if d.DevRel == nil {
		return nil, fmt.Errorf("%s: the relations are not on the device", id)
	}
	if d.DevRel.K != r {
		return nil, fmt.Errorf("%s: %d relations on the device, op built for %d", id, d.DevRel.K, r)
	}
	return d.DevRel, nil
}

// ZeroOut implements op.ZeroOut: DeviceForward writes the real rows.
func (RelAgg) ZeroOut() {}

// DeviceForward implements op.DeviceOp: y = 0, then y += the gather of
// X_j over relation j, relations in order, eight a launch (spn_rel_sum,
// the CPU's bits); the padding rows zero. Stacked, X_j is a view of X's
// block From + j − 1.
func (o RelAgg) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	if err := o.check(); err != nil {
		return err
	}
	in, err := o.devInputs(in)
	if err != nil {
		return err
	}
	rel, err := o.D.relDev(o.ID, o.R)
	if err != nil {
		return err
	}
	n, d := o.D.N, o.W
	return engine.ForGroups(o.R, func(r0, count int) error {
		args := append(append([]any{y}, engine.GroupArgs(in[r0:r0+count])...), rel.Ptr, rel.Idx, r0, count, n, d)
		return e.Launch("spn_rel_sum", n*d, args...)
	})
}

// DeviceBackward implements op.DeviceOp: dX_j = A_jᵀ·dy, the gather of dy
// over the transposed relation j, eight relations a launch
// (spn_rel_gather_t), the padding rows keeping the adaptor's zeros.
// Stacked, dX_j is a view of dX's block From + j − 1 and the other
// blocks keep the adaptor's zeros.
func (o RelAgg) DeviceBackward(e *engine.Engine, _ []*cuda.Buffer, _, dy *cuda.Buffer, g []*cuda.Buffer) error {
	if err := o.check(); err != nil {
		return err
	}
	g, err := o.devInputs(g)
	if err != nil {
		return err
	}
	rel, err := o.D.relDev(o.ID, o.R)
	if err != nil {
		return err
	}
	n, d := o.D.N, o.W
	return engine.ForGroups(o.R, func(r0, count int) error {
		args := append(engine.GroupArgs(g[r0:r0+count]), dy, rel.PtrT, rel.IdxT, r0, count, n, d)
		return e.Launch("spn_rel_gather_t", count*n*d, args...)
	})
}

// DeviceForward implements op.DeviceOp: one term per labelled entry of
// the batch's G×T logits, 0 per missing label (spn_bce), added in order
// and divided by the labelled count (spn_bce_loss), in double.
func (o BCE) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	return o.device(e, in[0], y, nil, nil)
}

// DeviceBackward implements op.DeviceOp: dz = dy·(σ(z) − t)/labelled on
// the labelled entries of the real rows, 0 at the missing labels
// (spn_bce), the padding rows keeping the adaptor's zeros.
func (o BCE) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, _, dy *cuda.Buffer, g []*cuda.Buffer) error {
	return o.device(e, in[0], nil, g[0], dy)
}

// device computes the loss into out (when not nil) or the gradient into
// dz scaled by dl. The labelled count comes from the host's targets.
func (o BCE) device(e *engine.Engine, z, out, dz, dl *cuda.Buffer) error {
	m := o.D.G * o.T
	if len(o.D.Target) != m {
		return fmt.Errorf("%s: batch has %d binary labels, want %d graphs × %d tasks", o.ID, len(o.D.Target), o.D.G, o.T)
	}
	if o.D.DevTarget == nil || o.D.DevTarget.Len() < m {
		return fmt.Errorf("%s: the batch on the device has no binary labels for %d graphs × %d tasks", o.ID, o.D.G, o.T)
	}
	labelled := kernels.Labelled(o.D.Target)
	part, err := e.Scratch64(max(m, 1))
	if err != nil {
		return err
	}
	err = e.Launch("spn_bce", m, part, dz, z, o.D.DevTarget, dl, m, labelled)
	if err == nil && out != nil {
		err = e.Launch("spn_bce_loss", 1, out, part, m, labelled)
	}
	return err
}

// EmbedRows returns, for the categories x (n×C, C = len(off)) of
// stacked embedding tables whose column c starts at row off[c], the
// entries that use each table row as a CSR over rows 0..r−1 (r the
// largest row used + 1): row r lists the n's u (entry u·C + c's node, or
// edge) with off[c] + x[u·C+c] = r in ascending order. A row belongs to
// one column, so the gradient of the embedding sum is, per row, the sum
// of its entries' output gradients in that order (DeviceRows.Grad):
// kernels.EmbedSumGrad's order, a gather without atomics.
func EmbedRows(x, off []int32, n int) (ptr, idx []int32) {
	C := len(off)
	rows := 0
	for u := 0; u < n; u++ {
		for c := 0; c < C; c++ {
			rows = max(rows, int(off[c]+x[u*C+c])+1)
		}
	}
	ptr = make([]int32, rows+1)
	for u := 0; u < n; u++ {
		for c := 0; c < C; c++ {
			ptr[off[c]+x[u*C+c]+1]++
		}
	}
	for r := 0; r < rows; r++ {
		ptr[r+1] += ptr[r]
	}
	idx = make([]int32, n*C)
	next := append([]int32(nil), ptr[:rows]...)
	for u := 0; u < n; u++ {
		for c := 0; c < C; c++ {
			r := off[c] + x[u*C+c]
			idx[next[r]] = int32(u)
			next[r]++
		}
	}
	return ptr, idx
}

// DeviceRows are the entries of each used row of an embedding table
// (EmbedRows' CSR: Ptr, Idx) on a device, for the embedding's gradient
// (Grad): Rows is the number of table rows of the CSR, Chunks the most
// chunks of kernels.ChunkRows entries one row has (at least 1).
type DeviceRows struct {
	Ptr, Idx     *cuda.Buffer
	Rows, Chunks int
}

// PackRows adds EmbedRows' CSR (ptr, idx) to pk: after pk's Upload the
// returned DeviceRows points at it on the device.
func PackRows(pk *cuda.Pack, ptr, idx []int32) *DeviceRows {
	r := &DeviceRows{Rows: len(ptr) - 1, Chunks: 1}
	for l := 0; l < r.Rows; l++ {
		r.Chunks = max(r.Chunks, kernels.NumChunks(int(ptr[l+1]-ptr[l])))
	}
	cuda.Put(pk, &r.Ptr, ptr)
	cuda.Put(pk, &r.Idx, idx)
	return r
}

// Grad adds to dT (at least Rows×w) the gradient of an embedding lookup
// for the output gradient dy (one row of w values per entry): dT[l] +=
// Σ dy[u] over row l's entries u in order, as a float partial per chunk
// of kernels.ChunkRows entries (spn_embed_part, one thread per row, chunk
// and column) added in chunk order (spn_embed_backward, not launched
// when no row has more than one chunk: spn_embed_part adds its partial
// itself). No thread loops over more than a chunk's entries or a row's
// chunks, however common a category (carbon atoms, single bonds). Rows
// of at most ChunkRows entries get the CPU's bits (its one sum into the
// zeroed gradient); longer rows differ from it in rounding only.
func (r *DeviceRows) Grad(e *engine.Engine, dT, dy *cuda.Buffer, w int) error {
	if r.Rows == 0 {
		return nil
	}
	if r.Chunks == 1 {
		return e.Launch("spn_embed_part", r.Rows*w, dT, nil, dy, r.Ptr, r.Idx, r.Rows, 1, w)
	}
	part, err := e.Scratch32(r.Rows * r.Chunks * w)
	if err != nil {
		return err
	}
	if err := e.Launch("spn_embed_part", r.Rows*r.Chunks*w, dT, part, dy, r.Ptr, r.Idx, r.Rows, r.Chunks, w); err != nil {
		return err
	}
	return e.Launch("spn_embed_backward", r.Rows*w, dT, part, r.Ptr, r.Rows, r.Chunks, w)
}

// DeviceCat are the categorical features of a batch's n nodes (or edge
// entries) on a device: the categories X (n×C), the columns' first table
// rows Off (C) and the entries of each used table row (Table: EmbedRows),
// views of one packed copy (PackCat).
type DeviceCat struct {
	X, Off *cuda.Buffer
	N, C   int
	Table  *DeviceRows
}

// PackCat adds the categories x of n entries (n×len(off)), the column
// offsets off and their table rows' entries (EmbedRows) to pk: after
// pk's Upload the returned DeviceCat points at them on the device.
func PackCat(pk *cuda.Pack, x, off []int32, n int) (*DeviceCat, error) {
	if len(off) == 0 || len(x) != n*len(off) {
		return nil, fmt.Errorf("packing categorical features: %d values for %d entries × %d columns", len(x), n, len(off))
	}
	c := &DeviceCat{N: n, C: len(off)}
	cuda.Put(pk, &c.X, x)
	cuda.Put(pk, &c.Off, off)
	ptr, idx := EmbedRows(x, off, n)
	c.Table = PackRows(pk, ptr, idx)
	return c, nil
}

// embedSum sets the first c.N rows of y (zeroed, w values a row: the
// rows past c.N stay zero) to the embedding sum of c's categories over
// the stacked tables T (spn_embed_sum).
func (c *DeviceCat) embedSum(e *engine.Engine, y, T *cuda.Buffer, w int) error {
	return e.Launch("spn_embed_sum", c.N*w, y, T, c.X, c.Off, c.N, c.C, w)
}

// embedGrad adds to dT (tableRows×w) the gradient of the embedding sum
// for the output gradient dy: per table row, its entries' rows of dy in
// ascending order (DeviceRows.Grad).
func (c *DeviceCat) embedGrad(e *engine.Engine, dT, dy *cuda.Buffer, tableRows, w int) error {
	if c.Table.Rows > tableRows {
		return fmt.Errorf("categories use %d table rows, the tables have %d", c.Table.Rows, tableRows)
	}
	return c.Table.Grad(e, dT, dy, w)
}

// devNodeCat returns the categorical node features on the device, which
// must be the batch's n nodes.
func (o CatEmbed) devNodeCat() (*DeviceCat, error) {
	c := o.D.DevNodeCat
	if c == nil {
		return nil, fmt.Errorf("%s: the categorical node features are not on the device", o.ID)
	}
	if c.N != o.D.N || c.C != len(o.D.NodeOff) {
		return nil, fmt.Errorf("%s: %d nodes × %d columns of categories on the device, the batch has %d × %d", o.ID, c.N, c.C, o.D.N, len(o.D.NodeOff))
	}
	return c, nil
}

// ZeroOut implements op.ZeroOut: DeviceForward writes the real rows.
func (CatEmbed) ZeroOut() {}

// DeviceForward implements op.DeviceOp: y_u = Σ_c T[off_c + x_u,c] over
// the real rows in column order (spn_embed_sum), the padding rows zero:
// the CPU's bits. With Onto the sums go to zeroed scratch, then y = H +
// scratch over every row (spn_bias_relu over one row, as the engine's
// Add): the CPU's bits again.
func (o CatEmbed) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	c, err := o.devNodeCat()
	if err != nil {
		return err
	}
	if !o.Onto {
		return c.embedSum(e, y, in[0], o.W)
	}
	nw := o.N * o.W
	s, err := e.Zeros(nw)
	if err != nil {
		return err
	}
	if err := c.embedSum(e, s, in[1], o.W); err != nil {
		return err
	}
	return e.Launch("spn_bias_relu", nw, y, in[0], s, 1, nw, 0)
}

// DeviceBackward implements op.DeviceOp: dT[r] = Σ dy_u over the nodes u
// that use row r, in ascending order, by chunks of entries
// (DeviceRows.Grad: gathers, no atomics; the CPU's bits for rows of at
// most kernels.ChunkRows entries); with Onto, dH = dy first
// (spn_copy_cols).
func (o CatEmbed) DeviceBackward(e *engine.Engine, _ []*cuda.Buffer, _, dy *cuda.Buffer, g []*cuda.Buffer) error {
	c, err := o.devNodeCat()
	if err != nil {
		return err
	}
	dT := g[0]
	if o.Onto {
		if err := e.Launch("spn_copy_cols", o.N*o.W, g[0], dy, o.N, o.W, o.W, 0, o.W, 0); err != nil {
			return err
		}
		dT = g[1]
	}
	if err := c.embedGrad(e, dT, dy, o.Rows, o.W); err != nil {
		return fmt.Errorf("%s: %w", o.ID, err)
	}
	return nil
}

// devEdges returns the batch's edges on the device.
func (o EdgeMsg) devEdges() (*DeviceEdges, error) {
	ed := o.D.DevEdges
	if ed == nil {
		return nil, fmt.Errorf("%s: the edges are not on the device", o.ID)
	}
	if ed.N != o.D.N || ed.E != len(o.D.Adj.Idx) {
		return nil, fmt.Errorf("%s: %d nodes and %d edge entries on the device, the batch has %d and %d", o.ID, ed.N, ed.E, o.D.N, len(o.D.Adj.Idx))
	}
	return ed, nil
}

// edgeEmbeddings returns a scratch buffer of the entries' embeddings e
// (E×d, spn_embed_sum over the tables T).
func (o EdgeMsg) edgeEmbeddings(e *engine.Engine, ed *DeviceEdges, T *cuda.Buffer) (*cuda.Buffer, error) {
	eb, err := op.ScratchBuffer(e, ed.E*o.W)
	if err != nil {
		return nil, err
	}
	if err := e.Launch("spn_embed_sum", ed.E*o.W, eb, T, ed.Feat.X, ed.Feat.Off, ed.E, ed.Feat.C, o.W); err != nil {
		return nil, err
	}
	return eb, nil
}

// ZeroOut implements op.ZeroOut: DeviceForward writes the real rows.
func (EdgeMsg) ZeroOut() {}

// DeviceForward implements op.DeviceOp: the entries' embeddings
// (spn_embed_sum), then y_u = Σ_{v∈N(u)} ReLU(h_v + e_uv) over the real
// rows, the entries in order (spn_edge_messages), the padding rows zero:
// the CPU's bits.
func (o EdgeMsg) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	ed, err := o.devEdges()
	if err != nil {
		return err
	}
	eb, err := o.edgeEmbeddings(e, ed, in[1])
	if err != nil {
		return err
	}
	if o.Kept != nil {
		o.Kept.dev = eb
	}
	return e.Launch("spn_edge_messages", ed.N*o.W, y, in[0], eb, ed.Ptr, ed.Idx, ed.N, o.W)
}

// DeviceBackward implements op.DeviceOp: the entries' embeddings (those
// the forward pass kept, or again),
// de_p = dy_u ⊙ 1[h_v + e_p > 0] (spn_edge_messages_mask), dh_v the sum
// of de over v's incoming entries in order (spn_gather_rows) and dT per
// table row the sum of de over the entries that use it in order
// (DeviceRows.Grad): gathers without atomics, the CPU's bits (for the
// table rows of at most kernels.ChunkRows entries; longer ones within
// rounding).
func (o EdgeMsg) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, _, dy *cuda.Buffer, g []*cuda.Buffer) error {
	ed, err := o.devEdges()
	if err != nil {
		return err
	}
	var eb *cuda.Buffer
	if o.Kept != nil && o.Kept.dev != nil && o.Kept.dev.Len() == ed.E*o.W {
		eb = o.Kept.dev
	} else if eb, err = o.edgeEmbeddings(e, ed, in[1]); err != nil {
		return err
	}
	de, err := op.ScratchBuffer(e, ed.E*o.W)
	if err != nil {
		return err
	}
	if err := e.Launch("spn_edge_messages_mask", ed.N*o.W, de, dy, in[0], eb, ed.Ptr, ed.Idx, ed.N, o.W); err != nil {
		return err
	}
	if g[0] != nil {
		if err := e.Launch("spn_gather_rows", ed.N*o.W, g[0], de, ed.InPtr, ed.InIdx, ed.N, o.W); err != nil {
			return err
		}
	}
	if g[1] != nil {
		if err := ed.Feat.embedGrad(e, g[1], de, o.Rows, o.W); err != nil {
			return fmt.Errorf("%s: %w", o.ID, err)
		}
	}
	return nil
}

// ZeroOut implements op.ZeroOut: DeviceForward writes the real rows.
func (GlobalRead) ZeroOut() {}

// DeviceForward implements op.DeviceOp: the graph sums s of x broadcast
// to their nodes (spn_graph_sum_broadcast, the CPU's bits), then
// y = s·W over the real rows by cuBLAS, the padding rows zero.
func (o GlobalRead) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	if o.D.DevPtr == nil {
		return fmt.Errorf("%s: the graph offsets are not on the device", o.ID)
	}
	n, d := o.D.N, o.W
	s, err := o.graphSums(e, in[0])
	if err != nil {
		return err
	}
	blas, err := e.BLAS()
	if err != nil {
		return err
	}
	return blas.Sgemm(false, false, n, d, d, 1, s, in[1], 0, y)
}

// DeviceBackward implements op.DeviceOp: dW = sᵀ·dy and t = dy·Wᵀ over
// the real rows by cuBLAS, dx = the graph sums of t broadcast to their
// nodes (the map is symmetric).
func (o GlobalRead) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, _, dy *cuda.Buffer, g []*cuda.Buffer) error {
	if o.D.DevPtr == nil {
		return fmt.Errorf("%s: the graph offsets are not on the device", o.ID)
	}
	n, d := o.D.N, o.W
	blas, err := e.BLAS()
	if err != nil {
		return err
	}
	if g[1] != nil {
		s, err := o.graphSums(e, in[0])
		if err != nil {
			return err
		}
		if err := blas.Sgemm(true, false, d, d, n, 1, s, dy, 0, g[1]); err != nil {
			return err
		}
	}
	if g[0] == nil {
		return nil
	}
	t, err := op.ScratchBuffer(e, n*d)
	if err != nil {
		return err
	}
	if err := blas.Sgemm(false, true, n, d, d, 1, dy, in[1], 0, t); err != nil {
		return err
	}
	return e.Launch("spn_graph_sum_broadcast", o.D.G*d, g[0], t, o.D.DevPtr, o.D.G, d)
}

// graphSums returns a scratch buffer of the graph sums of x's real rows
// broadcast to their nodes (n×W).
func (o GlobalRead) graphSums(e *engine.Engine, x *cuda.Buffer) (*cuda.Buffer, error) {
	n, d := o.D.N, o.W
	s, err := op.ScratchBuffer(e, n*d)
	if err != nil {
		return nil, err
	}
	if err := e.Launch("spn_graph_sum_broadcast", o.D.G*d, s, x, o.D.DevPtr, o.D.G, d); err != nil {
		return nil, err
	}
	return s, nil
}
