package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Exit codes, documented in the README.
const (
	exitOK      = 0
	exitFailure = 1 // a runtime failure: listen error, child cannot start, ...
	exitUsage   = 2 // bad flags or arguments
)

// version and commit are stamped by scripts/release.sh with
// -ldflags "-X main.version=v1.2.3 -X main.commit=<hash>". A binary built
// by go build or go install takes them from its build info instead: the
// module version (go install ...@v1.2.3) and the VCS revision (go build in
// a checkout).
var version, commit = "", ""

// versionString is the one line "mcp-bridge version" prints: version,
// commit (with "+dirty" for uncommitted changes), Go version, platform.
func versionString() string {
	v, c, dirty := version, commit, false
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && c == "":
				c = s.Value
			case s.Key == "vcs.modified" && commit == "":
				dirty = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	if c == "" {
		c = "unknown"
	} else if dirty {
		c += "+dirty"
	}
	return fmt.Sprintf("mcp-bridge %s (commit %s, %s, %s/%s)", v, c, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

const usage = `mcp-bridge carries the Model Context Protocol between stdio and Streamable HTTP.

Usage:
  mcp-bridge connect [flags] URL            use a remote MCP server from a stdio-only host
  mcp-bridge serve [flags] -- CMD [ARG...]  expose a local stdio MCP server at http://127.0.0.1:8080/mcp
  mcp-bridge exec --tools FILE              serve command-line programs as MCP tools on stdio
  mcp-bridge auth login|status|logout [URL] log in to an OAuth-protected server ahead of time, show or forget logins
  mcp-bridge completion bash|zsh|fish|powershell  print a shell completion script
  mcp-bridge version

Run "mcp-bridge help COMMAND" (or "mcp-bridge COMMAND --help") for a command's flags.
Documentation: README.md and docs/ (https links in the README).
`

// usageError marks errors that should exit with status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}

	var err error
	switch args[0] {
	case "serve":
		err = runServe(ctx, args[1:], stdout, stderr)
	case "connect":
		err = runConnect(ctx, args[1:], stdin, stdout, stderr)
	case "exec":
		err = runExec(ctx, args[1:], stdin, stdout, stderr)
	case "auth":
		err = runAuth(ctx, args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, versionString())
		return exitOK
	case "completion":
		err = runCompletion(args[1:], stdout)
	case "help", "-h", "--help":
		if len(args) > 1 && args[0] == "help" {
			// "help serve" is "serve --help", "help auth login" is
			// "auth login --help": one text per command.
			return run(ctx, append(slices.Clone(args[1:]), "--help"), stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		msg := fmt.Sprintf("unknown command %q", args[0])
		if s := suggestCommand(args[0]); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		fmt.Fprintf(stderr, "mcp-bridge: %s\nRun 'mcp-bridge help' for usage.\n", msg)
		return exitUsage
	}
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
		return exitOK
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stderr, "mcp-bridge: %v\n", err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "mcp-bridge: %v\n", err)
		return exitFailure
	}
}

// oneOf checks the value of an enumerated flag.
func oneOf[T ~string](flag string, v T, choices ...T) (T, error) {
	if slices.Contains(choices, v) {
		return v, nil
	}
	names := make([]string, len(choices))
	for i, c := range choices {
		names[i] = string(c)
	}
	last := len(names) - 1
	return v, usagef("%s %q: want %s or %s", flag, string(v), strings.Join(names[:last], ", "), names[last])
}

// offIfZero maps the CLI's "0 disables" onto the bridge configs, where zero
// selects the default and a negative value disables.
func offIfZero[T int | time.Duration](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

// applyEnv lets MCP_BRIDGE_<FLAG> supply a flag the command line left unset
// (command line > environment > default), for the flags listed.
func applyEnv(fs *pflag.FlagSet, names ...string) error {
	for _, name := range names {
		f := fs.Lookup(name)
		if f == nil || f.Changed {
			continue
		}
		key := "MCP_BRIDGE_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		if v, ok := os.LookupEnv(key); ok && v != "" {
			if err := fs.Set(name, v); err != nil {
				return usagef("%s: %v", key, err)
			}
		}
	}
	return nil
}
