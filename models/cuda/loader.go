package cuda

import (
	"errors"
	"fmt"
	"strings"
)

// Library is one opened shared library.
type Library interface {
	// Bind points fptr, a pointer to a variable of func type, at the
	// library's symbol name. The func type must match the C signature.
	// A *uintptr receives the symbol's address instead, for a call that
	// passes integer and pointer arguments without reflection (the
	// system loader's only; used for the calls of every launch).
	Bind(fptr any, name string) error
}

// Opener opens shared libraries by file name.
type Opener interface {
	// Open opens the library called name (a file name such as
	// "libcuda.so.1", looked up the way the opener's loader does).
	Open(name string) (Library, error)
	// Where says where Open looks for libraries, for error messages.
	Where() string
}

// The libraries Probe opens; where two exist, the newer is tried first.
const (
	DriverLib = "libcuda.so.1"
	NVRTC13   = "libnvrtc.so.13"
	NVRTC12   = "libnvrtc.so.12"
	CuBLAS13  = "libcublas.so.13"
	CuBLAS12  = "libcublas.so.12"
)

// LoadError says that none of a component's libraries could be used.
type LoadError struct {
	Component string   // what the libraries provide, e.g. "the NVIDIA driver API"
	Tried     []string // the library names tried, in order
	Reasons   []string // why each failed, parallel to Tried
	Where     string   // where the loader looked
}

func (e *LoadError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cuda: cannot load %s: tried %s (searched %s)", e.Component, strings.Join(e.Tried, ", "), e.Where)
	for i, r := range e.Reasons {
		fmt.Fprintf(&b, "; %s: %s", e.Tried[i], r)
	}
	return b.String()
}

// SymbolError says that a library lacks an entry point spn needs.
type SymbolError struct {
	Library, Symbol string
	Err             error
}

func (e *SymbolError) Error() string {
	return fmt.Sprintf("cuda: %s has no symbol %s (the library is too old or not NVIDIA's): %v", e.Library, e.Symbol, e.Err)
}

func (e *SymbolError) Unwrap() error { return e.Err }

// binding names one entry point and the func variable it fills.
type binding struct {
	name string
	fptr any
}

// bindAll binds every entry point of bs in lib, called name in errors.
func bindAll(lib Library, name string, bs []binding) error {
	for _, b := range bs {
		if err := lib.Bind(b.fptr, b.name); err != nil {
			return &SymbolError{Library: name, Symbol: b.name, Err: err}
		}
	}
	return nil
}

// skipError marks a library that opened but cannot be used; openFirst
// records its reason and tries the next name.
type skipError struct{ reason string }

func (e *skipError) Error() string { return e.reason }

// openFirst opens the first library of names that opens and that accept
// takes (accept binds its entry points and checks its version; a
// *skipError moves on to the next name, any other error stops).
func openFirst(o Opener, component string, names []string, accept func(Library, string) error) (string, error) {
	le := &LoadError{Component: component, Where: o.Where()}
	for _, n := range names {
		lib, err := o.Open(n)
		if err == nil {
			err = accept(lib, n)
			if err == nil {
				return n, nil
			}
			var skip *skipError
			if !errors.As(err, &skip) {
				return "", err
			}
		}
		le.Tried = append(le.Tried, n)
		le.Reasons = append(le.Reasons, strings.TrimPrefix(err.Error(), n+": ")) // dlerror starts with the name
	}
	return "", le
}
