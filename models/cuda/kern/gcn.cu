// GCN's propagation y = Â·x, Â = D̂^-1/2 (A+I) D̂^-1/2 over a batch's
// adjacency (models/gcn's op): ptr (n+1 offsets) and idx are the
// adjacency's CSR, w[e] the weight of entry e, self[u] that of the self
// loop.

// spn_gcn_propagate sets, for the n×d rows of x,
//
//	y[u,j] = self[u]·x[u,j] + Σ_{e ∈ row u} w[e]·x[idx[e],j]
//
// the entries added in order, as models/gcn's propagate (the CPU's bits).
// Â is symmetric, so the gradient dx = Â·dy is the same kernel over dy.
// One thread per value (u, j), gathering by rows, no atomics.
SPN_KERNEL void spn_gcn_propagate(float* __restrict__ y, const float* __restrict__ x, const int* __restrict__ ptr,
	const int* __restrict__ idx, const float* __restrict__ w, const float* __restrict__ self, int n, int d)
{
	long long t = spn_index();
	if (t >= (long long)n * d) {
		return;
	}
	int u = (int)(t / d), j = (int)(t % d);
	float acc = self[u] * x[t];
	for (int e = ptr[u]; e < ptr[u + 1]; e++) {
		acc = acc + w[e] * x[(long long)idx[e] * d + j];
	}
	y[t] = acc;
}
