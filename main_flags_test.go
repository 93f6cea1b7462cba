package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestNumericFlagsKeepTheOptionsRule checks every flag of the command that
// takes a number: it is defined with optionVar (a flag defined with
// fs.IntVar or fs.DurationVar fails here), its 0 is taken (the option's
// default), a negative value is refused as the flag is parsed with a message
// naming the flag and the value, and the words unlimited and none are taken
// exactly by the flags whose -h text says what they mean ("unlimited: ...").
func TestNumericFlagsKeepTheOptionsRule(t *testing.T) {
	numeric := 0
	newFlagSet(new(config), new(flagText), io.Discard).VisitAll(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok {
			switch g.Get().(type) {
			case int, int64, uint, uint64, float64, time.Duration:
				t.Errorf("-%s takes a number but is not defined with optionVar: it does not keep the options' rule", f.Name)
			}
			return
		}
		if _, ok := f.Value.(interface{ argName() string }); !ok {
			return // a string or a list
		}
		numeric++
		t.Run(f.Name, func(t *testing.T) {
			parse := func(value string) (string, error) {
				fs := newFlagSet(new(config), new(flagText), io.Discard)
				err := fs.Parse([]string{"-" + f.Name, value})
				return fs.Lookup(f.Name).Value.String(), err
			}
			zero, negative := "0", "-3"
			if f.Value.(interface{ argName() string }).argName() == "duration" {
				zero, negative = "0s", "-3s"
			}
			if got, err := parse("0"); err != nil || got != zero {
				t.Errorf("-%s 0: %v, the flag holds %s; want 0 taken", f.Name, err, got)
			}
			var words []string
			for _, word := range []string{"unlimited", "none"} {
				offered := strings.Contains(f.Usage, word+":")
				got, err := parse(word)
				switch {
				case offered && (err != nil || got != word):
					t.Errorf("-%s %s: %v, the flag holds %s; its -h offers it", f.Name, word, err, got)
				case !offered && err == nil:
					t.Errorf("-%s %s is taken, but its -h does not offer it", f.Name, word)
				}
				if offered {
					words = append(words, word)
				}
			}
			want := fmt.Sprintf(`invalid value %q for flag -%s: must be >= 0%s, got %s`, negative, f.Name, spellWords(words), negative)
			if _, err := parse(negative); err == nil || err.Error() != want {
				t.Errorf("-%s %s: %v; want %q", f.Name, negative, err, want)
			}
			if strings.Contains(f.Usage, "negative") {
				t.Errorf("-%s's -h speaks of negative values: %q", f.Name, f.Usage)
			}
		})
	})
	if numeric < 30 {
		t.Errorf("%d numeric flags found, want every one of the command's", numeric)
	}
}

// spellWords spells words as an error message lists them: "", " or a",
// ", a or b".
func spellWords(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return " or " + words[0]
	}
	return ", " + strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// TestUsageStatesTheRule: -h states the rule of the numeric flags once,
// before the flags, and names each numeric flag's value int or duration.
func TestUsageStatesTheRule(t *testing.T) {
	var usage strings.Builder
	if _, err := parseFlags([]string{"-h"}, &usage); err != flag.ErrHelp {
		t.Fatalf("-h: %v", err)
	}
	text := usage.String()
	if !strings.HasPrefix(text, "Usage of mcpstdio:\n"+flagRule+"  -") {
		t.Errorf("-h does not begin with the rule:\n%s", text)
	}
	for _, line := range []string{"\n  -max-queue int\n", "\n  -request-timeout duration\n", "\n  -log-level string\n", "\n  -state-key-file FILE\n", "\n  -auth-accept-untyped-tokens\n"} {
		if !strings.Contains(text, line) {
			t.Errorf("-h has no line %q:\n%s", line, text)
		}
	}
	for _, def := range []string{"(default 256)", "(default 30s)", `(default "info")`} {
		if !strings.Contains(text, def) {
			t.Errorf("-h does not say %s", def)
		}
	}
	if strings.Contains(text, "(default 0)") || strings.Contains(text, "(default 0s)") || strings.Contains(text, `(default "")`) || strings.Contains(text, "(default false)") {
		t.Errorf("-h shows a zero default:\n%s", text)
	}
}

// TestZeroFlagsGiveTheDefaults: every numeric flag set to 0 gives the
// options the command builds what their zero values give, and the values
// the command uses itself their defaults.
func TestZeroFlagsGiveTheDefaults(t *testing.T) {
	args := []string{"-http", ":0", "-skills", "testdata/skills", "-auth-issuer", "https://as.example", "-auth-resource", "https://mcp.example/mcp", "-auth-dpop", "allow"}
	newFlagSet(new(config), new(flagText), io.Discard).VisitAll(func(f *flag.Flag) {
		if _, ok := f.Value.(interface{ argName() string }); ok {
			args = append(args, "-"+f.Name, "0")
		}
	})
	c, err := parseFlags(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}

	gotHTTP, wantHTTP := c.httpOptions(), HTTPOptions{}
	gotStdio, wantStdio := c.stdioOptions(), Options{}
	gotTasks, wantTasks := c.tasks, TaskOptions{}
	info := Implementation{Name: "srv", Version: "1.0"}
	gotRuntime, wantRuntime := RuntimeOptions{ServerInfo: info, PageSize: c.pageSize}, RuntimeOptions{ServerInfo: info}
	for _, err := range []error{gotHTTP.normalize(), wantHTTP.normalize(), gotStdio.normalize(), wantStdio.normalize(),
		validateTaskOptions(&gotTasks), validateTaskOptions(&wantTasks), validateRuntimeOptions(&gotRuntime), validateRuntimeOptions(&wantRuntime)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name      string
		got, want any
	}{
		{"HTTPOptions", gotHTTP, wantHTTP},
		{"Options", gotStdio, wantStdio},
		{"the executor", executorStats(t, gotStdio.executorOptions()), executorStats(t, ExecutorOptions{})},
		{"TaskOptions", gotTasks, wantTasks},
		{"RuntimeOptions", gotRuntime, wantRuntime},
		{"-http-max-connections", listenerSlots(t, c.maxConnections), DefaultMaxConnections},
		{"-http-max-header-bytes", c.maxHeaderBytes, DefaultMaxHeaderBytes},
		{"-skills-rescan", c.skills.rescan, defaultSkillsRescan},
		{"-auth-dpop-max-proofs and -auth-dpop-max-client-proofs", dpopLedger(t, c), [2]int{DefaultDPoPMaxProofs, (DefaultDPoPMaxProofs + 3) / 4}},
		{"the memory limit", memoryLimit(c), int64(DefaultMaxInflightBytes + 4*DefaultMaxBodyBytes + 16<<20)},
	} {
		if !reflect.DeepEqual(tt.got, tt.want) {
			t.Errorf("%s from flags of 0:\n%+v\nwant, as from the zero options:\n%+v", tt.name, tt.got, tt.want)
		}
	}
}

// TestFlagWordsReachTheOptions: unlimited and none give the options
// Unlimited and None, which the executor, the transport and the command
// honour.
func TestFlagWordsReachTheOptions(t *testing.T) {
	dpopArgs := []string{"-http", ":0", "-auth-issuer", "https://as.example", "-auth-resource", "https://mcp.example/mcp", "-auth-dpop", "allow"}
	for _, tt := range []struct {
		args      []string
		got, want func(config) any
	}{
		{[]string{"-max-queue", "none"}, func(c config) any { return executorStats(t, c.stdioOptions().executorOptions()).MaxQueue }, func(config) any { return 0 }},
		{[]string{"-max-queue", "unlimited"}, func(c config) any { return executorStats(t, c.stdioOptions().executorOptions()).MaxQueue }, func(config) any { return Unlimited }},
		{[]string{"-max-inflight-bytes", "unlimited"}, func(c config) any { return executorStats(t, c.stdioOptions().executorOptions()).MaxInflightBytes }, func(config) any { return Unlimited }},
		{[]string{"-max-inflight-bytes", "unlimited"}, func(c config) any { return memoryLimit(c) }, func(config) any { return int64(math.MaxInt64) }},
		{[]string{"-request-timeout", "unlimited"}, func(c config) any { return c.stdioOptions().RequestTimeout }, func(config) any { return time.Duration(Unlimited) }},
		{[]string{"-http", ":0", "-request-timeout", "unlimited"}, func(c config) any { return c.httpOptions().RequestTimeout }, func(config) any { return time.Duration(Unlimited) }},
		{append(dpopArgs, "-auth-dpop-max-client-proofs", "unlimited"), func(c config) any { return dpopLedger(t, c) }, func(config) any { return [2]int{DefaultDPoPMaxProofs, DefaultDPoPMaxProofs} }},
		{[]string{"-skills", "testdata/skills", "-skills-rescan", "unlimited"}, func(c config) any { return c.skills.rescan }, func(config) any { return time.Duration(Unlimited) }},
		{[]string{"-max-queue", "7"}, func(c config) any { return executorStats(t, c.stdioOptions().executorOptions()).MaxQueue }, func(config) any { return 7 }},
	} {
		c, err := parseFlags(tt.args, io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if got, want := tt.got(c), tt.want(c); got != want {
			t.Errorf("%v: %v, want %v", tt.args, got, want)
		}
	}
}

// executorStats returns the limits of an executor made with opts.
func executorStats(t *testing.T, opts ExecutorOptions) ExecutorStats {
	t.Helper()
	e, err := NewExecutor(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	return e.Stats()
}

// dpopLedger returns the bounds of the DPoP replay ledger of the
// authorization c's flags configure: all its proofs, and one principal's.
func dpopLedger(t *testing.T, c config) [2]int {
	t.Helper()
	opts, err := c.auth.options(quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	g, err := newAuthGate(opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	return [2]int{g.dpop.ledger.max, g.dpop.ledger.perClient}
}

// listenerSlots returns how many connections an HTTPListener made with
// maxConnections serves at once.
func listenerSlots(t *testing.T, maxConnections int) int {
	t.Helper()
	ln, err := NewHTTPListener(nil, HTTPListenerOptions{MaxConnections: maxConnections})
	if err != nil {
		t.Fatal(err)
	}
	return cap(ln.slots)
}
