package cuda

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestDecodePTX(t *testing.T) {
	ptx := []byte(".version 9.0\n.target sm_90\n\x00")
	whole := encodePTX(ptx)
	got, err := decodePTX(whole)
	if err != nil || !bytes.Equal(got, ptx) {
		t.Fatalf("decodePTX(encodePTX) = %q, %v", got, err)
	}
	head := string(whole[:bytes.IndexByte(whole, '\n')])
	n := " " + strconv.Itoa(len(ptx)) + "\n"
	for _, c := range []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", "no \"spn-ptx 1 \" header"},
		{"other format", "spn-ptx 2 " + head[10:] + "\n" + string(ptx), "no \"spn-ptx 1 \" header"},
		{"no newline", head, "header line not ended"},
		{"short", string(whole[:len(whole)-1]), "bytes of PTX, the header says"},
		{"long", string(whole) + "x", "bytes of PTX, the header says"},
		{"bad length", strings.Replace(string(whole), n, " 0"+n[1:], 1), "bad length"},
		{"negative length", strings.Replace(string(whole), n, " -"+n[1:], 1), "bad length"},
		{"short checksum", "spn-ptx 1 abc" + n + string(ptx), "bad header"},
		{"bad hex", "spn-ptx 1 " + strings.Repeat("zz", 32) + n + string(ptx), "bad checksum"},
		{"damaged", string(whole[:len(whole)-2]) + "!\x00", "checksum mismatch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := decodePTX([]byte(c.in))
			if !errors.Is(err, errBadEntry) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("decodePTX: %v, want errBadEntry with %q", err, c.want)
			}
		})
	}
}

// FuzzDecodePTX: decodePTX never panics, and what it accepts is exactly
// the encoding of what it returns.
func FuzzDecodePTX(f *testing.F) {
	whole := encodePTX([]byte(".version 9.0\n.target sm_90\n\x00"))
	for _, s := range [][]byte{whole, whole[:len(whole)-1], whole[:12], nil, []byte("spn-ptx 1 \n"), encodePTX(nil)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ptx, err := decodePTX(b)
		if err != nil {
			if !errors.Is(err, errBadEntry) {
				t.Fatalf("error %v does not wrap errBadEntry", err)
			}
			return
		}
		if !bytes.Equal(encodePTX(ptx), b) {
			t.Fatalf("decodePTX accepted %q, which is not the encoding of %q", b, ptx)
		}
	})
}
