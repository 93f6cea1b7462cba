package main

import (
	"flag"
	"os"
	"strings"
	"testing"
)

// TestPostgresFlagsDocumented: the table of this command's own flags in
// docs/how-to/deploy.md lists every one of them with its default.
func TestPostgresFlagsDocumented(t *testing.T) {
	page, err := os.ReadFile("../docs/how-to/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{} // flag name: default cell
	for _, line := range strings.Split(string(page), "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 3 {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		if strings.HasPrefix(name, "-") {
			rows[strings.TrimPrefix(name, "-")] = strings.TrimSpace(cells[1])
		}
	}
	var f taskStoreFlags
	fs := flag.NewFlagSet("postgres", flag.ContinueOnError)
	f.register(fs)
	n := 0
	fs.VisitAll(func(fl *flag.Flag) {
		n++
		def, ok := rows[fl.Name]
		want := "`" + fl.DefValue + "`"
		if fl.DefValue == "" {
			want = "required"
		}
		switch {
		case !ok:
			t.Errorf("deploy.md has no row for -%s", fl.Name)
		case def != want:
			t.Errorf("deploy.md gives -%s the default %s, the flag's is %s", fl.Name, def, want)
		}
	})
	if n < 6 {
		t.Fatalf("the command registers %d flags of its own", n)
	}
}
