// Package units formats quantities for people: messages and reports.
package units

import "fmt"

// Bytes formats b bytes in the largest binary unit (KiB, MiB, GiB) that
// b reaches, with one decimal: "1.5 MiB"; below 1 KiB, in bytes: "12 B".
func Bytes(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
