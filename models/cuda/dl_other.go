//go:build !linux

package cuda

import (
	"fmt"
	"runtime"
)

// System returns the system opener; spn loads CUDA on Linux only, so here
// every Open fails.
func System() Opener { return noopener{} }

type noopener struct{}

func (noopener) Open(name string) (Library, error) {
	return nil, fmt.Errorf("spn loads CUDA libraries on Linux only, not on %s", runtime.GOOS)
}

func (noopener) Where() string { return "nowhere: not Linux" }

// callC is never reached off Linux: no library opens.
func callC(uintptr, ...uintptr) int32 { return -1 }
