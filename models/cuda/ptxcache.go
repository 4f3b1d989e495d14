package cuda

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spn-project/spn/internal/atomicfile"
)

// The PTX cache keeps the PTX NVRTC wrote under a directory the caller
// gives (spn's cache dir), one file per compilation: its name is
// "<arch>-<key>.ptx", the key the SHA-256 of the NVRTC library and
// version, the architecture, the options, the program name and the
// source. An entry is a header line
//
//	spn-ptx 1 <SHA-256 of the PTX, hex> <length of the PTX>
//
// then the PTX. It is written through a temporary file renamed into
// place, so a reader sees a whole entry or none; an entry that does not
// decode (short, damaged, of another format) is compiled again and
// replaced, never used.

// ptxMagic starts every cache entry; the number is the entry format.
const ptxMagic = "spn-ptx 1 "

// PTXKey returns the cache key of compiling src (called name) with
// options opts for arch with the NVRTC lib: the hex SHA-256 of all of them.
func PTXKey(lib Lib, arch, name, src string, opts []string) string {
	h := sha256.New()
	field := func(s string) { fmt.Fprintf(h, "%d:%s;", len(s), s) } // length-prefixed: no two key lists collide
	field("spn PTX cache 1")
	field(lib.Name)
	field(lib.Version.String())
	field(arch)
	field(strconv.Itoa(len(opts)))
	for _, o := range opts {
		field(o)
	}
	field(name)
	field(src)
	return hex.EncodeToString(h.Sum(nil))
}

// encodePTX returns the cache entry of ptx.
func encodePTX(ptx []byte) []byte {
	sum := sha256.Sum256(ptx)
	head := fmt.Sprintf("%s%x %d\n", ptxMagic, sum, len(ptx))
	return append([]byte(head), ptx...)
}

// errBadEntry says that a cache entry does not decode.
var errBadEntry = errors.New("not a whole PTX cache entry")

// decodePTX returns the PTX of a cache entry, or errBadEntry (wrapped,
// with the reason) when the entry is short, damaged or of another format.
func decodePTX(b []byte) ([]byte, error) {
	rest, ok := bytes.CutPrefix(b, []byte(ptxMagic))
	if !ok {
		return nil, fmt.Errorf("%w: no %q header", errBadEntry, ptxMagic)
	}
	line, body, ok := bytes.Cut(rest, []byte("\n"))
	if !ok {
		return nil, fmt.Errorf("%w: header line not ended", errBadEntry)
	}
	sumHex, lenText, ok := bytes.Cut(line, []byte(" "))
	if !ok || len(sumHex) != 2*sha256.Size {
		return nil, fmt.Errorf("%w: bad header %q", errBadEntry, line)
	}
	n, err := strconv.Atoi(string(lenText))
	if err != nil || n < 0 || strconv.Itoa(n) != string(lenText) {
		return nil, fmt.Errorf("%w: bad length %q", errBadEntry, lenText)
	}
	if len(body) != n {
		return nil, fmt.Errorf("%w: %d bytes of PTX, the header says %d", errBadEntry, len(body), n)
	}
	var want [sha256.Size]byte
	if _, err := hex.Decode(want[:], sumHex); err != nil {
		return nil, fmt.Errorf("%w: bad checksum %q", errBadEntry, sumHex)
	}
	if sha256.Sum256(body) != want {
		return nil, fmt.Errorf("%w: checksum mismatch", errBadEntry)
	}
	return body, nil
}

// PTXPath returns the file of the cache entry of key for arch under dir.
func PTXPath(dir, arch, key string) string { return filepath.Join(dir, arch+"-"+key+".ptx") }

// CompileCached is Compile through the PTX cache under dir: it returns
// the cached PTX when a valid entry exists (hit true), else compiles and
// stores the result. A failed compilation writes nothing. The CUBIN of a
// compiler for a real architecture (sm_XX) is cached the same way, under
// its architecture.
func (c *Compiler) CompileCached(dir, name, src string, opts ...string) (ptx []byte, hit bool, err error) {
	path := PTXPath(dir, c.Arch, PTXKey(c.NVRTC, c.Arch, name, src, opts))
	if b, err := os.ReadFile(path); err == nil {
		if ptx, err := decodePTX(b); err == nil {
			return ptx, true, nil
		}
	}
	ptx, err = c.Compile(name, src, opts...)
	if err != nil {
		return nil, false, err
	}
	entry := encodePTX(ptx)
	if err := atomicfile.WriteFile(path, entry, 0o644); err != nil {
		return nil, false, fmt.Errorf("cuda: caching the PTX of %s: %w", name, err)
	}
	return ptx, false, nil
}
