package schema

import (
	"fmt"
	"strconv"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
)

// Limits on what a spec file may hold, checked on its syntax before CUE
// evaluates it: an evaluation of a huge value can take minutes or exhaust
// memory before it could report anything.
const (
	// MaxSpecBytes bounds the size of a spec file.
	MaxSpecBytes = 1 << 20
	// MaxListLen bounds the elements of a list written in a spec, and
	// the length of a list.Range/list.Repeat-style call's literal count.
	MaxListLen = 10000
	// MaxStringBytes bounds a string literal.
	MaxStringBytes = 64 << 10
	// MaxSeeds bounds the seeds of a spec or an experiment.
	MaxSeeds = 1000
)

// sizeErrors reports a source over MaxSpecBytes.
func (l *loader) sizeErrors(src []byte) Errors {
	if len(src) <= MaxSpecBytes {
		return nil
	}
	return Errors{{File: l.file, Line: 1, Col: 1, Check: CheckLimits, Msg: fmt.Sprintf("the spec is %d bytes; at most %d are allowed (a spec describes experiments, it does not hold data)", len(src), MaxSpecBytes)}}
}

// syntaxLimits reports list literals longer than MaxListLen, string
// literals longer than MaxStringBytes and calls of list.Range or
// strings.Repeat whose literal arguments ask for more than MaxListLen
// elements or MaxStringBytes bytes.
func (l *loader) syntaxLimits(f *ast.File) Errors {
	defer l.checking(CheckLimits)()
	var out Errors
	ast.Walk(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.ListLit:
			if len(x.Elts) > MaxListLen {
				out = append(out, l.at(x.Pos(), "", fmt.Sprintf("list of %d elements; at most %d are allowed", len(x.Elts), MaxListLen)))
				return false
			}
		case *ast.BasicLit:
			if x.Kind == token.STRING && len(x.Value) > MaxStringBytes {
				out = append(out, l.at(x.Pos(), "", fmt.Sprintf("string of %d bytes; at most %d are allowed", len(x.Value), MaxStringBytes)))
			}
		case *ast.CallExpr:
			if msg := callLimit(x); msg != "" {
				out = append(out, l.at(x.Pos(), "", msg))
			}
		}
		return true
	}, nil)
	return out
}

// callLimit checks list.Range(start, stop, step), list.Repeat(x, n) and
// strings.Repeat(s, n) with literal numbers.
func callLimit(c *ast.CallExpr) string {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok {
		return ""
	}
	label, _, err := ast.LabelName(sel.Sel)
	if err != nil {
		return ""
	}
	name := pkg.Name + "." + label
	num := func(i int) (float64, bool) {
		if i >= len(c.Args) {
			return 0, false
		}
		e := c.Args[i]
		neg := false
		if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.SUB {
			e, neg = u.X, true
		}
		b, ok := e.(*ast.BasicLit)
		if !ok || (b.Kind != token.INT && b.Kind != token.FLOAT) {
			return 0, false
		}
		v, err := strconv.ParseFloat(b.Value, 64)
		if err != nil {
			return 0, false
		}
		if neg {
			v = -v
		}
		return v, true
	}
	switch name {
	case "list.Range":
		start, ok1 := num(0)
		stop, ok2 := num(1)
		step, ok3 := num(2)
		if ok1 && ok2 && ok3 && step != 0 && (stop-start)/step > MaxListLen {
			return fmt.Sprintf("list.Range of %.0f elements; at most %d are allowed", (stop-start)/step, MaxListLen)
		}
	case "list.Repeat":
		if n, ok := num(1); ok && n > MaxListLen {
			return fmt.Sprintf("list.Repeat of %.0f elements; at most %d are allowed", n, MaxListLen)
		}
	case "strings.Repeat":
		if n, ok := num(1); ok && n > MaxStringBytes {
			return fmt.Sprintf("strings.Repeat %.0f times; at most %d are allowed", n, MaxStringBytes)
		}
	}
	return ""
}
