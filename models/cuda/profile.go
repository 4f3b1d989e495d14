package cuda

import (
	"cmp"
	"errors"
	"slices"
	"time"
)

// eventAPI holds the driver's event entry points: those bindings lists,
// bound with the context's (Event and profiles use them), and elapsed,
// which only profiles use, bound when a context first profiles
// (bindElapsed).
type eventAPI struct {
	create func(ev *uintptr, flags uint32) int32
	// record is cuEventRecord(ev, stream) and sync
	// cuEventSynchronize(ev), called by callC: made every step.
	record  uintptr
	sync    uintptr
	elapsed func(ms *float32, start, end uintptr) int32
	destroy func(ev uintptr) int32
}

func (a *eventAPI) bindings() []binding {
	return []binding{
		{"cuEventCreate", &a.create},
		{"cuEventRecord", &a.record},
		{"cuEventSynchronize", &a.sync},
		{"cuEventDestroy_v2", &a.destroy},
	}
}

// bindElapsed binds a.elapsed in lib (the driver API, called name):
// cuEventElapsedTime_v2 where the driver has it (CUDA 12.8 and later),
// else cuEventElapsedTime.
func bindElapsed(lib Library, name string, a *eventAPI) error {
	if lib.Bind(&a.elapsed, "cuEventElapsedTime_v2") != nil {
		return bindAll(lib, name, []binding{{"cuEventElapsedTime", &a.elapsed}})
	}
	return nil
}

// GEMMName names cuBLAS's products in a profile.
const GEMMName = "cublasSgemm"

// KernelTime is the device time of one kernel's launches in a profile
// (or of cuBLAS's products, named GEMMName).
type KernelTime struct {
	Name     string
	Launches int
	Time     time.Duration
}

// profile is a context's profile in progress: each launch or product
// between two events, in call order.
type profile struct {
	marks []mark
	start uintptr // the event recorded before the call in progress
}

// mark is one timed call.
type mark struct {
	name       string
	start, end uintptr
}

// StartProfile makes the context time each kernel launch and cuBLAS
// product on the device, between two driver events recorded around it
// on the Context's stream, until StopProfile. Profiling adds two event
// records to every call (the host's time per launch grows); it is for
// measuring where a step's device time goes, not for training.
func (c *Context) StartProfile() error {
	return c.do(func() error {
		if c.prof != nil {
			return errors.New("cuda: a profile is already running")
		}
		if c.events == nil {
			if err := bindElapsed(c.rt.driverLib, DriverLib, &c.api.ev); err != nil {
				return err
			}
			c.events = &eventPool{api: &c.api.ev}
		}
		c.prof = &profile{}
		return nil
	})
}

// StopProfile ends the profile StartProfile began and returns the device
// time of each kernel, the longest total first (by name for equal
// times). It waits for the profiled work to finish.
func (c *Context) StopProfile() ([]KernelTime, error) {
	var out []KernelTime
	err := c.do(func() error {
		p := c.prof
		if p == nil {
			return errors.New("cuda: no profile running")
		}
		c.prof = nil
		ev := c.events
		defer func() {
			for _, m := range p.marks {
				ev.free = append(ev.free, m.start, m.end)
			}
		}()
		if len(p.marks) == 0 {
			return nil
		}
		if err := check("cuEventSynchronize", callC(ev.api.sync, p.marks[len(p.marks)-1].end)); err != nil {
			return err
		}
		by := map[string]int{}
		for _, m := range p.marks {
			var ms float32
			if err := check("cuEventElapsedTime", ev.api.elapsed(&ms, m.start, m.end)); err != nil {
				return err
			}
			i, ok := by[m.name]
			if !ok {
				i = len(out)
				by[m.name] = i
				out = append(out, KernelTime{Name: m.name})
			}
			out[i].Launches++
			out[i].Time += time.Duration(float64(ms) * float64(time.Millisecond))
		}
		slices.SortFunc(out, func(a, b KernelTime) int {
			return cmp.Or(cmp.Compare(b.Time, a.Time), cmp.Compare(a.Name, b.Name))
		})
		return nil
	})
	return out, err
}

// profileStart records the event before a launch or product when a
// profile is running (called inside do).
func (c *Context) profileStart() error {
	if c.prof == nil {
		return nil
	}
	ev, err := c.events.record(c.stream)
	c.prof.start = ev
	return err
}

// profileEnd records the event after the call name and keeps the pair
// (called inside do, after profileStart).
func (c *Context) profileEnd(name string) error {
	if c.prof == nil {
		return nil
	}
	ev, err := c.events.record(c.stream)
	if err != nil {
		return err
	}
	c.prof.marks = append(c.prof.marks, mark{name: name, start: c.prof.start, end: ev})
	return nil
}

// eventPool holds a context's timed driver events for profiles: those
// free for the next record, reused from profile to profile; Close
// destroys them.
type eventPool struct {
	api  *eventAPI
	free []uintptr
	made []uintptr
}

// record records a free (or new) event on stream.
func (p *eventPool) record(stream uintptr) (uintptr, error) {
	var ev uintptr
	if n := len(p.free); n > 0 {
		ev, p.free = p.free[n-1], p.free[:n-1]
	} else {
		if err := check("cuEventCreate", p.api.create(&ev, 0)); err != nil {
			return 0, err
		}
		p.made = append(p.made, ev)
	}
	return ev, check("cuEventRecord", callC(p.api.record, ev, stream))
}

// destroy destroys every event the pool made.
func (p *eventPool) destroy() error {
	var errs []error
	for _, ev := range p.made {
		errs = append(errs, check("cuEventDestroy_v2", p.api.destroy(ev)))
	}
	p.made, p.free = nil, nil
	return errors.Join(errs...)
}
