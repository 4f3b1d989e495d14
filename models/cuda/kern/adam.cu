// The Adam update (Kingma & Ba) with PyTorch's semantics and coupled L2
// weight decay, the arithmetic of models/param.Adam in double.

// spn_adam updates the len values of one parameter w from its gradient g
// and moments m, v, then clears g: per value (one thread each)
//
//	g' = g + wd·w (decay ≠ 0 and wd ≠ 0)
//	m = β1·m + (1−β1)·g',  v = β2·v + (1−β2)·g'²   (stored as float)
//	w −= lr·(m/bc1)/(√(v/bc2) + eps)
//
// with the bias corrections bc1 = 1−β1^t and bc2 = 1−β2^t of step t
// computed by the caller (as Adam.StepBlocks does). A frozen parameter
// (frozen ≠ 0) keeps w, m and v; its gradient is cleared all the same.
SPN_KERNEL void spn_adam(float* __restrict__ w, float* __restrict__ g, float* __restrict__ m, float* __restrict__ v,
	int len, double lr, double beta1, double beta2, double eps, double wd, double bc1, double bc2, int decay, int frozen)
{
	long long t = spn_index();
	if (t >= len) {
		return;
	}
	if (!frozen) {
		double gi = (double)g[t];
		if (wd != 0.0 && decay) {
			gi += wd * (double)w[t];
		}
		double mi = beta1 * (double)m[t] + (1.0 - beta1) * gi;
		double vi = beta2 * (double)v[t] + (1.0 - beta2) * gi * gi;
		m[t] = (float)mi;
		v[t] = (float)vi;
		w[t] -= (float)(lr * (mi / bc1) / (sqrt(vi / bc2) + eps));
	}
	g[t] = 0.0f;
}
