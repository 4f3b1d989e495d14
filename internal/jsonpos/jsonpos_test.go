package jsonpos_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/spn-project/spn/internal/jsonpos"
)

type doc struct {
	A int      `json:"a"`
	B []string `json:"b"`
}

// TestStrict: Strict's errors name the file, and the line and column of
// the offending character (a syntax error), of the end of a value of the
// wrong type, or of what follows the value; an unknown field has no
// place in encoding/json's error, so it is named without one.
func TestStrict(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
	}{
		{"ok", `{"a": 1, "b": ["x"]}`, ""},
		{"white space after", "{\"a\": 1}\n\n \t", ""},
		{"syntax", "{\n  \"a\": 1,\n  }", `f.json:3:3: invalid character '}' looking for beginning of object key string`},
		{"type", "{\n\"a\": \"one\"}", `f.json:2:10: json: cannot unmarshal string into Go struct field doc.a of type int`},
		{"unknown field", "{\"a\": 1,\n\"c\": 2}", `f.json: json: unknown field "c"`},
		{"trailing", "{\"a\": 1}\n  {\"a\": 2}", `f.json:2:3: data after the JSON value`},
		{"trailing on the line", `{"a": 1} x`, `f.json:1:10: data after the JSON value`},
		{"truncated", `{"a": 1`, `f.json: unexpected EOF`},
		{"empty", " \n", `f.json: no JSON value, only white space`},
		{"multibyte before", "{\"b\": [\"é\"], ]", `f.json:1:15: invalid character ']' looking for beginning of object key string`},
	} {
		var d doc
		err := jsonpos.Strict("f.json", []byte(c.in), &d)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestOf: the place of each kind of error, none for an error without an
// offset or one past the input.
func TestOf(t *testing.T) {
	b := []byte("[1,\n2,\nx]")
	var v []int
	err := json.Unmarshal(b, &v)
	if line, col, ok := jsonpos.Of(b, err); !ok || line != 3 || col != 1 {
		t.Errorf("syntax error at %d:%d (%v), want 3:1", line, col, ok)
	}
	if _, _, ok := jsonpos.Of(b, errors.New("no offset")); ok {
		t.Error("an error without an offset has a place")
	}
	if _, _, ok := jsonpos.Of(b, &json.SyntaxError{Offset: int64(len(b) + 1)}); ok {
		t.Error("an offset past the input has a place")
	}
	if jsonpos.Wrap("f", b, nil) != nil {
		t.Error("Wrap(nil) is not nil")
	}
	if err := jsonpos.Wrap("f", b, err); !errors.As(err, new(*json.SyntaxError)) {
		t.Errorf("Wrap's %v does not wrap the *json.SyntaxError", err)
	}
}

// FuzzStrict: Strict never panics, accepts only valid JSON (one value,
// as json.Valid wants), and every place it names lies in the input.
func FuzzStrict(f *testing.F) {
	for _, s := range []string{`{"a": 1}`, "{\"a\": 1}\n{}", `{"b": ["x", 1]}`, "{\n\"a\": \"1\"}", `[`, `{"c": 1}`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d doc
		err := jsonpos.Strict("f", b, &d)
		if line, col, ok := jsonpos.Of(b, err); ok {
			lines := bytes.Split(b, []byte("\n"))
			if line < 1 || line > len(lines) || col < 1 || col > len(lines[line-1])+1 {
				t.Fatalf("%v: place %d:%d outside the input", err, line, col)
			}
		}
		if err == nil && !json.Valid(b) {
			t.Fatalf("Strict accepted invalid JSON %q", b)
		}
	})
}
