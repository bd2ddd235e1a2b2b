package deploycheck

import (
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction: its keyword (upper case) and
// the rest of its (continued) line.
type instruction struct {
	cmd, args string
	line      int
}

// parseDockerfile reads instructions, joining backslash continuations and
// skipping comments and blank lines.
func parseDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	start := 0
	for i, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if c, ok := strings.CutSuffix(trimmed, "\\"); ok {
			cur.WriteString(c + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args), start})
		cur.Reset()
	}
	return out
}

// execForm decodes an instruction in exec (JSON array) form, which needs no
// shell in the image to run.
func execForm(t *testing.T, in instruction) []string {
	t.Helper()
	var argv []string
	if err := json.Unmarshal([]byte(in.args), &argv); err != nil || len(argv) == 0 {
		t.Errorf("line %d: %s %s is not in exec form (a JSON array): the image has no shell to run it", in.line, in.cmd, in.args)
	}
	return argv
}

// The Dockerfile's properties, checked offline (no registry is needed or
// reachable): the final stage starts from scratch or a distroless static
// image, runs nothing (no RUN: no shell), copies the binaries, runs as a
// non-root user, and starts mcp-bridge serve in exec form with flags that
// exist.
func TestDockerfileLint(t *testing.T) {
	ins := parseDockerfile(t, filepath.Join(deployDir, "Dockerfile"))
	final := 0
	for i, in := range ins {
		if in.cmd == "FROM" {
			final = i
		}
	}
	if len(ins) == 0 || ins[final].cmd != "FROM" {
		t.Fatal("no FROM")
	}
	base, _, _ := strings.Cut(ins[final].args, " ")
	if base != "scratch" && !strings.HasPrefix(base, "gcr.io/distroless/static") {
		t.Errorf("final stage FROM %s: want scratch or a distroless static image (no shell)", base)
	}
	var user string
	var entrypoint, cmd []string
	copied := map[string]bool{}
	for _, in := range ins[final+1:] {
		switch in.cmd {
		case "RUN":
			t.Errorf("line %d: RUN in the final stage needs a shell the image must not have", in.line)
		case "USER":
			user = in.args
		case "COPY", "ADD":
			fields := strings.Fields(in.args)
			for _, f := range fields[:len(fields)-1] {
				if !strings.HasPrefix(f, "--") {
					copied["/"+filepath.Base(f)] = true
				}
			}
		case "ENTRYPOINT":
			entrypoint = execForm(t, in)
		case "CMD":
			cmd = execForm(t, in)
		case "SHELL", "HEALTHCHECK":
			t.Errorf("line %d: %s needs a shell or a probe binary in the image; Kubernetes probes /readyz and /healthz from outside", in.line, in.cmd)
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	if uid == "" || uid == "0" || uid == "root" {
		t.Errorf("USER %q: want a non-root numeric user", user)
	}
	if len(entrypoint) != 1 || !copied[entrypoint[0]] {
		t.Errorf("ENTRYPOINT %q: want the copied mcp-bridge binary (copied: %v)", entrypoint, copied)
	}
	checkServeArgs(t, "Dockerfile CMD", cmd)
	if i := indexOf(cmd, "--"); i >= 0 && i+1 < len(cmd) && !copied[cmd[i+1]] {
		t.Errorf("CMD runs child %q, which the image does not contain (copied: %v)", cmd[i+1], copied)
	}
	for _, f := range cmd {
		if strings.HasPrefix(f, "--auth-token") {
			t.Error("the token must come from MCP_BRIDGE_AUTH_TOKEN, not CMD")
		}
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// The binaries built as the Dockerfile says (CGO_ENABLED=0) are static: no
// program interpreter and no shared libraries, so they run in scratch.
func TestBinariesStatic(t *testing.T) {
	for _, bin := range []string{bridgeBin, memosBin} {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatalf("%s: %v", bin, err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s has a program interpreter: not static", filepath.Base(bin))
			}
		}
		if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
			t.Errorf("%s needs shared libraries %v: not static", filepath.Base(bin), libs)
		}
		f.Close()
	}
}

// Where buildah is installed (scripts/test.sh installs it from Debian's
// packages when it can), the image is built for real from the binaries
// above (FROM scratch pulls nothing) and its configuration inspected.
// Without buildah the two tests above are the Dockerfile's check.
func TestDockerfileBuild(t *testing.T) {
	buildah, err := exec.LookPath("buildah")
	if err != nil {
		t.Logf("buildah is not installed: the Dockerfile is linted (TestDockerfileLint, TestBinariesStatic), not built")
		return
	}
	store := t.TempDir()
	ctx := t.TempDir()
	for _, bin := range []string{bridgeBin, memosBin} {
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ctx, filepath.Base(bin)), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const tag = "localhost/mcp-bridge-deploycheck:test"
	run := func(args ...string) []byte {
		t.Helper()
		argv := append([]string{"--storage-driver", "vfs", "--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run")}, args...)
		out, err := exec.Command(buildah, argv...).CombinedOutput()
		if err != nil {
			t.Fatalf("buildah %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	run("bud", "--isolation", "chroot", "-f", filepath.Join(deployDir, "Dockerfile"), "-t", tag, ctx)
	var img struct {
		OCIv1 struct {
			Config struct {
				User         string
				Entrypoint   []string
				Cmd          []string
				ExposedPorts map[string]struct{}
			} `json:"config"`
		}
	}
	if err := json.Unmarshal(run("inspect", "--type", "image", tag), &img); err != nil {
		t.Fatalf("buildah inspect: %v", err)
	}
	c := img.OCIv1.Config
	if c.User != "65532:65532" || len(c.Entrypoint) != 1 || c.Entrypoint[0] != "/mcp-bridge" || len(c.Cmd) == 0 || c.Cmd[0] != "serve" {
		t.Errorf("image config: user %q, entrypoint %q, cmd %q", c.User, c.Entrypoint, c.Cmd)
	}
	if _, ok := c.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("image exposes %v, want 8080/tcp", c.ExposedPorts)
	}
	run("rmi", "--all", "--force")
	t.Logf("built %s with buildah: user %s, entrypoint %q, cmd %q", tag, c.User, c.Entrypoint, c.Cmd)
}
