package main

import (
	"fmt"

	"github.com/spn-project/spn/stages/cache"
)

// warnDamage returns the cache's Warn hook for command cmd: one line per
// damaged stage, naming the file, saying it is not used.
func (a *app) warnDamage(cmd string) func(*cache.Damage) {
	return func(d *cache.Damage) {
		fmt.Fprintf(a.stderr, "spn %s: warning: %v; the stage is not served from the cache and runs again\n", cmd, d)
	}
}
