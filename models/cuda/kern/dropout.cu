// Inverted dropout with a counter-based generator: whether value j of a
// mask is kept is a pure function of (seed, step, j), so a mask is
// reproducible from the seed and needs neither state nor a sequence of
// draws. Kept values are scaled by 1/(1−p) (the caller's scale).

// spn_mix64 is SplitMix64's output function (Steele, Lea and Flood,
// "Fast splittable pseudorandom number generators", 2014).
SPN_DEVICE unsigned long long spn_mix64(unsigned long long z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

// spn_uniform returns a uniform double in [0, 1) for (seed, step, j): the
// 53 high bits of mix64(mix64(seed + γ·(step+1)) + γ·(j+1)), γ the
// golden-ratio increment of SplitMix64.
SPN_DEVICE double spn_uniform(unsigned long long seed, unsigned long long step, unsigned long long j)
{
	const unsigned long long golden = 0x9e3779b97f4a7c15ULL;
	unsigned long long key = spn_mix64(seed + golden * (step + 1ULL));
	unsigned long long r = spn_mix64(key + golden * (j + 1ULL));
	return (double)(r >> 11) * (1.0 / 9007199254740992.0);
}

// spn_dropout_mask sets mask[j] = scale where spn_uniform(seed, step, j) ≥ p
// and 0 elsewhere, for j < len: one thread per value. The forward and the
// backward pass are both spn_mul by the mask.
SPN_KERNEL void spn_dropout_mask(float* __restrict__ mask, int len, unsigned long long seed, unsigned long long step,
	double p, float scale)
{
	long long t = spn_index();
	if (t >= len) {
		return;
	}
	mask[t] = spn_uniform(seed, step, (unsigned long long)t) >= p ? scale : 0.0f;
}

// spn_mul sets y = x ⊙ s over len values: dropout's forward (y = x ⊙ mask)
// and backward (dx = dy ⊙ mask), as models/rt's dropout op. One thread per
// value.
SPN_KERNEL void spn_mul(float* __restrict__ y, const float* __restrict__ x, const float* __restrict__ s, int len)
{
	long long t = spn_index();
	if (t >= len) {
		return;
	}
	y[t] = x[t] * s[t];
}
