package oauth

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// The test binary doubles as the non-interactive "browser": run with
// OAUTH_TEST_BROWSER=1 and a URL, it fetches the URL, follows the
// redirects to the loopback callback, and records the run in the file
// named by OAUTH_TEST_BROWSER_LOG.
func TestMain(m *testing.M) {
	if os.Getenv("OAUTH_TEST_BROWSER") == "1" {
		os.Exit(browse(os.Args[len(os.Args)-1]))
	}
	goleak.VerifyTestMain(m)
}

func browse(u string) int {
	if p := os.Getenv("OAUTH_TEST_BROWSER_LOG"); p != "" {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintln(f, "run")
			f.Close()
		}
	}
	if os.Getenv("OAUTH_TEST_BROWSER_IDLE") == "1" {
		return 0 // a person who never logs in
	}
	resp, err := http.Get(u)
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		return 1
	}
	resp.Body.Close()
	return 0
}

// testBrowser returns the Browser command (this test binary) and the file
// it logs its runs to.
func testBrowser(t *testing.T) ([]string, string) {
	t.Helper()
	// One log per test: a second call in the same test (a second
	// Authorizer) shares the first one's.
	log := os.Getenv("OAUTH_TEST_BROWSER_LOG")
	if log == "" {
		log = t.TempDir() + "/browser.log"
		t.Setenv("OAUTH_TEST_BROWSER", "1")
		t.Setenv("OAUTH_TEST_BROWSER_LOG", log)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, "-test.run=^$"}, log
}

// browserRuns counts the browser command's runs.
func browserRuns(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}
