package catalog

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/graphfile"
	"github.com/spn-project/spn/data/jsonl"
	"github.com/spn-project/spn/data/known"
)

// CheckImportName reports whether name may name an imported dataset:
// letters, digits, '_', '.' and '-', starting with a letter or digit
// (graphfile.ValidName), and not a built-in dataset's name in any case
// (Builtin), unless spn knows the content it stands for (known.Imported:
// peptides-func). Its errors begin "name NAME: ".
func CheckImportName(name string) error {
	if !graphfile.ValidName.MatchString(name) {
		return fmt.Errorf("name %q: want letters, digits, '_', '.', '-', starting with a letter or digit", name)
	}
	if _, knownSet := known.Imported(name); !knownSet {
		if b := Builtin(name); b != "" {
			return fmt.Errorf("name %q: %q is a built-in dataset name, which spn reads or generates itself; choose another name", name, b)
		}
	}
	return nil
}

// Builtin returns the built-in dataset name that name is (in any case),
// or "": the names spn reads from upstream files (Fetchable) or
// generates (prox), which an imported dataset must not shadow.
func Builtin(name string) string {
	for _, b := range append(Fetchable(), "prox") {
		if strings.EqualFold(name, b) {
			return b
		}
	}
	return ""
}

// ImportError is a file that Import cannot read or that does not
// validate: the user's to fix. Its message is Err's.
type ImportError struct{ Err error }

func (e *ImportError) Error() string { return e.Err.Error() }
func (e *ImportError) Unwrap() error { return e.Err }

// ImportOptions say where Import stores a dataset and what it does when
// the file is not the dataset its name stands for.
type ImportOptions struct {
	// DataDir is the data dir; the dataset goes to
	// graphfile.ImportedPath(DataDir, name).
	DataDir string
	// AcceptMismatch: a file whose content differs from the built-in
	// figures of its name (known.Imported) is imported, the difference
	// passed to Warn; else it is refused with the *known.MismatchError.
	AcceptMismatch bool
	Warn           func(error)
}

// Import reads the JSON Lines dataset file (jsonl.Read, gzipped or not),
// checks it against the built-in figures when spn knows the content name
// stands for, and stores it in the data dir as the dataset name (name
// checked by CheckImportName first). It returns the dataset and where it
// went. A file that cannot be opened or does not validate is an
// *ImportError.
func Import(file, name string, o ImportOptions) (*data.Dataset, string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, "", &ImportError{err}
	}
	defer f.Close()
	ds, err := jsonl.Read(f, file)
	if err != nil {
		return nil, "", &ImportError{err}
	}
	if kf, ok := known.Imported(name); ok {
		// A name spn knows stands for known content: the file must have
		// its built-in figures.
		if err := known.Compare(file, kf.Rel, kf.Figures, known.Of(ds)); err != nil {
			if !o.AcceptMismatch {
				return nil, "", err
			}
			if o.Warn != nil {
				o.Warn(err)
			}
		}
	}
	ds.Name = name
	if err := os.MkdirAll(filepath.Join(o.DataDir, graphfile.ImportedDir), 0o755); err != nil {
		return nil, "", err
	}
	dest := graphfile.ImportedPath(o.DataDir, name)
	if err := data.WriteDatasetFile(dest, ds); err != nil {
		return nil, "", err
	}
	return ds, dest, nil
}
