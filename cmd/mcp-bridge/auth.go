package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcp-bridge/mcp-bridge/bridge/teamconfig"
	"github.com/mcp-bridge/mcp-bridge/httpclient/oauth"
)

const authUsage = `Usage:
  mcp-bridge auth login [flags] URL   log in to the MCP server at URL now (same OAuth flags as connect)
  mcp-bridge auth status [URL]        stored logins: server, issuer, client, scopes, expiry (never tokens)
  mcp-bridge auth status --config FILE  every entry of a configuration file and its login state
  mcp-bridge auth logout URL          forget the tokens and client registration stored for URL
`

const (
	authLoginHelp = `Usage: mcp-bridge auth login [flags] URL

Logs in to the MCP server at URL and stores the tokens for connect.
`
	authStatusHelp = `Usage: mcp-bridge auth status [URL | --config FILE]

Lists the stored logins (or the one for URL): server, issuer, client, scopes,
expiry and whether a refresh token is held. Never prints a token. With
--config, lists every enabled entry of the file (as serve --config and
connect --config read it) and its login state.
`
	authLogoutHelp = `Usage: mcp-bridge auth logout URL

Forgets the tokens and the client registration stored for URL.
`
)

// authLoginFlagSet registers auth login's flags (connect's OAuth, CA and
// log flags); help goes to out.
func authLoginFlagSet(o *oauthFlags, lf *logFlags, ca *caFlag, out io.Writer) *pflag.FlagSet {
	fs := newFlagSet("auth login", out, authLoginHelp)
	o.register(fs)
	ca.register(fs, caForConnect)
	lf.register(fs)
	return fs
}

// runAuth runs "mcp-bridge auth ...". Its output for a person goes to
// stdout; logs and the login URL go to stderr.
func runAuth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageHint("auth", "want login, status or logout")
	}
	switch args[0] {
	case "login":
		return runAuthLogin(ctx, args[1:], stdout, stderr)
	case "status":
		return runAuthStatus(args[1:], stdout, stderr)
	case "logout":
		return runAuthLogout(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, authUsage)
		return nil
	}
	return usageHint("auth", "unknown command %q: want login, status or logout", args[0])
}

func serverArg(fs *pflag.FlagSet, cmd string) (string, error) {
	if fs.NArg() != 1 {
		return "", usageHint("auth "+cmd, "want exactly one URL, got %d arguments", fs.NArg())
	}
	u, err := url.Parse(fs.Arg(0))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", usagef("auth %s: %q is not an http(s) URL", cmd, fs.Arg(0))
	}
	return u.String(), nil
}

func runAuthLogin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o oauthFlags
	var lf logFlags
	var ca caFlag
	fs := authLoginFlagSet(&o, &lf, &ca, stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	server, err := serverArg(fs, "login")
	if err != nil {
		return err
	}
	log, err := lf.logger(stderr)
	if err != nil {
		return err
	}
	tr, err := ca.transport()
	if err != nil {
		return err
	}
	cfg, err := o.config(fs, server, log, stderr)
	if err != nil {
		return err
	}
	cfg.HTTPClient = oauthClient(tr)
	az, err := oauth.New(cfg)
	if err != nil {
		return usagef("auth login: %v", err)
	}
	defer az.Close()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	g, err := az.Login(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Logged in to %s\n", az.Server())
	printGrant(stdout, g, time.Now())
	return nil
}

// authStatusFlagSet registers auth status's flags; help goes to out.
func authStatusFlagSet(config *string, out io.Writer) *pflag.FlagSet {
	fs := newFlagSet("auth status", out, authStatusHelp)
	fs.StringVar(config, "config", "", "list the entries of this configuration `file` and their login state")
	return fs
}

func runAuthStatus(args []string, stdout, stderr io.Writer) error {
	var config string
	fs := authStatusFlagSet(&config, stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	store, err := oauth.DefaultStore()
	if err != nil {
		return err
	}
	if config != "" {
		if fs.NArg() > 0 {
			return usagef("auth status: --config and a URL are exclusive")
		}
		return configStatus(config, store, stdout)
	}
	var recs []*oauth.Record
	if fs.NArg() > 0 {
		server, err := serverArg(fs, "status")
		if err != nil {
			return err
		}
		canon, err := oauth.CanonicalResource(server)
		if err != nil {
			return usagef("auth status: %v", err)
		}
		r, err := store.Load(canon)
		if err != nil {
			return err
		}
		recs = []*oauth.Record{r}
	} else if recs, err = store.List(); err != nil {
		return err
	}
	now := time.Now()
	n := 0
	for _, r := range recs {
		if len(r.Grants) == 0 {
			continue
		}
		n++
		fmt.Fprintf(stdout, "%s\n", r.Server)
		for i := range r.Grants {
			printGrant(stdout, &r.Grants[i], now)
		}
	}
	if n == 0 {
		fmt.Fprintf(stdout, "No stored logins (store: %s).\n", store.Dir)
	}
	return nil
}

// configStatus lists every enabled entry of the configuration file and
// its login state: the stored grants of an entry with "oauth" (its
// configured client's only, when it names one).
func configStatus(file string, store *oauth.Store, w io.Writer) error {
	cfg, err := teamconfig.Load(file)
	if err != nil {
		return fmt.Errorf("auth status: --config %s: %w", file, err)
	}
	now := time.Now()
	for _, name := range cfg.Enabled() {
		s := cfg.Servers[name]
		switch {
		case !s.Remote():
			fmt.Fprintf(w, "%s: stdio command, no OAuth\n", name)
			continue
		case s.OAuth == nil:
			fmt.Fprintf(w, "%s: %s, no OAuth (no \"oauth\" settings)\n", name, safeURLString(s.URL))
			continue
		}
		canon, err := oauth.CanonicalResource(s.URL)
		if err != nil {
			fmt.Fprintf(w, "%s: %s: %v\n", name, safeURLString(s.URL), err)
			continue
		}
		rec, err := store.Load(canon)
		if err != nil {
			return err
		}
		var grants []*oauth.Grant
		for i := range rec.Grants {
			g := &rec.Grants[i]
			if g.Token.AccessToken != "" && (s.OAuth.ClientID == "" || g.Client.ID == s.OAuth.ClientID) {
				grants = append(grants, g)
			}
		}
		state := "not logged in"
		if len(grants) > 0 {
			state = "logged in"
		}
		fmt.Fprintf(w, "%s: %s, OAuth %s: %s\n", name, safeURLString(canon), s.OAuth.Grant, state)
		for _, g := range grants {
			printGrant(w, g, now)
		}
	}
	return nil
}

// safeURLString is u without user info or query, which may hold secrets.
func safeURLString(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable url)"
	}
	return safeURL(p)
}

// printGrant describes g for a person: never a token or secret value.
func printGrant(w io.Writer, g *oauth.Grant, now time.Time) {
	fmt.Fprintf(w, "  issuer:   %s\n", g.Issuer)
	fmt.Fprintf(w, "  client:   %s (%s)\n", g.Client.ID, g.Client.Source)
	scopes := strings.Join(g.Token.Scopes, " ")
	if scopes == "" {
		scopes = "(none)"
	}
	fmt.Fprintf(w, "  scopes:   %s\n", scopes)
	switch {
	case g.Token.AccessToken == "":
		fmt.Fprintf(w, "  token:    none\n")
	case g.Token.Expiry.IsZero():
		fmt.Fprintf(w, "  expires:  never stated\n")
	case g.Token.Expiry.Before(now):
		fmt.Fprintf(w, "  expires:  %s (expired)\n", g.Token.Expiry.Local().Format(time.RFC3339))
	default:
		fmt.Fprintf(w, "  expires:  %s (in %s)\n", g.Token.Expiry.Local().Format(time.RFC3339), g.Token.Expiry.Sub(now).Round(time.Second))
	}
	refresh := "no"
	if g.Token.RefreshToken != "" {
		refresh = "yes"
	}
	fmt.Fprintf(w, "  refresh:  %s\n", refresh)
}

func runAuthLogout(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("auth logout", stdout, authLogoutHelp)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	server, err := serverArg(fs, "logout")
	if err != nil {
		return err
	}
	canon, err := oauth.CanonicalResource(server)
	if err != nil {
		return usagef("auth logout: %v", err)
	}
	store, err := oauth.DefaultStore()
	if err != nil {
		return err
	}
	found, err := store.Delete(canon)
	if err != nil {
		return err
	}
	if found {
		fmt.Fprintf(stdout, "Logged out of %s: its tokens and client registration are forgotten here.\n"+
			"The authorization server may still consider the grant valid; revoke it there to end it everywhere.\n", canon)
	} else {
		fmt.Fprintf(stdout, "No stored login for %s.\n", canon)
	}
	return nil
}
