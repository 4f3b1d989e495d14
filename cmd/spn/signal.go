package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// signalContext returns a context that the first SIGINT or SIGTERM
// cancels, and its stop function. The signal is recorded on a, so that
// app.exit exits 130 (SIGINT) or 143 (SIGTERM) whatever the command
// returns; a second signal kills the process the default way.
func (a *app) signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	stop := func() {
		signal.Stop(ch)
		cancel()
	}
	go func() {
		select {
		case s := <-ch:
			if n, ok := s.(syscall.Signal); ok {
				a.signal.CompareAndSwap(0, int32(n))
			}
			stop()
		case <-ctx.Done():
		}
	}()
	return ctx, stop
}
