// Package pipelines holds the experiment specs shipped with spn, embedded
// in the binary: the quickstart that `spn run` runs without arguments, the
// paper's pipelines (paper/) and specs that go beyond the paper
// (extensions/).
package pipelines

import (
	"embed"
	"io/fs"
)

// QuickstartName is the path of the quickstart spec inside the repository,
// used as its file name in error positions.
const QuickstartName = "pipelines/quickstart.cue"

// Quickstart is the source of pipelines/quickstart.cue.
//
//go:embed quickstart.cue
var Quickstart []byte

//go:embed *.cue paper/*.cue extensions/*.cue
var specs embed.FS

// FS returns a read-only file system of every embedded spec (*.cue at the
// top of pipelines/), with paths relative to pipelines/.
func FS() fs.FS { return specs }
