package rt

import (
	"fmt"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/nbop"
)

// DeviceBatch is the part of a batch's data the ops' device math reads,
// in device memory: the graph offsets, the classes or regression targets
// and the node inputs,
// views of one packed copy (PackBatch, UploadBatch).
// A BatchData points at it (BatchData.Dev) on the device path only.
type DeviceBatch struct {
	// Ptr are the graph offsets (G+1 values), Y the classes (G values;
	// nil when the batch has none).
	Ptr, Y *cuda.Buffer
	// Target are the regression targets (G×outputs values, double; nil
	// when the batch has none).
	Target *cuda.Buffer
	// Labels (N) and Attrs (N×AttrDim) are the node inputs (nil when the
	// batch has none). LabelRows lists the nodes of each label
	// l < NumLabels in ascending order (nbop.EmbedRows' CSR of the largest
	// label + 1 rows; nil without labels), for the gradient of the label
	// embeddings.
	Labels, Attrs *cuda.Buffer
	LabelRows     *nbop.DeviceRows
	// owner holds the arrays of an UploadBatch (nil for a PackBatch).
	owner *cuda.Buffer
}

// PackBatch adds the graph offsets, classes, targets and node inputs of
// bd to pk:
// after pk's Upload the returned DeviceBatch points at them on the device.
func PackBatch(pk *cuda.Pack, bd *BatchData) (*DeviceBatch, error) {
	if len(bd.Ptr) != bd.G+1 {
		return nil, fmt.Errorf("packing the batch: %d graph offsets for %d graphs", len(bd.Ptr), bd.G)
	}
	db := &DeviceBatch{}
	cuda.Put(pk, &db.Ptr, bd.Ptr)
	if bd.Y != nil {
		cuda.Put(pk, &db.Y, bd.Y)
	}
	if bd.Target != nil {
		cuda.Put(pk, &db.Target, bd.Target)
	}
	if bd.Attrs != nil {
		cuda.Put(pk, &db.Attrs, bd.Attrs)
	}
	if bd.Labels != nil {
		labels := bd.Labels[:bd.N]
		cuda.Put(pk, &db.Labels, labels)
		ptr, idx := nbop.EmbedRows(labels, []int32{0}, len(labels))
		db.LabelRows = nbop.PackRows(pk, ptr, idx)
	}
	return db, nil
}

// UploadBatch copies the graph offsets, classes and node inputs of bd to
// e's device in one copy (a pack of their own, which Free releases).
func UploadBatch(e *engine.Engine, bd *BatchData) (*DeviceBatch, error) {
	var pk cuda.Pack
	db, err := PackBatch(&pk, bd)
	if err != nil {
		return nil, err
	}
	if db.owner, err = pk.Upload(e.Context(), nil, 0); err != nil {
		return nil, fmt.Errorf("uploading the batch: %w", err)
	}
	return db, nil
}

// Free releases the device memory of an UploadBatch (nothing for a
// PackBatch, whose pack's buffer holds the arrays).
func (db *DeviceBatch) Free() error {
	if db.owner == nil {
		return nil
	}
	return db.owner.Free()
}

// dev returns bd's device data, or an error naming the op that needs it.
func (bd *BatchData) dev(id string) (*DeviceBatch, error) {
	if bd.Dev == nil {
		return nil, fmt.Errorf("%s: the batch is not on the device", id)
	}
	return bd.Dev, nil
}
