//go:build !amd64 || purego

package kernels

// spinPause does nothing where there is no pause instruction to use.
func spinPause() {}
