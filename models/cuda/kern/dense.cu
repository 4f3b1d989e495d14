// The bias and ReLU after a matrix product (the products themselves go to
// cuBLAS): y = ReLU(x + b) and the bias gradient.

// spn_bias_relu sets y = ReLU(x + b) over the n rows of x (n×d), b (d)
// broadcast over the rows; relu 0 skips the ReLU. One thread per value.
// Its gradient is spn_relu_mask (with relu) and spn_col_sums.
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

// spn_col_sums adds the column sums of dz (n×d) to db (d): per column
// (one thread each) a float partial per chunk of rows, rows in order,
// the partials added to db in chunk order. These are the bits of the bias
// gradient of models/kernels' CPU.MatMulAT.
SPN_KERNEL void spn_col_sums(float* __restrict__ db, const float* __restrict__ dz, int n, int d)
{
	long long t = spn_index();
	if (t >= d) {
		return;
	}
	int j = (int)t;
	float acc = db[j];
	for (int lo = 0; lo < n; lo += SPN_CHUNK_ROWS) {
		int hi = lo + SPN_CHUNK_ROWS < n ? lo + SPN_CHUNK_ROWS : n;
		float p = 0.0f;
		for (int r = lo; r < hi; r++) {
			p += dz[(long long)r * d + j];
		}
		acc += p;
	}
	db[j] = acc;
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
