// Package fetch downloads the public files spn needs into a data directory,
// verifying each against a lock file, and can serve them from a local
// mirror of the upstream locations instead of the network.
package fetch

import (
	"archive/zip"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/spn-project/spn/data/known"
	"github.com/spn-project/spn/internal/atomicfile"
	"github.com/spn-project/spn/internal/jsonpos"
)

// LockFile is the name of the lock file inside the data directory.
const LockFile = "spn-data.lock.json"

// Upstream locations of the datasets spn knows.
const (
	// TUBase is the TU Dortmund graph kernel datasets; append NAME.zip.
	TUBase = "https://www.chrsmrrs.com/graphkerneldatasets/"
	// ErricaBase is Errica et al.'s split files; append NAME_splits.json.
	ErricaBase = "https://raw.githubusercontent.com/diningphil/gnn-comparison/master/data_splits/CHEMICAL/"
	// QM9Base is the GNN-FiLM QM9 files; append {train,valid,test}.jsonl.gz.
	QM9Base = "https://github.com/microsoft/tf-gnn-samples/raw/master/data/qm9/"
	// OGBBase is OGB's molecule CSV downloads; append NAME.zip.
	OGBBase = "http://snap.stanford.edu/ogb/data/graphproppred/csv_mol_download/"
	// ExpressivityBase is the EXP/CEXP data of GNN-RNI; append
	// NAME/raw/GRAPHSAT.txt.
	ExpressivityBase = "https://github.com/ralphabb/GNN-RNI/raw/main/Data/"
	// PeptidesFuncCSV and PeptidesFuncSplit are LRGB's Peptides-func files
	// (the URLs of LRGB's own loader): the SMILES with their labels, and
	// the official split.
	PeptidesFuncCSV   = "https://www.dropbox.com/s/ol2v01usvaxbsr8/peptide_multi_class_dataset.csv.gz?dl=1"
	PeptidesFuncSplit = "https://www.dropbox.com/s/j4zcnx2eipuo0xz/splits_random_stratified_peptide.pickle?dl=1"
)

// dropboxQuery ends a Dropbox download URL; the file's name is before it.
const dropboxQuery = "?dl=1"

// mirrorTable maps upstream URL prefixes onto sub-paths of the mirror and
// of the data directory (the layout of the offline mirror's README). An
// entry with a query takes only URLs that end in it, and drops it from the
// path.
var mirrorTable = []struct{ prefix, sub, query string }{
	{TUBase, "tu/", ""},
	{ErricaBase, "splits/errica/", ""},
	{QM9Base, "qm9/", ""},
	{OGBBase, "ogb/", ""},
	{ExpressivityBase + "EXP/raw/", "expressivity/EXP/", ""},
	{ExpressivityBase + "CEXP/raw/", "expressivity/CEXP/", ""},
	{strings.TrimSuffix(PeptidesFuncCSV, path.Base(PeptidesFuncCSV)), "lrgb/", dropboxQuery},
	{strings.TrimSuffix(PeptidesFuncSplit, path.Base(PeptidesFuncSplit)), "lrgb/", dropboxQuery},
}

// LocalPath returns the slash-separated path of url below a mirror or data
// directory, e.g. "tu/DD.zip"; ok is false for URLs outside the table.
func LocalPath(url string) (rel string, ok bool) {
	for _, m := range mirrorTable {
		if rest, found := strings.CutPrefix(url, m.prefix); found {
			if m.query != "" {
				if rest, found = strings.CutSuffix(rest, m.query); !found {
					return "", false
				}
			}
			rel = m.sub + rest
			if rest == "" || strings.Contains(rest, "?") || !cleanRel(rel) {
				return "", false
			}
			return rel, true
		}
	}
	return "", false
}

// cleanRel reports whether rel is a path LocalPath may give: relative,
// clean, and without "..", so that it stays inside the directory it is
// joined to.
func cleanRel(rel string) bool {
	return rel != "" && !path.IsAbs(rel) && path.Clean(rel) == rel && !strings.Contains(rel, "..")
}

// Fetcher fetches files into DataDir. The zero Log discards messages.
type Fetcher struct {
	// DataDir holds downloaded files and the lock file.
	DataDir string
	// Mirror, when not empty, is a local folder laid out like the mirror
	// table; files are copied from it instead of downloaded.
	Mirror string
	// Log receives progress messages; nil discards them.
	Log hclog.Logger
	// Client is the HTTP client; nil uses one with connect and header
	// timeouts (the whole download is bounded by the context).
	Client *http.Client
	// AcceptMismatch turns a difference between a file's content figures
	// and the built-in ones (package known) into a warning; the
	// difference is recorded in Sources.
	AcceptMismatch bool

	mu      sync.Mutex
	sources []Source
}

// Source records one file a Fetcher served, for the results that use it.
type Source struct {
	// URL is the upstream location; Path the file below the data
	// directory (slash-separated).
	URL  string `json:"url"`
	Path string `json:"path"`
	// SHA256 and Size are the file's.
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	// Upstream is true when SHA256 is upstream's pinned SHA-256.
	Upstream bool `json:"upstream,omitempty"`
	// Figures is "verified" when the parsed content matched the built-in
	// figures, "accepted mismatch: ..." when it did not and AcceptMismatch
	// let it pass, "" when the file has no built-in figures or was not
	// parsed.
	Figures string `json:"figures,omitempty"`
}

// Sources returns the files served so far, in first-use order.
func (f *Fetcher) Sources() []Source {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Source(nil), f.sources...)
}

// record notes a served file.
func (f *Fetcher) record(url, rel, sum string, size int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.sources {
		if f.sources[i].Path == rel {
			f.sources[i].SHA256, f.sources[i].Size = sum, size
			return
		}
	}
	kf, _ := known.Lookup(rel)
	f.sources = append(f.sources, Source{URL: url, Path: rel, SHA256: sum, Size: size, Upstream: kf.SHA256 != "" && kf.SHA256 == sum})
}

// RefreshHint is added to the error of a fetched file of dataset name that
// does not load: the copy kept in the data folder may be a bad one (from
// a broken mirror or download), and a fixed source is read only after a
// refresh.
func RefreshHint(name string) string {
	return fmt.Sprintf("if this copy came from a bad mirror or download, run `spn data fetch %s --refresh`", name)
}

// MismatchHint tells how to accept data whose figures differ.
const MismatchHint = "fetch it again with `spn data fetch --refresh NAME`, or, if this content is really wanted, pass --accept-data-mismatch (recorded in the stage results)"

// Verify compares the content figures got, parsed from the file at path
// that Get returned for url, with the built-in ones (known.Check). A
// difference is an error naming the file, the figure, the expected and
// the actual value, unless f.AcceptMismatch; either way the outcome is
// recorded in Sources. A file whose SHA-256 is not upstream's pinned one
// but whose figures match is accepted with a warning (a re-packed copy).
func (f *Fetcher) Verify(path, url string, got []known.Figure) error {
	rel, ok := LocalPath(url)
	if !ok {
		return fmt.Errorf("verifying %s: not a known upstream location", url)
	}
	kf, ok := known.Lookup(rel)
	if !ok {
		return nil
	}
	status := "verified"
	err := known.Check(path, rel, got)
	if err == nil {
		f.log().Info("content figures verified", "path", path, "figures", len(got))
	} else {
		if !f.AcceptMismatch {
			return fmt.Errorf("%w; %s", err, MismatchHint)
		}
		f.log().Warn("content figures differ from the built-in ones; accepted (--accept-data-mismatch)", "error", err)
		status = "accepted mismatch: " + err.Error()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.sources {
		s := &f.sources[i]
		if s.Path != rel {
			continue
		}
		s.Figures = status
		if kf.SHA256 != "" && !s.Upstream {
			f.log().Warn("file is not upstream's byte for byte, but its content figures match", "path", path, "sha256", s.SHA256, "upstream", kf.SHA256)
		}
	}
	return nil
}

// lockEntry records one file; fields are in sorted key order.
type lockEntry struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	URL    string `json:"url"`
}

// lockData is the lock file's content.
type lockData struct {
	Files   map[string]lockEntry `json:"files"`
	Version int                  `json:"version"`
}

func (f *Fetcher) log() hclog.Logger {
	if f.Log == nil {
		return hclog.NewNullLogger()
	}
	return f.Log
}

// Get returns the local path of url's file, fetching it first when it is
// not in the data directory. The file's SHA-256 and size are recorded in
// the lock file on first fetch and checked on every later Get; a mismatch
// is an error and nothing is overwritten.
func (f *Fetcher) Get(ctx context.Context, url string) (string, error) {
	if f.DataDir == "" {
		return "", fmt.Errorf("fetching %s: no data directory set", url)
	}
	rel, ok := LocalPath(url)
	if !ok {
		return "", fmt.Errorf("fetching %s: not a known upstream location (known prefixes: %s)", url, knownPrefixes())
	}
	dest := filepath.Join(f.DataDir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return "", fmt.Errorf("fetching %s: %w", url, err)
	}
	unlock, err := lockDir(ctx, f.DataDir)
	if err != nil {
		return "", fmt.Errorf("fetching %s: %w", url, err)
	}
	defer unlock()
	removeParts(dest, f.log())
	lockPath := filepath.Join(f.DataDir, LockFile)
	lk, err := readLock(lockPath)
	if err != nil {
		return "", err
	}
	want, known := lk.Files[rel]
	if known && want.URL != url {
		return "", fmt.Errorf("fetching %s: lock file %s records %s for %s", url, lockPath, want.URL, rel)
	}
	if _, err := os.Stat(dest); err == nil {
		sum, size, err := hashFile(dest)
		if err != nil {
			return "", err
		}
		if known {
			if sum != want.SHA256 || size != want.Size {
				return "", fmt.Errorf("file %s does not match lock file %s: sha256 %s (%d bytes), locked %s (%d bytes); it changed after it was fetched: fetch it again with `spn data fetch --refresh NAME` (or delete the file)", dest, lockPath, sum, size, want.SHA256, want.Size)
			}
			f.record(url, rel, sum, size)
			return dest, nil
		}
		// A file nobody locked yet (copied in by hand, or left by an
		// older spn): lock it only if its content is well-formed.
		if err := checkContent(dest, rel); err == nil {
			lk.Files[rel] = lockEntry{SHA256: sum, Size: size, URL: url}
			f.record(url, rel, sum, size)
			return dest, writeLock(lockPath, lk)
		} else {
			f.log().Warn("refetching malformed file", "path", dest, "error", err)
			if err := os.Remove(dest); err != nil {
				return "", fmt.Errorf("fetching %s: removing malformed %s: %w", url, dest, err)
			}
		}
	}
	tmp, sum, size, err := f.download(ctx, url, rel, dest)
	if err != nil {
		return "", err
	}
	if known && (sum != want.SHA256 || size != want.Size) {
		os.Remove(tmp)
		return "", fmt.Errorf("fetched %s does not match lock file %s: sha256 %s (%d bytes), locked %s (%d bytes); nothing was written (if upstream really changed, accept it with `spn data fetch --refresh NAME`)", url, lockPath, sum, size, want.SHA256, want.Size)
	}
	// The lock records a file only once its content is well-formed, so a
	// truncated download is never locked in as the reference.
	if err := checkContent(tmp, rel); err != nil {
		os.Remove(tmp)
		if f.Mirror != "" {
			return "", fmt.Errorf("the mirror's file %s (for %s) is malformed: %v; nothing was written or locked: repair or replace that file in the mirror", filepath.Join(f.Mirror, filepath.FromSlash(rel)), url, err)
		}
		return "", fmt.Errorf("fetched %s is malformed (%v; truncated download?); nothing was written or locked, run again to retry", url, err)
	}
	if err := os.Rename(tmp, dest); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("fetching %s: %w", url, err)
	}
	if !known {
		lk.Files[rel] = lockEntry{SHA256: sum, Size: size, URL: url}
		if err := writeLock(lockPath, lk); err != nil {
			return "", err
		}
	}
	f.record(url, rel, sum, size)
	f.log().Info("fetched", "url", url, "path", dest, "bytes", size)
	return dest, nil
}

// removeParts removes the temporary files an interrupted download of dest
// left behind (".NAME.part*" next to it). The caller holds the data
// directory's lock, so no download of dest is under way.
func removeParts(dest string, log hclog.Logger) {
	parts, _ := filepath.Glob(filepath.Join(filepath.Dir(dest), "."+globEscape(filepath.Base(dest))+".part*"))
	for _, p := range parts {
		if err := os.Remove(p); err == nil {
			log.Info("removed the part file of an interrupted download", "path", p)
		}
	}
}

// globEscape quotes the pattern characters of name for filepath.Glob.
func globEscape(name string) string {
	var b strings.Builder
	for _, r := range name {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Forget removes url's file from the data directory and its entry from
// the lock file, so the next Get fetches and locks it afresh (spn data
// fetch --refresh).
func (f *Fetcher) Forget(ctx context.Context, url string) error {
	rel, ok := LocalPath(url)
	if !ok {
		return fmt.Errorf("refreshing %s: not a known upstream location", url)
	}
	if err := os.MkdirAll(f.DataDir, 0o755); err != nil {
		return fmt.Errorf("refreshing %s: %w", url, err)
	}
	unlock, err := lockDir(ctx, f.DataDir)
	if err != nil {
		return fmt.Errorf("refreshing %s: %w", url, err)
	}
	defer unlock()
	lockPath := filepath.Join(f.DataDir, LockFile)
	lk, err := readLock(lockPath)
	if err != nil {
		return err
	}
	dest := filepath.Join(f.DataDir, filepath.FromSlash(rel))
	if err := os.Remove(dest); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("refreshing %s: %w", url, err)
	}
	if _, ok := lk.Files[rel]; ok {
		delete(lk.Files, rel)
		return writeLock(lockPath, lk)
	}
	return nil
}

// checkContent checks that the file at p, fetched for rel, is
// well-formed for its type (by rel's extension), as
// far as the container format goes: a zip's central directory and every
// member's CRC, a gzip stream to its end (CRC included), JSON syntax.
// Other files are taken as they are; their readers parse them.
func checkContent(p, rel string) error {
	name := path.Base(rel)
	switch {
	case strings.HasSuffix(name, ".zip"):
		zr, err := zip.OpenReader(p)
		if err != nil {
			return fmt.Errorf("not a readable zip: %w", err)
		}
		defer zr.Close()
		for _, zf := range zr.File {
			rc, err := zf.Open()
			if err != nil {
				return fmt.Errorf("zip member %s: %w", zf.Name, err)
			}
			_, err = io.Copy(io.Discard, rc)
			rc.Close()
			if err != nil {
				return fmt.Errorf("zip member %s: %w", zf.Name, err)
			}
		}
	case strings.HasSuffix(name, ".gz"):
		fh, err := os.Open(p)
		if err != nil {
			return err
		}
		defer fh.Close()
		zr, err := gzip.NewReader(fh)
		if err != nil {
			return fmt.Errorf("not a readable gzip stream: %w", err)
		}
		if _, err := io.Copy(io.Discard, zr); err != nil {
			return fmt.Errorf("gzip stream: %w", err)
		}
	case strings.HasSuffix(name, ".json"):
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !json.Valid(b) {
			return errors.New("not valid JSON")
		}
	}
	return nil
}

func knownPrefixes() string {
	var p []string
	for _, m := range mirrorTable {
		p = append(p, m.prefix)
	}
	return strings.Join(p, ", ")
}

// download writes url's content to a temporary file next to dest and
// returns its name, SHA-256 and size.
func (f *Fetcher) download(ctx context.Context, url, rel, dest string) (tmpName, sum string, size int64, err error) {
	var src io.ReadCloser
	if f.Mirror != "" {
		mp := filepath.Join(f.Mirror, filepath.FromSlash(rel))
		src, err = os.Open(mp)
		if err != nil {
			return "", "", 0, fmt.Errorf("fetching %s from mirror: %w", url, err)
		}
		f.log().Debug("copying from mirror", "url", url, "path", mp)
	} else {
		src, err = f.httpGet(ctx, url)
		if err != nil {
			return "", "", 0, err
		}
	}
	defer src.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".part*")
	if err != nil {
		return "", "", 0, fmt.Errorf("fetching %s: %w", url, err)
	}
	h := sha256.New()
	size, err = io.Copy(io.MultiWriter(tmp, h), ctxReader{ctx, src})
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", "", 0, fmt.Errorf("fetching %s: %w", url, err)
	}
	return tmp.Name(), hex.EncodeToString(h.Sum(nil)), size, nil
}

func (f *Fetcher) httpGet(ctx context.Context, url string) (io.ReadCloser, error) {
	client := f.Client
	if client == nil {
		client = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   30 * time.Second,
			ResponseHeaderTimeout: 60 * time.Second,
		}}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", url, err)
	}
	f.log().Info("downloading", "url", url)
	resp, err := client.Do(req)
	if err != nil {
		var dnsErr *net.DNSError
		var opErr *net.OpError
		if errors.As(err, &dnsErr) || errors.As(err, &opErr) {
			return nil, fmt.Errorf("downloading %s: %w (offline? use --mirror or SPN_DATA_MIRROR to read a local mirror)", url, err)
		}
		return nil, fmt.Errorf("downloading %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("downloading %s: HTTP status %s", url, resp.Status)
	}
	return resp.Body, nil
}

// ctxReader stops reading once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// FileSHA256 returns the hex SHA-256 of the file at p.
func FileSHA256(p string) (string, error) {
	sum, _, err := hashFile(p)
	return sum, err
}

func hashFile(p string) (string, int64, error) {
	fh, err := os.Open(p)
	if err != nil {
		return "", 0, fmt.Errorf("hashing %s: %w", p, err)
	}
	defer fh.Close()
	h := sha256.New()
	n, err := io.Copy(h, fh)
	if err != nil {
		return "", 0, fmt.Errorf("hashing %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// readLock reads the lock file at p (parseLock); a missing file is an
// empty lock.
func readLock(p string) (*lockData, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return &lockData{Files: map[string]lockEntry{}, Version: 1}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading lock file: %w", err)
	}
	return parseLock(p, b)
}

// parseLock decodes b, the lock file called name: one JSON object of
// version 1 and nothing else, each entry's path a clean relative one, its
// sha256 the 64 lowercase hex digits spn writes, its size not negative
// and its URL given. A hand edit that breaks any of these is named with
// its place, not met later as a checksum that cannot match.
func parseLock(name string, b []byte) (*lockData, error) {
	lk := &lockData{}
	if err := jsonpos.Strict(name, b, lk); err != nil {
		return nil, fmt.Errorf("reading lock file: %w", err)
	}
	if lk.Version != 1 {
		return nil, fmt.Errorf("reading lock file: %s: unsupported version %d", name, lk.Version)
	}
	if lk.Files == nil {
		lk.Files = map[string]lockEntry{}
	}
	for _, rel := range slices.Sorted(maps.Keys(lk.Files)) {
		e := lk.Files[rel]
		var why string
		switch {
		case !cleanRel(rel):
			why = "is not a clean relative path"
		case !isSHA256(e.SHA256):
			why = fmt.Sprintf("has sha256 %q, want 64 lowercase hex digits", e.SHA256)
		case e.Size < 0:
			why = fmt.Sprintf("has size %d", e.Size)
		case e.URL == "":
			why = "has no url"
		default:
			continue
		}
		return nil, fmt.Errorf("reading lock file: %s: entry %q %s; correct it, or delete the entry and fetch the file again", name, rel, why)
	}
	return lk, nil
}

// isSHA256 reports whether s is a SHA-256 as hashFile writes it
// (hex.EncodeToString's lowercase digits).
func isSHA256(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == sha256.Size && hex.EncodeToString(b) == s
}

// writeLock writes the lock file atomically, keys sorted (encoding/json
// sorts map keys; struct fields are declared in sorted order).
func writeLock(p string, lk *lockData) error {
	b, err := json.MarshalIndent(lk, "", "  ")
	if err != nil {
		return fmt.Errorf("writing lock file %s: %w", p, err)
	}
	if err := atomicfile.WriteFile(p, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("lock file: %w", err)
	}
	return nil
}
