// The SPN layer's hop aggregation (paper eq. 1) over CSR hop sets, its
// gradient, and the hop weights α = softmax(logits).
//
// The k hop sets of a batch of n nodes are one CSR: ptr holds k·(n+1)
// offsets into idx, and row u of hop i lists the v with dist(u, v) = i at
// idx[ptr[i·(n+1)+u] .. ptr[i·(n+1)+u+1]).

// spn_gather returns Σ_{r=a..b-1} x[idx[r]·d + j], four rows at a time as
// s += (x0+x1) + (x2+x3), then the rest one at a time: the order of
// models/kernels' sumRowsGo (and of its AVX2 kernels), so the bits match.
SPN_DEVICE float spn_gather(const float* __restrict__ x, const int* __restrict__ idx, int a, int b, int d, int j)
{
	float s = 0.0f;
	int r = a;
	for (; r + 4 <= b; r += 4) {
		float x0 = x[(long long)idx[r] * d + j];
		float x1 = x[(long long)idx[r + 1] * d + j];
		float x2 = x[(long long)idx[r + 2] * d + j];
		float x3 = x[(long long)idx[r + 3] * d + j];
		s += (x0 + x1) + (x2 + x3);
	}
	for (; r < b; r++) {
		s += x[(long long)idx[r] * d + j];
	}
	return s;
}

// spn_hop_aggregate sets, for the n×d rows of x,
//
//	y[u] = (1+ε)·x[u] + Σ_{i<k} coef[i]·S_i[u],  S_i[u] = Σ_{v ∈ hop_i(u)} x[v]
//
// (the scale is 0 when eps is null) and, when sums is not null, keeps S_i
// in sums[i·n·d ..] for the gradient of the coefficients. One thread per
// output value (u, j), gathering by rows: y = scale·x first, then
// y += coef[i]·S_i hop by hop, as models/kernels' HopAggregateSums.
//
// The backward pass is the same kernel: dH = (1+ε)·dOut + Σ_i α_i·A_iᵀ·dOut
// is this gather of dOut over the transposed hop sets, which the caller
// passes exactly as the CPU op does (models/nbop's Combine reads
// Data.Hop1T and HopsT, from kernels.Transpose). Hop sets are symmetric
// (dist(u, v) = dist(v, u)), so the transpose of a set with rows in
// ascending order is the set itself; no scatter and no atomics are needed.
SPN_KERNEL void spn_hop_aggregate(float* __restrict__ y, float* __restrict__ sums, const float* __restrict__ x,
	const int* __restrict__ ptr, const int* __restrict__ idx, const float* __restrict__ coef,
	const float* __restrict__ eps, int k, int n, int d)
{
	long long t = spn_index();
	long long nd = (long long)n * d;
	if (t >= nd) {
		return;
	}
	int u = (int)(t / d), j = (int)(t % d);
	float scale = eps ? 1.0f + eps[0] : 0.0f;
	float acc = scale * x[t];
	for (int i = 0; i < k; i++) {
		const int* p = ptr + (long long)i * (n + 1);
		float s = spn_gather(x, idx, p[u], p[u + 1], d, j);
		if (sums) {
			sums[(long long)i * nd + t] = s;
		}
		acc = acc + coef[i] * s;
	}
	y[t] = acc;
}

// spn_row_dots sets rp[r·M + m] = Σ_{j<d} G_m[r,j]·X_m[r,j] (each
// product rounded to float, added in double, columns in order) for row
// r < n and pair m < M, one thread each. The pairs: (g, xs + m·n·d) for
// m < T (T matrices of n×d one after another), then (h, hs + (m−T)·n·d)
// for T ≤ m < T+U, then (g, x1) when x1 is not null (M = T+U+1, else
// M = T+U). With spn_dot_chunks and spn_sum_chunks: the dot products
// dα_i = ⟨dOut, S_i⟩ (xs the hop sums S_i) and dε = ⟨dOut, H⟩ (x1 = H)
// of the hop aggregation's backward pass; with a given first hop
// dα_1 = ⟨dOut, R⟩, dα_i = ⟨H, T_i⟩ (h = H, hs the sums T_i of dOut over
// the transposed hop sets) and dε = ⟨dOut, S⟩, in one chain.
SPN_KERNEL void spn_row_dots(double* __restrict__ rp, const float* __restrict__ g, const float* __restrict__ xs,
	const float* __restrict__ x1, int T, const float* __restrict__ h, const float* __restrict__ hs, int U, int n, int d)
{
	long long t = spn_index();
	int M = x1 ? T + U + 1 : T + U;
	if (t >= (long long)n * M) {
		return;
	}
	int r = (int)(t / M), m = (int)(t % M);
	const float* a = g;
	const float* x = x1;
	if (m < T) {
		x = xs + (long long)m * n * d;
	} else if (m < T + U) {
		a = h;
		x = hs + (long long)(m - T) * n * d;
	}
	long long o = (long long)r * d;
	double s = 0.0;
	for (int j = 0; j < d; j++) {
		s += (double)(a[o + j] * x[o + j]);
	}
	rp[t] = s;
}

// spn_dot_chunks sets part[c·M + m] = Σ_{r ∈ chunk c} rp[r·M + m] (the
// SPN_CHUNK_ROWS rows of chunk c in order, in double) for the n rows of
// spn_row_dots' rp: one thread per (chunk, m).
SPN_KERNEL void spn_dot_chunks(double* __restrict__ part, const double* __restrict__ rp, int M, int n)
{
	long long t = spn_index();
	int c, m, lo, hi;
	if (!spn_chunk(t, n, M, &c, &m, &lo, &hi)) {
		return;
	}
	double s = 0.0;
	for (int r = lo; r < hi; r++) {
		s += rp[(long long)r * M + m];
	}
	part[t] = s;
}

// spn_sum_chunks sets v_i = Σ_{c<nc} part[c·M + m0 + i] for i < count
// (the nc rows of part in order, in double from 0, rounded to float
// once) into out[i] for i < split and out1[i − split] from split on:
// one thread per i. The rows are chunks' partials, or, for a single
// chunk, spn_row_dots' rows themselves (the same bits as one chunk's
// partial added to 0). With two outputs one launch finishes the hop
// aggregation's dα (out, split = k) and dε (out1).
SPN_KERNEL void spn_sum_chunks(float* __restrict__ out, float* __restrict__ out1, const double* __restrict__ part,
	int nc, int M, int m0, int count, int split)
{
	long long t = spn_index();
	if (t >= count) {
		return;
	}
	double s = 0.0;
	for (int c = 0; c < nc; c++) {
		s += part[(long long)c * M + m0 + t];
	}
	if (t < split) {
		out[t] = (float)s;
	} else {
		out1[t - split] = (float)s;
	}
}

// spn_softmax sets a = softmax(logits) over k ≥ 1 values in double (maximum
// subtracted), as models/kernels.Softmax and the hop-weight op of
// models/rt: one thread.
SPN_KERNEL void spn_softmax(float* __restrict__ a, const float* __restrict__ logits, int k)
{
	if (spn_index() != 0) {
		return;
	}
	double m = (double)logits[0];
	for (int j = 1; j < k; j++) {
		m = (double)logits[j] > m ? (double)logits[j] : m;
	}
	double s = 0.0;
	for (int j = 0; j < k; j++) {
		s += exp((double)logits[j] - m);
	}
	for (int j = 0; j < k; j++) {
		a[j] = (float)(exp((double)logits[j] - m) / s);
	}
}

// spn_softmax_backward sets dl_j = a_j·(da_j − Σ_i a_i·da_i) in double, the
// gradient of spn_softmax for its output a: one thread.
SPN_KERNEL void spn_softmax_backward(float* __restrict__ dl, const float* __restrict__ a, const float* __restrict__ da, int k)
{
	if (spn_index() != 0) {
		return;
	}
	double s = 0.0;
	for (int i = 0; i < k; i++) {
		s += (double)a[i] * (double)da[i];
	}
	for (int j = 0; j < k; j++) {
		dl[j] = (float)((double)a[j] * ((double)da[j] - s));
	}
}
