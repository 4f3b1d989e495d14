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
