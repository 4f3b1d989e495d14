package cuda

// BindDriver binds in lib, the driver API, every entry point spn binds in
// the driver anywhere, taken from the bindings themselves: discovery's
// (Probe), a context's (NewContext: memory, copies, events, modules,
// launches) and profiling's (bindElapsed, with its cuEventElapsedTime_v2
// fallback). It returns the names of the entry points bound without a
// fallback; which of cuEventElapsedTime_v2 and cuEventElapsedTime was
// bound is for the caller's Library to see.
func BindDriver(lib Library) ([]string, error) {
	var d driverAPI
	var c computeAPI
	var names []string
	for _, bs := range [][]binding{d.bindings(), c.bindings()} {
		for _, b := range bs {
			names = append(names, b.name)
		}
		if err := bindAll(lib, DriverLib, bs); err != nil {
			return names, err
		}
	}
	if err := bindElapsed(lib, DriverLib, &c.ev); err != nil {
		return names, err
	}
	return names, nil
}

// LastStaging returns the bytes of the staging buffer s filled last.
func LastStaging(s *Staging) []byte { return s.bufs[s.last].Bytes() }

// SupportedArchs returns the compute capabilities the compiler's NVRTC
// targets (supportedArchs, which Runtime.Compiler passes to PickArch).
func (c *Compiler) SupportedArchs() ([]int, error) { return supportedArchs(c.api, c.NVRTC.Name) }

// OpenCuBLAS opens the cuBLAS that Probe would open for a driver of the
// given CUDA version (openCuBLAS).
func OpenCuBLAS(o Opener, driver Version) (Lib, Library, error) { return openCuBLAS(o, driver) }

// BindBLAS binds in lib, a cuBLAS called name, every entry point a BLAS
// handle uses (NewBLAS's bindings), and returns their names.
func BindBLAS(lib Library, name string) ([]string, error) {
	api := &blasAPI{}
	var names []string
	for _, b := range api.bindings() {
		names = append(names, b.name)
	}
	return names, bindAll(lib, name, api.bindings())
}

// CreateBLAS calls lib's cublasCreate_v2 outside any Context, as NewBLAS
// does inside one, destroys the handle when one was made, and returns
// cublasCreate_v2's error as NewBLAS would (nil on success).
func CreateBLAS(lib Library, name string) error {
	api := &blasAPI{}
	if err := bindAll(lib, name, api.bindings()); err != nil {
		return err
	}
	var h uintptr
	if err := check("cublasCreate_v2", api.create(&h)); err != nil {
		return err
	}
	return check("cublasDestroy_v2", api.destroy(h))
}
