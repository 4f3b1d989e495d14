package findings

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spn-project/spn/schema"
)

// unescapeData undoes escapeData as the Actions runner does.
func unescapeData(s string) string {
	return strings.NewReplacer("%0D", "\r", "%0A", "\n", "%3A", ":", "%2C", ",", "%25", "%").Replace(s)
}

// Whatever a file name and message hold, the github format writes one
// line per finding whose message unescapes to the original, and the json
// and sarif formats write JSON that reads back the message.
func FuzzWrite(f *testing.F) {
	f.Add("pipelines/a.cue", "experiments.e.model.k", "100% bad\r\nnext: a, b", 3, 7)
	f.Add("a,b:c.cue", "", "::error::x", 0, 0)
	f.Add("/abs/dir with space/x.cue", "p", "%0A%25", 1, 1)
	f.Fuzz(func(t *testing.T, file, path, msg string, line, col int) {
		fd := Finding{File: file, Line: max(line, 0), Col: max(col, 0), Path: path, Message: msg,
			Severity: SeverityError, Check: schema.CheckSchema, Modes: []string{"full", "smoke"}}
		var b bytes.Buffer
		if err := Write(&b, []Finding{fd}, Options{Format: "github"}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") || strings.Contains(strings.TrimSuffix(out, "\n"), "\r") {
			t.Fatalf("github: not one line: %q", out)
		}
		_, data, ok := strings.Cut(strings.TrimSuffix(out, "\n"), "::"+SeverityError+" ")
		if !ok {
			t.Fatalf("github: %q", out)
		}
		i := strings.Index(data, "::")
		props, text := data[:i], data[i+2:]
		want := msg
		if path != "" {
			want = path + ": " + msg
		}
		if got := unescapeData(text); got != want {
			t.Errorf("github message %q unescapes to %q, want %q", text, got, want)
		}
		if strings.Count(props, "::") > 0 || !strings.HasPrefix(props, "file="+escapeProperty(file)) {
			t.Errorf("github properties %q", props)
		}
		for _, format := range []string{"json", "sarif"} {
			b.Reset()
			if err := Write(&b, []Finding{fd}, Options{Format: format}); err != nil {
				t.Fatal(err)
			}
			if !json.Valid(b.Bytes()) {
				t.Fatalf("%s: invalid JSON:\n%s", format, b.String())
			}
			if !strings.Contains(b.String(), strings.Trim(string(mustJSON(t, msg)), `"`)) {
				t.Errorf("%s: message %q lost:\n%s", format, msg, b.String())
			}
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
