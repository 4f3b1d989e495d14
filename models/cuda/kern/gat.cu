// GAT's attention aggregation (models/gat's op) over the adjacency with
// self loops of n nodes (ptr: n+1 offsets, idx: the source v of every
// entry e = (u, v), rows sorted), H heads of dh = d/H columns each: the
// attention of head h over row u is a softmax over the row's entries,
// computed by the thread of (u, h) in the entries' order, in double as
// the CPU computes it. The gradient is a gather: the entries' dp by
// their rows' threads, the attention vectors' gradients by chunks of
// SPN_CHUNK_ROWS rows (partials added in chunk order, spn_sum_chunks),
// and dz by the source's thread over its reverse entries (rev[e], the
// entry (v, u) of entry (u, v)). No atomics.

// spn_gat_dot returns Σ_{i<dh} a[i]·b[i], each product and the sum in
// double from 0 (models/rt.Dot32).
SPN_DEVICE double spn_gat_dot(const float* __restrict__ a, const float* __restrict__ b, int dh)
{
	double s = 0.0;
	for (int i = 0; i < dh; i++) {
		s += (double)a[i] * (double)b[i];
	}
	return s;
}

// spn_gat_forward sets, for node u < n and head h (one thread each),
//
//	pre_e = ⟨a_dst_h, z_u^h⟩ + ⟨a_src_h, z_v^h⟩,  p_e = LeakyReLU_0.2(pre_e),
//	α_e = softmax over the row's entries (maximum subtracted, in double),
//	y_u^h = Σ_e α_e · z_v^h (float, entries in order),
//
// keeping pre and α per (entry, head) (E×H, float) for the backward pass.
// The rows of y past n are not written.
SPN_KERNEL void spn_gat_forward(float* __restrict__ y, float* __restrict__ alpha, float* __restrict__ pre,
	const float* __restrict__ z, const float* __restrict__ aSrc, const float* __restrict__ aDst,
	const int* __restrict__ ptr, const int* __restrict__ idx, int n, int H, int d)
{
	long long t = spn_index();
	if (t >= (long long)n * H) {
		return;
	}
	int u = (int)(t / H), h = (int)(t % H), dh = d / H, c = h * dh;
	int e0 = ptr[u], e1 = ptr[u + 1];
	double sd = spn_gat_dot(aDst + c, z + (long long)u * d + c, dh);
	double m = 0.0;
	for (int e = e0; e < e1; e++) {
		double p = sd + spn_gat_dot(aSrc + c, z + (long long)idx[e] * d + c, dh);
		pre[(long long)e * H + h] = (float)p;
		if (p < 0.0) {
			p *= 0.2;
		}
		alpha[(long long)e * H + h] = (float)p;
		m = (e == e0 || p > m) ? p : m;
	}
	double s = 0.0;
	for (int e = e0; e < e1; e++) {
		double x = exp((double)alpha[(long long)e * H + h] - m);
		alpha[(long long)e * H + h] = (float)x;
		s += x;
	}
	float* yu = y + (long long)u * d + c;
	for (int j = 0; j < dh; j++) {
		yu[j] = 0.0f;
	}
	for (int e = e0; e < e1; e++) {
		float a = (float)((double)alpha[(long long)e * H + h] / s);
		alpha[(long long)e * H + h] = a;
		const float* zv = z + (long long)idx[e] * d + c;
		for (int j = 0; j < dh; j++) {
			yu[j] += a * zv[j];
		}
	}
}

// spn_gat_backward_dp sets, for node u < n and head h (one thread each),
// with dα_e = ⟨dy_u^h, z_v^h⟩ (rounded to float) and s = Σ_e α_e·dα_e (in
// double, dα_e unrounded), the score gradient
// g_e = α_e·(dα_e − s)·LeakyReLU'(pre_e) per entry of row u: in double
// into g (for the attention vectors' gradients) and rounded to float into
// dp (for dz).
SPN_KERNEL void spn_gat_backward_dp(double* __restrict__ g, float* __restrict__ dp, const float* __restrict__ dy,
	const float* __restrict__ z, const float* __restrict__ alpha, const float* __restrict__ pre,
	const int* __restrict__ ptr, const int* __restrict__ idx, int n, int H, int d)
{
	long long t = spn_index();
	if (t >= (long long)n * H) {
		return;
	}
	int u = (int)(t / H), h = (int)(t % H), dh = d / H, c = h * dh;
	int e0 = ptr[u], e1 = ptr[u + 1];
	const float* dyu = dy + (long long)u * d + c;
	double s = 0.0;
	for (int e = e0; e < e1; e++) {
		long long i = (long long)e * H + h;
		double da = spn_gat_dot(dyu, z + (long long)idx[e] * d + c, dh);
		dp[i] = (float)da;
		s += (double)alpha[i] * da;
	}
	for (int e = e0; e < e1; e++) {
		long long i = (long long)e * H + h;
		double gi = (double)alpha[i] * ((double)dp[i] - s);
		if (pre[i] < 0.0f) {
			gi *= 0.2;
		}
		g[i] = gi;
		dp[i] = (float)gi;
	}
}

// spn_gat_backward_vec sets the per-chunk partials of the attention
// vectors' gradients, for chunk ch of SPN_CHUNK_ROWS rows and column
// j < d (one thread per (ch, j) for a_src, one more per (ch, j) for
// a_dst, j's head h = j/dh):
//
//	psrc[ch·d + j] = Σ_{u ∈ ch} Σ_{e ∈ row u} g_e,h · z[v_e, j]
//	pdst[ch·d + j] = Σ_{u ∈ ch} Σ_{e ∈ row u} g_e,h · z[u, j]
//
// in double, rows and entries in order; spn_sum_chunks adds them.
SPN_KERNEL void spn_gat_backward_vec(double* __restrict__ psrc, double* __restrict__ pdst, const double* __restrict__ g,
	const float* __restrict__ z, const int* __restrict__ ptr, const int* __restrict__ idx, int n, int H, int d)
{
	long long t = spn_index();
	int ch, jj, lo, hi;
	if (!spn_chunk(t, n, 2 * d, &ch, &jj, &lo, &hi)) {
		return;
	}
	int dst = jj >= d, j = dst ? jj - d : jj, h = j / (d / H);
	double s = 0.0;
	for (int u = lo; u < hi; u++) {
		for (int e = ptr[u]; e < ptr[u + 1]; e++) {
			int r = dst ? u : idx[e];
			s += g[(long long)e * H + h] * (double)z[(long long)r * d + j];
		}
	}
	if (dst) {
		pdst[(long long)ch * d + j] = s;
	} else {
		psrc[(long long)ch * d + j] = s;
	}
}

// spn_gat_backward_dz sets, for node v < n and column j (one thread per
// value, head h = j/dh), dz[v, j] = Σ_{e ∈ row v} (α_r·dy[u, j] +
// dp_r·a_src[j] + dp_e·a_dst[j]) over the entries e = (v, u) of row v in
// order, r = rev[e] the entry (u, v), in float.
SPN_KERNEL void spn_gat_backward_dz(float* __restrict__ dz, const float* __restrict__ dy, const float* __restrict__ alpha,
	const float* __restrict__ dp, const float* __restrict__ aSrc, const float* __restrict__ aDst,
	const int* __restrict__ ptr, const int* __restrict__ idx, const int* __restrict__ rev, int n, int H, int d)
{
	long long t = spn_index();
	if (t >= (long long)n * d) {
		return;
	}
	int v = (int)(t / d), j = (int)(t % d), h = j / (d / H);
	float acc = 0.0f;
	for (int e = ptr[v]; e < ptr[v + 1]; e++) {
		long long u = idx[e], r = rev[e];
		float a = alpha[r * H + h], gs = dp[r * H + h], gd = dp[(long long)e * H + h];
		acc += a * dy[u * d + j] + gs * aSrc[j] + gd * aDst[j];
	}
	dz[t] = acc;
}
