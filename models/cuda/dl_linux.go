//go:build linux

package cuda

import (
	"fmt"
	"os"

	"github.com/ebitengine/purego"
)

// System returns the opener that uses the system's dynamic loader
// (dlopen), so libraries are found on LD_LIBRARY_PATH, through the
// ld.so cache and in the default directories.
func System() Opener { return dlopener{} }

type dlopener struct{}

type dlib struct {
	handle uintptr
}

func (dlopener) Open(name string) (Library, error) {
	h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, err
	}
	return dlib{h}, nil
}

func (dlopener) Where() string {
	p := os.Getenv("LD_LIBRARY_PATH")
	if p == "" {
		p = "unset"
	}
	return fmt.Sprintf("LD_LIBRARY_PATH (%s), the ld.so cache (/etc/ld.so.cache, see ldconfig -p) and the default directories /lib and /usr/lib", p)
}

func (l dlib) Bind(fptr any, name string) error {
	sym, err := purego.Dlsym(l.handle, name)
	if err != nil {
		return err
	}
	if p, ok := fptr.(*uintptr); ok {
		*p = sym
		return nil
	}
	purego.RegisterFunc(fptr, sym)
	return nil
}

// callC calls the C function at fn (a symbol bound to a *uintptr) with
// integer and pointer arguments and returns its int result: the calls
// made for every launch, through purego.SyscallN, which costs a fraction
// of a RegisterFunc function's reflection. A pointer argument converted
// to uintptr in the call's argument list stays alive and in place until
// the call returns (go:uintptrescapes).
//
//go:uintptrescapes
func callC(fn uintptr, args ...uintptr) int32 {
	r, _, _ := purego.SyscallN(fn, args...)
	return int32(r)
}
