// Batch norm followed by ReLU, y = ReLU(γ·(x−μ)/√(σ²+eps) + β) over the n
// rows of x (n×d), as models/rt's fused batch-norm op: its statistics in
// training mode (column mean and biased variance, with the running
// statistics' update) and in evaluation mode, the elementwise forward
// pass, and the backward pass.

// spn_col_sum64 returns Σ_{r<n} x[r,j] (center null) or Σ_r (x[r,j]−c)²
// in double, one partial per chunk of rows added in chunk order: the bits
// of models/kernels.ColSums.
SPN_DEVICE double spn_col_sum64(const float* __restrict__ x, int n, int d, int j, int centered, double c)
{
	double total = 0.0;
	for (int lo = 0; lo < n; lo += SPN_CHUNK_ROWS) {
		int hi = lo + SPN_CHUNK_ROWS < n ? lo + SPN_CHUNK_ROWS : n;
		double p = 0.0;
		for (int r = lo; r < hi; r++) {
			double v = (double)x[(long long)r * d + j];
			if (centered) {
				double e = v - c;
				p += e * e;
			} else {
				p += v;
			}
		}
		total += p;
	}
	return total;
}

// spn_bn_stats sets, per column j (one thread each), the batch mean μ and
// inv = 1/√(σ²+eps) of x's n rows (σ² the biased variance) as float, and
// when update is not 0 moves the running statistics (double) towards the
// batch's: run = (1−momentum)·run + momentum·batch, the variance unbiased
// (n/(n−1)) as PyTorch's. With n = 0 it uses the running statistics.
SPN_KERNEL void spn_bn_stats(float* __restrict__ mu, float* __restrict__ inv, double* __restrict__ run_mean,
	double* __restrict__ run_var, const float* __restrict__ x, int n, int d, double momentum, double eps, int update)
{
	long long t = spn_index();
	if (t >= d) {
		return;
	}
	int j = (int)t;
	double mean = run_mean[j], var = run_var[j];
	if (n > 0) {
		mean = spn_col_sum64(x, n, d, j, 0, 0.0) / (double)n;
		var = spn_col_sum64(x, n, d, j, 1, mean) / (double)n;
		double unbiased = var;
		if (n > 1) {
			unbiased = var * (double)n / (double)(n - 1);
		}
		if (update) {
			run_mean[j] = (1.0 - momentum) * run_mean[j] + momentum * mean;
			run_var[j] = (1.0 - momentum) * run_var[j] + momentum * unbiased;
		}
	}
	mu[j] = (float)mean;
	inv[j] = (float)(1.0 / sqrt(var + eps));
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
// for the backward pass): one thread per value, the arithmetic of
// models/kernels.BNReLUForward.
SPN_KERNEL void spn_bn_relu(float* __restrict__ xhat, float* __restrict__ y, const float* __restrict__ x,
	const float* __restrict__ mu, const float* __restrict__ inv, const float* __restrict__ g,
	const float* __restrict__ bt, int n, int d)
{
	long long t = spn_index();
	if (t >= (long long)n * d) {
		return;
	}
	int j = (int)(t % d);
	float h = (x[t] - mu[j]) * inv[j];
	xhat[t] = h;
	y[t] = spn_relu(g[j] * h + bt[j]);
}

// spn_relu_mask sets dz = dy where y is not +0 and dz = 0 where it is, for
// the output y of a ReLU (which writes +0): the gradient through the ReLU,
// bit for bit models/kernels.ReLUMask. One thread per value of the len.
SPN_KERNEL void spn_relu_mask(float* __restrict__ dz, const float* __restrict__ y, const float* __restrict__ dy, int len)
{
	long long t = spn_index();
	if (t >= len) {
		return;
	}
	unsigned int bits = __float_as_uint(y[t]);
	unsigned int mask = bits != 0u ? 0xffffffffu : 0u;
	dz[t] = __uint_as_float(__float_as_uint(dy[t]) & mask);
}

// spn_bn_backward_stats sets, per column j (one thread each), from dz (the
// gradient after the ReLU) and x̂: dγ = Σ_r dz·x̂ and dβ = Σ_r dz (double
// column sums in chunk order, as models/kernels.ColSumsPair, rounded to
// float), and for spn_bn_backward gi = γ·inv, m = mean(dz) and
// mx = mean(dz·x̂).
SPN_KERNEL void spn_bn_backward_stats(float* __restrict__ dg, float* __restrict__ db, float* __restrict__ gi,
	float* __restrict__ m, float* __restrict__ mx, const float* __restrict__ dz, const float* __restrict__ xhat,
	const float* __restrict__ g, const float* __restrict__ inv, int n, int d)
{
	long long t = spn_index();
	if (t >= d) {
		return;
	}
	int j = (int)t;
	double sdz = 0.0, sdzx = 0.0;
	for (int lo = 0; lo < n; lo += SPN_CHUNK_ROWS) {
		int hi = lo + SPN_CHUNK_ROWS < n ? lo + SPN_CHUNK_ROWS : n;
		double p = 0.0, px = 0.0;
		for (int r = lo; r < hi; r++) {
			long long i = (long long)r * d + j;
			p += (double)dz[i];
			px += (double)(dz[i] * xhat[i]);
		}
		sdz += p;
		sdzx += px;
	}
	dg[j] = (float)sdzx;
	db[j] = (float)sdz;
	gi[j] = g[j] * inv[j];
	m[j] = (float)(sdz / (double)n);
	mx[j] = (float)(sdzx / (double)n);
}

// spn_bn_backward sets dx = gi·((dz − m) − x̂·mx), the input gradient of a
// training-mode batch norm (models/kernels.BNBackward): one thread per
// value.
SPN_KERNEL void spn_bn_backward(float* __restrict__ dx, const float* __restrict__ dz, const float* __restrict__ xhat,
	const float* __restrict__ gi, const float* __restrict__ m, const float* __restrict__ mx, int n, int d)
{
	long long t = spn_index();
	if (t >= (long long)n * d) {
		return;
	}
	int j = (int)(t % d);
	dx[t] = gi[j] * (dz[t] - m[j] - xhat[t] * mx[j]);
}

// spn_bn_backward_eval sets dx = dz·(γ·inv), the input gradient in
// evaluation mode: one thread per value.
SPN_KERNEL void spn_bn_backward_eval(float* __restrict__ dx, const float* __restrict__ dz, const float* __restrict__ g,
	const float* __restrict__ inv, int n, int d)
{
	long long t = spn_index();
	if (t >= (long long)n * d) {
		return;
	}
	int j = (int)(t % d);
	dx[t] = dz[t] * (g[j] * inv[j]);
}
