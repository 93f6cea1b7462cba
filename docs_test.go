package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The documentation's pages (README.md and docs/**/*.md) are partly
// generated: TestDocs is the generator and its check. Run with -update (what
// `go generate` does, see doc.go) it rewrites every page; run without, it
// fails naming each page, and each block of it, that differs from what it
// would write. What it writes:
//
//   - after a line `<!-- snippet: FILE#NAME -->`, a fenced block holding the
//     lines of FILE (a path from the repository's root) between
//     `// region NAME` and `// endregion NAME` (or `# region NAME` in a file
//     whose comments start with #), their common indentation removed and
//     the marker lines of regions nested inside left out (a region whose
//     markers appear several times is its parts, one after the other);
//   - after `<!-- snippet: FILE -->`, a fenced block holding all of FILE;
//   - after `<!-- output: FILE#ExampleName -->`, a fenced block holding the
//     `// Output:` lines of that Example function, which go test checks;
//   - between `<!-- generated: NAME -->` and `<!-- end: NAME -->`, what the
//     generator NAME writes (docGenerators).

// docPages returns the pages the generator keeps: README.md and every .md
// file under docs/, sorted.
func docPages(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md"}
	err := filepath.WalkDir("docs", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, filepath.ToSlash(path))
		}
		return err
	})
	if err != nil {
		t.Fatalf("listing docs/: %v", err)
	}
	slices.Sort(pages[1:])
	return pages
}

var (
	snippetMarker   = regexp.MustCompile(`^<!-- (snippet|output): ([^ #]+)(?:#([^ ]+))? -->$`)
	generatedMarker = regexp.MustCompile(`^<!-- generated: ([a-z-]+) -->$`)
	regionStart     = regexp.MustCompile(`^\s*(?://|#) region (\S+)\s*$`)
	regionEnd       = regexp.MustCompile(`^\s*(?://|#) endregion (\S+)\s*$`)
)

// docGenerators write the blocks between `<!-- generated: NAME -->` and
// `<!-- end: NAME -->`, each without its final newline; old is the block
// as the page has it.
var docGenerators = map[string]func(old string) (string, error){
	"flags":      func(string) (string, error) { return flagsTable() },
	"copy-table": copyTable,
}

// TestDocs checks (or, with -update, rewrites) every page's generated
// blocks.
func TestDocs(t *testing.T) {
	for _, page := range docPages(t) {
		old, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		gen, stale, problems := generatePage(old)
		problems = append(problems, bareGoBlocks(old)...)
		for _, p := range problems {
			t.Errorf("%s: %s", page, p)
		}
		if len(stale) == 0 {
			continue
		}
		if *updateGolden {
			if err := os.WriteFile(page, gen, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		for _, block := range stale {
			t.Errorf("%s: %s differs from its source (run go generate)", page, block)
		}
	}
}

// generatePage returns page with every generated block rewritten, the
// blocks whose text that changed, and what kept a block from being written
// (a missing file or region, a marker without its end), which is left as it
// was.
func generatePage(page []byte) (gen []byte, stale, problems []string) {
	lines := strings.SplitAfter(string(page), "\n")
	var out strings.Builder
	// replace writes text in place of lines[from:to], noting name as stale
	// when that changes them.
	replace := func(name string, from, to int, text string) {
		if strings.Join(lines[from:to], "") != text {
			stale = append(stale, name)
		}
		out.WriteString(text)
	}
	for i := 0; i < len(lines); i++ {
		out.WriteString(lines[i])
		marker := strings.TrimRight(lines[i], "\n")
		if m := snippetMarker.FindStringSubmatch(marker); m != nil {
			kind, file, region := m[1], m[2], m[3]
			name := kind + " " + snippetName(file, region)
			fence, end := "```"+fenceLanguage(file), i+1 // no block yet: insert one
			if kind == "output" {
				fence = "```"
			}
			if end < len(lines) && strings.HasPrefix(lines[end], "```") {
				fence = strings.TrimRight(lines[end], "\n")
				for end++; end < len(lines) && strings.TrimRight(lines[end], "\n") != "```"; end++ {
				}
				if end == len(lines) {
					problems = append(problems, fmt.Sprintf("line %d: %s: its fenced block has no end", i+1, name))
					continue
				}
				end++
			}
			text, err := snippetText(file, region)
			if kind == "output" {
				text, err = exampleOutput(file, region)
			}
			if err != nil {
				problems = append(problems, fmt.Sprintf("line %d: %s: %v", i+1, name, err))
				continue
			}
			replace(name, i+1, end, fence+"\n"+text+"\n```\n")
			i = end - 1
			continue
		}
		if m := generatedMarker.FindStringSubmatch(marker); m != nil {
			name := "generated block " + m[1]
			endMarker := "<!-- end: " + m[1] + " -->"
			end := i + 1
			for end < len(lines) && strings.TrimRight(lines[end], "\n") != endMarker {
				end++
			}
			gen, known := docGenerators[m[1]]
			switch {
			case end == len(lines):
				problems = append(problems, fmt.Sprintf("line %d: %s has no %s", i+1, name, endMarker))
				continue
			case !known:
				problems = append(problems, fmt.Sprintf("line %d: no generator is named %s", i+1, m[1]))
				continue
			}
			text, err := gen(strings.Join(lines[i+1:end], ""))
			if err != nil {
				problems = append(problems, fmt.Sprintf("line %d: %s: %v", i+1, name, err))
				continue
			}
			replace(name, i+1, end, text+"\n")
			i = end - 1
		}
	}
	return []byte(out.String()), stale, problems
}

// bareGoBlocks names the Go blocks of a page that no snippet marker
// fills: every Go snippet must be a region of a compiled file.
func bareGoBlocks(page []byte) []string {
	var problems []string
	lines := strings.Split(string(page), "\n")
	inBlock := false
	for i, line := range lines {
		switch {
		case inBlock:
			inBlock = line != "```"
		case strings.HasPrefix(line, "```"):
			inBlock = true
			if line == "```go" && (i == 0 || !snippetMarker.MatchString(lines[i-1])) {
				problems = append(problems, fmt.Sprintf("line %d: a Go block that is not a snippet of a compiled file", i+1))
			}
		}
	}
	return problems
}

func snippetName(file, region string) string {
	if region == "" {
		return file
	}
	return file + "#" + region
}

// fenceLanguage is the info string of a new fenced block for file.
func fenceLanguage(file string) string {
	switch filepath.Ext(file) {
	case ".go":
		return "go"
	case ".sh":
		return "sh"
	}
	return ""
}

// snippetText returns the region of file (all of it when region is ""),
// without its final newline.
func snippetText(file, region string) (string, error) {
	if filepath.IsAbs(file) || strings.Contains(file, "..") {
		return "", fmt.Errorf("%s is not a path inside the repository", file)
	}
	data, err := os.ReadFile(filepath.FromSlash(file))
	if err != nil {
		return "", err
	}
	if region == "" {
		return strings.TrimRight(string(data), "\n"), nil
	}
	var body []string
	depth, found := 0, false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := regionStart.FindStringSubmatch(line); m != nil {
			if m[1] == region { // a region in several parts is their concatenation
				found, depth = true, 1
			} else if depth > 0 {
				depth++
			}
			continue
		}
		if regionEnd.MatchString(line) {
			if depth > 0 {
				depth--
			}
			continue
		}
		if depth > 0 {
			body = append(body, line)
		}
	}
	switch {
	case !found:
		return "", fmt.Errorf("no line `// region %s`", region)
	case depth > 0:
		return "", fmt.Errorf("no line `// endregion %s`", region)
	case len(body) == 0:
		return "", fmt.Errorf("region %s is empty", region)
	}
	// gofmt keeps a blank line between a function and a comment after it:
	// a region's leading and trailing blank lines are not the snippet's.
	return strings.Trim(strings.Join(dedent(body), "\n"), "\n"), nil
}

// exampleOutput returns the `// Output:` lines of the Example function name
// of file, without their comment markers.
func exampleOutput(file, name string) (string, error) {
	if !strings.HasPrefix(name, "Example") {
		return "", fmt.Errorf("%s is not an Example function", name)
	}
	data, err := os.ReadFile(filepath.FromSlash(file))
	if err != nil {
		return "", err
	}
	lines := strings.Split(string(data), "\n")
	start := slices.Index(lines, "func "+name+"() {")
	if start < 0 {
		return "", fmt.Errorf("%s has no func %s", file, name)
	}
	var out []string
	for i := start + 1; i < len(lines) && lines[i] != "}"; i++ {
		line := strings.TrimSpace(lines[i])
		rest, isOutput := strings.CutPrefix(line, "// Output:")
		switch {
		case isOutput:
			out = []string{}
			if rest = strings.TrimSpace(rest); rest != "" {
				out = append(out, rest)
			}
		case out != nil && strings.HasPrefix(line, "//"):
			out = append(out, strings.TrimPrefix(strings.TrimPrefix(line, "//"), " "))
		}
	}
	if len(out) == 0 {
		return "", fmt.Errorf("%s has no output", name)
	}
	return strings.Join(out, "\n"), nil
}

// dedent removes the indentation the non-blank lines have in common.
func dedent(lines []string) []string {
	common, first := "", true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first {
			common, first = indent, false
			continue
		}
		for !strings.HasPrefix(indent, common) {
			common = common[:len(common)-1]
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			out[i] = strings.TrimPrefix(l, common)
		}
	}
	return out
}

// flagUsage is one flag as -h prints it.
type flagUsage struct {
	name, arg, usage, def string
}

// commandFlags returns the reference command's flags as `go run . -h`
// prints them, in its order (by name).
func commandFlags() ([]flagUsage, error) {
	var out strings.Builder
	parseFlags([]string{"-h"}, &out)
	usage, ok := strings.CutPrefix(out.String(), "Usage of mcpstdio:\n"+flagRule)
	if !ok {
		return nil, fmt.Errorf("-h does not begin with the rule of the numeric flags: %q", out.String())
	}
	return parseFlagUsage(usage)
}

// trailingDefault is how the flag package ends a usage whose default is not
// the zero value.
var trailingDefault = regexp.MustCompile(` \(default (.*)\)$`)

// parseFlagUsage reads flag.PrintDefaults' text: each flag is a line
// "  -name[ arg]" followed by its usage on lines that start with four spaces
// and a tab.
func parseFlagUsage(text string) ([]flagUsage, error) {
	var flags []flagUsage
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "  -"):
			name, arg, _ := strings.Cut(strings.TrimPrefix(line, "  -"), " ")
			flags = append(flags, flagUsage{name: name, arg: arg})
		case strings.HasPrefix(line, "    \t") && len(flags) > 0:
			f := &flags[len(flags)-1]
			f.usage = strings.TrimSpace(f.usage + " " + strings.TrimPrefix(line, "    \t"))
		case line == "" || strings.HasPrefix(line, "Usage of "):
		default:
			return nil, fmt.Errorf("unexpected line in -h: %q", line)
		}
	}
	for i := range flags {
		f := &flags[i]
		if m := trailingDefault.FindStringSubmatch(f.usage); m != nil {
			f.usage = strings.TrimSuffix(f.usage, m[0])
			f.def = m[1]
			if unquoted, err := strconv.Unquote(f.def); err == nil {
				f.def = unquoted
			}
		}
	}
	if len(flags) == 0 {
		return nil, fmt.Errorf("-h lists no flag")
	}
	return flags, nil
}

// flagsTable is the block of docs/reference/flags.md: the rule of the
// numeric flags as -h states it, then every flag of the command with its
// default and its -h text.
func flagsTable() (string, error) {
	flags, err := commandFlags()
	if err != nil {
		return "", err
	}
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	var b strings.Builder
	b.WriteString(strings.ReplaceAll(strings.TrimSpace(flagRule), "\n", " ") + "\n\n")
	b.WriteString("| flag | default | meaning |\n|---|---|---|\n")
	for _, f := range flags {
		name := "`-" + f.name
		if f.arg != "" {
			name += " " + f.arg
		}
		def := "none"
		switch {
		case f.def != "":
			def = "`" + f.def + "`"
		case f.arg == "":
			def = "off"
		case f.arg == "int" || f.arg == "duration":
			def = "`0`"
		}
		fmt.Fprintf(&b, "| %s` | %s | %s |\n", name, cell(def), cell(f.usage))
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

var (
	markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingLine  = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
)

// headingAnchor is the anchor GitHub gives a heading: lower case, spaces as
// hyphens, and punctuation other than hyphens and underscores dropped.
func headingAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDocsLinks: every relative link of the pages names a file of the
// repository, and every #anchor a heading of its page.
func TestDocsLinks(t *testing.T) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		a := map[string]bool{}
		data, err := os.ReadFile(page)
		if err == nil {
			for _, m := range headingLine.FindAllStringSubmatch(string(data), -1) {
				a[headingAnchor(strings.Trim(m[1], "`"))] = true
			}
		}
		anchors[page] = a
		return a
	}
	for _, page := range docPages(t) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range markdownLink.FindAllStringSubmatch(string(data), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(link, "#")
			target := page
			if file != "" {
				target = filepath.ToSlash(filepath.Join(filepath.Dir(page), file))
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s: link %s: no file %s", page, link, target)
				continue
			}
			if anchor != "" && strings.HasSuffix(target, ".md") && !anchorsOf(target)[anchor] {
				t.Errorf("%s: link %s: %s has no heading #%s", page, link, target, anchor)
			}
		}
	}
}

// copyTable is the table of the tutorial's copy step: for each part the old
// table names (its first column), the files and lines copy.sh prints when
// it copies them all, and the old table's description (its last column).
func copyTable(old string) (string, error) {
	var parts, descriptions []string
	for _, line := range strings.Split(strings.TrimSpace(old), "\n")[2:] {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		parts = append(parts, strings.TrimSpace(cells[0]))
		descriptions = append(descriptions, strings.TrimSpace(cells[len(cells)-1]))
	}
	if len(parts) == 0 || parts[0] != "core" {
		return "", fmt.Errorf("the table's first row must be the core, then one row per feature")
	}
	dest, err := os.MkdirTemp("", "copy-table")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dest)
	out, err := exec.Command("sh", append([]string{"copy.sh", dest, "mcp"}, parts[1:]...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("copy.sh: %v: %s", err, out)
	}
	printed := map[string][2]string{} // part: files, lines
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 5 && f[2] == "files" && f[4] == "lines" {
			printed[f[0]] = [2]string{f[1], f[3]}
		}
	}
	var b strings.Builder
	b.WriteString("| part | files | lines | what it is |\n|---|---|---|---|\n")
	for i, part := range parts {
		n, ok := printed[part]
		if !ok {
			return "", fmt.Errorf("copy.sh printed nothing for %s: %s", part, out)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", part, n[0], n[1], descriptions[i])
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
