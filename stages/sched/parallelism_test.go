package sched

import "testing"

func TestParallelism(t *testing.T) {
	for _, c := range []struct{ jobs, threads, ncpu, wj, wt int }{
		{0, 0, 8, 1, 8}, {2, 0, 8, 2, 4}, {0, 2, 8, 4, 2}, {3, 3, 2, 3, 3}, {16, 0, 8, 16, 1}, {0, 0, 0, 1, 1},
	} {
		j, th, err := Parallelism(c.jobs, c.threads, c.ncpu)
		if err != nil || j != c.wj || th != c.wt {
			t.Errorf("Parallelism(%d,%d,%d) = %d,%d,%v want %d,%d", c.jobs, c.threads, c.ncpu, j, th, err, c.wj, c.wt)
		}
	}
}
