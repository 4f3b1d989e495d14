package main

import (
	"fmt"
	"os"

	"github.com/spn-project/spn/stages/memguard"
)

// specMemoryLimit bounds the heap growth allowed while one spec is
// evaluated. A spec that grows a value without bound (a string or list
// doubled over and over) would otherwise make the CUE evaluator exhaust
// memory and die with a goroutine dump; the syntax limits of package
// schema catch big literals, this catches what only evaluation builds.
const specMemoryLimit = 2 << 30

// guardSpecMemory watches the heap while file is evaluated: above
// specMemoryLimit of growth it prints what happened and exits with status
// 2 (the evaluator cannot be interrupted). Call the returned function
// when evaluation is done.
func (a *app) guardSpecMemory(cmd, file string) (stop func()) {
	return memguard.Watch(specMemoryLimit, func() {
		fmt.Fprintf(a.stderr, "%s:1:1: evaluating the spec took more than %d MiB of memory, so spn %s stopped: some value grows without bound (a string or list built by repeated doubling?); specs are limited to %d MiB of evaluation\n",
			file, specMemoryLimit>>20, cmd, specMemoryLimit>>20)
		os.Exit(exitUsage)
	})
}
