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

	"github.com/mcp-bridge/mcp-bridge/httpclient/oauth"
)

const authUsage = `Usage:
  mcp-bridge auth login [flags] URL   log in to the MCP server at URL now (same OAuth flags as connect)
  mcp-bridge auth status [URL]        stored logins: server, issuer, client, scopes, expiry (never tokens)
  mcp-bridge auth logout URL          forget the tokens and client registration stored for URL
`

const (
	authLoginHelp = `Usage: mcp-bridge auth login [flags] URL

Logs in to the MCP server at URL and stores the tokens for connect.
`
	authStatusHelp = `Usage: mcp-bridge auth status [URL]

Lists the stored logins (or the one for URL): server, issuer, client, scopes,
expiry and whether a refresh token is held. Never prints a token.
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

func runAuthStatus(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("auth status", stdout, authStatusHelp)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	store, err := oauth.DefaultStore()
	if err != nil {
		return err
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
