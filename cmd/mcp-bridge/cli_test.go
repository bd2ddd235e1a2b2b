package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestFlagErrorIsShort: a mistyped flag names itself on the first line,
// with a suggestion when one is close, and the whole message fits in five
// lines (the usage is not dumped over it).
func TestFlagErrorIsShort(t *testing.T) {
	tests := []struct {
		args    []string
		first   string
		suggest string
	}{
		{[]string{"serve", "--bogus-flag", "--", "true"}, "unknown flag: --bogus-flag", ""},
		{[]string{"serve", "--listn", "127.0.0.1:0", "--", "true"}, "unknown flag: --listn", "--listen"},
		{[]string{"serve", "--max-sesions", "3", "--", "true"}, "unknown flag: --max-sesions", "--max-sessions"},
		{[]string{"connect", "--bearer", "x", "http://127.0.0.1:1/mcp"}, "unknown flag: --bearer", "--bearer-token"},
		{[]string{"auth", "login", "--oauth-scop", "x", "http://127.0.0.1:1/mcp"}, "unknown flag: --oauth-scop", "--oauth-scope"},
		{[]string{"serv"}, `unknown command "serv"`, `"serve"`},
	}
	for _, tt := range tests {
		code, stdout, stderr := runCLI(tt.args...)
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		switch {
		case code != exitUsage:
			t.Errorf("%q: exit %d, want %d", tt.args, code, exitUsage)
		case stdout != "":
			t.Errorf("%q: wrote to stdout: %q", tt.args, stdout)
		case len(lines) > 5:
			t.Errorf("%q: %d lines of error:\n%s", tt.args, len(lines), stderr)
		case !strings.Contains(lines[0], tt.first):
			t.Errorf("%q: first line %q does not name %q", tt.args, lines[0], tt.first)
		case tt.suggest != "" && !strings.Contains(lines[0], "did you mean "+tt.suggest):
			t.Errorf("%q: first line %q does not suggest %s", tt.args, lines[0], tt.suggest)
		case tt.suggest == "" && strings.Contains(stderr, "did you mean"):
			t.Errorf("%q: suggests something far off: %q", tt.args, lines[0])
		case !strings.Contains(stderr, "--help") && !strings.Contains(stderr, "mcp-bridge help"):
			t.Errorf("%q: no pointer to the help: %q", tt.args, stderr)
		}
	}
}

// TestHelpCommandIsCommandHelp: "mcp-bridge help CMD" prints exactly what
// "mcp-bridge CMD --help" prints, on stdout, for every command with flags.
func TestHelpCommandIsCommandHelp(t *testing.T) {
	for _, c := range [][]string{{"serve"}, {"connect"}, {"auth", "login"}, {"auth", "status"}, {"auth", "logout"}, {"completion"}} {
		code1, out1, err1 := runCLI(append([]string{"help"}, c...)...)
		code2, out2, err2 := runCLI(append(slices.Clone(c), "--help")...)
		if code1 != exitOK || code2 != exitOK || err1 != "" || err2 != "" {
			t.Errorf("%q: exits %d/%d, stderr %q/%q", c, code1, code2, err1, err2)
		}
		if out1 != out2 || !strings.HasPrefix(out1, "Usage: mcp-bridge "+strings.Join(c, " ")) {
			t.Errorf("help %q = %q\n%q --help = %q", c, out1, c, out2)
		}
	}
	for _, c := range []string{"auth status", "auth logout", "auth login"} {
		_, out, _ := runCLI(append(strings.Fields(c), "--help")...)
		if !strings.Contains(out, "Usage: mcp-bridge "+c+" ") || strings.Contains(out, "Usage of") {
			t.Errorf("%s --help: %q", c, out)
		}
	}
}

// TestCompletionScripts: every shell's script is produced; bash parses
// its script and completes a flag prefix, a flag's values, subcommands.
func TestCompletionScripts(t *testing.T) {
	for _, sh := range shells {
		code, out, stderr := runCLI("completion", sh)
		if code != exitOK || len(out) < 200 || stderr != "" {
			t.Fatalf("completion %s: exit %d, %d bytes, stderr %q", sh, code, len(out), stderr)
		}
		for _, want := range []string{"listen", "bearer-token", "oauth-scope", "log-level"} {
			if !strings.Contains(out, want) {
				t.Errorf("completion %s does not mention %s", sh, want)
			}
		}
	}
	if code, _, _ := runCLI("completion", "tcsh"); code != exitUsage {
		t.Errorf("completion tcsh: exit %d, want %d", code, exitUsage)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash here")
	}
	_, script, _ := runCLI("completion", "bash")
	file := filepath.Join(t.TempDir(), "mcp-bridge.bash")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bash, "-n", file).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	complete := func(words ...string) string {
		t.Helper()
		prog := `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _mcp_bridge; echo "${COMPREPLY[*]}"`
		out, err := exec.Command(bash, append([]string{"-c", prog, "x", file}, words...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("completing %q: %v\n%s", words, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := complete("mcp-bridge", "serve", "--lis"); got != "--listen" {
		t.Errorf("serve --lis → %q", got)
	}
	if got := complete("mcp-bridge", "connect", "--log-level", "w"); got != "warn" {
		t.Errorf("--log-level w → %q", got)
	}
	if got := complete("mcp-bridge", "co"); got != "connect completion" {
		t.Errorf("co → %q", got)
	}
	if got := complete("mcp-bridge", "auth", "lo"); got != "login logout" {
		t.Errorf("auth lo → %q", got)
	}
	if got := complete("mcp-bridge", "auth", "login", "--oauth-sc"); got != "--oauth-scope" {
		t.Errorf("auth login --oauth-sc → %q", got)
	}
}

// TestCompletionChoicesExist: every flag the completion lists values or
// files for is a flag of some command, so a rename cannot leave it stale.
func TestCompletionChoicesExist(t *testing.T) {
	known := map[string]bool{}
	for _, s := range commandSpecs() {
		if s.flags != nil {
			s.flags.VisitAll(func(f *pflag.Flag) { known[f.Name] = true })
		}
	}
	for name := range flagChoices {
		if !known[name] {
			t.Errorf("flagChoices names --%s, which no command has", name)
		}
	}
	for _, name := range fileFlags {
		if !known[name] {
			t.Errorf("fileFlags names --%s, which no command has", name)
		}
	}
}

func TestLogLevelNoneAndLogFile(t *testing.T) {
	lf := logFlags{level: "none", format: "json"}
	log, err := lf.logger(os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if log.Error().Enabled() {
		t.Error("--log-level none still logs errors")
	}
	file := filepath.Join(t.TempDir(), "bridge.log")
	lf = logFlags{level: "info", format: "auto", file: file}
	log, err = lf.logger(os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	log.Info().Msg("to the file")
	b, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(b), `"message":"to the file"`) {
		t.Fatalf("log file: %q, %v (auto is JSON for a file)", b, err)
	}
	if st, _ := os.Stat(file); runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		t.Errorf("log file mode %v", st.Mode().Perm())
	}
}
