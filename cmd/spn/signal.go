package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// catchSignals installs, first thing in main, the handler of the first
// SIGINT or SIGTERM: the signal is recorded on a, and unless a command's
// signalContext is there to stop the command, the process exits at once
// with 130 (SIGINT) or 143 (SIGTERM) and a message. A command reads its
// spec, plans and checks its flags before it takes a signal context;
// until then it has written nothing, and a signal ends it without Go's
// default handler's silent death.
func (a *app) catchSignals() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-ch
		n, _ := s.(syscall.Signal)
		a.signal.CompareAndSwap(0, int32(n))
		// From here on a second signal finds no channel of this one.
		signal.Stop(ch)
		if a.handling.Load() > 0 {
			return // the command's signalContext stops it
		}
		cmd, _ := a.cmd.Load().(string)
		fmt.Fprintf(a.stderr, "%sinterrupted\n", prefix(cmd))
		os.Exit(exitSignal + int(n))
	}()
}

// signalContext returns a context that the first SIGINT or SIGTERM
// cancels, and its stop function. The signal is recorded on a, so that
// app.exit exits 130 (SIGINT) or 143 (SIGTERM) whatever the command
// returns; a second signal kills the process the default way. While the
// context is live, catchSignals leaves the signal to it.
func (a *app) signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	a.handling.Add(1)
	// A signal caught by catchSignals just before this context existed
	// cancels it at once.
	if a.signal.Load() != 0 {
		cancel()
	}
	done := make(chan struct{})
	var once sync.Once
	stop := func() {
		once.Do(func() {
			close(done)
			signal.Stop(ch)
			a.handling.Add(-1)
			cancel()
		})
	}
	go func() {
		select {
		case s := <-ch:
			if n, ok := s.(syscall.Signal); ok {
				a.signal.CompareAndSwap(0, int32(n))
			}
			cancel()
			signal.Stop(ch)
		case <-done:
		}
	}()
	return ctx, stop
}
