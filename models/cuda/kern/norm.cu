// Batch norm followed by ReLU, y = ReLU(γ·(x−μ)/√(σ²+eps) + β) over the n
// rows of x (n×d), as models/rt's fused batch-norm op: its statistics in
// training mode (column mean and biased variance, with the running
// statistics' update) and in evaluation mode, the elementwise forward
// pass, and the backward pass.

// spn_chunk_total returns Σ_{c<nc} part[c·stride + j] in double from 0,
// chunks in order: a column's total from its per-chunk partials, the
// last loop of models/kernels.ColSums and ColSumsPair.
SPN_DEVICE double spn_chunk_total(const double* __restrict__ part, int nc, int stride, int j)
{
	double total = 0.0;
	for (int c = 0; c < nc; c++) {
		total += part[(long long)c * stride + j];
	}
	return total;
}

// spn_biased is the batch norm's input x[t] (column j), or x[t] + b[j]
// (rounded to float) when the bias b of the linear map before it is
// given: the value spn_bias_relu would have stored, not stored.
SPN_DEVICE float spn_biased(const float* __restrict__ x, const float* __restrict__ b, long long t, int j)
{
	return b ? x[t] + b[j] : x[t];
}

// spn_bn_part sets the partial of chunk c (SPN_CHUNK_ROWS rows) and
// column j of x (n×d, plus the bias b when not null: spn_biased), one
// thread per (c, j): part[c·d + j] = Σ_r x[r,j] with msum null,
// Σ_r (x[r,j]−μ_j)² otherwise, μ_j = Σ_c msum[c·d + j] / n the mean from
// the partials of the first launch; rows in order, in double: the
// partials of models/kernels.ColSums. Two launches (the mean's, the
// variance's) give spn_bn_relu_train its statistics with threads of at
// most SPN_CHUNK_ROWS steps.
SPN_KERNEL void spn_bn_part(double* __restrict__ part, const double* __restrict__ msum, const float* __restrict__ x,
	const float* __restrict__ b, int n, int d)
{
	long long t = spn_index();
	int nc = spn_chunks(n), c, j, lo, hi;
	if (!spn_chunk(t, n, d, &c, &j, &lo, &hi)) {
		return;
	}
	double mean = msum ? spn_chunk_total(msum, nc, d, j) / (double)n : 0.0;
	double p = 0.0;
	for (int r = lo; r < hi; r++) {
		double v = (double)spn_biased(x, b, (long long)r * d + j, j);
		if (msum) {
			double e = v - mean;
			p += e * e;
		} else {
			p += v;
		}
	}
	part[t] = p;
}

// spn_bn_relu_train sets, in training mode (n ≥ 1), x̂ = (x−μ)·inv and
// y = ReLU(γ·x̂ + β) per value (one thread each; both kept, x̂ for the
// backward pass; x plus the bias b when not null, spn_biased), μ the
// batch mean and inv = 1/√(σ²+eps) (σ² the biased
// variance) from spn_bn_part's partials (msum, vsum), which every thread
// adds in chunk order itself. The threads of row 0 also write inv (for
// the backward pass) and, when update is not 0, move the running
// statistics (double) towards the batch's: run = (1−momentum)·run +
// momentum·batch, the variance unbiased (n/(n−1)) as PyTorch's. The
// arithmetic is models/rt's batch norm's and
// models/kernels.BNReLUForward's.
SPN_KERNEL void spn_bn_relu_train(float* __restrict__ xhat, float* __restrict__ y, float* __restrict__ inv,
	double* __restrict__ run_mean, double* __restrict__ run_var, const float* __restrict__ x,
	const float* __restrict__ b, const double* __restrict__ msum, const double* __restrict__ vsum,
	const float* __restrict__ g, const float* __restrict__ bt, int n, int d, double momentum, double eps, int update)
{
	long long t = spn_index();
	if (t >= (long long)n * d) {
		return;
	}
	int j = (int)(t % d);
	int nc = spn_chunks(n);
	double mean = spn_chunk_total(msum, nc, d, j) / (double)n;
	double var = spn_chunk_total(vsum, nc, d, j) / (double)n;
	float mu = (float)mean, iv = (float)(1.0 / sqrt(var + eps));
	if (t < d) {
		inv[j] = iv;
		if (update) {
			double unbiased = var;
			if (n > 1) {
				unbiased = var * (double)n / (double)(n - 1);
			}
			run_mean[j] = (1.0 - momentum) * run_mean[j] + momentum * mean;
			run_var[j] = (1.0 - momentum) * run_var[j] + momentum * unbiased;
		}
	}
	float h = (spn_biased(x, b, t, j) - mu) * iv;
	xhat[t] = h;
	y[t] = spn_relu(g[j] * h + bt[j]);
}

// spn_bn_eval_stats sets μ and inv from the running statistics
// (evaluation mode): one thread per column.
SPN_KERNEL void spn_bn_eval_stats(float* __restrict__ mu, float* __restrict__ inv, const double* __restrict__ run_mean,
	const double* __restrict__ run_var, int d, double eps)
{
	long long t = spn_index();
	if (t >= d) {
		return;
	}
	mu[t] = (float)run_mean[t];
	inv[t] = (float)(1.0 / sqrt(run_var[t] + eps));
}

// spn_bn_relu sets x̂ = (x−μ)·inv and y = ReLU(γ·x̂ + β), both kept (x̂
// for the backward pass; x plus the bias b when not null, spn_biased):
// one thread per value, the arithmetic of models/kernels.BNReLUForward.
SPN_KERNEL void spn_bn_relu(float* __restrict__ xhat, float* __restrict__ y, const float* __restrict__ x,
	const float* __restrict__ b, const float* __restrict__ mu, const float* __restrict__ inv,
	const float* __restrict__ g, const float* __restrict__ bt, int n, int d)
{
	long long t = spn_index();
	if (t >= (long long)n * d) {
		return;
	}
	int j = (int)(t % d);
	float h = (spn_biased(x, b, t, j) - mu[j]) * inv[j];
	xhat[t] = h;
	y[t] = spn_relu(g[j] * h + bt[j]);
}

// spn_relu_mask sets dz = dy where y is not +0 and dz = 0 where it is, for
// the output y of a ReLU (which writes +0): the gradient through the ReLU
// (spn_relu_grad), bit for bit models/kernels.ReLUMask. One thread per
// value of the len.
SPN_KERNEL void spn_relu_mask(float* __restrict__ dz, const float* __restrict__ y, const float* __restrict__ dy, int len)
{
	long long t = spn_index();
	if (t >= len) {
		return;
	}
	dz[t] = spn_relu_grad(y[t], dy[t]);
}

// spn_bn_backward_part sets, for chunk c of rows and column j (one thread
// each, rows in order), dz = dy through the ReLU (spn_relu_grad, kept for
// spn_bn_backward) and the partials part[c·2d + j] = Σ_r dz and
// part[c·2d + d + j] = Σ_r dz·x̂ (each product rounded to float), in
// double: models/kernels.ReLUMask and the partials of ColSumsPair.
SPN_KERNEL void spn_bn_backward_part(double* __restrict__ part, float* __restrict__ dz, const float* __restrict__ y,
	const float* __restrict__ dy, const float* __restrict__ xhat, int n, int d)
{
	long long t = spn_index();
	int c, j, lo, hi;
	if (!spn_chunk(t, n, d, &c, &j, &lo, &hi)) {
		return;
	}
	double p = 0.0, px = 0.0;
	for (int r = lo; r < hi; r++) {
		long long i = (long long)r * d + j;
		float z = spn_relu_grad(y[i], dy[i]);
		dz[i] = z;
		p += (double)z;
		px += (double)(z * xhat[i]);
	}
	part[(long long)c * 2 * d + j] = p;
	part[(long long)c * 2 * d + d + j] = px;
}

// spn_bn_backward sets, for chunk c of rows and column j (one thread
// each, rows in order), the input gradient dx = gi·((dz − m) − x̂·mx) in
// training mode (train not 0) and dx = dz·gi in evaluation mode, gi =
// γ·inv, m = mean(dz) and mx = mean(dz·x̂) as float, from
// spn_bn_backward_part's partials, which every thread adds in chunk order
// itself (models/kernels.ColSumsPair's order). The threads of chunk 0
// also set dγ = Σ dz·x̂ and dβ = Σ dz (rounded to float). When dbias is
// not null (the bias of the linear map before the batch norm, whose
// gradient is Σ_rows dx), each thread keeps the float sum p of its
// chunk's dx in row order: with one chunk it adds p to dbias[j] itself,
// otherwise it writes bpart[c·d + j] for spn_col_sums: the bits of
// spn_col_part over dx. The arithmetic is models/kernels.BNBackward's.
SPN_KERNEL void spn_bn_backward(float* __restrict__ dx, float* __restrict__ dg, float* __restrict__ db,
	float* __restrict__ dbias, float* __restrict__ bpart, const float* __restrict__ dz,
	const float* __restrict__ xhat, const float* __restrict__ g, const float* __restrict__ inv,
	const double* __restrict__ part, int n, int d, int train)
{
	long long t = spn_index();
	int nc = spn_chunks(n), c, j, lo, hi;
	if (!spn_chunk(t, n, d, &c, &j, &lo, &hi)) {
		return;
	}
	double sdz = spn_chunk_total(part, nc, 2 * d, j);
	double sdzx = spn_chunk_total(part, nc, 2 * d, d + j);
	if (c == 0) {
		dg[j] = (float)sdzx;
		db[j] = (float)sdz;
	}
	float gi = g[j] * inv[j];
	float m = (float)(sdz / (double)n), mx = (float)(sdzx / (double)n);
	float p = 0.0f;
	for (int r = lo; r < hi; r++) {
		long long i = (long long)r * d + j;
		float v = train ? gi * (dz[i] - m - xhat[i] * mx) : dz[i] * gi;
		dx[i] = v;
		p += v;
	}
	if (dbias) {
		if (nc == 1) {
			dbias[j] = dbias[j] + p;
		} else {
			bpart[t] = p;
		}
	}
}

// Layer norm, y = γ·(x−μ)/√(σ²+eps) + β per row of x (n×d), as models/rt's
// layer-norm op: μ and σ² the row's mean and biased variance, in double,
// summed in the order of the row (rt's rowStats).

// spn_row_stats sets *mu and *inv = 1/√(σ²+eps) of row r of x (·×d).
SPN_DEVICE void spn_row_stats(const float* __restrict__ x, int r, int d, double eps, double* mu, double* inv)
{
	const float* row = x + (long long)r * d;
	double m = 0.0, s = 0.0;
	for (int j = 0; j < d; j++) {
		m += (double)row[j];
	}
	m /= (double)d;
	for (int j = 0; j < d; j++) {
		double e = (double)row[j] - m;
		s += e * e;
	}
	*mu = m;
	*inv = 1.0 / sqrt(s / (double)d + eps);
}

// spn_layer_norm sets y[r, j] = (float)((x[r, j]−μ_r)·inv_r)·γ_j + β_j for
// the n rows of x and keeps stats[2r] = μ_r, stats[2r+1] = inv_r for the
// backward pass. One thread per row.
SPN_KERNEL void spn_layer_norm(float* __restrict__ y, double* __restrict__ stats, const float* __restrict__ x,
	const float* __restrict__ g, const float* __restrict__ b, int n, int d, double eps)
{
	long long r = spn_index();
	if (r >= n) {
		return;
	}
	double mu, inv;
	spn_row_stats(x, (int)r, d, eps, &mu, &inv);
	stats[2 * r] = mu;
	stats[2 * r + 1] = inv;
	for (int j = 0; j < d; j++) {
		long long i = r * d + j;
		y[i] = (float)(((double)x[i] - mu) * inv) * g[j] + b[j];
	}
}

// spn_layer_norm_backward sets dx of the n rows of x from dy and the
// forward pass's stats: with x̂ = (x−μ)·inv and g = γ⊙dy (double),
// dx = (g − mean(g) − x̂·mean(g⊙x̂))·inv, rounded to float. One thread
// per row; the arithmetic is rt's layerNorm.Backward.
SPN_KERNEL void spn_layer_norm_backward(float* __restrict__ dx, const float* __restrict__ dy, const float* __restrict__ x,
	const double* __restrict__ stats, const float* __restrict__ g, int n, int d)
{
	long long r = spn_index();
	if (r >= n) {
		return;
	}
	double mu = stats[2 * r], inv = stats[2 * r + 1], mg = 0.0, mgx = 0.0;
	for (int j = 0; j < d; j++) {
		long long i = r * d + j;
		double gj = (double)g[j] * (double)dy[i];
		mg += gj;
		mgx += gj * (((double)x[i] - mu) * inv);
	}
	mg /= (double)d;
	mgx /= (double)d;
	for (int j = 0; j < d; j++) {
		long long i = r * d + j;
		double gj = (double)g[j] * (double)dy[i];
		dx[i] = (float)((gj - mg - (((double)x[i] - mu) * inv) * mgx) * inv);
	}
}

// spn_layer_norm_part sets the partials of chunk c (SPN_CHUNK_ROWS rows)
// and column j of dγ = Σ_r dy⊙x̂ and dβ = Σ_r dy in double, rows in
// order: part[c·2d + j] and part[c·2d + d + j]. One thread per (c, j).
SPN_KERNEL void spn_layer_norm_part(double* __restrict__ part, const float* __restrict__ dy, const float* __restrict__ x,
	const double* __restrict__ stats, int n, int d)
{
	long long t = spn_index();
	int c, j, lo, hi;
	if (!spn_chunk(t, n, d, &c, &j, &lo, &hi)) {
		return;
	}
	double pg = 0.0, pb = 0.0;
	for (int r = lo; r < hi; r++) {
		long long i = (long long)r * d + j;
		pg += (double)dy[i] * (((double)x[i] - stats[2 * r]) * stats[2 * r + 1]);
		pb += (double)dy[i];
	}
	part[(long long)c * 2 * d + j] = pg;
	part[(long long)c * 2 * d + d + j] = pb;
}

// spn_layer_norm_params sets dγ_j and dβ_j to the totals of the nc chunks'
// partials of spn_layer_norm_part, chunks in order (rt.SumChunks), rounded
// to float. One thread per column.
SPN_KERNEL void spn_layer_norm_params(float* __restrict__ dg, float* __restrict__ db, const double* __restrict__ part,
	int nc, int d)
{
	long long j = spn_index();
	if (j >= d) {
		return;
	}
	dg[j] = (float)spn_chunk_total(part, nc, 2 * d, (int)j);
	db[j] = (float)spn_chunk_total(part, nc, 2 * d, d + (int)j);
}
