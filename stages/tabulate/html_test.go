package tabulate

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/spn-project/spn/internal/testkit/golden"
)

// TestWriteHTMLGolden renders the results and compare tables as HTML (the
// report's tables): best cells bold, cited markers and notes, text escaped.
func TestWriteHTMLGolden(t *testing.T) {
	dir := t.TempDir()
	rt := resultsTable()
	rt.Title = `Results <"&">`
	files, err := Render(rt, results())
	if err != nil {
		t.Fatal(err)
	}
	cmp, err := Render(compareTable(), results())
	if err != nil {
		t.Fatal(err)
	}
	for n, b := range cmp {
		files[n] = b
	}
	if err := WriteFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteHTML(&out, dir); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/tables.html.golden", out.Bytes())
	if !bytes.Contains(out.Bytes(), []byte(`<caption>Results &lt;&#34;&amp;&#34;&gt;</caption>`)) {
		t.Error("title not escaped")
	}
	if !bytes.Contains(out.Bytes(), []byte(`class="best"><strong>`)) {
		t.Error("no best cell marked")
	}
}

// htmlTags are the tags WriteHTML writes; anything else in its output
// came from a table's text unescaped.
var htmlTags = regexp.MustCompile(`</?(table|caption|thead|tbody|tr|th|td|strong|p|br)( class="[a-z-]+"| id="[^"<>]*"| class="[a-z-]+" id="[^"<>]*")*>`)

func FuzzWriteHTML(f *testing.F) {
	f.Add([]byte(`{"spn_table": 1, "name": "t<script>", "style": "results", "header": ["", "<b>A</b>"], "rows": [{"line": true, "cells": [{"text": "r&"}, {"text": "1.0 ± 0.1", "best": true}]}], "notes": ["† <i>cited</i>"], "caption": "\"c\""}`))
	f.Add([]byte(`{"spn_table": 1, "name": "t", "style": "compare", "header": [], "rows": [], "best": "row"}`))
	f.Add([]byte(`{"spn_table": 1, "rows": [{"cells": [`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "t.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := WriteHTML(&out, dir); err != nil {
			return
		}
		if out.Len() == 0 {
			t.Fatal("no error and no output")
		}
		if rest := htmlTags.ReplaceAll(out.Bytes(), nil); bytes.ContainsAny(rest, "<>") {
			t.Fatalf("unescaped markup in\n%s", out.Bytes())
		}
	})
}
