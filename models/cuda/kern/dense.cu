// The bias and ReLU after a matrix product (the products themselves go to
// cuBLAS): y = ReLU(x + b) and the bias gradient.

// spn_bias_relu sets y = ReLU(x + b) over the n rows of x (n×d), b (d)
// broadcast over the rows; relu 0 skips the ReLU. One thread per value.
// Its gradient is spn_relu_mask (with relu) and Engine.ColSums (the
// kernels spn_col_part and spn_col_sums).
SPN_KERNEL void spn_bias_relu(float* __restrict__ y, const float* __restrict__ x, const float* __restrict__ b,
	int n, int d, int relu)
{
	long long t = spn_index();
	if (t >= (long long)n * d) {
		return;
	}
	float v = x[t] + b[(int)(t % d)];
	y[t] = relu ? spn_relu(v) : v;
}

// spn_col_part sets the float partial p = Σ_{r ∈ c} dz[r,j] of chunk c
// (SPN_CHUNK_ROWS rows, in order) and column j of dz (n×d), one thread
// per (c, j): with one chunk (n ≤ SPN_CHUNK_ROWS) it adds p to db[j]
// itself, otherwise it writes part[c·d + j] for spn_col_sums. Together
// they add the column sums of dz to db with the bits of the bias
// gradient of models/kernels' CPU.MatMulAT: a float partial per chunk,
// the partials added to db in chunk order.
SPN_KERNEL void spn_col_part(float* __restrict__ db, float* __restrict__ part, const float* __restrict__ dz, int n, int d)
{
	long long t = spn_index();
	int nc = spn_chunks(n), c, j, lo, hi;
	if (!spn_chunk(t, n, d, &c, &j, &lo, &hi)) {
		return;
	}
	float p = spn_rows_sum(dz, lo, hi, d, j);
	if (nc == 1) {
		db[j] = db[j] + p;
	} else {
		part[t] = p;
	}
}

// spn_col_sums adds spn_col_part's nc partials of column j to db[j] in
// chunk order: acc = db[j], acc += part[c·d + j] for c = 0, 1, ... One
// thread per column.
SPN_KERNEL void spn_col_sums(float* __restrict__ db, const float* __restrict__ part, int nc, int d)
{
	long long t = spn_index();
	if (t >= d) {
		return;
	}
	float acc = db[t];
	for (int c = 0; c < nc; c++) {
		acc += part[(long long)c * d + t];
	}
	db[t] = acc;
}

// spn_fill sets the len values of y to v: the zeroing of gradient buffers
// and padding on the device. One thread per value.
SPN_KERNEL void spn_fill(float* __restrict__ y, float v, int len)
{
	long long t = spn_index();
	if (t >= len) {
		return;
	}
	y[t] = v;
}

// spn_add_many adds up to 32 arrays into parts of g: for j < count,
// the n_j values of x_j go into g[o_j], g[o_j+1], ... (g[o_j + i] += x_j[i]);
// the parts must not overlap. One thread per value of the parts, in the
// order x_0's values, then x_1's, ...: a training step's gradients added
// to the device optimiser's one array of gradients, 32 parameters a
// launch.
SPN_KERNEL void spn_add_many(float* __restrict__ g,
	const float* __restrict__ x0, const float* __restrict__ x1, const float* __restrict__ x2, const float* __restrict__ x3,
	const float* __restrict__ x4, const float* __restrict__ x5, const float* __restrict__ x6, const float* __restrict__ x7,
	const float* __restrict__ x8, const float* __restrict__ x9, const float* __restrict__ x10, const float* __restrict__ x11,
	const float* __restrict__ x12, const float* __restrict__ x13, const float* __restrict__ x14, const float* __restrict__ x15,
	const float* __restrict__ x16, const float* __restrict__ x17, const float* __restrict__ x18, const float* __restrict__ x19,
	const float* __restrict__ x20, const float* __restrict__ x21, const float* __restrict__ x22, const float* __restrict__ x23,
	const float* __restrict__ x24, const float* __restrict__ x25, const float* __restrict__ x26, const float* __restrict__ x27,
	const float* __restrict__ x28, const float* __restrict__ x29, const float* __restrict__ x30, const float* __restrict__ x31,
	int o0, int o1, int o2, int o3, int o4, int o5, int o6, int o7, int o8, int o9, int o10, int o11, int o12, int o13, int o14, int o15,
	int o16, int o17, int o18, int o19, int o20, int o21, int o22, int o23, int o24, int o25, int o26, int o27, int o28, int o29, int o30, int o31,
	int n0, int n1, int n2, int n3, int n4, int n5, int n6, int n7, int n8, int n9, int n10, int n11, int n12, int n13, int n14, int n15,
	int n16, int n17, int n18, int n19, int n20, int n21, int n22, int n23, int n24, int n25, int n26, int n27, int n28, int n29, int n30, int n31, int count)
{
	// The parts are taken one after another from the parameters
	// themselves, unrolled: an array of them indexed by j would live in
	// local memory (a register file cannot be indexed).
	long long t = spn_index();
#define SPN_ADD_PART(j) \
	if (j >= count) return; \
	if (t < n##j) { g[o##j + t] += x##j[t]; return; } \
	t -= n##j;
	SPN_ADD_PART(0) SPN_ADD_PART(1) SPN_ADD_PART(2) SPN_ADD_PART(3)
	SPN_ADD_PART(4) SPN_ADD_PART(5) SPN_ADD_PART(6) SPN_ADD_PART(7)
	SPN_ADD_PART(8) SPN_ADD_PART(9) SPN_ADD_PART(10) SPN_ADD_PART(11)
	SPN_ADD_PART(12) SPN_ADD_PART(13) SPN_ADD_PART(14) SPN_ADD_PART(15)
	SPN_ADD_PART(16) SPN_ADD_PART(17) SPN_ADD_PART(18) SPN_ADD_PART(19)
	SPN_ADD_PART(20) SPN_ADD_PART(21) SPN_ADD_PART(22) SPN_ADD_PART(23)
	SPN_ADD_PART(24) SPN_ADD_PART(25) SPN_ADD_PART(26) SPN_ADD_PART(27)
	SPN_ADD_PART(28) SPN_ADD_PART(29) SPN_ADD_PART(30) SPN_ADD_PART(31)
#undef SPN_ADD_PART
}

// spn_readout_sum is the end of the layer-sum readout (models/rt's
// layerSum) for up to eight readouts t < count:
//
//	y[i] = Σ_t (z_t[i] + b_t[j]) · m_t[i],  j = i mod c,
//
// z_t = z + t·len the readouts' products (len = graphs × c values each),
// m_t their dropout masks (NULL: no dropout, no product), added in the
// order t = 0, 1, ...: onto y's values (first 0: a later group of
// readouts) or from the first readout's (first 1). The bits of the
// readouts apart: spn_bias_relu's sum, spn_mul's product and the float
// sums of the readouts in order. One thread per value of y.
SPN_KERNEL void spn_readout_sum(float* __restrict__ y, const float* __restrict__ z,
	const float* __restrict__ b0, const float* __restrict__ b1, const float* __restrict__ b2, const float* __restrict__ b3,
	const float* __restrict__ b4, const float* __restrict__ b5, const float* __restrict__ b6, const float* __restrict__ b7,
	const float* __restrict__ m0, const float* __restrict__ m1, const float* __restrict__ m2, const float* __restrict__ m3,
	const float* __restrict__ m4, const float* __restrict__ m5, const float* __restrict__ m6, const float* __restrict__ m7,
	int count, int len, int c, int first)
{
	const float* b[8] = {b0, b1, b2, b3, b4, b5, b6, b7};
	const float* m[8] = {m0, m1, m2, m3, m4, m5, m6, m7};
	long long i = spn_index();
	if (i >= len) {
		return;
	}
	int j = (int)(i % c);
	float acc = first ? 0.0f : y[i];
	for (int t = 0; t < count && t < 8; t++) {
		float r = z[(long long)t * len + i] + b[t][j];
		if (m[t]) {
			r = r * m[t][i];
		}
		acc = (first && t == 0) ? r : acc + r;
	}
	y[i] = acc;
}

// spn_readout_masks sets dr_t = dy ⊙ m_t (dr_t = dr + t·len) for the
// readouts t < count of spn_readout_sum: their dropouts' backward, the
// bits of spn_mul. One thread per value of the dr_t.
SPN_KERNEL void spn_readout_masks(float* __restrict__ dr, const float* __restrict__ dy,
	const float* __restrict__ m0, const float* __restrict__ m1, const float* __restrict__ m2, const float* __restrict__ m3,
	const float* __restrict__ m4, const float* __restrict__ m5, const float* __restrict__ m6, const float* __restrict__ m7,
	int count, int len)
{
	long long i = spn_index(), v;
	int t;
	if (!spn_group_item(i, count, len, &t, &v)) {
		return;
	}
	dr[i] = dy[v] * spn_pick(t, m0, m1, m2, m3, m4, m5, m6, m7)[v];
}

// spn_readout_bias adds to db_k (c values) the column sums of the k-th
// block dr_k = dr + k·stride (n×c; stride 0: one dr for every k) for
// k < count ≤ 8, over n ≤ SPN_CHUNK_ROWS rows: the readouts' bias
// gradients of spn_readout_sum, with spn_col_part's bits for one chunk.
// One thread per (k, j).
SPN_KERNEL void spn_readout_bias(float* __restrict__ db0, float* __restrict__ db1, float* __restrict__ db2, float* __restrict__ db3,
	float* __restrict__ db4, float* __restrict__ db5, float* __restrict__ db6, float* __restrict__ db7,
	const float* __restrict__ dr, int count, int n, int c, int stride)
{
	long long i = spn_index();
	if (i >= (long long)count * c || count > 8 || n > SPN_CHUNK_ROWS) {
		return;
	}
	int k = (int)(i / c), j = (int)(i % c);
	float* db = spn_pick_out(k, db0, db1, db2, db3, db4, db5, db6, db7);
	db[j] = db[j] + spn_rows_sum(dr + (long long)k * stride, 0, n, c, j);
}

// spn_readout_product sets z_t = p_t·W_t for the readouts t < count ≤ 8
// of the layer-sum readout: p_t = p + t·n·d (the pooled states of the n
// graphs, stacked), W_t (d×c, row-major) and z_t = z + t·n·c, each value
// Σ_{j<d} p_t[g, j]·W_t[j, k] added in float in the order of j. The
// readouts' products are small (graphs × width × outputs), and one launch
// for eight costs less than a cuBLAS call each. One thread per value of
// the z_t.
SPN_KERNEL void spn_readout_product(float* __restrict__ z, const float* __restrict__ p,
	const float* __restrict__ w0, const float* __restrict__ w1, const float* __restrict__ w2, const float* __restrict__ w3,
	const float* __restrict__ w4, const float* __restrict__ w5, const float* __restrict__ w6, const float* __restrict__ w7,
	int count, int n, int d, int c)
{
	long long i = spn_index(), v;
	int t;
	if (!spn_group_item(i, count, (long long)n * c, &t, &v)) {
		return;
	}
	int g = (int)(v / c), k = (int)(v % c);
	const float* w = spn_pick(t, w0, w1, w2, w3, w4, w5, w6, w7);
	const float* row = p + ((long long)t * n + g) * d;
	float s = 0.0f;
	for (int j = 0; j < d; j++) {
		s += row[j] * w[(long long)j * c + k];
	}
	z[i] = s;
}

// spn_readout_product_backward is spn_readout_product's gradient for the
// output gradients dr_t = dr + t·stride (n×c; stride 0: one dr for every
// t): dp_t = dr_t·W_tᵀ (dp + t·n·d; Σ_{k<c} dr_t[g, k]·W_t[j, k] in the
// order of k) and dW_t = p_tᵀ·dr_t (Σ_{g<n} p_t[g, j]·dr_t[g, k] in the
// order of g), set, in float. One thread per value of the dp_t, then one
// per value of the dW_t.
SPN_KERNEL void spn_readout_product_backward(float* __restrict__ dp,
	float* __restrict__ dw0, float* __restrict__ dw1, float* __restrict__ dw2, float* __restrict__ dw3,
	float* __restrict__ dw4, float* __restrict__ dw5, float* __restrict__ dw6, float* __restrict__ dw7,
	const float* __restrict__ p,
	const float* __restrict__ w0, const float* __restrict__ w1, const float* __restrict__ w2, const float* __restrict__ w3,
	const float* __restrict__ w4, const float* __restrict__ w5, const float* __restrict__ w6, const float* __restrict__ w7,
	const float* __restrict__ dr, int count, int n, int d, int c, int stride)
{
	long long i = spn_index(), v;
	long long np = (long long)count * n * d;
	int t;
	if (i < np) {
		if (!spn_group_item(i, count, (long long)n * d, &t, &v)) {
			return;
		}
		int g = (int)(v / d), j = (int)(v % d);
		const float* w = spn_pick(t, w0, w1, w2, w3, w4, w5, w6, w7);
		const float* drow = dr + (long long)t * stride + (long long)g * c;
		float s = 0.0f;
		for (int k = 0; k < c; k++) {
			s += drow[k] * w[(long long)j * c + k];
		}
		dp[i] = s;
		return;
	}
	if (!spn_group_item(i - np, count, (long long)d * c, &t, &v)) {
		return;
	}
	int j = (int)(v / c), k = (int)(v % c);
	const float* pt = p + (long long)t * n * d;
	const float* drt = dr + (long long)t * stride;
	float s = 0.0f;
	for (int g = 0; g < n; g++) {
		s += pt[(long long)g * d + j] * drt[(long long)g * c + k];
	}
	spn_pick_out(t, dw0, dw1, dw2, dw3, dw4, dw5, dw6, dw7)[v] = s;
}

// spn_ge_scalar sets y = 1 where x ≥ s (left) or s ≥ x (!left), else 0
// (NaN compares false), over len values: Gorgonia's Gte of a tensor and a
// scalar with the result in the tensor's type, the mask of its
// rectifier. One thread per value.
SPN_KERNEL void spn_ge_scalar(float* __restrict__ y, const float* __restrict__ x, float s, int left, int len)
{
	long long t = spn_index();
	if (t >= len) {
		return;
	}
	y[t] = (left ? x[t] >= s : s >= x[t]) ? 1.0f : 0.0f;
}

// spn_scale sets y = x · s[0] over len values: the gradient of a dot
// product ⟨x, r⟩ scaled by the output gradient s[0]. One thread per
// value.
SPN_KERNEL void spn_scale(float* __restrict__ y, const float* __restrict__ x, const float* __restrict__ s, int len)
{
	long long t = spn_index();
	if (t >= len) {
		return;
	}
	y[t] = x[t] * s[0];
}

// spn_encode sets the input encoding y[u] = (p[u] + b) + E[label[u]] over
// the n×d rows of y: p (n×d, the product attrs·W) and E (labels×d, the
// label embeddings) may be null, then their term is absent. The additions
// are models/rt's encoder's, in its order. One thread per value.
SPN_KERNEL void spn_encode(float* __restrict__ y, const float* __restrict__ p, const float* __restrict__ b,
	const float* __restrict__ E, const int* __restrict__ label, int n, int d)
{
	long long t = spn_index();
	if (t >= (long long)n * d) {
		return;
	}
	int u = (int)(t / d), j = (int)(t % d);
	float v = p ? p[t] + b[j] : b[j];
	if (E) {
		v = v + E[(long long)label[u] * d + j];
	}
	y[t] = v;
}

// spn_embed_part sets, for table row l < L, chunk k < K of its entries
// (SPN_CHUNK_ROWS of them, rows ptr[l] .. ptr[l+1]−1 of idx) and column
// j < d, one thread each, the float partial p = Σ dy[idx[r], j] over the
// chunk's entries r in order. With K = 1 it adds p to dE[l, j] itself;
// otherwise it writes part[(l·K + k)·d + j] for spn_embed_backward (a
// chunk past the row's end, or of an empty row, writes nothing). With the nodes (or edge
// entries) of each row in ascending order, a row of at most
// SPN_CHUNK_ROWS entries gets the bits of models/rt's and
// models/kernels.EmbedSumGrad's one sum into a zeroed dE; a longer row
// differs from that sum in rounding only.
SPN_KERNEL void spn_embed_part(float* __restrict__ dE, float* __restrict__ part, const float* __restrict__ dy,
	const int* __restrict__ ptr, const int* __restrict__ idx, int L, int K, int d)
{
	long long t = spn_index();
	if (t >= (long long)L * K * d) {
		return;
	}
	int l = (int)(t / ((long long)K * d)), k = (int)(t / d % K), j = (int)(t % d);
	int lo = ptr[l] + k * SPN_CHUNK_ROWS, end = ptr[l + 1];
	if (lo >= end) {
		return;
	}
	int hi = lo + SPN_CHUNK_ROWS < end ? lo + SPN_CHUNK_ROWS : end;
	float p = 0.0f;
	for (int r = lo; r < hi; r++) {
		p += dy[(long long)idx[r] * d + j];
	}
	if (K == 1) {
		dE[(long long)l * d + j] = dE[(long long)l * d + j] + p;
	} else {
		part[t] = p;
	}
}

// spn_embed_backward adds to dE[l, j] the partials spn_embed_part wrote
// for row l's chunks, in chunk order (acc = dE[l, j], acc += the partial
// of chunk 0, 1, ... of the row's ⌈entries/SPN_CHUNK_ROWS⌉): one thread
// per (l, j), the gradient of the label or category embeddings.
SPN_KERNEL void spn_embed_backward(float* __restrict__ dE, const float* __restrict__ part, const int* __restrict__ ptr,
	int L, int K, int d)
{
	long long t = spn_index();
	if (t >= (long long)L * d) {
		return;
	}
	int l = (int)(t / d), j = (int)(t % d);
	int nk = spn_chunks(ptr[l + 1] - ptr[l]);
	float acc = dE[t];
	for (int k = 0; k < nk; k++) {
		acc += part[((long long)l * K + k) * d + j];
	}
	dE[t] = acc;
}

// spn_blocks moves the real rows of m blocks of d columns between the
// interleaved layout, an n×(m·d) matrix whose row r holds block b's row r
// at columns b·d .. b·d+d−1, and the stacked one, the blocks one after
// the other, each N rows of d columns (N ≥ n: a block's padding rows are
// not touched). stack 1 copies interleaved x into stacked y, stack 0
// stacked x into interleaved y. One thread per value moved, n·m·d: the
// stacked MLPs' output (models/rt) and its gradient.
SPN_KERNEL void spn_blocks(float* __restrict__ y, const float* __restrict__ x, int n, int N, int d, int m, int stack)
{
	long long t = spn_index();
	long long w = (long long)m * d;
	if (t >= (long long)n * w) {
		return;
	}
	long long r = t / w, b = (t % w) / d, c = t % d;
	long long s = (b * N + r) * d + c;
	if (stack) {
		y[s] = x[t];
	} else {
		y[t] = x[s];
	}
}

// spn_sum_blocks sets y[i] = x[i] + x[len + i] + … + x[(m−1)·len + i],
// the m blocks of len values added in block order (acc = block 0, then
// acc += block 1, …): one thread per value. The input gradient of the
// stacked MLPs (models/rt), the blocks' gradients added as the CPU does.
SPN_KERNEL void spn_sum_blocks(float* __restrict__ y, const float* __restrict__ x, int len, int m)
{
	long long t = spn_index();
	if (t >= len) {
		return;
	}
	float acc = x[t];
	for (int b = 1; b < m; b++) {
		acc += x[(long long)b * len + t];
	}
	y[t] = acc;
}
