// Package doccheck checks what a reader meets outside the code: that every
// relative link of the Markdown documentation resolves (the file exists
// and, with a #fragment, the heading or HTML anchor does), and which
// preamble a LaTeX file written by spn asks for in its "% Needs" header.
//
// Its tests run the link check over README.md and docs/*.md and compile a
// table and a figure spn writes with pdflatex when it is installed.
package doccheck

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Problem is one link that does not resolve.
type Problem struct {
	File string // the Markdown file holding the link, as given to Links
	Line int    // 1-based
	Link string // the link target as written
	Msg  string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Link, p.Msg)
}

var (
	// inlineLink matches [text](target) and ![alt](target), with an
	// optional "title"; group 1 is the target.
	inlineLink = regexp.MustCompile(`\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)`)
	// refLink matches a reference definition: [label]: target.
	refLink = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+<?([^\s>]+)>?`)
	// codeSpan matches an inline code span, whose text is not markup.
	codeSpan = regexp.MustCompile("`+[^`]*`+")
	// scheme matches the start of an absolute URL (https:, mailto:, ...).
	scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	// htmlAnchor matches id="x" or name="x" of an HTML element.
	htmlAnchor = regexp.MustCompile(`<[A-Za-z][^>]*\s(?:id|name)="([^"]+)"`)
	// heading matches an ATX heading; group 1 is its text.
	heading = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
)

// Links checks every relative link of the Markdown files (paths relative
// to root) and returns the ones that do not resolve: a file or folder that
// does not exist, or a #fragment that names no heading (GitHub's anchors)
// and no id/name attribute of the target Markdown file. Absolute URLs are
// not fetched. Links inside fenced code blocks and code spans are text.
func Links(root string, files []string) ([]Problem, error) {
	anchors := map[string]map[string]bool{} // by cleaned path from root
	anchorsOf := func(rel string) (map[string]bool, error) {
		if a, ok := anchors[rel]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return nil, err
		}
		a := Anchors(string(b))
		anchors[rel] = a
		return a, nil
	}
	var probs []Problem
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		for _, l := range links(string(b)) {
			bad := func(format string, args ...any) {
				probs = append(probs, Problem{File: f, Line: l.line, Link: l.target, Msg: fmt.Sprintf(format, args...)})
			}
			if scheme.MatchString(l.target) || strings.HasPrefix(l.target, "//") {
				continue
			}
			path, frag, _ := strings.Cut(l.target, "#")
			path, err := url.PathUnescape(path)
			if err != nil {
				bad("bad escape in path: %v", err)
				continue
			}
			rel := filepath.Clean(f)
			if path != "" {
				if strings.HasPrefix(path, "/") {
					bad("absolute path (write it relative to %s)", f)
					continue
				}
				rel = filepath.Join(filepath.Dir(f), filepath.FromSlash(path))
				if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					bad("points outside the repository")
					continue
				}
				if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
					bad("no such file or folder %s", filepath.ToSlash(rel))
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(rel, ".md") {
				continue
			}
			a, err := anchorsOf(rel)
			if err != nil {
				return nil, err
			}
			if !a[frag] {
				bad("no heading or anchor #%s in %s", frag, filepath.ToSlash(rel))
			}
		}
	}
	return probs, nil
}

type link struct {
	line   int
	target string
}

// links returns the link targets of a Markdown text, outside fenced code.
func links(md string) []link {
	var out []link
	var fence fences
	for i, line := range strings.Split(md, "\n") {
		if fence.inCode(line) {
			continue
		}
		text := codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
			out = append(out, link{i + 1, m[1]})
		}
		if m := refLink.FindStringSubmatch(text); m != nil {
			out = append(out, link{i + 1, m[1]})
		}
	}
	return out
}

// fences follows fenced code blocks line by line.
type fences struct{ open string }

// inCode reports whether line is a fence or inside a fenced code block.
func (f *fences) inCode(line string) bool {
	if fc := fenceOf(line); fc != "" {
		switch {
		case f.open == "":
			f.open = fc
			return true
		case strings.HasPrefix(fc, f.open[:1]) && len(fc) >= len(f.open):
			f.open = ""
			return true
		}
	}
	return f.open != ""
}

// fenceOf returns the fence (``` or ~~~, three or more) that opens or
// closes a code block on this line, or "".
func fenceOf(line string) string {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return ""
	}
	for _, c := range []string{"`", "~"} {
		n := len(t) - len(strings.TrimLeft(t, c))
		if n >= 3 {
			return t[:n]
		}
	}
	return ""
}

// Anchors returns the fragment names a Markdown text defines: GitHub's
// anchor of every heading outside fenced code (see Slug; a repeated
// heading gets -1, -2, ...) and every id or name attribute of its HTML.
func Anchors(md string) map[string]bool {
	a := map[string]bool{}
	seen := map[string]int{}
	var fence fences
	for _, line := range strings.Split(md, "\n") {
		if fence.inCode(line) {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			a[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := Slug(m[1])
		if n := seen[s]; n > 0 {
			a[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			a[s] = true
		}
		seen[s]++
	}
	return a
}

// headingLink matches a link inside a heading; its text is kept.
var headingLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// Slug returns GitHub's anchor for a heading's text: links reduced to
// their text, lower case, every character that is not a letter, a digit,
// a mark, a connector (_), a hyphen or a space dropped, spaces turned into
// hyphens.
func Slug(text string) string {
	text = headingLink.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || unicode.Is(unicode.Pc, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// needsCommand matches a preamble command named in a "% Needs" line.
var needsCommand = regexp.MustCompile(`\\(?:usepackage(?:\[[^\]]*\])?|pgfplotsset|usetikzlibrary|usepgfplotslibrary)\{[^}]*\}`)

// Preamble returns the preamble commands that a LaTeX file's comment lines
// starting with "% Needs" name (\usepackage{...}, \pgfplotsset{...}, ...),
// in order.
func Preamble(tex string) []string {
	var out []string
	for _, line := range strings.Split(tex, "\n") {
		if !strings.HasPrefix(line, "% Needs ") {
			continue
		}
		out = append(out, needsCommand.FindAllString(line, -1)...)
	}
	return out
}
