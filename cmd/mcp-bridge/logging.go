package main

import (
	"bytes"
	"fmt"
	"io"
	stdlog "log"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
)

// The process's log formats, set once before any logger exists (setting
// them per logger would race with loggers already writing). Durations are
// Go duration strings ("1m3.5s"): zerolog's default is a bare number of
// milliseconds, a unit no reader of "uptime=23917.2" can guess, and the
// Dur fields of every package (stdiohost's uptime and restart_in,
// connect's took, httpclient's wait) are written through it. Numeric
// duration fields are named for their unit instead (took_ms).
func init() {
	zerolog.TimeFieldFormat = time.RFC3339Nano
	zerolog.DurationFieldFormat = zerolog.DurationFormatString
}

// logFlags are the flags every subcommand shares.
type logFlags struct {
	level  string
	format string
	file   string
}

func (l *logFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&l.level, "log-level", "info", "log `level`: trace|debug|info|warn|error|none")
	fs.StringVar(&l.format, "log-format", "auto", "log `format`: auto (console on a terminal, else json)|json|console")
	fs.StringVar(&l.file, "log-file", "", "append the log to this `file` (created 0600) instead of stderr")
}

// logger builds the process logger. It writes to stderr, or --log-file,
// never to stdout: in connect mode stdout belongs to the MCP stream. The
// file stays open for the life of the process.
func (l *logFlags) logger(stderr io.Writer) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(l.level)
	if l.level == "none" {
		level, err = zerolog.Disabled, nil
	}
	if err != nil || l.level == "" || level == zerolog.NoLevel {
		return zerolog.Nop(), usagef("--log-level %q: want trace, debug, info, warn, error or none", l.level)
	}
	if l.file != "" && level != zerolog.Disabled {
		f, err := os.OpenFile(l.file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return zerolog.Nop(), usagef("--log-file: %v", err)
		}
		stderr = f
	}
	var w io.Writer
	switch l.format {
	case "json":
		w = stderr
	case "console":
		w = zerolog.ConsoleWriter{Out: stderr, TimeFormat: time.TimeOnly, NoColor: !isTerminal(stderr)}
	case "auto":
		if isTerminal(stderr) {
			w = zerolog.ConsoleWriter{Out: stderr, TimeFormat: time.TimeOnly}
		} else {
			w = stderr
		}
	default:
		return zerolog.Nop(), usagef("--log-format %q: want auto, json or console", l.format)
	}
	return zerolog.New(zerolog.SyncWriter(w)).Level(level).With().Timestamp().Logger(), nil
}

// warnLog is a standard-library logger (net/http's Server.ErrorLog: TLS
// handshake failures, broken connections) whose lines go to log at WARN.
// A zerolog.Logger used as an io.Writer writes without a level, which the
// console shows as "???" and JSON as no level at all.
func warnLog(log zerolog.Logger) *stdlog.Logger {
	return stdlog.New(warnWriter{log}, "", 0)
}

type warnWriter struct{ log zerolog.Logger }

func (w warnWriter) Write(p []byte) (int, error) {
	w.log.Warn().Msg(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// byteSize is a pflag.Value for sizes such as 32MiB, 512k or 1048576.
type byteSize int64

func (b *byteSize) String() string { return fmt.Sprint(int64(*b)) }
func (b *byteSize) Type() string   { return "bytes" }
func (b *byteSize) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}
