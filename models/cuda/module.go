package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"unsafe"

	"github.com/spn-project/spn/models/cuda/kern"
)

// elfMagic starts an ELF file, such as a CUBIN.
const elfMagic = "\x7fELF"

// Module is a loaded module: the kernels of one PTX.
type Module struct {
	ctx      *Context
	h        uintptr
	unloaded bool
}

// LoadModule loads a module image into the context: PTX (as
// Compiler.CompileCached returns it), which the driver compiles for the
// device here, or a CUBIN (an ELF image, from a Compiler for a real
// architecture, sm_XX), which must be of the device's generation.
func (c *Context) LoadModule(image []byte) (*Module, error) {
	what, size := "PTX", len(image)
	switch {
	case bytes.HasPrefix(image, []byte(elfMagic)):
		what = "CUBIN" // the driver reads an ELF image by its headers
	case size == 0 || image[size-1] != 0:
		image = append(append(make([]byte, 0, size+1), image...), 0) // the driver reads PTX up to a NUL
	default:
		size-- // the NUL PTX ends with
	}
	m := &Module{ctx: c}
	err := c.do(func() error {
		err := check("cuModuleLoadData", c.api.moduleLoadData(&m.h, &image[0]))
		runtime.KeepAlive(image)
		if err != nil {
			var ce *CallError
			if errors.As(err, &ce) && loadHints[ce.Result] != "" {
				return fmt.Errorf("%w (%d bytes of %s on %s): %s", err, size, what, c.Device.Name, loadHints[ce.Result])
			}
			return fmt.Errorf("%w (%d bytes of %s on %s)", err, size, what, c.Device.Name)
		}
		c.track(m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Unload unloads the module; its kernels can no longer be launched.
// Unloading twice does nothing.
func (m *Module) Unload() error { return m.ctx.drop(m, &m.unloaded) }

func (m *Module) release() error {
	m.unloaded = true
	return check("cuModuleUnload", m.ctx.api.moduleUnload(m.h))
}

// Kernel is one entry point of a module with its parameters (kern's
// table), launched with arguments checked against them.
type Kernel struct {
	Spec kern.Kernel
	mod  *Module
	fn   uintptr
	// slots hold a launch's argument values, one 8-byte slot each, and
	// params points at them (cuLaunchKernel's void** kernelParams, never
	// empty): made once, filled by each launch under the context's
	// mutex; the driver reads them during the call only.
	slots  []uint64
	params []unsafe.Pointer
}

// Kernel returns the module's entry point name, which must be one of
// kern.Kernels (its table gives the parameters Launch checks).
func (m *Module) Kernel(name string) (*Kernel, error) {
	var spec *kern.Kernel
	for _, k := range kern.Kernels() {
		if k.Name == name {
			spec = &k
			break
		}
	}
	if spec == nil {
		return nil, fmt.Errorf("cuda: no kernel %q in spn's kernel table (models/cuda/kern)", name)
	}
	k := &Kernel{Spec: *spec, mod: m, slots: make([]uint64, len(spec.Params)), params: make([]unsafe.Pointer, len(spec.Params)+1)}
	for i := range k.slots {
		k.params[i] = unsafe.Pointer(&k.slots[i])
	}
	cname := cstring(name)
	err := m.ctx.do(func() error {
		if m.unloaded {
			return fmt.Errorf("cuda: kernel %s: the module is unloaded", name)
		}
		err := check("cuModuleGetFunction", m.ctx.api.moduleGetFunction(&k.fn, m.h, &cname[0]))
		runtime.KeepAlive(cname)
		if err != nil {
			return fmt.Errorf("%w (kernel %s)", err, name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return k, nil
}

// ArgError is a launch refused before it reached the driver: the
// arguments do not match the kernel's parameters, or the launch
// configuration is out of range.
type ArgError struct {
	Kernel string
	Index  int    // the argument, from 0; -1 for the count or the configuration
	Param  string // the parameter, as "float* y"; "" when Index is -1
	Reason string
}

func (e *ArgError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("cuda: launching %s: %s", e.Kernel, e.Reason)
	}
	return fmt.Sprintf("cuda: launching %s: argument %d (%s): %s", e.Kernel, e.Index, e.Param, e.Reason)
}

// MaxBlock is the most threads per block a launch may ask for.
const MaxBlock = 1024

// Launch runs the kernel over grid blocks of block threads (one
// dimension, no dynamic shared memory, the Context's stream). args follow
// the kernel's parameters: a *Buffer of the pointer's element type, or
// nil for a null pointer; an int or int32 for int; a float32, float64 or
// uint64 for float, double and unsigned long long. A count, kind or
// context that does not match is an *ArgError and nothing is launched.
// Sizes are the caller's: a kernel reads and writes as far as its size
// arguments say, and the driver stops a launch that strays out of its
// buffers with CUDA_ERROR_ILLEGAL_ADDRESS, which spoils the context.
//
// The launch is asynchronous: a failure while the kernel runs shows at
// the next Synchronize or copy. The driver reads the arguments during
// the call: each value is stored in a slot of the kernel's own array and
// its kernel-params array (void**, one pointer per argument) points at
// the slots. Both are made once with the Kernel, in Go heap memory,
// which Go's collector does not move; the context's mutex keeps two
// launches from filling them at once, and runtime.KeepAlive keeps them
// until the call has returned.
func (k *Kernel) Launch(grid, block int, args ...any) error {
	c := k.mod.ctx
	if grid < 1 || grid > math.MaxInt32 || block < 1 || block > MaxBlock {
		return &ArgError{Kernel: k.Spec.Name, Index: -1, Reason: fmt.Sprintf("%d blocks of %d threads: want 1 to %d blocks of 1 to %d threads", grid, block, math.MaxInt32, MaxBlock)}
	}
	return c.do(func() error {
		if err := k.marshal(args); err != nil {
			return err
		}
		if k.mod.unloaded {
			return fmt.Errorf("cuda: launching %s: the module is unloaded", k.Spec.Name)
		}
		c.calls.Launches++
		if err := c.profileStart(); err != nil {
			return err
		}
		r := callC(c.api.launchKernel, k.fn, uintptr(grid), 1, 1, uintptr(block), 1, 1, 0, c.stream, uintptr(unsafe.Pointer(&k.params[0])), 0)
		runtime.KeepAlive(k)
		if err := check("cuLaunchKernel", r); err != nil {
			return fmt.Errorf("%w (kernel %s, %d blocks of %d threads)", err, k.Spec.Name, grid, block)
		}
		return c.profileEnd(k.Spec.Name)
	})
}

// marshal checks args against the kernel's parameters and writes their
// values into k.slots, one 8-byte slot each (a 4-byte value in the
// slot's first bytes, where the driver reads it). It runs inside the
// context's do.
func (k *Kernel) marshal(args []any) error {
	ps := k.Spec.Params
	if len(args) != len(ps) {
		var want []string
		for _, p := range ps {
			want = append(want, p.Kind.C()+" "+p.Name)
		}
		return &ArgError{Kernel: k.Spec.Name, Index: -1, Reason: fmt.Sprintf("%d arguments for the %d parameters (%s)", len(args), len(ps), strings.Join(want, ", "))}
	}
	slots := k.slots
	clear(slots)
	for i, p := range ps {
		bad := func(format string, a ...any) error {
			return &ArgError{Kernel: k.Spec.Name, Index: i, Param: p.Kind.C() + " " + p.Name, Reason: fmt.Sprintf(format, a...)}
		}
		slot := unsafe.Pointer(&slots[i])
		a := args[i]
		if p.Kind.Ptr() {
			switch b := a.(type) {
			case nil:
				// a null pointer: slot stays 0
			case *Buffer:
				if b == nil {
					break
				}
				if err := b.usable(k.mod.ctx, p.Kind, 0, "buffer"); err != nil {
					return bad("%s", strings.TrimPrefix(err.Error(), "cuda: buffer: "))
				}
				slots[i] = b.ptr
			default:
				return bad("%T is not a device buffer", a)
			}
			continue
		}
		switch v := a.(type) {
		case int:
			if p.Kind != kern.I32 {
				return bad("int, want %s", p.Kind.C())
			}
			if v != int(int32(v)) {
				return bad("%d does not fit a C int", v)
			}
			*(*int32)(slot) = int32(v)
		case int32:
			if p.Kind != kern.I32 {
				return bad("int32, want %s", p.Kind.C())
			}
			*(*int32)(slot) = v
		case float32:
			if p.Kind != kern.F32 {
				return bad("float32, want %s", p.Kind.C())
			}
			*(*float32)(slot) = v
		case float64:
			if p.Kind != kern.F64 {
				return bad("float64, want %s", p.Kind.C())
			}
			*(*float64)(slot) = v
		case uint64:
			if p.Kind != kern.U64 {
				return bad("uint64, want %s", p.Kind.C())
			}
			*(*uint64)(slot) = v
		default:
			return bad("%T, want %s", a, p.Kind.C())
		}
	}
	return nil
}
