package cuda

// BindDriver binds in lib, the driver API, every entry point spn binds in
// the driver anywhere, taken from the bindings themselves: discovery's
// (Probe), a context's (NewContext) and profiling's (bindEvents, with its
// cuEventElapsedTime_v2 fallback). It returns the names of the entry
// points bound without a fallback; which of cuEventElapsedTime_v2 and
// cuEventElapsedTime was bound is for the caller's Library to see.
func BindDriver(lib Library) ([]string, error) {
	var d driverAPI
	var c computeAPI
	var e eventAPI
	var names []string
	for _, bs := range [][]binding{d.bindings(), c.bindings(), e.bindings()} {
		for _, b := range bs {
			names = append(names, b.name)
		}
	}
	for _, bs := range [][]binding{d.bindings(), c.bindings()} {
		if err := bindAll(lib, DriverLib, bs); err != nil {
			return names, err
		}
	}
	if _, err := bindEvents(lib, DriverLib); err != nil {
		return names, err
	}
	return names, nil
}
