// R-SPN's aggregation (models/nbop's RelAgg and Combine with a given first
// hop), GNN-FiLM's gated readout (models/rt's gated sum and the
// concatenation [h⁰, hᵀ] its gate reads), OGB's categorical embedding
// sums (models/nbop's CatEmbed) and E-SPN's edge messages (EdgeMsg).
//
// The R relations of a batch of n nodes are one CSR as the hop sets are
// (kern.PackHops): ptr holds R·(n+1) offsets into idx, row u of relation
// r at idx[ptr[r·(n+1)+u] .. ptr[r·(n+1)+u+1]).

// spn_rel_term is relation r's term of value (u, j) = t of x (n×d):
// 0·x[u,j] + 1·Σ_{v' ∈ r(u)} x[v',j], models/kernels' HopAggregate of one
// set with coefficient 1 and scale 0, whose operations it repeats for the
// CPU's bits; p is relation r's row offsets.
SPN_DEVICE float spn_rel_term(const float* __restrict__ x, const int* __restrict__ idx, const int* __restrict__ p,
	long long t, int u, int d, int j)
{
	float v = 0.0f * x[t];
	return v + 1.0f * spn_gather(x, idx, p[u], p[u + 1], d, j);
}

// spn_rel_sum adds to y, for the relations r0 .. r0+count−1 (count ≤ 8)
// in order and the n×d rows of their inputs x_k (x0..x7),
//
//	v = 0·x_k[u,j] + 1·Σ_{v' ∈ (r0+k)(u)} x_k[v',j],  y = y + v
//
// (spn_rel_term, added as kernels.RelAggregate adds the relations).
// RelAgg's forward fills y with zeros and adds the relations eight a
// launch. One thread per value (u, j), no atomics.
SPN_KERNEL void spn_rel_sum(float* __restrict__ y,
	const float* __restrict__ x0, const float* __restrict__ x1, const float* __restrict__ x2, const float* __restrict__ x3,
	const float* __restrict__ x4, const float* __restrict__ x5, const float* __restrict__ x6, const float* __restrict__ x7,
	const int* __restrict__ ptr, const int* __restrict__ idx, int r0, int count, int n, int d)
{
	long long t = spn_index();
	if (count > 8 || t >= (long long)n * d) {
		return;
	}
	int u = (int)(t / d), j = (int)(t % d);
	float acc = y[t];
	for (int k = 0; k < count; k++) {
		const float* x = spn_pick(k, x0, x1, x2, x3, x4, x5, x6, x7);
		acc = acc + spn_rel_term(x, idx, ptr + (long long)(r0 + k) * (n + 1), t, u, d, j);
	}
	y[t] = acc;
}

// spn_rel_gather_t sets, for the relations r0 .. r0+count−1 (count ≤ 8)
// given transposed (ptr, idx), dX_k = A_{r0+k}ᵀ·dy: g_k[u,j] is relation
// (r0+k)ᵀ's spn_rel_term of dy, RelAgg's backward
// (kernels.RelAggregateGrad's bits), eight relations a launch. One
// thread per value (k, u, j), no atomics.
SPN_KERNEL void spn_rel_gather_t(float* __restrict__ g0, float* __restrict__ g1, float* __restrict__ g2, float* __restrict__ g3,
	float* __restrict__ g4, float* __restrict__ g5, float* __restrict__ g6, float* __restrict__ g7,
	const float* __restrict__ dy, const int* __restrict__ ptr, const int* __restrict__ idx, int r0, int count, int n, int d)
{
	long long t;
	int k;
	if (!spn_group_item(spn_index(), count, (long long)n * d, &k, &t)) {
		return;
	}
	int u = (int)(t / d), j = (int)(t % d);
	spn_pick_out(k, g0, g1, g2, g3, g4, g5, g6, g7)[t] = spn_rel_term(dy, idx, ptr + (long long)(r0 + k) * (n + 1), t, u, d, j);
}

// spn_combine_terms adds the self and first-hop terms of Combine's form
// with a given first hop R: y = y + ((1+ε)·S + α_1·R) over len values,
// the order of models/nbop's Combine.Forward (y holds the higher hops'
// aggregation, spn_hop_aggregate without ε).
SPN_KERNEL void spn_combine_terms(float* __restrict__ y, const float* __restrict__ S, const float* __restrict__ R,
	const float* __restrict__ alpha, const float* __restrict__ eps, int len)
{
	long long t = spn_index();
	if (t >= len) {
		return;
	}
	float s = 1.0f + eps[0];
	y[t] = y[t] + (s * S[t] + alpha[0] * R[t]);
}

// spn_combine_terms_backward sets dS = (1+ε)·dy and dR = α_1·dy over len
// values, the gradients of spn_combine_terms' inputs S and R.
SPN_KERNEL void spn_combine_terms_backward(float* __restrict__ dS, float* __restrict__ dR, const float* __restrict__ dy,
	const float* __restrict__ alpha, const float* __restrict__ eps, int len)
{
	long long t = spn_index();
	if (t >= len) {
		return;
	}
	float s = 1.0f + eps[0];
	dS[t] = s * dy[t];
	dR[t] = alpha[0] * dy[t];
}

// spn_sigmoid is σ(x) = 1/(1+e^{−x}) in double, as models/rt's.
SPN_DEVICE double spn_sigmoid(float x)
{
	return 1.0 / (1.0 + exp(-(double)x));
}

// spn_gated_sum sets y[g,j] = Σ_{r ∈ g} σ(z[r,j])·t[r,j] for the graphs'
// node rows [off[g], off[g+1]) of z and t (N×c): σ in double rounded to
// float, the float product added in row order, as models/rt's gated sum.
// One thread per output value (g, j).
SPN_KERNEL void spn_gated_sum(float* __restrict__ y, const float* __restrict__ z, const float* __restrict__ tv,
	const int* __restrict__ off, int G, int c)
{
	long long t = spn_index();
	if (t >= (long long)G * c) {
		return;
	}
	int g = (int)(t / c), j = (int)(t % c);
	float s = 0.0f;
	for (int r = off[g]; r < off[g + 1]; r++) {
		long long i = (long long)r * c + j;
		s = s + (float)spn_sigmoid(z[i]) * tv[i];
	}
	y[t] = s;
}

// spn_gated_sum_backward sets, for the rows r of graph g,
// dz[r,j] = dy[g,j]·t[r,j]·σ·(1−σ) and dt[r,j] = dy[g,j]·σ in double
// (σ = σ(z[r,j])), rounded to float: the gradient of spn_gated_sum. One
// thread per (g, j); rows of no graph are left as they are.
SPN_KERNEL void spn_gated_sum_backward(float* __restrict__ dz, float* __restrict__ dt, const float* __restrict__ z,
	const float* __restrict__ tv, const float* __restrict__ dy, const int* __restrict__ off, int G, int c)
{
	long long t = spn_index();
	if (t >= (long long)G * c) {
		return;
	}
	int g = (int)(t / c), j = (int)(t % c);
	double dv = (double)dy[t];
	for (int r = off[g]; r < off[g + 1]; r++) {
		long long i = (long long)r * c + j;
		double s = spn_sigmoid(z[i]);
		dz[i] = (float)(dv * (double)tv[i] * s * (1.0 - s));
		dt[i] = (float)(dv * s);
	}
}

// spn_copy_cols copies the n×w block of x whose row r starts at
// x[r·xs + xo] into y at y[r·ys + yo]: one thread per value. Two launches
// concatenate two matrices' columns, two more split the gradient.
SPN_KERNEL void spn_copy_cols(float* __restrict__ y, const float* __restrict__ x, int n, int w, int ys, int yo,
	int xs, int xo)
{
	long long t = spn_index();
	if (t >= (long long)n * w) {
		return;
	}
	long long r = t / w, j = t % w;
	y[r * ys + yo + j] = x[r * xs + xo + j];
}

// spn_embed_sum sets y (n×d) to OGB's AtomEncoder/BondEncoder sum of one
// embedding per categorical column, y[u] = Σ_c T[off[c] + x[u·C + c]],
// the columns in order from 0 as models/kernels.EmbedSum adds them (T
// stacks the C columns' tables). One thread per value. Its gradient with
// respect to T is spn_embed_backward over the entries of each table row
// (nbop.EmbedRows).
SPN_KERNEL void spn_embed_sum(float* __restrict__ y, const float* __restrict__ T, const int* __restrict__ x,
	const int* __restrict__ off, int n, int C, int d)
{
	long long t = spn_index();
	if (t >= (long long)n * d) {
		return;
	}
	long long u = t / d, j = t % d;
	float s = 0.0f;
	for (int c = 0; c < C; c++) {
		s += T[(long long)(off[c] + x[u * C + c]) * d + j];
	}
	y[t] = s;
}

// E-SPN's first hop (models/nbop's EdgeMsg) over the adjacency of n nodes
// (ptr: n+1 offsets, idx: the neighbour of every entry p) and the edge
// embeddings e (one row per entry, spn_embed_sum of the entries' bond
// features).

// spn_edge_messages sets y[u] = Σ_{p ∈ row u} ReLU(h[idx[p]] + e[p]) over
// the n×d rows of y, the entries in order, a message added when positive,
// as models/kernels.EdgeMessages. One thread per value (u, j).
SPN_KERNEL void spn_edge_messages(float* __restrict__ y, const float* __restrict__ h, const float* __restrict__ e,
	const int* __restrict__ ptr, const int* __restrict__ idx, int n, int d)
{
	long long t = spn_index();
	if (t >= (long long)n * d) {
		return;
	}
	long long u = t / d, j = t % d;
	float s = 0.0f;
	for (int p = ptr[u]; p < ptr[u + 1]; p++) {
		float m = h[(long long)idx[p] * d + j] + e[(long long)p * d + j];
		if (m > 0.0f) {
			s += m;
		}
	}
	y[t] = s;
}

// spn_edge_messages_mask sets, for every entry p = (u, v) of row u, de[p]
// = dy[u] where h[v] + e[p] > 0 and 0 elsewhere: the gradient of
// spn_edge_messages with respect to its messages (and to e). One thread
// per value (u, j), writing the entries of row u.
SPN_KERNEL void spn_edge_messages_mask(float* __restrict__ de, const float* __restrict__ dy, const float* __restrict__ h,
	const float* __restrict__ e, const int* __restrict__ ptr, const int* __restrict__ idx, int n, int d)
{
	long long t = spn_index();
	if (t >= (long long)n * d) {
		return;
	}
	long long u = t / d, j = t % d;
	for (int p = ptr[u]; p < ptr[u + 1]; p++) {
		long long q = (long long)p * d + j;
		de[q] = h[(long long)idx[p] * d + j] + e[q] > 0.0f ? dy[t] : 0.0f;
	}
}

// spn_gather_rows sets y[u] = Σ_{r ∈ row u} x[idx[r]] over the n×d rows
// of y (spn_gather's order, models/kernels' sumRows): with the incoming
// entries of every node (kernels.IncomingEntries) and x = de, the
// gradient of spn_edge_messages with respect to h. One thread per value.
SPN_KERNEL void spn_gather_rows(float* __restrict__ y, const float* __restrict__ x, const int* __restrict__ ptr,
	const int* __restrict__ idx, int n, int d)
{
	long long t = spn_index();
	if (t >= (long long)n * d) {
		return;
	}
	int u = (int)(t / d), j = (int)(t % d);
	y[t] = spn_gather(x, idx, ptr[u], ptr[u + 1], d, j);
}
