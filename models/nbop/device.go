package nbop

import (
	"errors"
	"fmt"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/cuda/kern"
	"github.com/spn-project/spn/models/kernels"
)

// DeviceHops are the hop sets N_1..N_k of Combine's SPN form (Data.Hop1
// and Data.Hops) on a device, packed by kern.PackHops, with their
// transposes (Hop1T, HopsT) packed the same way for the backward pass:
// views of one packed copy (PackHops, UploadHops).
type DeviceHops struct {
	K                    int
	Ptr, Idx, PtrT, IdxT *cuda.Buffer
	// owner holds the arrays of an UploadHops (nil for a PackHops).
	owner *cuda.Buffer
}

// PackHops adds the k hop sets of d and their transposes to pk: after
// pk's Upload the returned DeviceHops points at them on the device.
func PackHops(pk *cuda.Pack, d *Data, k int) (*DeviceHops, error) {
	if len(d.Hops) != k-1 || len(d.HopsT) != k-1 {
		return nil, fmt.Errorf("packing the hop sets: %d higher hop sets for k = %d", len(d.Hops), k)
	}
	h := &DeviceHops{K: k}
	for _, s := range []struct {
		sets     []data.CSR
		ptr, idx **cuda.Buffer
	}{
		{append([]data.CSR{d.Hop1}, d.Hops...), &h.Ptr, &h.Idx},
		{append([]data.CSR{d.Hop1T}, d.HopsT...), &h.PtrT, &h.IdxT},
	} {
		ptr, idx, err := kern.PackHops(s.sets, d.N)
		if err != nil {
			return nil, fmt.Errorf("packing the hop sets: %w", err)
		}
		cuda.Put(pk, s.ptr, ptr)
		cuda.Put(pk, s.idx, idx)
	}
	return h, nil
}

// UploadHops copies the k hop sets of d and their transposes to e's
// device in one copy (a pack of their own, which Free releases).
func UploadHops(e *engine.Engine, d *Data, k int) (*DeviceHops, error) {
	var pk cuda.Pack
	h, err := PackHops(&pk, d, k)
	if err != nil {
		return nil, err
	}
	if h.owner, err = pk.Upload(e.Context(), nil, 0); err != nil {
		return nil, fmt.Errorf("uploading the hop sets: %w", err)
	}
	return h, nil
}

// Free releases the device memory of an UploadHops (nothing for a
// PackHops, whose pack's buffer holds the arrays).
func (h *DeviceHops) Free() error {
	if h.owner == nil {
		return nil
	}
	return h.owner.Free()
}

// DeviceSums is where Combine's device forward pass keeps the hop sums
// S_i = A_i·H (k·n·d values, a scratch buffer of the engine) for the
// backward pass.
type DeviceSums struct{ buf *cuda.Buffer }

// devHops returns the hop sets on the device for the SPN form.
func (o Combine) devHops() (*DeviceHops, error) {
	if !o.Hop1 {
		return nil, fmt.Errorf("%s: Combine with a given first hop has no device math", o.ID)
	}
	h := o.D.Dev
	if h == nil {
		return nil, fmt.Errorf("%s: the hop sets are not on the device", o.ID)
	}
	if h.K != o.K {
		return nil, fmt.Errorf("%s: %d hop sets on the device, want k = %d", o.ID, h.K, o.K)
	}
	return h, nil
}

// aggregate runs y = (1+ε)·H + Σ_i α_i·S_i on the device over the real
// rows, its padding rows set to zero, and returns the hop sums.
func (o Combine) aggregate(e *engine.Engine, h *DeviceHops, y, H, alpha, eps *cuda.Buffer) (*cuda.Buffer, error) {
	n, d := o.D.N, o.W
	sums, err := e.Scratch(max(o.K*n*d, 1))
	if err != nil {
		return nil, err
	}
	sb, err := e.Buffer(sums)
	if err != nil {
		return nil, err
	}
	if err := e.Launch("spn_fill", o.N*d, y, float32(0), o.N*d); err != nil {
		return nil, err
	}
	if err := e.Launch("spn_hop_aggregate", n*d, y, sb, H, h.Ptr, h.Idx, alpha, eps, o.K, n, d); err != nil {
		return nil, err
	}
	return sb, nil
}

// DeviceForward implements op.DeviceOp for the SPN form (Hop1): the
// gather by rows of spn_hop_aggregate (the CPU's bits), the hop sums kept
// in Combine.DevSums when it is not nil.
func (o Combine) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	h, err := o.devHops()
	if err != nil {
		return err
	}
	sums, err := o.aggregate(e, h, y, in[0], in[1], in[2])
	if err != nil {
		return err
	}
	if o.DevSums != nil {
		o.DevSums.buf = sums
	}
	return nil
}

// DeviceBackward implements op.DeviceOp for the SPN form: dH is the same
// gather of dy over the transposed hop sets, dα_i = ⟨dy, S_i⟩ and
// dε = ⟨dy, H⟩ in double per chunk of rows, added in chunk order
// (spn_dot_chunks, spn_sum_chunks).
func (o Combine) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, _, dy *cuda.Buffer, g []*cuda.Buffer) error {
	h, err := o.devHops()
	if err != nil {
		return err
	}
	H, alpha, eps := in[0], in[1], in[2]
	n, d := o.D.N, o.W
	var sums *cuda.Buffer
	if o.DevSums != nil {
		sums = o.DevSums.buf
	}
	if sums == nil {
		tmp, err := e.Scratch(o.N, d)
		if err != nil {
			return err
		}
		tb, err := e.Buffer(tmp)
		if err != nil {
			return err
		}
		if sums, err = o.aggregate(e, h, tb, H, alpha, eps); err != nil {
			return err
		}
	}
	if err := e.Launch("spn_fill", o.N*d, g[0], float32(0), o.N*d); err != nil { // Sig.Sets
		return err
	}
	if err := e.Launch("spn_hop_aggregate", n*d, g[0], nil, dy, h.PtrT, h.IdxT, alpha, eps, o.K, n, d); err != nil {
		return err
	}
	nc := kernels.NumChunks(n)
	part, err := cuda.Alloc[float64](e.Context(), nc*(o.K+1))
	if err != nil {
		return err
	}
	err = e.Launch("spn_dot_chunks", nc*o.K, part, dy, sums, o.K, n, d)
	if err == nil {
		err = e.Launch("spn_sum_chunks", o.K, g[1], part, nc, o.K)
	}
	if err == nil {
		err = e.Launch("spn_dot_chunks", nc, part, dy, H, 1, n, d)
	}
	if err == nil {
		err = e.Launch("spn_sum_chunks", 1, g[2], part, nc, 1)
	}
	return errors.Join(err, part.Free())
}
