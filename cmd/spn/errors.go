package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// Exit statuses of spn.
const (
	exitOK    = 0
	exitFail  = 1 // a run failed
	exitUsage = 2 // usage or validation error
	// exitSignal plus the signal's number is the status of a command that
	// SIGINT (130) or SIGTERM (143) stopped.
	exitSignal = 128
)

// exitError is how a command fails: app.exit prints its message to
// stderr and exits with its code. Commands build one with usageErr,
// usageErrf, runtimeErr, runtimeErrf or reported.
type exitError struct {
	code int
	// msg is the complete message, one line or several, without the
	// final newline; "" when the command has reported the failure
	// itself.
	msg string
	// err is the cause, for errors.Is and errors.As.
	err error
}

func (e *exitError) Error() string { return e.msg }
func (e *exitError) Unwrap() error { return e.err }

// prefix is how a message of command cmd starts: "spn run: ", or "spn: "
// for messages that belong to no one command.
func prefix(cmd string) string {
	if cmd == "" {
		return "spn: "
	}
	return "spn " + cmd + ": "
}

// usageErr is a usage or validation error of command cmd (exit 2),
// printed as "spn CMD: ERR". For flag.ErrHelp, whose usage text the flag
// set has printed, it is nil: -h succeeds.
func usageErr(cmd string, err error) error {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return &exitError{code: exitUsage, msg: prefix(cmd) + err.Error(), err: err}
}

// usageErrf is usageErr with a formatted message (%w wraps as in
// fmt.Errorf).
func usageErrf(cmd, format string, args ...any) error {
	return usageErr(cmd, fmt.Errorf(format, args...))
}

// runtimeErr is a failure of command cmd at run time (exit 1), printed as
// "spn CMD: ERR".
func runtimeErr(cmd string, err error) error {
	return &exitError{code: exitFail, msg: prefix(cmd) + err.Error(), err: err}
}

// runtimeErrf is runtimeErr with a formatted message.
func runtimeErrf(cmd, format string, args ...any) error {
	return runtimeErr(cmd, fmt.Errorf(format, args...))
}

// reported is a failure with exit status code that the command has
// already reported (a per-file or per-stage list, a report on stdout):
// nothing more is printed.
func reported(code int) error {
	return &exitError{code: code}
}

// joinErrs is one error whose message is the messages of errs, one per
// line, with the exit status of the first (all in a list share it).
func joinErrs(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return &exitError{code: exitCode(errs[0]), msg: strings.Join(msgs, "\n"), err: errors.Join(errs...)}
}

// exitCode is the exit status err carries: exitOK for nil, the code of an
// exitError, exitFail for any other error.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFail
}
