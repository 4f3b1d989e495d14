//go:build amd64 && !purego

package kernels

// spinPause tells the core that the caller is in a spin loop (the PAUSE
// instruction, spin_amd64.s): the loop stops flooding the pipeline with
// speculative loads of the watched word, so a hyper-threaded sibling doing
// the real work keeps the core, and leaving the loop when the word changes
// costs no memory-order flush.
//
//go:noescape
func spinPause()
