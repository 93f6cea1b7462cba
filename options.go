package main

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// One rule holds for every field of every options struct of this package
// (Options, ExecutorOptions, RuntimeOptions, HTTPOptions, TaskOptions, ...)
// and for every flag of the reference command:
//
//   - A field's zero value means its default.
//   - A bound that may be lifted says so, and takes Unlimited: no limit on a
//     count or a size, no deadline or expiry for a duration. MaxQueue and
//     TelemetryOptions.SampleRatio also take None: no queue, no trace.
//   - Any other negative value is an error naming the field and the value,
//     such as "mcpstdio: Options.MaxQueue must be >= 0, Unlimited or None,
//     got -3".
//   - A nil Logger means slog.Default().
//
// The command's flags spell them unlimited and none; a flag's 0 is its
// default too.
const (
	// Unlimited lifts the bound of a field that takes it.
	Unlimited = -1
	// None, for a field that takes it, means nothing at all where 0 would
	// be the default.
	None = -2
)

// optionSpelling names the values the rule gives a meaning besides 0 and
// positive ones.
var optionSpelling = map[int]string{Unlimited: "Unlimited", None: "None"}

// checkOption returns the error for field (Struct.Field, as the user
// writes it) when v is negative and none of the values it also takes
// (Unlimited, None); nil otherwise. The constructor that checks the field
// prefixes the error with "mcpstdio: ".
func checkOption[T ~int | ~int64 | ~float64](field string, v T, takes ...T) error {
	if v >= 0 || slices.Contains(takes, v) {
		return nil
	}
	return fmt.Errorf("%s must be >= 0%s, got %v", field, alternatives(takes), v)
}

// checkAtMost is checkOption for a field that also has a ceiling.
func checkAtMost[T ~int | ~int64 | ~float64](field string, v, ceiling T, takes ...T) error {
	if v >= 0 && v <= ceiling || slices.Contains(takes, v) {
		return nil
	}
	return fmt.Errorf("%s must be >= 0 and <= %v%s, got %v", field, ceiling, alternatives(takes), v)
}

// alternatives spells the values a field takes besides those >= 0, for an
// error message: "", " or Unlimited", ", Unlimited or None".
func alternatives[T ~int | ~int64 | ~float64](takes []T) string {
	var b strings.Builder
	for i, t := range takes {
		switch {
		case i == len(takes)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(optionSpelling[int(t)])
	}
	return b.String()
}

// checkOptions returns the first error of errs that is not nil.
func checkOptions(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// defaultTo sets *v to def when *v is the zero value: an option left unset
// takes its default.
func defaultTo[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// defaultLogger returns logger, or slog.Default() when it is nil.
func defaultLogger(logger *slog.Logger) *slog.Logger {
	if logger == nil {
		return slog.Default()
	}
	return logger
}
