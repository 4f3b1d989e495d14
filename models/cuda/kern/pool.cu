// Sum, mean and max pooling of node rows into graph rows: graph g owns the
// node rows [off[g], off[g+1]) of x (N×d); an empty graph pools to zeros.

// The pooling kernels take up to eight node-state tensors at once (the
// layer-sum readout's; one for a single pooling): x_k (N×d) pools into
// block k of y (count × G × d), and block k of dy back into dx_k; a
// thread finds its tensor by spn_pick.

#define SPN_PICK_X(k) spn_pick((k), x0, x1, x2, x3, x4, x5, x6, x7)
#define SPN_PICK_DX(k) spn_pick_out((k), dx0, dx1, dx2, dx3, dx4, dx5, dx6, dx7)

// spn_pool sets y_k[g] = Σ_{r ∈ g} x_k[r] (mean 0) or that sum times
// 1/|g| as a float (mean 1), rows added in order: the bits of models/rt's
// pooling op (kernels.RowSum), for the count ≤ 8 tensors x_k. One thread
// per output value (k, g, j).
SPN_KERNEL void spn_pool(float* __restrict__ y, const float* __restrict__ x0, const float* __restrict__ x1, const float* __restrict__ x2, const float* __restrict__ x3,
	const float* __restrict__ x4, const float* __restrict__ x5, const float* __restrict__ x6, const float* __restrict__ x7,
	const int* __restrict__ off, int G, int d, int mean, int count)
{
	long long t = spn_index(), v;
	int k;
	if (!spn_group_item(t, count, (long long)G * d, &k, &v)) {
		return;
	}
	int g = (int)(v / d), j = (int)(v % d);
	int a = off[g], b = off[g + 1];
	float s = spn_rows_sum(SPN_PICK_X(k), a, b, d, j);
	if (mean && b > a) {
		s *= 1.0f / (float)(b - a);
	}
	y[t] = s;
}

// spn_pool_backward sets dx_k[r] = dy_k[g] (mean 0) or dy_k[g]·(1/|g|)
// (mean 1) for every row r of graph g and the count ≤ 8 tensors dx_k;
// rows outside every graph are not written. One thread per graph column
// (k, g, j), over the graph's rows in order.
SPN_KERNEL void spn_pool_backward(float* __restrict__ dx0, float* __restrict__ dx1, float* __restrict__ dx2, float* __restrict__ dx3,
	float* __restrict__ dx4, float* __restrict__ dx5, float* __restrict__ dx6, float* __restrict__ dx7, const float* __restrict__ dy,
	const int* __restrict__ off, int G, int d, int mean, int count)
{
	long long t = spn_index(), v;
	int k;
	if (!spn_group_item(t, count, (long long)G * d, &k, &v)) {
		return;
	}
	int g = (int)(v / d), j = (int)(v % d);
	int a = off[g], b = off[g + 1];
	if (b <= a) {
		return;
	}
	float* dx = SPN_PICK_DX(k);
	float w = dy[t];
	if (mean) {
		w = w * (1.0f / (float)(b - a));
	}
	for (int r = a; r < b; r++) {
		dx[(long long)r * d + j] = w;
	}
}

// spn_col_argmax returns the first of the rows a..b-1 (a < b) of x (d
// columns) holding column j's maximum: a later row replaces the one
// found only when strictly greater (Go's >). Max pooling's forward and
// backward pass both choose by it.
SPN_DEVICE int spn_col_argmax(const float* __restrict__ x, int a, int b, int d, int j)
{
	float best = x[(long long)a * d + j];
	int arg = a;
	for (int r = a + 1; r < b; r++) {
		float v = x[(long long)r * d + j];
		if (v > best) {
			best = v;
			arg = r;
		}
	}
	return arg;
}

// spn_pool_max sets y_k[g] = max_{r ∈ g} x_k[r] per column, the first
// row's value replaced by a later one only when strictly greater
// (models/rt's max pooling, which compares with Go's >), and 0 for an
// empty graph, for the count ≤ 8 tensors x_k. One thread per output
// value (k, g, j).
SPN_KERNEL void spn_pool_max(float* __restrict__ y, const float* __restrict__ x0, const float* __restrict__ x1, const float* __restrict__ x2, const float* __restrict__ x3,
	const float* __restrict__ x4, const float* __restrict__ x5, const float* __restrict__ x6, const float* __restrict__ x7,
	const int* __restrict__ off, int G, int d, int count)
{
	long long t = spn_index(), v;
	int k;
	if (!spn_group_item(t, count, (long long)G * d, &k, &v)) {
		return;
	}
	int g = (int)(v / d), j = (int)(v % d);
	int a = off[g], b = off[g + 1];
	if (b <= a) {
		y[t] = 0.0f;
		return;
	}
	const float* x = SPN_PICK_X(k);
	y[t] = x[(long long)spn_col_argmax(x, a, b, d, j) * d + j];
}

// spn_pool_max_backward sets dx_k[r][j] = dy_k[g][j] at the first row r
// of graph g holding its column's maximum in x_k (spn_pool_max's
// choice); the other rows are not written (the caller zeroes dx_k). One
// thread per graph column (k, g, j), each writing one value: no atomics.
SPN_KERNEL void spn_pool_max_backward(float* __restrict__ dx0, float* __restrict__ dx1, float* __restrict__ dx2, float* __restrict__ dx3,
	float* __restrict__ dx4, float* __restrict__ dx5, float* __restrict__ dx6, float* __restrict__ dx7, const float* __restrict__ dy,
	const float* __restrict__ x0, const float* __restrict__ x1, const float* __restrict__ x2, const float* __restrict__ x3,
	const float* __restrict__ x4, const float* __restrict__ x5, const float* __restrict__ x6, const float* __restrict__ x7, const int* __restrict__ off, int G, int d, int count)
{
	long long t = spn_index(), v;
	int k;
	if (!spn_group_item(t, count, (long long)G * d, &k, &v)) {
		return;
	}
	int g = (int)(v / d), j = (int)(v % d);
	int a = off[g], b = off[g + 1];
	if (b <= a) {
		return;
	}
	float* dx = SPN_PICK_DX(k);
	dx[(long long)spn_col_argmax(SPN_PICK_X(k), a, b, d, j) * d + j] = dy[t];
}

// spn_graph_sum_broadcast sets every row of graph g of y (N×d) to the sum
// of the graph's rows of x, added in order from 0: models/kernels'
// GraphSumBroadcast, the graph sum of the global readout (and, the map
// being symmetric, its gradient). One thread per graph column (g, j),
// writing the column of each of the graph's rows; rows of no graph are
// not written.
SPN_KERNEL void spn_graph_sum_broadcast(float* __restrict__ y, const float* __restrict__ x, const int* __restrict__ off,
	int G, int d)
{
	long long t = spn_index();
	if (t >= (long long)G * d) {
		return;
	}
	int g = (int)(t / d), j = (int)(t % d);
	int a = off[g], b = off[g + 1];
	float s = spn_rows_sum(x, a, b, d, j);
	for (int r = a; r < b; r++) {
		y[(long long)r * d + j] = s;
	}
}
