package findings

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spn-project/spn/schema"
)

// jsonFinding is a finding as the json format writes it.
type jsonFinding struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Col      int    `json:"col"`
	Path     string `json:"path"`
	Mode     string `json:"mode"`
	Message  string `json:"message"`
	Severity string `json:"severity"`
	Check    string `json:"check"`
}

func writeJSON(w io.Writer, fs []Finding) error {
	out := make([]jsonFinding, len(fs))
	for i, f := range fs {
		out[i] = jsonFinding{File: f.File, Line: f.Line, Col: f.Col, Path: f.Path, Mode: f.Mode(),
			Message: f.Message, Severity: f.Severity, Check: f.Check}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// GitHub writes "::error file=F,line=L,col=C,title=T::MESSAGE", with
// GitHub's escaping: % and line breaks in the message, and also : and ,
// in the properties.
func writeGitHub(w io.Writer, fs []Finding) error {
	for _, f := range fs {
		props := []string{"file=" + escapeProperty(f.File)}
		if f.Line > 0 {
			props = append(props, fmt.Sprintf("line=%d", f.Line), fmt.Sprintf("col=%d", f.Col))
		}
		title := "spn " + f.Check
		if len(f.Modes) > 0 {
			title += " (" + strings.Join(f.Modes, ", ") + ")"
		}
		props = append(props, "title="+escapeProperty(title))
		msg := f.Message
		if f.Path != "" {
			msg = f.Path + ": " + msg
		}
		if _, err := fmt.Fprintf(w, "::%s %s::%s\n", f.Severity, strings.Join(props, ","), escapeData(msg)); err != nil {
			return err
		}
	}
	return nil
}

// escapeData escapes a workflow command's message as the Actions runner
// unescapes it.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeProperty escapes a workflow command's property value.
func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// SARIF: https://docs.oasis-open.org/sarif/sarif/v2.1.0/ (errata 01).
const (
	sarifVersion = "2.1.0"
	sarifSchema  = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
	// ToolURI is where the SARIF log says spn comes from.
	ToolURI = "https://github.com/spn-project/spn"
)

// Rules are the SARIF rules, one per kind of check (schema.Checks and
// CheckIO), in this order; a rule's id is "spn/" and the check.
var rules = []struct{ check, name, text string }{
	{schema.CheckSyntax, "Syntax", "The spec file parses as CUE and declares package spn."},
	{schema.CheckSchema, "Schema", "The spec's values satisfy the spn schema: types, bounds, allowed fields, grids, dataset and protocol rules."},
	{schema.CheckModel, "ModelCheck", "Each model section satisfies its model kind's constraints for its dataset."},
	{schema.CheckTable, "TableReference", "Tables and figures refer to experiments, columns and rows that exist."},
	{schema.CheckLimits, "Limits", "The spec stays within spn's limits on its size, lists, strings, grid points and seeds."},
	{CheckIO, "Read", "The spec file can be read."},
}

// RuleID is the SARIF rule id of a check.
func RuleID(check string) string { return "spn/" + check }

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool       sarifTool     `json:"tool"`
	ColumnKind string        `json:"columnKind"`
	Results    []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID               string       `json:"id"`
	Name             string       `json:"name"`
	ShortDescription sarifMessage `json:"shortDescription"`
	DefaultConfig    sarifConfig  `json:"defaultConfiguration"`
}

type sarifConfig struct {
	Level string `json:"level"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID     string          `json:"ruleId"`
	RuleIndex  int             `json:"ruleIndex"`
	Level      string          `json:"level"`
	Message    sarifMessage    `json:"message"`
	Locations  []sarifLocation `json:"locations"`
	Properties sarifProps      `json:"properties"`
}

type sarifProps struct {
	Path  string   `json:"path,omitempty"`
	Modes []string `json:"modes,omitempty"`
}

type sarifLocation struct {
	Physical sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	Artifact sarifArtifact `json:"artifactLocation"`
	Region   *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn"`
}

func writeSARIF(w io.Writer, fs []Finding, toolVersion string) error {
	run := sarifRun{
		Tool:       sarifTool{Driver: sarifDriver{Name: "spn", Version: toolVersion, InformationURI: ToolURI}},
		ColumnKind: "utf16CodeUnits",
		Results:    []sarifResult{},
	}
	for _, r := range rules {
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRule{ID: RuleID(r.check), Name: r.name,
			ShortDescription: sarifMessage{r.text}, DefaultConfig: sarifConfig{"error"}})
	}
	for _, f := range fs {
		i := slices.IndexFunc(rules, func(r struct{ check, name, text string }) bool { return r.check == f.Check })
		if i < 0 {
			return fmt.Errorf("finding of unknown check %q", f.Check)
		}
		msg := f.Message
		if f.Path != "" {
			msg = f.Path + ": " + msg
		}
		if len(f.Modes) > 0 {
			msg += " (" + strings.Join(f.Modes, ", ") + ")"
		}
		loc := sarifLocation{sarifPhysical{Artifact: sarifArtifact{fileURI(f.File)}}}
		if f.Line > 0 {
			loc.Physical.Region = &sarifRegion{StartLine: f.Line, StartColumn: max(f.Col, 1)}
		}
		run.Results = append(run.Results, sarifResult{RuleID: RuleID(f.Check), RuleIndex: i, Level: f.Severity,
			Message: sarifMessage{msg}, Locations: []sarifLocation{loc}, Properties: sarifProps{Path: f.Path, Modes: f.Modes}})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sarifLog{Schema: sarifSchema, Version: sarifVersion, Runs: []sarifRun{run}})
}

// fileURI is a file's name as a URI reference: relative names stay
// relative (code scanning resolves them against the repository root),
// absolute ones become file: URIs; both are percent-encoded.
func fileURI(name string) string {
	p := filepath.ToSlash(name)
	if filepath.IsAbs(name) {
		if !strings.HasPrefix(p, "/") {
			p = "/" + p // C:/x on Windows
		}
		return (&url.URL{Scheme: "file", Path: p}).String()
	}
	return (&url.URL{Path: p}).String()
}
