package deploycheck

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

var (
	root       string // the mcp-bridge repository
	deployDir  string // examples/deploy
	bridgeBin  string // mcp-bridge, built CGO_ENABLED=0 as the Dockerfile says
	memosBin   string // examples/memos, likewise
	serveFlags map[string]bool
)

// TestMain builds mcp-bridge and memos the way the Dockerfile's comment
// says (CGO off), so that the tests can check the binaries are static and
// that every serve flag the files pass exists.
func TestMain(m *testing.M) {
	_, file, _, _ := runtime.Caller(0)
	root = filepath.Join(filepath.Dir(file), "..", "..")
	deployDir = filepath.Join(root, "examples", "deploy")
	dir, err := os.MkdirTemp("", "deploycheck-")
	if err != nil {
		panic(err)
	}
	code := func() int {
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s", "-o", dir+string(os.PathSeparator), "./cmd/mcp-bridge", "./examples/memos")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
			return 1
		}
		bridgeBin, memosBin = filepath.Join(dir, "mcp-bridge"), filepath.Join(dir, "memos")
		if serveFlags, err = flagsOf(bridgeBin, "serve"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}()
	os.RemoveAll(dir)
	os.Exit(code)
}

var flagRE = regexp.MustCompile(`(?m)^ {2,10}(?:-\w, )?(--[a-z0-9-]+)`) // continuation lines are indented further

// flagsOf lists the flags `mcp-bridge CMD --help` documents.
func flagsOf(bin, sub string) (map[string]bool, error) {
	out, err := exec.Command(bin, sub, "--help").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s %s --help: %v\n%s", bin, sub, err, out)
	}
	flags := map[string]bool{}
	for _, m := range flagRE.FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if !flags["--listen"] {
		return nil, fmt.Errorf("no --listen in %s %s --help:\n%s", bin, sub, out)
	}
	return flags, nil
}

// checkServeArgs fails for a flag before "--" that serve does not have.
func checkServeArgs(t *testing.T, where string, args []string) {
	t.Helper()
	if len(args) == 0 || args[0] != "serve" {
		t.Errorf("%s: args %q do not start with serve", where, args)
		return
	}
	for _, a := range args[1:] {
		if a == "--" {
			return
		}
		name, _, _ := strings.Cut(a, "=")
		if strings.HasPrefix(name, "--") && !serveFlags[name] {
			t.Errorf("%s: mcp-bridge serve has no flag %s", where, name)
		}
	}
	t.Errorf("%s: args %q name no child command after --", where, args)
}

// flagValue returns --name's value in args (the --name=value form).
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
}
