package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spn-project/spn/internal/testkit/golden"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/report"
)

// smokeQuickstart is one run of the quickstart in smoke mode (3 epochs),
// shared by the report tests: its cache and its results directory.
var smokeQuickstart struct {
	once     sync.Once
	dir, err string
}

// quickstartReport runs the quickstart in smoke mode once per test binary
// and returns the temporary directory holding cache/ and out/ (the
// tables and report.html that spn run wrote).
func quickstartReport(t *testing.T) string {
	t.Helper()
	s := &smokeQuickstart
	s.once.Do(func() {
		dir, err := os.MkdirTemp("", "spn-report-")
		if err != nil {
			s.err = err.Error()
			return
		}
		s.dir = dir
		var out, errb bytes.Buffer
		a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
		if code := a.main([]string{"run", "--mode", "smoke", "--cache", filepath.Join(dir, "cache"), "--out", filepath.Join(dir, "out"), "--log-level", "warn"}); code != 0 {
			s.err = fmt.Sprintf("spn run --mode smoke: exit %d\n%s", code, errb.String())
		}
	})
	if s.err != "" {
		t.Fatal(s.err)
	}
	return s.dir
}

// outline lists the page's elements that carry an id, one per line as
// tag#id.class, in document order: the report's structure without its
// numbers and plots.
func outline(page []byte) []byte {
	re := regexp.MustCompile(`<([a-z0-9]+)\b([^>]*)>`)
	idRe := regexp.MustCompile(`\bid="([^"]*)"`)
	classRe := regexp.MustCompile(`\bclass="([^"]*)"`)
	var b bytes.Buffer
	for _, m := range re.FindAllSubmatch(page, -1) {
		id := idRe.FindSubmatch(m[2])
		if id == nil {
			continue
		}
		b.WriteString(string(m[1]) + "#" + string(id[1]))
		if c := classRe.FindSubmatch(m[2]); c != nil {
			b.WriteString("." + strings.ReplaceAll(string(c[1]), " ", "."))
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func TestReportQuickstart(t *testing.T) {
	dir := quickstartReport(t)
	page, err := os.ReadFile(filepath.Join(dir, "out", report.FileName))
	if err != nil {
		t.Fatalf("spn run wrote no report: %v", err)
	}
	golden.Check(t, "testdata/report_outline.golden", outline(page))
	for _, want := range []string{`id="table-results"`, `id="curves-gin"`, `id="curves-spn_k5"`, `id="hops-spn_k5"`, "<svg", `class="stage-summary"`} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("report lacks %s", want)
		}
	}
	// GIN (k = 1) has one hop weight per layer: nothing to draw.
	if bytes.Contains(page, []byte(`id="hops-gin"`)) {
		t.Error("report draws hop weights for GIN (k = 1)")
	}
	for _, bad := range []string{"http", "<script", "@font-face", "@import"} {
		if bytes.Contains(page, []byte(bad)) {
			t.Errorf("report holds %q: it must not reach the network", bad)
		}
	}
	// spn report on the same cache writes the same bytes.
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	again := filepath.Join(t.TempDir(), "again")
	if code := a.main([]string{"report", "--mode", "smoke", "--cache", filepath.Join(dir, "cache"), "--out", again}); code != 0 {
		t.Fatalf("spn report: exit %d\n%s", code, errb.String())
	}
	page2, err := os.ReadFile(filepath.Join(again, report.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(page, page2) {
		t.Error("spn report on the same cache wrote other bytes than spn run")
	}
}

// TestReportMissingAndFailed writes the quickstart's report from an empty
// cache (every stage missing) and with one train stage's failure
// recorded: nothing trains, the page says what is missing and shows the
// failure's error.
func TestReportMissingAndFailed(t *testing.T) {
	dir := t.TempDir()
	c, err := cache.Open(filepath.Join(dir, "cache"))
	if err != nil {
		t.Fatal(err)
	}
	qa := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }}
	_, p, _, err := qa.buildPlan(realEngine(), "report", "", &envOpts{mode: "smoke"})
	if err != nil {
		t.Fatal(err)
	}
	key := ""
	for _, n := range p.Nodes {
		if n.Kind == "train" && strings.Contains(n.Name, "gin") {
			key = n.Key
			break
		}
	}
	if err := c.RecordFailure(cache.Failure{Key: key, Kind: "train", Name: "train x", Error: "out of <memory> & more"}); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	if code := a.main([]string{"report", "--mode", "smoke", "--cache", c.Root, "--out", filepath.Join(dir, "out")}); code != 0 {
		t.Fatalf("spn report: exit %d\n%s", code, errb.String())
	}
	page, err := os.ReadFile(filepath.Join(dir, "out", report.FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`class="missing">table results: missing`, `class="failed"`, "out of &lt;memory&gt; &amp; more", `id="curves-gin"`} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("report lacks %s", want)
		}
	}
	if st, err := os.ReadDir(filepath.Join(c.Root, "train")); err == nil && len(st) > 0 {
		t.Error("spn report trained")
	}
}

// TestReportChromium renders the quickstart's report in headless Chromium:
// the DOM holds the table, one curve plot per experiment and SPN's
// hop-weight plot, no http reference, and the screenshot is not blank.
func TestReportChromium(t *testing.T) {
	bin := chromium(t)
	dir := quickstartReport(t)
	page := filepath.Join(dir, "out", report.FileName)
	tmp := t.TempDir()
	args := func(extra ...string) []string {
		return append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--user-data-dir=" + filepath.Join(tmp, "profile")}, append(extra, "file://"+page)...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args("--dump-dom")...)
	cmd.Stderr = &errb
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, errb.String())
	}
	for _, want := range []string{`<table class="spn-table" id="table-results">`, `id="hops-spn_k5"`} {
		if !bytes.Contains(dom, []byte(want)) {
			t.Errorf("rendered DOM lacks %s", want)
		}
	}
	curves := regexp.MustCompile(`<div class="curves" id="curves-([^"]+)">\s*<h4>[^<]*</h4>\s*<svg`).FindAllSubmatch(dom, -1)
	var names []string
	for _, m := range curves {
		names = append(names, string(m[1]))
	}
	if strings.Join(names, ",") != "spn_k5,gin" && strings.Join(names, ",") != "gin,spn_k5" {
		t.Errorf("curve plots in the rendered DOM: %v, want one each for spn_k5 and gin", names)
	}
	if !regexp.MustCompile(`id="hops-spn_k5">\s*<h4>[^<]*</h4>\s*<svg`).Match(dom) {
		t.Error("the hop-weight plot of spn_k5 is not an svg in the rendered DOM")
	}
	if bytes.Contains(dom, []byte("http")) {
		t.Error("rendered DOM holds an http reference")
	}
	shot := filepath.Join(tmp, "shot.png")
	errb.Reset()
	cmd = exec.CommandContext(ctx, bin, args("--hide-scrollbars", "--window-size=1200,1600", "--screenshot="+shot)...)
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, errb.String())
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, errb.String())
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	colours, ink := inkOf(img)
	total := img.Bounds().Dx() * img.Bounds().Dy()
	if colours < 50 || ink < total/50 {
		t.Errorf("screenshot looks blank: %d distinct colours, %d of %d pixels not white", colours, ink, total)
	}
}

// inkOf counts the distinct colours of img and its pixels that are not white.
func inkOf(img image.Image) (colours, ink int) {
	seen := map[[3]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
			if r>>8 < 0xf0 || g>>8 < 0xf0 || bl>>8 < 0xf0 {
				ink++
			}
		}
	}
	return len(seen), ink
}

// chromium returns Debian's chromium binary, or skips the test (fails
// under CI=true, where .ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not on PATH (CI installs Debian's chromium package)")
	}
	t.Skip("chromium is not on PATH (apt-get install chromium): the report is not rendered in a browser")
	return ""
}
