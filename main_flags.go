package main

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The command's numeric flags follow the options' rule (see Unlimited): a
// flag's 0 is its default, the words unlimited and none stand for
// Unlimited and None where the flag's option takes them, and any other
// negative value is refused as the flag is parsed, with a message naming
// the flag.

// flagRule is what -h says of every numeric flag before listing them.
const flagRule = `Every numeric flag's 0 means its default. A flag that says so also takes
unlimited, which lifts its bound (-max-queue also takes none: no queue).
Any other negative value is refused.
`

// optionWords are the flags' spellings of Unlimited and None.
var optionWords = map[int]string{Unlimited: "unlimited", None: "none"}

// optionFlag is a numeric flag (a count, a size or a duration) that keeps
// the options' rule: it takes values >= 0 and the words of the values of
// takes (Unlimited, None).
type optionFlag[T int | int64 | time.Duration] struct {
	value *T
	takes []T
}

// optionVar defines a numeric flag whose value is kept in *p, value unless
// the command line sets it; takes are the values besides those >= 0 the
// flag's option takes, spelled as words.
func optionVar[T int | int64 | time.Duration](fs *flag.FlagSet, p *T, name string, value T, usage string, takes ...T) {
	*p = value
	fs.Var(&optionFlag[T]{value: p, takes: takes}, name, usage)
}

func (f *optionFlag[T]) String() string {
	if f == nil || f.value == nil { // flag's probe of a zero value
		var zero T
		return fmt.Sprint(zero)
	}
	if slices.Contains(f.takes, *f.value) {
		return optionWords[int(*f.value)]
	}
	return fmt.Sprint(*f.value)
}

func (f *optionFlag[T]) Set(s string) error {
	for _, t := range f.takes {
		if s == optionWords[int(t)] {
			*f.value = t
			return nil
		}
	}
	v, err := parseNumber[T](s)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("must be >= 0%s, got %s", f.words(), s)
	}
	*f.value = v
	return nil
}

// words spells the words f takes for an error message, as alternatives
// does the constants.
func (f *optionFlag[T]) words() string {
	var b strings.Builder
	for i, t := range f.takes {
		if i == len(f.takes)-1 {
			b.WriteString(" or ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(optionWords[int(t)])
	}
	return b.String()
}

// argName is the name -h gives the flag's value.
func (f *optionFlag[T]) argName() string {
	if _, ok := any(*new(T)).(time.Duration); ok {
		return "duration"
	}
	return "int"
}

// parseNumber parses s as a T: a Go duration, or an integer in Go syntax.
func parseNumber[T int | int64 | time.Duration](s string) (T, error) {
	var zero T
	if _, ok := any(zero).(time.Duration); ok {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("not a duration (such as 300ms or 1m30s)")
		}
		return T(d), nil
	}
	bits := 64
	if _, ok := any(zero).(int); ok {
		bits = strconv.IntSize
	}
	n, err := strconv.ParseInt(s, 0, bits)
	if err != nil {
		return 0, fmt.Errorf("not an integer")
	}
	return T(n), nil
}

// printUsage writes the command's -h: the rule of the numeric flags, then
// every flag as flag.PrintDefaults lists it, the numeric ones named int or
// duration.
func printUsage(fs *flag.FlagSet) {
	out := fs.Output()
	fmt.Fprintf(out, "Usage of %s:\n%s", fs.Name(), flagRule)
	fs.VisitAll(func(f *flag.Flag) {
		var b strings.Builder
		name, usage := flag.UnquoteUsage(f)
		if of, ok := f.Value.(interface{ argName() string }); ok {
			name = of.argName()
		}
		fmt.Fprintf(&b, "  -%s", f.Name)
		if name != "" {
			b.WriteString(" " + name)
		}
		if b.Len() <= 4 { // a one-letter flag with no value name
			b.WriteString("\t")
		} else {
			b.WriteString("\n    \t")
		}
		b.WriteString(strings.ReplaceAll(usage, "\n", "\n    \t"))
		if def, shown := flagDefault(f); shown {
			b.WriteString(" (default " + def + ")")
		}
		fmt.Fprintln(out, b.String())
	})
}

// flagDefault returns f's default as -h shows it (a string quoted), and
// whether to show it: not when it is the zero value of its kind.
func flagDefault(f *flag.Flag) (string, bool) {
	getter, _ := f.Value.(flag.Getter)
	var value any
	if getter != nil {
		value = getter.Get()
	}
	switch value.(type) {
	case string:
		return strconv.Quote(f.DefValue), f.DefValue != ""
	case bool:
		return f.DefValue, f.DefValue != "false"
	}
	if of, ok := f.Value.(interface{ argName() string }); ok && of.argName() == "duration" {
		return f.DefValue, f.DefValue != "0s"
	}
	return f.DefValue, f.DefValue != "" && f.DefValue != "0"
}
