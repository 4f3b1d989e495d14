package findings

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/spn-project/spn/internal/testkit/golden"
	"github.com/spn-project/spn/schema"
)

// ginK is a model checker with one rule of the real registry's (models):
// GIN is SPN with k = 1.
type ginK struct{}

func (ginK) CheckModel(m schema.Model, _ schema.DatasetInfo) []schema.FieldError {
	if m.Kind == "gin" && m.K != 1 {
		return []schema.FieldError{{Field: "k", Msg: fmt.Sprintf("gin requires k == 1 (GIN is SPN with k = 1), got k = %d", m.K)}}
	}
	return nil
}

// sample is what spn vet --all-modes finds in testdata: schema faults
// in every mode and in smoke only, a model check, a table reference, a
// limit, a syntax error and a file that cannot be read.
func sample(t *testing.T) []Finding {
	t.Helper()
	var fs []Finding
	for _, f := range []string{"testdata/faults.cue", "testdata/refs.cue", "testdata/syntax.cue", "testdata/absent.cue"} {
		_, err := schema.LoadAllModes(f, schema.Options{Models: ginK{}})
		if err == nil {
			t.Fatalf("%s: no error", f)
		}
		fs = append(fs, FromError(f, err)...)
	}
	return Merge(fs)
}

// Every format is golden-tested on the same findings.
func TestFormatsGolden(t *testing.T) {
	fs := sample(t)
	checks := map[string]bool{}
	for _, f := range fs {
		checks[f.Check] = true
	}
	for _, c := range append(slices.Clone(schema.Checks), CheckIO) {
		if !checks[c] {
			t.Errorf("the sample has no finding of check %q", c)
		}
	}
	for _, format := range Formats {
		var b bytes.Buffer
		if err := Write(&b, fs, Options{Format: format, ShowModes: true, ToolVersion: "test"}); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "testdata/findings."+format+".golden", b.Bytes())
	}
}

// A fault of every mode is one finding listing the modes; a fault of one
// mode names it; a syntax error names none.
func TestMergeModes(t *testing.T) {
	got := map[string]string{}
	for _, f := range sample(t) {
		got[f.Path+" "+f.Check] = f.Mode()
	}
	for k, want := range map[string]string{
		"experiments.e.training.epochz schema": "full,smoke",
		"experiments.e.model.pool schema":      "smoke",
		"experiments.e.model.k model-check":    "full,smoke",
		" syntax":                              "",
	} {
		if m, ok := got[k]; !ok || m != want {
			t.Errorf("%q: modes %q (found %v), want %q", k, m, ok, want)
		}
	}
}

// The SARIF log validates against the SARIF 2.1.0 schema (OASIS, errata
// 01, testdata/sarif-schema-2.1.0.json), with findings and without.
func TestSARIFValidates(t *testing.T) {
	c := jsonschema.NewCompiler()
	f, err := os.Open("testdata/sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("sarif-schema-2.1.0.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, fs := range map[string][]Finding{"findings": sample(t), "none": nil} {
		var b bytes.Buffer
		if err := Write(&b, fs, Options{Format: "sarif", ToolVersion: "test"}); err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(&b)
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s: SARIF log does not validate: %v", name, err)
		}
	}
	// The validator is not vacuous: a result without a message fails.
	bad := map[string]any{"version": "2.1.0", "runs": []any{map[string]any{
		"tool": map[string]any{"driver": map[string]any{"name": "spn"}}, "results": []any{map[string]any{"ruleId": "x"}}}}}
	if err := sch.Validate(bad); err == nil {
		t.Error("a result without a message validates")
	}
}

// pos is a finding's place, as every format must give it.
type pos struct {
	file      string
	line, col int
}

// Every format gives every finding at the same file, line and column.
func TestPositionsAgree(t *testing.T) {
	fs := sample(t)
	var want []pos
	for _, f := range fs {
		want = append(want, pos{f.File, f.Line, f.Col})
	}
	out := func(format string) []byte {
		var b bytes.Buffer
		if err := Write(&b, fs, Options{Format: format}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	got := map[string][]pos{}
	var js []jsonFinding
	if err := json.Unmarshal(out("json"), &js); err != nil {
		t.Fatal(err)
	}
	for _, f := range js {
		got["json"] = append(got["json"], pos{f.File, f.Line, f.Col})
	}
	var log struct {
		Runs []struct {
			Results []struct {
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }
						Region           struct{ StartLine, StartColumn int }
					}
				}
			}
		}
	}
	if err := json.Unmarshal(out("sarif"), &log); err != nil {
		t.Fatal(err)
	}
	for _, r := range log.Runs[0].Results {
		p := r.Locations[0].PhysicalLocation
		got["sarif"] = append(got["sarif"], pos{p.ArtifactLocation.URI, p.Region.StartLine, p.Region.StartColumn})
	}
	gh := regexp.MustCompile(`^::error file=([^,:]*)(?:,line=(\d+),col=(\d+))?,title=[^:]*::`)
	text := regexp.MustCompile(`^([^:]*)(?::(\d+):(\d+))?: `)
	for format, re := range map[string]*regexp.Regexp{"github": gh, "text": text} {
		sc := bufio.NewScanner(bytes.NewReader(out(format)))
		for sc.Scan() {
			m := re.FindStringSubmatch(sc.Text())
			if m == nil {
				t.Fatalf("%s: line %q has no position", format, sc.Text())
			}
			l, _ := strconv.Atoi(m[2])
			c, _ := strconv.Atoi(m[3])
			got[format] = append(got[format], pos{m[1], l, c})
		}
	}
	for _, format := range Formats {
		if !slices.Equal(got[format], want) {
			t.Errorf("%s positions %v, want %v", format, got[format], want)
		}
	}
}

// GitHub's workflow commands escape %, CR and LF in the message, and also
// : and , in the properties (file names).
func TestGitHubEscaping(t *testing.T) {
	f := Finding{File: "a,b:c%.cue", Line: 2, Col: 3, Path: "x", Message: "100% bad\r\nsecond line: a, b",
		Severity: SeverityError, Check: schema.CheckSchema, Modes: []string{"full", "smoke"}}
	var b bytes.Buffer
	if err := Write(&b, []Finding{f}, Options{Format: "github"}); err != nil {
		t.Fatal(err)
	}
	want := "::error file=a%2Cb%3Ac%25.cue,line=2,col=3,title=spn schema (full%2C smoke)::x: 100%25 bad%0D%0Asecond line: a, b\n"
	if b.String() != want {
		t.Errorf("got  %q\nwant %q", b.String(), want)
	}
}

// An unknown format is an error naming the known ones.
func TestCheckFormat(t *testing.T) {
	if err := CheckFormat("xml"); err == nil || !strings.Contains(err.Error(), "text, json, github, sarif") {
		t.Errorf("CheckFormat(xml) = %v", err)
	}
	if err := CheckFormat("sarif"); err != nil {
		t.Error(err)
	}
}
