// Package testmain is the TestMain of the bridge packages whose tests run
// real binaries: it builds them once, runs the tests, and fails a passing
// run that leaked a goroutine. Only tests import it.
package testmain

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"go.uber.org/goleak"
)

// Run builds each package of pkgs (name -> import path or ./path from the
// module root) into a temporary directory, calls set with the binaries by
// name, runs m and exits with its code: 1 if a goroutine outlived a
// passing run.
//
// A fuzzing-only run (scripts/test.sh: -run='^$') builds nothing: no test
// needs the binaries, and every fuzz worker would build them again.
func Run(m *testing.M, pkgs map[string]string, set func(bins map[string]string)) {
	flag.Parse()
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "^$" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "mcp-bridge-test-bins")
	if err != nil {
		panic(err)
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	bins := map[string]string{}
	for name, pkg := range pkgs {
		out := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", pkg, err, b)
			os.RemoveAll(dir)
			os.Exit(1)
		}
		bins[name] = out
	}
	set(bins)
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
