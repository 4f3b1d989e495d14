// Package curve holds the training curve's record type: what models/fit
// produces for every epoch and what the train stage writes to result.json
// (stages.TrainResult) and the figure stage reads back. It imports
// nothing, so that the stage engine can name the record without depending
// on the training loop.
package curve

// EpochRecord is one epoch of a training curve (the train stage's
// result.json records them as they are).
type EpochRecord struct {
	Epoch      int         `json:"epoch"`
	LR         float64     `json:"lr"`
	TrainLoss  float64     `json:"train_loss"`
	TrainScore float64     `json:"train_score"`
	ValLoss    float64     `json:"val_loss"`
	ValScore   float64     `json:"val_score"`
	TestLoss   float64     `json:"test_loss"`
	TestScore  float64     `json:"test_score"`
	Alpha      [][]float64 `json:"alpha,omitempty"` // learned α per layer
	Eps        []float64   `json:"eps,omitempty"`   // ε per layer
}
