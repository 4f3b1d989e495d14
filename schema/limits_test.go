package schema

import (
	"strings"
	"testing"
)

func TestSpecTooLarge(t *testing.T) {
	src := "package spn\n\nname: \"bad\"\n" + strings.Repeat("// padding\n", MaxSpecBytes/10)
	_, err := LoadBytes("big.cue", []byte(src), Options{})
	want := "big.cue:1:1: the spec is 1153452 bytes; at most 1048576 are allowed (a spec describes experiments, it does not hold data)"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}
