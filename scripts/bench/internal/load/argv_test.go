//go:build linux

package load

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestPortableArgv(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(filepath.Dir(wd), "elsewhere", "bin")
	in := []string{filepath.Join(wd, "results", "tmp", "bin", "echo"), "-flag", elsewhere, "rel/path"}
	want := []string{filepath.Join("results", "tmp", "bin", "echo"), "-flag", elsewhere, "rel/path"}
	if got := portableArgv(in); !slices.Equal(got, want) {
		t.Fatalf("portableArgv(%q) = %q, want %q", in, got, want)
	}
}
