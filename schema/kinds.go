package schema

import (
	"sort"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

// ModelKinds returns the model kinds the schema defines (the fields of
// its #ModelKinds), sorted. The Go registry of model kinds must build
// exactly these (tested).
func ModelKinds() []string {
	v := cuecontext.New().CompileBytes(schemaSource, cue.Filename(SchemaFile)).LookupPath(cue.ParsePath("#ModelKinds"))
	kinds := fieldNames(v)
	sort.Strings(kinds)
	return kinds
}
