// Sum, mean and max pooling of node rows into graph rows: graph g owns the
// node rows [off[g], off[g+1]) of x (N×d); an empty graph pools to zeros.

// spn_rows_sum returns Σ_{a ≤ r < b} x[r, j] of x (·×d), added in float
// in order from 0: a graph column's sum (kernels.RowSum's order).
SPN_DEVICE float spn_rows_sum(const float* __restrict__ x, int a, int b, int d, int j)
{
	float s = 0.0f;
	for (int r = a; r < b; r++) {
		s += x[(long long)r * d + j];
	}
	return s;
}

// spn_pool sets y[g] = Σ_{r ∈ g} x[r] (mean 0) or that sum times
// 1/|g| as a float (mean 1), rows added in order: the bits of models/rt's
// pooling op (kernels.RowSum). One thread per output value (g, j).
SPN_KERNEL void spn_pool(float* __restrict__ y, const float* __restrict__ x, const int* __restrict__ off,
	int G, int d, int mean)
{
	long long t = spn_index();
	if (t >= (long long)G * d) {
		return;
	}
	int g = (int)(t / d), j = (int)(t % d);
	int a = off[g], b = off[g + 1];
	float s = spn_rows_sum(x, a, b, d, j);
	if (mean && b > a) {
		s *= 1.0f / (float)(b - a);
	}
	y[t] = s;
}

// spn_pool_backward sets dx[r] = dy[g] (mean 0) or dy[g]·(1/|g|) (mean 1)
// for every row r of graph g; rows outside every graph are not written.
// One thread per graph column (g, j), over the graph's rows in order.
SPN_KERNEL void spn_pool_backward(float* __restrict__ dx, const float* __restrict__ dy, const int* __restrict__ off,
	int G, int d, int mean)
{
	long long t = spn_index();
	if (t >= (long long)G * d) {
		return;
	}
	int g = (int)(t / d), j = (int)(t % d);
	int a = off[g], b = off[g + 1];
	if (b <= a) {
		return;
	}
	float v = dy[t];
	if (mean) {
		v = v * (1.0f / (float)(b - a));
	}
	for (int r = a; r < b; r++) {
		dx[(long long)r * d + j] = v;
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

// spn_pool_max sets y[g] = max_{r ∈ g} x[r] per column, the first row's
// value replaced by a later one only when strictly greater (models/rt's
// max pooling, which compares with Go's >), and 0 for an empty graph.
// One thread per output value (g, j).
SPN_KERNEL void spn_pool_max(float* __restrict__ y, const float* __restrict__ x, const int* __restrict__ off, int G, int d)
{
	long long t = spn_index();
	if (t >= (long long)G * d) {
		return;
	}
	int g = (int)(t / d), j = (int)(t % d);
	int a = off[g], b = off[g + 1];
	if (b <= a) {
		y[t] = 0.0f;
		return;
	}
	y[t] = x[(long long)spn_col_argmax(x, a, b, d, j) * d + j];
}

// spn_pool_max_backward sets dx[r][j] = dy[g][j] at the first row r of
// graph g holding its column's maximum (spn_pool_max's choice); the other
// rows are not written (the caller zeroes dx). One thread per graph
// column (g, j), each writing one value: no atomics.
SPN_KERNEL void spn_pool_max_backward(float* __restrict__ dx, const float* __restrict__ dy, const float* __restrict__ x,
	const int* __restrict__ off, int G, int d)
{
	long long t = spn_index();
	if (t >= (long long)G * d) {
		return;
	}
	int g = (int)(t / d), j = (int)(t % d);
	int a = off[g], b = off[g + 1];
	if (b <= a) {
		return;
	}
	dx[(long long)spn_col_argmax(x, a, b, d, j) * d + j] = dy[t];
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
