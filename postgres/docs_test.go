package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the table of this command's flags in docs/how-to/deploy.md (go generate)")

// deployPage is the page that documents this command's own flags, between
// these markers.
const (
	deployPage     = "../docs/how-to/deploy.md"
	flagsTableFrom = "<!-- generated in postgres/: flags -->\n"
	flagsTableTo   = "<!-- end in postgres/: flags -->\n"
)

// TestDocsPostgresFlags: the table of this command's own flags in
// docs/how-to/deploy.md is what their definitions say (-update rewrites
// it; go generate in this directory runs that).
func TestDocsPostgresFlags(t *testing.T) {
	page, err := os.ReadFile(deployPage)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := strings.Cut(string(page), flagsTableFrom)
	old, after, ok2 := strings.Cut(rest, flagsTableTo)
	if !ok || !ok2 {
		t.Fatalf("%s has no %q ... %q block", deployPage, flagsTableFrom, flagsTableTo)
	}
	var f taskStoreFlags
	fs := flag.NewFlagSet("postgres", flag.ContinueOnError)
	f.register(fs)
	var b strings.Builder
	b.WriteString("| flag | default | meaning |\n|---|---|---|\n")
	fs.VisitAll(func(fl *flag.Flag) {
		def := "none"
		if fl.DefValue != "" {
			def = "`" + fl.DefValue + "`"
		}
		fmt.Fprintf(&b, "| `-%s` | %s | %s |\n", fl.Name, def, strings.ReplaceAll(fl.Usage, "|", `\|`))
	})
	if b.String() == old {
		return
	}
	if !*update {
		t.Fatalf("%s: the table of the postgres command's flags differs from their definitions (run go generate in postgres/):\n%s", deployPage, b.String())
	}
	if err := os.WriteFile(deployPage, []byte(before+flagsTableFrom+b.String()+flagsTableTo+after), 0o644); err != nil {
		t.Fatal(err)
	}
}
