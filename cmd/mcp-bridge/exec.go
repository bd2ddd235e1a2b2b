package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcp-bridge/mcp-bridge/bridge/exec"
)

type execFlags struct {
	tools  string
	check  bool
	schema bool
	drain  time.Duration
	log    logFlags
}

const execHelp = `Usage: mcp-bridge exec --tools FILE

Serves the command-line programs declared in FILE as MCP tools on
stdin/stdout (both protocol eras), for a host, for 'serve -- mcp-bridge exec
--tools FILE' or as an entry of a --config file. No shell ever runs: each
call's arguments are checked against the tool's inputSchema and become argv
elements of the one program the file names. One audit line per execution
goes to stderr. The file format and the safety rules: docs/exec.md.
`

func execFlagSet(f *execFlags, out io.Writer) *pflag.FlagSet {
	fs := newFlagSet("exec", out, execHelp)
	fs.StringVar(&f.tools, "tools", "", "the tools `file` (JSON; see docs/exec.md)")
	fs.BoolVar(&f.schema, "print-schema", false, "print the JSON Schema of the tools file and exit")
	fs.BoolVar(&f.check, "check", false, "check the tools file, list its tools with their resolved commands, and exit")
	fs.DurationVar(&f.drain, "shutdown-timeout", 5*time.Second, "after stdin closes, how long running tools may finish before they are stopped")
	f.log.register(fs)
	return fs
}

func runExec(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var f execFlags
	fs := execFlagSet(&f, stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageHint("exec", "unexpected arguments %q: the programs and their arguments belong in the tools file", fs.Args())
	}
	if f.schema {
		_, err := stdout.Write(exec.ToolsFileSchema)
		return err
	}
	if f.tools == "" {
		return usageHint("exec", "--tools FILE is required")
	}
	log, err := f.log.logger(stderr)
	if err != nil {
		return err
	}
	tools, err := exec.Load(f.tools, os.LookupEnv)
	if err != nil {
		return err
	}
	if f.check {
		for _, t := range tools.List {
			fmt.Fprintf(stdout, "%s\t%s %s\n", t.Name, t.Command, strings.Join(t.Args, " "))
		}
		return nil
	}
	names := make([]string, 0, len(tools.List))
	for _, t := range tools.List {
		names = append(names, t.Name)
	}
	log.Info().Str("tools_file", f.tools).Strs("tools", names).Msg("mcp-bridge exec")
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := exec.New(tools, exec.Options{Logger: log, Version: versionString(), DrainGrace: f.drain})
	err = srv.Serve(ctx, stdin, stdout)
	if errors.Is(err, context.Canceled) {
		return nil // a signal: a normal way for a host to stop us
	}
	return err
}
