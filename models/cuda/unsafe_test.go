package cuda

import "unsafe"

// unsafeBytes views the n bytes at p, as a C callee sees a char buffer.
func unsafeBytes(p *byte, n int) []byte { return unsafe.Slice(p, n) }
