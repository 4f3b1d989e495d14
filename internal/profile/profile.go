// Package profile records what a process does into a file: a CPU profile
// (pprof.StartCPUProfile), an execution trace (trace.Start), any recorder
// that writes to an io.Writer until it is stopped.
package profile

import (
	"fmt"
	"io"
	"os"
)

// Start creates path and starts a recorder writing to it; the returned
// stop ends it and closes the file. label names the recording in errors
// (spn bench gives its flag, "--cpuprofile").
func Start(path, label string, start func(io.Writer) error, end func()) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	return func() { end(); f.Close() }, nil
}
