package schema

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
)

// conflictRE matches CUE's "conflicting values A and B" message, with the
// optional type explanation.
var conflictRE = regexp.MustCompile(`^conflicting values (.+?) and (.+?)(?: \(mismatched types (\w+) and (\w+)\))?$`)

// disjunctionRE matches the header CUE puts before the errors of the
// disjuncts of a failed disjunction.
var disjunctionRE = regexp.MustCompile(`^\d+ errors in empty disjunction:?$`)

// rawError is one CUE error resolved to the user's file.
type rawError struct {
	segs []string // plain path segments
	path string   // display path
	msg  string
	pos  token.Pos // position in the user's file (may be NoPos)
	// own are all the positions CUE gives in the user's file.
	own []token.Pos
}

// convertCUE turns a CUE error into positioned spec errors. Disjunction
// failures over literal values become one "X is not one of ..." error.
func (l *loader) convertCUE(err error) Errors {
	if err == nil {
		return nil
	}
	var raws []rawError
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		msg := strings.Join(strings.Fields(fmt.Sprintf(format, args...)), " ")
		r := rawError{segs: unquoteSegs(e.Path()), path: strings.Join(e.Path(), "."), msg: msg}
		for _, p := range slices.Concat(e.InputPositions(), []token.Pos{e.Position()}) {
			if !p.IsValid() {
				continue
			}
			if p.Filename() != l.file {
				continue
			}
			if !r.pos.IsValid() {
				r.pos = p
			}
			r.own = append(r.own, p)
		}
		raws = append(raws, r)
	}

	// Group by path, keeping the order of first appearance.
	var order []string
	groups := map[string][]rawError{}
	for _, r := range raws {
		if _, ok := groups[r.path]; !ok {
			order = append(order, r.path)
		}
		groups[r.path] = append(groups[r.path], r)
	}
	var out Errors
	for _, p := range order {
		if listLengthNoise(p, groups) {
			continue
		}
		overridden := false
		for _, r := range l.summarize(groups[p]) {
			if l.mode != "" && r.path == "mode" && conflictRE.MatchString(r.msg) {
				// One conflict per other schema alternative: report once.
				if overridden {
					continue
				}
				overridden = true
				r.msg = fmt.Sprintf("the spec fixes mode, so it cannot be overridden with mode %q", l.mode)
			}
			out = append(out, l.positioned(r))
		}
	}
	return out
}

// summarize reduces the errors of one path. A failed disjunction whose
// schema alternatives are all literals (an enum) becomes one error naming
// them; otherwise the conflicts with the schema's default value are dropped
// in favour of the errors that explain the constraint (type or bound).
func (l *loader) summarize(rs []rawError) []rawError {
	var subs []rawError
	disj := false
	for _, r := range rs {
		if disjunctionRE.MatchString(r.msg) {
			disj = true
			continue
		}
		subs = append(subs, r)
	}
	for i := range subs {
		subs[i].msg = rewrite(subs[i])
	}
	// Two values the file itself writes conflict (a mode's branch sets
	// what the spec sets elsewhere): that is the error, whatever the
	// schema allows.
	for _, s := range subs {
		if msg := l.ownConflict(s); msg != "" {
			s.msg = msg
			return []rawError{s}
		}
	}
	if !disj || len(subs) == 0 {
		if disj && len(rs) > 0 {
			return rs[:1]
		}
		return l.dropForeignConflicts(dropDefaultConflicts(subs))
	}

	// Find the user's value: the side common to all conflicts.
	type conflict struct{ a, b string }
	parsed := make([]*conflict, len(subs))
	count := map[string]int{}
	nparsed := 0
	for i, s := range subs {
		if m := conflictRE.FindStringSubmatch(s.msg); m != nil {
			nparsed++
			parsed[i] = &conflict{m[1], m[2]}
			count[m[1]]++
			if m[2] != m[1] {
				count[m[2]]++
			}
		}
	}
	user := ""
	if nparsed == len(subs) && nparsed > 1 {
		for v, n := range count {
			if n == nparsed && (user == "" || v < user) {
				user = v
			}
		}
	}
	info := l.schemaInfo(subs[0].segs)
	if user != "" {
		var alts []string
		for _, c := range parsed {
			o := c.a
			if o == user {
				o = c.b
			}
			if !isLiteral(o) {
				alts = nil
				break
			}
			alts = append(alts, o)
		}
		if len(info.enum) > 0 {
			alts = info.enum // in declared order
		} else {
			slices.Sort(alts)
			alts = slices.Compact(alts)
		}
		if len(alts) > 0 && !slices.Contains(alts, user) {
			r := subs[0]
			r.msg = fmt.Sprintf("%s is not one of %s", user, strings.Join(alts, ", "))
			return []rawError{r}
		}
	}
	// Drop the conflicts with the schema's default: they only say that
	// the default was not taken.
	var keep []rawError
	for i, s := range subs {
		if c := parsed[i]; c != nil && info.hasDef && (c.a == info.def || c.b == info.def) {
			continue
		}
		keep = append(keep, s)
	}
	if len(keep) == 0 {
		keep = subs
	}
	// A conflict between two literals next to an error that explains the
	// constraint (a bound, a type) is the untaken default of a
	// conditional field (graphs: *9000 | _ under kind == "prox"), which
	// the probe above cannot see: drop it too.
	return l.dropForeignConflicts(dropDefaultConflicts(keep))
}

// ownConflict rewrites a conflict between two literals that the user's
// file both writes as one that names where each is written:
// `conflicting values "sum" (f.cue:9:9) and "summ" (f.cue:10:29)`, in file
// order. It returns "" for any other error.
func (l *loader) ownConflict(r rawError) string {
	m := conflictRE.FindStringSubmatch(r.msg)
	if m == nil || m[3] != "" || !isLiteral(m[1]) || !isLiteral(m[2]) || m[1] == m[2] {
		return ""
	}
	at := func(lit string) (token.Pos, bool) {
		for _, p := range r.own {
			o := p.Offset()
			if o < 0 || o > len(l.src) || !bytes.HasPrefix(l.src[o:], []byte(lit)) {
				continue
			}
			// The whole token: 5 is no prefix of 50 here.
			if e := o + len(lit); e < len(l.src) && strings.ContainsRune("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_.", rune(l.src[e])) {
				continue
			}
			return p, true
		}
		return token.NoPos, false
	}
	pa, okA := at(m[1])
	pb, okB := at(m[2])
	if !okA || !okB || pa == pb {
		return ""
	}
	a, b := m[1], m[2]
	if pb.Offset() < pa.Offset() {
		a, b, pa, pb = b, a, pb, pa
	}
	where := func(p token.Pos) string { return fmt.Sprintf("%s:%d:%d", l.file, p.Line(), p.Column()) }
	return fmt.Sprintf("conflicting values %s (%s) and %s (%s)", a, where(pa), b, where(pb))
}

// dropForeignConflicts drops, when several conflicts between literals are
// reported at one path, those naming a string the user's file never
// writes: they come from the schema's alternatives (a discriminated
// union's other kinds), while the conflict between the file's own values
// says what is wrong.
func (l *loader) dropForeignConflicts(rs []rawError) []rawError {
	written := func(lit string) bool {
		return !strings.HasPrefix(lit, `"`) || bytes.Contains(l.src, []byte(lit))
	}
	var own []rawError
	for _, r := range rs {
		m := conflictRE.FindStringSubmatch(r.msg)
		if m == nil || (written(m[1]) && written(m[2])) {
			own = append(own, r)
		}
	}
	if len(own) == 0 || len(own) == len(rs) {
		return rs
	}
	return own
}

// dropDefaultConflicts drops the conflicts between two literals from rs
// when another error of rs explains the constraint (a bound, a type):
// such a conflict is the untaken default of a conditional field (graphs:
// *9000 | _ under kind == "prox", a default list's element), which the
// schema probe cannot see.
func dropDefaultConflicts(rs []rawError) []rawError {
	if !slices.ContainsFunc(rs, func(r rawError) bool { return !conflictRE.MatchString(r.msg) }) {
		return rs
	}
	return slices.DeleteFunc(rs, func(r rawError) bool {
		m := conflictRE.FindStringSubmatch(r.msg)
		return m != nil && m[3] == "" && isLiteral(m[1]) && isLiteral(m[2])
	})
}

// fieldInfo is what the schema declares for one field.
type fieldInfo struct {
	enum   []string // the literal alternatives, when the field is an enum
	def    string   // the default, printed as CUE
	hasDef bool
}

// schemaInfo looks the field at segs up in the schema alone.
func (l *loader) schemaInfo(segs []string) fieldInfo {
	var info fieldInfo
	if len(segs) == 0 || !l.schema.Exists() {
		return info
	}
	parent := l.probe(segs[:len(segs)-1])
	last := segs[len(segs)-1]
	var v cue.Value
	for _, sel := range []cue.Selector{cue.Str(last), cue.Str(last).Optional(), cue.Str(last).Required()} {
		if v = parent.LookupPath(cue.MakePath(sel)); v.Exists() {
			break
		}
	}
	if !v.Exists() {
		return info
	}
	if d, ok := v.Default(); ok {
		info.def, info.hasDef = fmt.Sprint(d), true
	}
	op, args := v.Expr()
	if op != cue.OrOp {
		// A reference to a definition (kind!: #ModelKind): look at what
		// it evaluates to.
		op, args = v.Eval().Expr()
	}
	if op != cue.OrOp {
		return info
	}
	var enum []string
	for _, a := range args {
		if !a.IsConcrete() {
			return info
		}
		enum = append(enum, fmt.Sprint(a))
	}
	info.enum = enum
	return info
}

// listLengthNoise reports whether the errors at path p are only a list
// length mismatch with a default list while the elements have errors of
// their own, which say more.
func listLengthNoise(p string, groups map[string][]rawError) bool {
	for _, r := range groups[p] {
		if !disjunctionRE.MatchString(r.msg) && !strings.HasPrefix(r.msg, "incompatible list lengths") {
			return false
		}
	}
	for q := range groups {
		if strings.HasPrefix(q, p+".") {
			return true
		}
	}
	return false
}

// rewrite replaces CUE messages whose wording does not fit a spec by
// clearer ones.
func rewrite(r rawError) string {
	n := len(r.segs)
	if n >= 2 && r.segs[n-2] == "grid" && strings.HasPrefix(r.msg, "incompatible list lengths (0 and") {
		return "grid list must not be empty"
	}
	return r.msg
}

// isLiteral reports whether a CUE value printed in an error message is a
// concrete scalar (string, number, bool, null).
func isLiteral(s string) bool {
	if strings.HasPrefix(s, `"`) || s == "true" || s == "false" || s == "null" {
		return true
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// positioned places r in the user's file: at its own position there if
// CUE gave one, else at the closest enclosing field the file writes, else
// at the file's start.
func (l *loader) positioned(r rawError) Error {
	p := r.pos
	if !p.IsValid() {
		p, _ = l.idx.closest(r.segs)
	}
	e := Error{File: l.file, Line: 1, Col: 1, Path: r.path, Msg: r.msg, Check: CheckSchema}
	if p.IsValid() {
		e.Line, e.Col = p.Line(), p.Column()
	}
	return e
}
