package rt

import (
	"errors"
	"fmt"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
)

// DeviceBatch is the part of a batch's data the ops' device math reads,
// in device memory: the graph offsets, the classes and the node inputs.
// A BatchData points at it (BatchData.Dev) on the device path only.
type DeviceBatch struct {
	// Ptr are the graph offsets (G+1 values), Y the classes (G values;
	// nil when the batch has none).
	Ptr, Y *cuda.Buffer
	// Labels (N) and Attrs (N×AttrDim) are the node inputs (nil when the
	// batch has none). LabelPtr and LabelIdx list the nodes of each label
	// l < NumLabels in ascending order (a CSR of LabelRows rows, the
	// largest label + 1), for the gradient of the label embeddings.
	Labels, Attrs      *cuda.Buffer
	LabelPtr, LabelIdx *cuda.Buffer
	LabelRows          int
}

// labelRows returns the nodes of each label of labels as a CSR (rows up
// to the largest label), the nodes of a label in ascending order.
func labelRows(labels []int32) (ptr, idx []int32) {
	rows := 0
	for _, l := range labels {
		rows = max(rows, int(l)+1)
	}
	ptr = make([]int32, rows+1)
	for _, l := range labels {
		ptr[l+1]++
	}
	for l := 0; l < rows; l++ {
		ptr[l+1] += ptr[l]
	}
	idx = make([]int32, len(labels))
	next := append([]int32(nil), ptr[:rows]...)
	for u, l := range labels {
		idx[next[l]] = int32(u)
		next[l]++
	}
	return ptr, idx
}

// UploadBatch copies the graph offsets and classes of bd to e's device.
func UploadBatch(e *engine.Engine, bd *BatchData) (*DeviceBatch, error) {
	if len(bd.Ptr) != bd.G+1 {
		return nil, fmt.Errorf("uploading the batch: %d graph offsets for %d graphs", len(bd.Ptr), bd.G)
	}
	db := &DeviceBatch{}
	var err error
	if db.Ptr, err = cuda.NewBuffer(e.Context(), bd.Ptr); err != nil {
		return nil, fmt.Errorf("uploading the graph offsets: %w", err)
	}
	if bd.Y != nil {
		if db.Y, err = cuda.NewBuffer(e.Context(), bd.Y); err != nil {
			return nil, errors.Join(fmt.Errorf("uploading the classes: %w", err), db.Free())
		}
	}
	if bd.Attrs != nil {
		if db.Attrs, err = cuda.NewBuffer(e.Context(), bd.Attrs); err != nil {
			return nil, errors.Join(fmt.Errorf("uploading the node attributes: %w", err), db.Free())
		}
	}
	if bd.Labels != nil {
		labels := bd.Labels[:bd.N]
		ptr, idx := labelRows(labels)
		db.LabelRows = len(ptr) - 1
		if db.Labels, err = cuda.NewBuffer(e.Context(), labels); err == nil {
			if db.LabelPtr, err = cuda.NewBuffer(e.Context(), ptr); err == nil {
				db.LabelIdx, err = cuda.NewBuffer(e.Context(), idx)
			}
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("uploading the node labels: %w", err), db.Free())
		}
	}
	return db, nil
}

// Free releases the device buffers.
func (db *DeviceBatch) Free() error {
	var errs []error
	for _, b := range []*cuda.Buffer{db.Ptr, db.Y, db.Labels, db.Attrs, db.LabelPtr, db.LabelIdx} {
		if b != nil {
			errs = append(errs, b.Free())
		}
	}
	return errors.Join(errs...)
}

// dev returns bd's device data, or an error naming the op that needs it.
func (bd *BatchData) dev(id string) (*DeviceBatch, error) {
	if bd.Dev == nil {
		return nil, fmt.Errorf("%s: the batch is not on the device", id)
	}
	return bd.Dev, nil
}
