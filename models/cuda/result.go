package cuda

import "fmt"

// Result is a CUresult (driver API) or a library status code.
type Result int32

// The driver API results discovery can meet, by name.
var resultNames = map[Result]string{
	0:   "CUDA_SUCCESS",
	1:   "CUDA_ERROR_INVALID_VALUE",
	2:   "CUDA_ERROR_OUT_OF_MEMORY",
	3:   "CUDA_ERROR_NOT_INITIALIZED",
	4:   "CUDA_ERROR_DEINITIALIZED",
	34:  "CUDA_ERROR_STUB_LIBRARY",
	35:  "CUDA_ERROR_INSUFFICIENT_DRIVER",
	46:  "CUDA_ERROR_DEVICE_UNAVAILABLE",
	100: "CUDA_ERROR_NO_DEVICE",
	101: "CUDA_ERROR_INVALID_DEVICE",
	304: "CUDA_ERROR_OPERATING_SYSTEM",
	803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
	804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
	999: "CUDA_ERROR_UNKNOWN",
}

func (r Result) String() string {
	if n, ok := resultNames[r]; ok {
		return fmt.Sprintf("%s (%d)", n, int32(r))
	}
	return fmt.Sprintf("CUresult %d", int32(r))
}

// CallError is a driver or library call that returned a failure code.
type CallError struct {
	Call   string // the entry point, e.g. "cuInit"
	Result Result
}

func (e *CallError) Error() string {
	return fmt.Sprintf("cuda: %s failed: %v", e.Call, e.Result)
}

// check turns a status code from call into an error.
func check(call string, r int32) error {
	if r == 0 {
		return nil
	}
	return &CallError{Call: call, Result: Result(r)}
}
