// The losses of a batch's graphs, in double as models/kernels computes
// them: the mean softmax cross-entropy (kernels.CrossEntropy) and the mean
// squared error (kernels.MSE). Each writes one term per graph (or value)
// and spn_mean_loss adds them in order (spn_bce_loss, dividing by the
// labelled count, for the losses that skip missing labels).

// spn_cross_entropy sets, for graph i < G (one thread each) with logits
// row i (G×c) and class y[i], part[i] = log Σ_j exp(logit_j) − logit_{y[i]}
// (maximum subtracted), and, when dl is not null, the gradient
// dz[i,j] = dl[0]·(softmax_j − [j = y[i]])/G of the mean loss scaled by the
// output gradient dl[0]. spn_mean_loss adds part.
SPN_KERNEL void spn_cross_entropy(double* __restrict__ part, float* __restrict__ dz, const float* __restrict__ logits,
	const int* __restrict__ y, const float* __restrict__ dl, int G, int c)
{
	long long t = spn_index();
	if (t >= G) {
		return;
	}
	const float* row = logits + t * c;
	double m = (double)row[0];
	for (int j = 1; j < c; j++) {
		m = (double)row[j] > m ? (double)row[j] : m;
	}
	double s = 0.0;
	for (int j = 0; j < c; j++) {
		s += exp((double)row[j] - m);
	}
	double lse = m + log(s);
	part[t] = lse - (double)row[y[t]];
	if (!dl) {
		return;
	}
	double scale = (double)dl[0];
	for (int j = 0; j < c; j++) {
		double p = exp((double)row[j] - lse);
		if (j == y[t]) {
			p -= 1.0;
		}
		dz[t * c + j] = (float)(scale * p / (double)G);
	}
}

// spn_mean_loss sets loss[0] = (Σ_{i<G} part[i]) / G (0 for G = 0), in
// order, in double, rounded to float once: one thread.
SPN_KERNEL void spn_mean_loss(float* __restrict__ loss, const double* __restrict__ part, int G)
{
	if (spn_index() != 0) {
		return;
	}
	double s = 0.0;
	for (int i = 0; i < G; i++) {
		s += part[i];
	}
	if (G > 0) {
		s /= (double)G;
	}
	loss[0] = (float)s;
}

// spn_squared_error sets, for value i < len (one thread each) of the
// predictions against their targets (NaN for a missing label),
// part[i] = (pred[i] − target[i])² (0 at a missing label) and, when dl is
// not null, the gradient of the mean over the labelled values scaled by
// dl[0], dz[i] = dl[0]·2·(pred[i] − target[i])/labelled (0 at a missing
// label), as kernels.MSE computes them. spn_bce_loss(loss, part, len,
// labelled) is the loss: with no missing label labelled = len and the
// loss and gradient are those of the plain mean, bit for bit.
SPN_KERNEL void spn_squared_error(double* __restrict__ part, float* __restrict__ dz, const float* __restrict__ pred,
	const double* __restrict__ target, const float* __restrict__ dl, int len, int labelled)
{
	long long t = spn_index();
	if (t >= len) {
		return;
	}
	double tv = target[t];
	if (tv != tv) {
		part[t] = 0.0;
		if (dl) {
			dz[t] = 0.0f;
		}
		return;
	}
	double e = (double)pred[t] - tv;
	part[t] = e * e;
	if (dl) {
		dz[t] = (float)((double)dl[0] * 2.0 * e / (double)labelled);
	}
}

// spn_bce sets, for entry i < m (one thread each) of the logits z against
// the targets y (0, 1, or NaN for a missing label), the binary
// cross-entropy with logits part[i] = max(z,0) − z·y + log(1 + e^{−|z|})
// (0 at a missing label), as kernels.BCEWithLogits computes it, and, when
// dl is not null, the gradient of the mean over the labelled entries
// scaled by dl[0], dz[i] = (float)((σ(z) − y)/labelled)·dl[0] in float, the
// CPU op's two roundings (0·dl[0] at a missing label).
// spn_bce_loss(loss, part, m, labelled) is the loss.
SPN_KERNEL void spn_bce(double* __restrict__ part, float* __restrict__ dz, const float* __restrict__ z,
	const double* __restrict__ y, const float* __restrict__ dl, int m, int labelled)
{
	long long t = spn_index();
	if (t >= m) {
		return;
	}
	double tv = y[t];
	if (tv != tv) {
		part[t] = 0.0;
		if (dl) {
			dz[t] = 0.0f * dl[0];
		}
		return;
	}
	double x = (double)z[t];
	double ax = x < 0.0 ? -x : x;
	part[t] = (x > 0.0 ? x : 0.0) - x * tv + log1p(exp(-ax));
	if (dl) {
		float g = (float)((1.0 / (1.0 + exp(-x)) - tv) / (double)labelled);
		dz[t] = g * dl[0];
	}
}

// spn_bce_loss sets loss[0] = (Σ_{i<m} part[i]) / labelled (the sum when
// no entry is labelled: 0), in order, in double, rounded to float once:
// one thread. The missing labels' parts are 0 and leave the sum's bits.
// It is the loss of spn_bce and of spn_squared_error alike.
SPN_KERNEL void spn_bce_loss(float* __restrict__ loss, const double* __restrict__ part, int m, int labelled)
{
	if (spn_index() != 0) {
		return;
	}
	double s = 0.0;
	for (int i = 0; i < m; i++) {
		s += part[i];
	}
	if (labelled > 0) {
		s /= (double)labelled;
	}
	loss[0] = (float)s;
}
