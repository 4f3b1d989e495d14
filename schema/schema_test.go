package schema

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

// TestSchemaMatchesGoTypes keeps schema.cue and spec.go in step: every
// definition declares exactly the fields its Go type decodes (by JSON
// name), so no schema field is silently dropped and no Go field is left
// without a schema default or check.
func TestSchemaMatchesGoTypes(t *testing.T) {
	v := cuecontext.New().CompileBytes(schemaSource)
	if err := v.Err(); err != nil {
		t.Fatalf("schema does not compile: %v", err)
	}
	tests := []struct {
		def  string
		typ  any
		skip []string // Go fields filled by the loader, not the schema
	}{
		{"#Dataset", Dataset{}, []string{"file", "sha256"}},
		{"#ModelKinds", Model{}, nil}, // the union of the model kinds' fields
		{"#Training", Training{}, nil},
		{"#Protocol", Protocol{}, nil},
		{"#Table", Table{}, []string{"name"}},
		{"#Column", Column{}, nil},
		{"#Row", Row{}, nil},
		{"#Cell", Cell{}, nil},
		{"#Figure", Figure{}, []string{"name"}},
		{"#Experiment", Experiment{}, []string{"name", "points", "grid", "model", "training"}}, // model and training become Points
	}
	for _, tt := range tests {
		t.Run(tt.def, func(t *testing.T) {
			it, err := v.LookupPath(cue.ParsePath(tt.def)).Fields(cue.Optional(true))
			if err != nil {
				t.Fatal(err)
			}
			var cueFields []string
			for it.Next() {
				if tt.def != "#ModelKinds" {
					cueFields = append(cueFields, it.Selector().Unquoted())
					continue
				}
				for _, f := range fieldNames(it.Value()) {
					if !slices.Contains(cueFields, f) {
						cueFields = append(cueFields, f)
					}
				}
			}
			var goFields []string
			rt := reflect.TypeOf(tt.typ)
			for i := range rt.NumField() {
				name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
				if name != "" && name != "-" {
					goFields = append(goFields, name)
				}
			}
			cueFields = slices.DeleteFunc(cueFields, func(s string) bool { return slices.Contains(tt.skip, s) })
			goFields = slices.DeleteFunc(goFields, func(s string) bool { return slices.Contains(tt.skip, s) })
			slices.Sort(cueFields)
			slices.Sort(goFields)
			if !slices.Equal(cueFields, goFields) {
				t.Errorf("%s fields %v, Go type %T fields %v", tt.def, cueFields, tt.typ, goFields)
			}
		})
	}
}

// TestSourceIsACopy checks that callers cannot change the embedded schema.
func TestSourceIsACopy(t *testing.T) {
	a := Source()
	a[0] ^= 0xff
	if Source()[0] == a[0] {
		t.Error("Source returned the embedded bytes themselves")
	}
}
