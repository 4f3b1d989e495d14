package data

import (
	"iter"
	"sync"
)

// Batches returns the batches of ds for the index groups (NewBatchWith
// with hops and opt), in order, each built on a goroutine one batch ahead of
// the caller: while the caller works on batch i, batch i+1 is built, so
// that a training loop whose steps run elsewhere (on a GPU) does not add
// the batches' building to its steps' time. The batches are NewBatchWith's,
// bit for bit. An error ends the sequence after yielding it (with a nil
// batch); when the caller stops early, the goroutine stops after the
// batch it is building. ds and hops must not change meanwhile.
func Batches(ds *Dataset, hops *Hops, groups [][]int, opt BatchOptions) iter.Seq2[*Batch, error] {
	return func(yield func(*Batch, error) bool) {
		type built struct {
			b   *Batch
			err error
		}
		next := make(chan built)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(next)
			for _, idx := range groups {
				b, err := NewBatchWith(ds, hops, idx, opt)
				select {
				case next <- built{b, err}:
				case <-stop:
					return
				}
				if err != nil {
					return
				}
			}
		}()
		defer wg.Wait()
		defer close(stop)
		for r := range next {
			if !yield(r.b, r.err) || r.err != nil {
				return
			}
		}
	}
}
