package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A Store keeps client registrations and tokens on disk, one file per MCP
// server, so that later runs (and other processes) reuse them. Files are
// 0600 in a 0700 directory and replaced atomically; [Store.Lock] serializes
// logins across processes.
type Store struct {
	// Dir is the directory holding the files, created on first write.
	Dir string
}

// DefaultStore is the store under os.UserConfigDir()/mcp-bridge/oauth.
func DefaultStore() (*Store, error) {
	d, err := os.UserConfigDir()
	if err != nil {
		return nil, fmt.Errorf("oauth: no user config directory for the token store: %w", err)
	}
	return &Store{Dir: filepath.Join(d, "mcp-bridge", "oauth")}, nil
}

// A Record is everything stored for one MCP server.
type Record struct {
	Server string  `json:"server"`
	Grants []Grant `json:"grants"`
}

// A Grant is one client identity at one authorization server and the
// tokens it holds for the server. 2026-07-28 client-registration
// §Authorization Server Binding: clients "MUST associate those credentials
// with the specific authorization server that issued them, keyed by the
// authorization server's issuer identifier".
type Grant struct {
	Issuer   string    `json:"issuer"`
	Resource string    `json:"resource,omitempty"`
	Client   Client    `json:"client"`
	Token    Token     `json:"token,omitzero"`
	Updated  time.Time `json:"updated"`
}

// grant returns the grant for issuer and client id ("" matches any
// client), or nil.
func (r *Record) grant(issuer, clientID string) *Grant {
	for i := range r.Grants {
		g := &r.Grants[i]
		if g.Issuer == issuer && (clientID == "" || g.Client.ID == clientID) {
			return g
		}
	}
	return nil
}

// put replaces the grant with g's issuer and client id, or adds it.
func (r *Record) put(g Grant) {
	r.Grants = slices.DeleteFunc(r.Grants, func(o Grant) bool {
		return o.Issuer == g.Issuer && (o.Client.ID == g.Client.ID || o.Client.Source == g.Client.Source)
	})
	r.Grants = append(r.Grants, g)
}

// latest is the most recently updated grant with a token, or nil.
func (r *Record) latest() *Grant {
	var best *Grant
	for i := range r.Grants {
		g := &r.Grants[i]
		if g.Token.AccessToken != "" && (best == nil || g.Updated.After(best.Updated)) {
			best = g
		}
	}
	return best
}

func (s *Store) base(server string) string {
	sum := sha256.Sum256([]byte(server))
	return filepath.Join(s.Dir, "server-"+hex.EncodeToString(sum[:12]))
}

// Load returns the record for server; a server never seen gives an empty
// record and no error.
func (s *Store) Load(server string) (*Record, error) {
	if err := s.checkDir(); errors.Is(err, fs.ErrNotExist) {
		return &Record{Server: server}, nil
	} else if err != nil {
		return nil, err
	}
	b, err := readStoreFile(s.base(server) + ".json")
	if errors.Is(err, fs.ErrNotExist) {
		return &Record{Server: server}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: token store: %w", err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil || r.Server != server {
		// A damaged file costs a login, nothing more.
		return &Record{Server: server}, nil
	}
	return &r, nil
}

// Save writes r atomically: a temporary file in the same directory, synced,
// then renamed over the old one, so a reader never sees half a file.
func (s *Store) Save(r *Record) error {
	if err := s.mkdir(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	f, err := os.CreateTemp(s.Dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename this fails harmlessly
	if err := f.Chmod(0o600); err != nil && !isWindows {
		f.Close()
		return fmt.Errorf("oauth: token store: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("oauth: token store: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("oauth: token store: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	if err := os.Rename(tmp, s.base(r.Server)+".json"); err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	return nil
}

// Delete forgets everything stored for server.
func (s *Store) Delete(server string) (bool, error) {
	err := os.Remove(s.base(server) + ".json")
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("oauth: token store: %w", err)
	}
	return true, nil
}

// List returns every stored record, sorted by server URL.
func (s *Store) List() ([]*Record, error) {
	if err := s.checkDir(); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: token store: %w", err)
	}
	var out []*Record
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "server-") || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := readStoreFile(filepath.Join(s.Dir, e.Name()))
		if err != nil {
			continue
		}
		var r Record
		if json.Unmarshal(b, &r) == nil && r.Server != "" {
			out = append(out, &r)
		}
	}
	slices.SortFunc(out, func(a, b *Record) int { return strings.Compare(a.Server, b.Server) })
	return out, nil
}

func (s *Store) mkdir() error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("oauth: token store: %w", err)
	}
	return s.checkDir()
}

// ErrStoreUnsafe is matched when the token store's directory or a file in
// it could be written or swapped by someone else.
var ErrStoreUnsafe = errors.New("oauth: token store is not private")

// checkDir refuses a store directory that other users can write to or do
// not own: they could replace the files with tokens and registrations of
// their choosing (a refresh token leading to their account, an
// authorization server of theirs) or read new ones through links they
// plant. MkdirAll keeps the mode of a directory that already exists, so a
// pre-existing 0777 one is refused rather than used.
func (s *Store) checkDir() error {
	fi, err := os.Stat(s.Dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return fmt.Errorf("oauth: token store: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrStoreUnsafe, s.Dir)
	}
	if isWindows {
		return nil // ACLs, not mode bits: the profile directory protects it
	}
	if fi.Mode().Perm()&0o022 != 0 || !ownedByUs(fi) {
		return fmt.Errorf("%w: %s is writable by other users or not owned by this user (mode %v); `chmod 700` it or remove it", ErrStoreUnsafe, s.Dir, fi.Mode().Perm())
	}
	return nil
}

// readStoreFile reads a store file without following a symbolic link: a
// link planted in the directory could otherwise feed the store someone
// else's file. Only a regular file is read, and at most maxDocument bytes.
func readStoreFile(path string) ([]byte, error) {
	if isWindows {
		if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%w: %s is a symbolic link", ErrStoreUnsafe, path)
		}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%w: %s is a symbolic link", ErrStoreUnsafe, path)
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrStoreUnsafe, path)
	}
	return io.ReadAll(io.LimitReader(f, maxDocument))
}

// lockPoll is how often a waiting process tries the lock again. The lock is
// held for a whole browser login, so a tenth of a second is prompt enough.
const lockPoll = 100 * time.Millisecond

// Lock takes the cross-process lock for server, waiting until it is free
// or ctx ends. It is how a second process for the same server waits for
// the first one's login and then reuses its token instead of opening a
// second browser tab.
func (s *Store) Lock(ctx context.Context, server string) (unlock func(), err error) {
	if err := s.mkdir(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(s.base(server)+".lock", os.O_CREATE|os.O_RDWR|oNoFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("oauth: token store lock: %w", err)
	}
	var t *time.Ticker
	for {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("oauth: token store lock: %w", err)
		}
		if ok {
			break
		}
		if t == nil {
			t = time.NewTicker(lockPoll)
			defer t.Stop()
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	return func() {
		_ = unlockFile(f)
		_ = f.Close()
	}, nil
}
