package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// newFlagSet is the one way a subcommand gets its flags: help goes to out
// (stdout: `mcp-bridge help serve` and `serve --help` print the same
// thing to the same place), and a flag error is reported by parseFlags in
// a few lines instead of the whole usage, which would scroll the error off
// the top of a terminal.
func newFlagSet(name string, out io.Writer, header string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\nFlags:\n%s", header, fs.FlagUsagesWrapped(100))
	}
	return fs
}

// parseFlags parses args into fs; --help passes through as pflag.ErrHelp
// (exit 0), any other failure is a usage error naming the flag first, a
// close flag name when there is one, and where the full usage is.
func parseFlags(fs *pflag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err == nil || errors.Is(err, pflag.ErrHelp) {
		return err
	}
	msg := err.Error()
	if bad, ok := unknownFlag(msg); ok {
		if s := suggestFlag(fs, bad); s != "" {
			msg += fmt.Sprintf(" (did you mean --%s?)", s)
		}
	}
	return usageError{fmt.Errorf("%s: %s\n%s", fs.Name(), msg, helpHint(fs.Name()))}
}

// helpHint is the line every usage error ends with.
func helpHint(cmd string) string {
	return fmt.Sprintf("Run 'mcp-bridge %s --help' for usage.", cmd)
}

// usageHint is a usage error about cmd's arguments (not its flags), with
// the pointer to its help.
func usageHint(cmd, format string, args ...any) error {
	return usageError{fmt.Errorf("%s: %s\n%s", cmd, fmt.Sprintf(format, args...), helpHint(cmd))}
}

// unknownFlag extracts the flag name from pflag's "unknown flag: --name"
// (the only error a suggestion helps with).
func unknownFlag(msg string) (string, bool) {
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return "", false
	}
	name, _, _ = strings.Cut(name, "=")
	return name, name != ""
}

// suggestFlag is the registered flag name closest to bad, if it is close
// enough to be meant: bad being the prefix of exactly one name, else an
// edit distance of at most a third of the name (at least 1).
func suggestFlag(fs *pflag.FlagSet, bad string) string {
	best, bestD := "", -1
	var prefixed []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if strings.HasPrefix(f.Name, bad) {
			prefixed = append(prefixed, f.Name)
		}
		if d := editDistance(bad, f.Name); bestD < 0 || d < bestD {
			best, bestD = f.Name, d
		}
	})
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	if bestD >= 0 && bestD <= max(1, len(bad)/3) {
		return best
	}
	return ""
}

// editDistance is the Levenshtein distance of a and b (bytes; flag names
// are ASCII), in two rows of memory.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// suggestCommand is the command closest to a mistyped one, if close.
func suggestCommand(bad string) string {
	for _, c := range []string{"serve", "connect", "exec", "auth", "completion", "version", "help"} {
		if editDistance(bad, c) <= max(1, len(bad)/3) {
			return c
		}
	}
	return ""
}
