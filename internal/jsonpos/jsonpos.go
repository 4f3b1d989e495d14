// Package jsonpos places encoding/json's errors in the input they came
// from, so that a message about a JSON file names the file, line and
// column as spn's other messages about files do:
//
//	results/train.json:3:17: invalid character '}' looking for beginning of object key string
package jsonpos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// TrailingError is the error of Strict for input with more after its
// value: Offset is that of the first byte of what follows.
type TrailingError struct{ Offset int64 }

func (e *TrailingError) Error() string { return "data after the JSON value" }

// Of returns the 1-based line and column (in bytes) in b of where err
// occurred: the offending character of a *json.SyntaxError, the last
// character of the value of a *json.UnmarshalTypeError, the first of a
// *TrailingError. ok is false for an error without an offset in b.
func Of(b []byte, err error) (line, col int, ok bool) {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var tr *TrailingError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	case errors.As(err, &tr):
		off = tr.Offset + 1
	}
	if off < 1 || off > int64(len(b)) {
		return 0, 0, false
	}
	before := b[:off-1]
	line = bytes.Count(before, []byte("\n")) + 1
	return line, len(before) - (bytes.LastIndexByte(before, '\n') + 1) + 1, true
}

// Wrap returns err (from decoding b, the content of the file called
// name) as "name:LINE:COL: err", or "name: err" where Of finds no place;
// nil for nil. The result wraps err.
func Wrap(name string, b []byte, err error) error {
	if err == nil {
		return nil
	}
	if line, col, ok := Of(b, err); ok {
		return fmt.Errorf("%s:%d:%d: %w", name, line, col, err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// Strict decodes b, the content of the file called name, into v as
// Decode does. Its errors are Wrap's.
func Strict(name string, b []byte, v any) error {
	return Wrap(name, b, Decode(b, v))
}

// Decode decodes b into v: one JSON value, with no field v has no place
// for and nothing after it but white space. Its errors are
// encoding/json's, a *TrailingError, or one for empty input; Of places
// them in b.
func Decode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if err == io.EOF {
			err = errors.New("no JSON value, only white space")
		}
		return err
	}
	off := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		// InputOffset is where the value ends; what follows starts after
		// the white space there.
		rest := b[off:]
		off += int64(len(rest) - len(bytes.TrimLeft(rest, " \t\r\n")))
		return &TrailingError{Offset: off}
	}
	return nil
}
