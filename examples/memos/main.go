// Command memos is a dual-era stdio MCP server modelled on the Memos
// note-taking service. It speaks the modern 2026-07-28 protocol (per-request
// _meta, no handshake) and the legacy 2025-11-25 / 2025-06-18 / 2025-03-26
// protocols (initialize handshake) in the same process, over newline-delimited
// JSON-RPC on stdin/stdout. Logs go to stderr.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Stdin, os.Stdout, os.Stderr, os.Args[1:])
	stop()
	os.Exit(code)
}

// run serves MCP on stdin/stdout until stdin closes and returns the exit status.
func run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, args []string) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if cfg.startDelay > 0 {
		t := time.NewTimer(cfg.startDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0
		}
	}
	s := newServer(cfg, stdout, stderr)
	s.logger.Printf("serving MCP on stdio (modern=%t legacy=%t dataset=%s dynamic-tools=%t)",
		cfg.modern, cfg.legacy, cfg.dataset, cfg.dynamicTools)
	return s.serve(ctx, stdin)
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("memos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.BoolVar(&cfg.modern, "modern", true, "serve the modern 2026-07-28 era (per-request _meta, server/discover)")
	fs.BoolVar(&cfg.legacy, "legacy", true, "serve the legacy eras (initialize handshake: 2025-11-25, 2025-06-18, 2025-03-26)")
	fs.BoolVar(&cfg.exitBeforeInit, "exit-before-init", false, "with -modern=false: exit with status 1 on any request other than initialize/ping before initialize")
	fs.StringVar(&cfg.dataset, "dataset", "default", "memo dataset: default or empty")
	fs.BoolVar(&cfg.dynamicTools, "dynamic-tools", false, "offer memo_toggle_beta, which changes the tool list and emits list_changed")
	fs.DurationVar(&cfg.stepDelay, "step-delay", 100*time.Millisecond, "duration of one memo_export_memos step")
	fs.DurationVar(&cfg.startDelay, "start-delay", 0, "wait this long before reading stdin, as a server that is slow to start does (npx, uvx or docker run on a first run)")
	fs.BoolVar(&cfg.debug, "debug", false, "log every message to stderr")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "memos: unexpected arguments: %v\n", fs.Args())
		return cfg, fmt.Errorf("unexpected arguments")
	}
	if cfg.dataset != "default" && cfg.dataset != "empty" {
		fmt.Fprintf(stderr, "memos: -dataset must be default or empty, not %q\n", cfg.dataset)
		return cfg, fmt.Errorf("bad dataset")
	}
	if !cfg.modern && !cfg.legacy {
		fmt.Fprintln(stderr, "memos: -modern=false and -legacy=false leave nothing to serve")
		return cfg, fmt.Errorf("no era")
	}
	if cfg.stepDelay < 0 || cfg.startDelay < 0 {
		fmt.Fprintln(stderr, "memos: -step-delay and -start-delay must not be negative")
		return cfg, fmt.Errorf("bad step delay")
	}
	return cfg, nil
}
