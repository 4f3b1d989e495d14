package cuda

import (
	"errors"
	"fmt"
	"strings"
)

// Result is a CUresult (driver API) or a library status code.
type Result int32

// The driver API results spn can meet, by name.
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
	200: "CUDA_ERROR_INVALID_IMAGE",
	201: "CUDA_ERROR_INVALID_CONTEXT",
	209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
	214: "CUDA_ERROR_ECC_UNCORRECTABLE",
	218: "CUDA_ERROR_INVALID_PTX",
	219: "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT",
	220: "CUDA_ERROR_NVLINK_UNCORRECTABLE",
	221: "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
	222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	223: "CUDA_ERROR_JIT_COMPILATION_DISABLED",
	224: "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY",
	225: "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC",
	226: "CUDA_ERROR_CONTAINED",
	300: "CUDA_ERROR_INVALID_SOURCE",
	301: "CUDA_ERROR_FILE_NOT_FOUND",
	302: "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND",
	303: "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
	304: "CUDA_ERROR_OPERATING_SYSTEM",
	400: "CUDA_ERROR_INVALID_HANDLE",
	401: "CUDA_ERROR_ILLEGAL_STATE",
	500: "CUDA_ERROR_NOT_FOUND",
	700: "CUDA_ERROR_ILLEGAL_ADDRESS",
	701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	702: "CUDA_ERROR_LAUNCH_TIMEOUT",
	714: "CUDA_ERROR_HARDWARE_STACK_ERROR",
	715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	716: "CUDA_ERROR_MISALIGNED_ADDRESS",
	717: "CUDA_ERROR_INVALID_ADDRESS_SPACE",
	718: "CUDA_ERROR_INVALID_PC",
	719: "CUDA_ERROR_LAUNCH_FAILED",
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

// loadHints says what a module load's failure with a JIT error means:
// the results cuModuleLoadData gives when the driver cannot run an image.
var loadHints = map[Result]string{
	200: "the driver cannot read the image: a CUBIN of another GPU generation, or a damaged cache entry",
	209: "the image has no code for this GPU: a CUBIN of another architecture (the compiler targets the device's compute capability)",
	218: "the driver's PTX JIT rejects the PTX",
	221: "the driver's PTX JIT (libnvidia-ptxjitcompiler.so.1) is missing: install the driver's whole user-space part, or use an NVRTC that writes a CUBIN for this GPU",
	222: "the PTX is of a newer CUDA than the driver's JIT reads: update the driver, or use an NVRTC no newer than the driver, or one that writes a CUBIN for this GPU",
	223: "the driver's PTX JIT is disabled (CUDA_DISABLE_PTX_JIT=1?): use an NVRTC that writes a CUBIN for this GPU",
}

// cublasStatusNames names cuBLAS's cublasStatus_t codes.
var cublasStatusNames = map[Result]string{
	0:  "CUBLAS_STATUS_SUCCESS",
	1:  "CUBLAS_STATUS_NOT_INITIALIZED",
	3:  "CUBLAS_STATUS_ALLOC_FAILED",
	7:  "CUBLAS_STATUS_INVALID_VALUE",
	8:  "CUBLAS_STATUS_ARCH_MISMATCH",
	11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR",
	15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}

// CallError is a driver or library call that returned a failure code.
type CallError struct {
	Call   string // the entry point, e.g. "cuInit"
	Result Result // a CUresult, or a cublasStatus_t for a cublas call
}

func (e *CallError) Error() string {
	if strings.HasPrefix(e.Call, "cublas") {
		if n, ok := cublasStatusNames[e.Result]; ok {
			return fmt.Sprintf("cuda: %s failed: %s (%d)", e.Call, n, int32(e.Result))
		}
		return fmt.Sprintf("cuda: %s failed: cublasStatus %d", e.Call, int32(e.Result))
	}
	return fmt.Sprintf("cuda: %s failed: %v", e.Call, e.Result)
}

// ErrOutOfMemory matches (errors.Is) the error of a driver call that
// failed with CUDA_ERROR_OUT_OF_MEMORY.
var ErrOutOfMemory = errors.New("cuda: out of device memory")

// ErrContextLost matches (errors.Is) the error of a driver call that
// failed because a kernel faulted on the GPU (an illegal address or
// instruction, a failed launch) or the GPU had an uncorrectable memory
// error: such an error is sticky, so every later call in the context
// fails with it, for every user of the device's primary context, until
// the context is released by all of them and made anew. A cuBLAS call
// that meets such an error is ErrContextLost too: its error joins the
// stream's (see Context.blasCheck).
var ErrContextLost = errors.New("cuda: the GPU context is lost")

// Is reports whether e is a failure that target names: ErrOutOfMemory
// for a driver call's CUDA_ERROR_OUT_OF_MEMORY, ErrContextLost for its
// sticky errors.
func (e *CallError) Is(target error) bool {
	if strings.HasPrefix(e.Call, "cublas") {
		return false
	}
	switch target {
	case ErrOutOfMemory:
		return e.Result == 2
	case ErrContextLost:
		switch e.Result {
		case 214, 700, 714, 715, 716, 717, 718, 719:
			return true
		}
	}
	return false
}

// check turns a status code from call into an error.
func check(call string, r int32) error {
	if r == 0 {
		return nil
	}
	return &CallError{Call: call, Result: Result(r)}
}
