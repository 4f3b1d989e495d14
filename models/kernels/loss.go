package kernels

import "math"

// CrossEntropy returns the mean softmax cross-entropy of the first g rows
// of logits (rows×c) with classes y[:g], in float64. When dz is not nil it
// also writes scale·∂loss/∂logits = scale·(softmax − onehot(y))/g into
// dz's first g rows (other rows untouched). This is the one implementation
// of the classification loss: the training graph's op and the evaluation
// loss both call it.
func CrossEntropy(dz []float32, scale float64, logits []float32, y []int32, g, c int) float64 {
	var loss float64
	for i := 0; i < g; i++ {
		row := logits[i*c : (i+1)*c]
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, float64(v))
		}
		var s float64
		for _, v := range row {
			s += math.Exp(float64(v) - m)
		}
		lse := m + math.Log(s)
		loss += lse - float64(row[y[i]])
		if dz == nil {
			continue
		}
		for j, v := range row {
			d := math.Exp(float64(v) - lse)
			if int32(j) == y[i] {
				d--
			}
			dz[i*c+j] = float32(scale * d / float64(g))
		}
	}
	if g > 0 {
		loss /= float64(g)
	}
	return loss
}

// MSE returns the mean squared error of pred[:len(target)] against target
// over the labelled entries, in float64: a NaN target is a missing label
// (as OGB masks multi-task regression) and is skipped. When dz is not nil
// it also writes scale·∂loss/∂pred into dz[:len(target)]:
// scale·2(pred − target)/labelled at a labelled entry, 0 at a missing one.
// With no labelled entry the loss is 0 and dz all 0. Without a missing
// label it is the plain mean over len(target) entries, bit for bit. The
// one implementation of the regression loss (training graph and
// evaluation).
func MSE(dz []float32, scale float64, pred []float32, target []float64) float64 {
	labelled := Labelled(target)
	var loss float64
	for i, t := range target {
		if math.IsNaN(t) {
			if dz != nil {
				dz[i] = 0
			}
			continue
		}
		e := float64(pred[i]) - t
		loss += e * e
		if dz != nil {
			dz[i] = float32(scale * 2 * (float64(pred[i]) - t) / float64(labelled))
		}
	}
	if labelled > 0 {
		loss /= float64(labelled)
	}
	return loss
}

// Labelled counts the labelled entries of targets: those that are not NaN
// (a NaN target is a missing label). The masked losses (MSE,
// BCEWithLogits) divide by it, on the CPU and, given it, on the device.
func Labelled(target []float64) int {
	n := 0
	for _, t := range target {
		if !math.IsNaN(t) {
			n++
		}
	}
	return n
}
