package units

import "testing"

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		b    int64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{1<<20 - 1, "1024.0 KiB"},
		{1 << 20, "1.0 MiB"},
		{150 << 30, "150.0 GiB"},
		{-5, "-5 B"},
	} {
		if got := Bytes(c.b); got != c.want {
			t.Errorf("Bytes(%d) = %q, want %q", c.b, got, c.want)
		}
	}
}
