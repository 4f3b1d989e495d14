package rt

import (
	"errors"
	"fmt"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
)

// DeviceBatch is the part of a batch's data the ops' device math reads,
// in device memory: the graph offsets and the classes (int32 buffers).
// A BatchData points at it (BatchData.Dev) on the device path only.
type DeviceBatch struct {
	// Ptr are the graph offsets (G+1 values), Y the classes (G values;
	// nil when the batch has none).
	Ptr, Y *cuda.Buffer
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
	return db, nil
}

// Free releases the device buffers.
func (db *DeviceBatch) Free() error {
	var errs []error
	for _, b := range []*cuda.Buffer{db.Ptr, db.Y} {
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
