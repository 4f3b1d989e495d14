package cuda

import "testing"

// TestVersion: the driver's integer versions and their order.
func TestVersion(t *testing.T) {
	for _, c := range []struct {
		in   int32
		want Version
	}{{13000, Version{13, 0}}, {12040, Version{12, 4}}, {11080, Version{11, 8}}} {
		if got := versionOf(c.in); got != c.want {
			t.Errorf("versionOf(%d) = %v, want %v", c.in, got, c.want)
		}
	}
	if !(Version{12, 9}).Less(Version{13, 0}) || (Version{13, 0}).Less(Version{12, 9}) || (Version{12, 4}).Less(Version{12, 4}) {
		t.Error("Less is wrong")
	}
}
