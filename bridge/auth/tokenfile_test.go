package auth

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestParseTokenFile(t *testing.T) {
	got, err := ParseTokenFile([]byte("# team tokens\n\nalice:tok-a1==\n  bob : tok.b2~+/ \r\nbare_Token-3\n#carol:tok-c\n"))
	want := []NamedToken{{"alice", "tok-a1=="}, {"bob", "tok.b2~+/"}, {"", "bare_Token-3"}}
	if err != nil || len(got) != len(want) {
		t.Fatalf("got %v, %v", got, err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{
		"alice:zq9:with-colon", // a token never holds ':'
		"alice:",
		":zq9",
		"al ice:zq9",
		"alice:zq9 with space",
		"alice:zq9\"quote",
		"alice:zq9-1\nbob:zq9-1",
		"alice:zq9-1\nalice:zq9-2",
		"zq9-1\nzq9-1",
		strings.Repeat("n", 65) + ":zq9",
		"=",
	} {
		_, err := ParseTokenFile([]byte(bad))
		if !errors.Is(err, ErrTokenFile) {
			t.Errorf("%q: err %v, want ErrTokenFile", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), "zq9") {
			t.Errorf("%q: the error quotes the token: %v", bad, err)
		}
	}
}

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens")
	if err := os.WriteFile(path, []byte("alice:tok-a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ts, warn, err := ReadTokenFile(path)
	if err != nil || len(ts) != 1 || warn != "" {
		t.Fatalf("0600: %v %q %v", ts, warn, err)
	}
	if runtime.GOOS != "windows" {
		os.Chmod(path, 0o644)
		if _, warn, _ := ReadTokenFile(path); !strings.Contains(warn, "readable by other users") {
			t.Fatalf("0644: no warning (%q)", warn)
		}
	}
	os.WriteFile(path, []byte("# nothing\n"), 0o600)
	if _, _, err := ReadTokenFile(path); !errors.Is(err, ErrTokenFile) {
		t.Fatalf("empty file: %v", err)
	}
}

// FuzzParseTokenFile: no input panics, and what is accepted is what the
// grammar says (tokens valid and distinct, names valid and distinct).
func FuzzParseTokenFile(f *testing.F) {
	for _, s := range []string{"alice:tok\n", "# c\n\nbare\n", "a:b:c", " x : y \r\n", "=\n", "a:tok==\nb:tok=="} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, err := ParseTokenFile(data)
		if err != nil {
			return
		}
		seen, names := map[string]bool{}, map[string]bool{}
		for _, nt := range ts {
			if !validToken(nt.Token) || seen[nt.Token] || strings.ContainsAny(nt.Token, ": \t\r\n#") {
				t.Fatalf("accepted token %q", nt.Token)
			}
			if nt.Name != "" && (!validTokenName(nt.Name) || names[nt.Name]) {
				t.Fatalf("accepted name %q", nt.Name)
			}
			seen[nt.Token], names[nt.Name] = true, nt.Name != ""
		}
	})
}
