package cost

import (
	"os"
	"runtime"
	"time"

	"github.com/spn-project/spn/stages/plan"
)

// NewCalibration returns an empty calibration measured now on this
// machine (its host name, GOARCH and CPUs) with threads kernel threads
// per stage, on device.
func NewCalibration(threads int, device string) *Calibration {
	host, _ := os.Hostname()
	return &Calibration{Version: CalibrationVersion, Host: host, GOARCH: runtime.GOARCH,
		CPUs: runtime.NumCPU(), Threads: threads, Date: time.Now().UTC().Truncate(time.Second), Device: device}
}

// Summary returns the stage kinds of p, resolved, with their stages all
// and still to run and, when there is a calibration for device (calFile,
// else DefaultCalibration of specFile if that file exists; read by
// ReadFor), the hours of the stages to run: then cal and est are that
// calibration and its Estimate, else nil and the hours 0 (Counts).
func Summary(p *plan.Plan, specFile, calFile, device string) (kinds []KindCost, cal *Calibration, est *Estimate, err error) {
	if _, serr := os.Stat(DefaultCalibration(specFile)); calFile == "" && serr != nil {
		return Counts(p), nil, nil, nil
	}
	if cal, _, err = ReadFor(specFile, calFile, device); err != nil {
		return nil, nil, nil, err
	}
	if est, err = cal.Estimate(p); err != nil {
		return nil, nil, nil, err
	}
	return est.Kinds, cal, est, nil
}
