package device

import (
	"errors"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/kern"
)

// CompileKernels compiles spn's kernels (models/cuda/kern) for d with
// rt's NVRTC: a CUBIN for d's architecture where NVRTC targets it, else
// PTX. It returns the image and the compiler, whose Arch, NVRTC and
// CUBIN say what it made. spn version --cuda checks a machine with it.
func CompileKernels(rt *cuda.Runtime, d cuda.Device) ([]byte, *cuda.Compiler, error) {
	c, err := rt.Compiler(d)
	if err != nil {
		return nil, nil, err
	}
	image, err := c.Compile(kern.Name, kern.Source(), kern.Options()...)
	if err != nil {
		return nil, nil, err
	}
	return image, c, nil
}

// LoadKernels loads image (CompileKernels') as a module on GPU ordinal
// and unloads it: the driver reads the CUBIN, or compiles the PTX with
// its JIT, as a training run's engine makes it do.
func LoadKernels(rt *cuda.Runtime, ordinal int, image []byte) error {
	ctx, err := rt.NewContext(ordinal)
	if err != nil {
		return err
	}
	mod, err := ctx.LoadModule(image)
	if err == nil {
		err = mod.Unload()
	}
	return errors.Join(err, ctx.Close())
}
