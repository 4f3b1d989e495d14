package schema

import (
	"fmt"
	"strconv"
	"strings"
)

// The device names a spec or --device may give.
const (
	// DeviceCPU computes on the CPU (the default).
	DeviceCPU = "cpu"
	// DeviceAuto is a GPU when one is present and usable, else the CPU.
	DeviceAuto = "auto"
	// DeviceCUDA is NVIDIA GPU 0; "cuda:N" is GPU N.
	DeviceCUDA = "cuda"
)

// Device is the default device.
const Device = DeviceCPU

// DeviceSyntax lists the accepted device names, for messages.
const DeviceSyntax = `"cpu", "auto", "cuda" or "cuda:N" (N = 0, 1, …)`

// ParseDevice checks a device name and returns its kind (DeviceCPU,
// DeviceAuto or DeviceCUDA) and, for DeviceCUDA, its ordinal ("cuda" is
// "cuda:0"). N is a decimal number without sign or leading zeros.
func ParseDevice(s string) (kind string, ordinal int, err error) {
	switch s {
	case DeviceCPU, DeviceAuto, DeviceCUDA:
		return s, 0, nil
	}
	if n, ok := strings.CutPrefix(s, DeviceCUDA+":"); ok && n != "" && (n == "0" || n[0] != '0') && len(n) <= 4 {
		if i, err := strconv.Atoi(n); err == nil && i >= 0 && strconv.Itoa(i) == n {
			return DeviceCUDA, i, nil
		}
	}
	return "", 0, fmt.Errorf("%q is not a device: use %s", s, DeviceSyntax)
}
