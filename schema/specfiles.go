package schema

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// SpecFiles expands spec arguments (spn vet, spn cache gc): files stay
// as given, a directory becomes every *.cue file below it in lexical
// order (cue.mod skipped); a directory without one is an error.
func SpecFiles(targets []string) ([]string, error) {
	var files []string
	for _, t := range targets {
		info, err := os.Stat(t)
		if err != nil {
			return nil, fmt.Errorf("reading spec: %w", err)
		}
		if !info.IsDir() {
			files = append(files, t)
			continue
		}
		n := len(files)
		err = filepath.WalkDir(t, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return fmt.Errorf("walking %s: %w", path, err)
			}
			if d.IsDir() && d.Name() == "cue.mod" {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), ".cue") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(files) == n {
			return nil, fmt.Errorf("no .cue files under %s", t)
		}
	}
	return files, nil
}
