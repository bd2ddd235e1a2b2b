package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/mcp-bridge/mcp-bridge/bridge/connect"
	"github.com/mcp-bridge/mcp-bridge/bridge/teamconfig"
	"github.com/mcp-bridge/mcp-bridge/httpclient"
	"github.com/mcp-bridge/mcp-bridge/httpclient/oauth"
)

// oauthFlags are the OAuth client flags of connect and auth login.
type oauthFlags struct {
	clientID     string
	clientSecret string
	metadataURL  string
	resource     string
	noResource   bool
	scopes       []string
	grant        string
	keyFile      string
	keyAlg       string
	browser      string
	callbackPort int
	timeout      time.Duration
}

func (o *oauthFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&o.clientID, "oauth-client-id", "", "OAuth: a pre-registered client `id` (else a client ID metadata document, else dynamic registration)")
	fs.StringVar(&o.clientSecret, "oauth-client-secret", "", "OAuth: the pre-registered client's `secret` (env MCP_BRIDGE_OAUTH_CLIENT_SECRET)")
	fs.StringVar(&o.metadataURL, "oauth-client-metadata-url", "", "OAuth: an https `URL` of this client's Client ID Metadata Document, used as client_id where supported")
	fs.StringVar(&o.resource, "oauth-resource", "", "OAuth: the resource (RFC 8707) `URL` to request tokens for (default: the server's own)")
	fs.BoolVar(&o.noResource, "oauth-no-resource", false, "OAuth: send no resource parameter (for authorization servers that reject it)")
	fs.StringArrayVar(&o.scopes, "oauth-scope", nil, "OAuth: request these `scopes` (space separated, repeatable) instead of the server's challenge or scopes_supported")
	fs.StringVar(&o.grant, "oauth-grant", oauth.GrantAuthorizationCode, "OAuth: `grant` authorization_code (a browser login), device_code (a code entered on another device: headless machines) or client_credentials (a machine client)")
	fs.StringVar(&o.keyFile, "oauth-client-key", "", "OAuth: PEM private key `file` for private_key_jwt client authentication")
	fs.StringVar(&o.keyAlg, "oauth-client-key-alg", "", "OAuth: the key's JWT `alg`: ES256 or RS256 (default: from the key)")
	fs.StringVar(&o.browser, "oauth-browser", "", "OAuth: `command` that opens the login URL, appended as its last argument (default $BROWSER, else the system opener)")
	fs.IntVar(&o.callbackPort, "oauth-callback-port", 0, "OAuth: loopback `port` of the redirect URI http://127.0.0.1:PORT/callback (default: the registered one, else any free port)")
	fs.DurationVar(&o.timeout, "oauth-timeout", oauth.DefaultTimeout, "OAuth: how long to wait for a browser login (or a device code's approval)")
}

// config turns the flags into an oauth.Config for serverURL. Logins print
// the URL to open on stderr.
func (o *oauthFlags) config(fs *pflag.FlagSet, serverURL string, log zerolog.Logger, stderr io.Writer) (oauth.Config, error) {
	if err := applyEnv(fs, "oauth-client-secret"); err != nil {
		return oauth.Config{}, err
	}
	return o.build(serverURL, log, stderr)
}

// entryOAuth is a configuration file entry's "oauth" as the --oauth-*
// flags would give it, so that one builder serves both.
func entryOAuth(e *teamconfig.OAuth) oauthFlags {
	o := oauthFlags{
		clientID:     e.ClientID,
		clientSecret: e.ClientSecret,
		metadataURL:  e.ClientMetadataURL,
		resource:     e.Resource,
		noResource:   e.NoResource,
		scopes:       e.Scopes,
		grant:        e.Grant,
		callbackPort: e.CallbackPort,
		timeout:      oauth.DefaultTimeout,
	}
	if o.grant == "" {
		o.grant = oauth.GrantAuthorizationCode
	}
	if e.Timeout > 0 {
		o.timeout = time.Duration(e.Timeout)
	}
	return o
}

// build checks the settings and makes the oauth.Config for serverURL,
// with the default token store.
func (o *oauthFlags) build(serverURL string, log zerolog.Logger, stderr io.Writer) (oauth.Config, error) {
	grant, err := oneOf("--oauth-grant", o.grant, oauth.GrantAuthorizationCode, oauth.GrantDeviceCode, oauth.GrantClientCredentials)
	if err != nil {
		return oauth.Config{}, err
	}
	if o.callbackPort < 0 || o.callbackPort > 65535 {
		return oauth.Config{}, usagef("--oauth-callback-port %d: want 1-65535", o.callbackPort)
	}
	if o.timeout <= 0 {
		return oauth.Config{}, usagef("--oauth-timeout %v: want a positive duration", o.timeout)
	}
	if o.noResource && o.resource != "" {
		return oauth.Config{}, usagef("--oauth-resource and --oauth-no-resource contradict each other")
	}
	if o.clientSecret != "" && o.clientID == "" {
		return oauth.Config{}, usagef("--oauth-client-secret needs --oauth-client-id")
	}
	store, err := oauth.DefaultStore()
	if err != nil {
		return oauth.Config{}, err
	}
	cfg := oauth.Config{
		ServerURL:         serverURL,
		ClientID:          o.clientID,
		ClientSecret:      o.clientSecret,
		ClientMetadataURL: o.metadataURL,
		Resource:          o.resource,
		NoResource:        o.noResource,
		Grant:             grant,
		CallbackPort:      o.callbackPort,
		Timeout:           o.timeout,
		Store:             store,
		Prompt:            stderr,
		Logger:            log,
		ClientName:        "mcp-bridge",
	}
	for _, s := range o.scopes {
		cfg.Scopes = append(cfg.Scopes, strings.Fields(s)...)
	}
	if o.browser != "" {
		cfg.Browser = strings.Fields(o.browser)
	}
	if o.keyFile != "" {
		b, err := os.ReadFile(o.keyFile)
		if err != nil {
			return oauth.Config{}, fmt.Errorf("--oauth-client-key: %w", err)
		}
		cfg.ClientKey, _, err = oauth.ParseClientKey(b, o.keyAlg)
		if err != nil {
			return oauth.Config{}, usagef("--oauth-client-key: %v", err)
		}
	} else if o.keyAlg != "" {
		return oauth.Config{}, usagef("--oauth-client-key-alg needs --oauth-client-key")
	}
	return cfg, nil
}

// remoteAuths builds and owns the OAuth clients of a configuration file's
// remote entries (serve --config, connect --config): one Authorizer per
// entry, kept across reloads while its url and settings stay, all in the
// default token store (keyed by server as for a single connect, so a
// login is shared with `connect URL` and `auth login URL`) and in one
// oauth.Group, so that entries behind one authorization server and client
// log in with one browser run.
type remoteAuths struct {
	tr     *http.Transport
	log    zerolog.Logger
	stderr io.Writer
	group  *oauth.Group
	// notice, if set before the first client, gets the device logins'
	// codes (connect --config: its hostNotice.device).
	notice func(server string, n oauth.DeviceNotice)

	mu  sync.Mutex
	azs map[string]*oauth.Authorizer // key: url and settings
}

func newRemoteAuths(tr *http.Transport, log zerolog.Logger, stderr io.Writer) *remoteAuths {
	return &remoteAuths{tr: tr, log: log, stderr: stderr, group: oauth.NewGroup(), azs: map[string]*oauth.Authorizer{}}
}

// client is gateway.Config.RemoteClient: the OAuth HTTP client of entry s.
func (r *remoteAuths) client(s *teamconfig.Server) (*http.Client, error) {
	key, _ := json.Marshal(struct {
		URL   string
		OAuth *teamconfig.OAuth
	}{s.URL, s.OAuth})
	r.mu.Lock()
	defer r.mu.Unlock()
	az := r.azs[string(key)]
	if az == nil {
		o := entryOAuth(s.OAuth)
		cfg, err := o.build(s.URL, r.log.With().Str("server", s.Name).Logger(), r.stderr)
		if err != nil {
			return nil, err
		}
		cfg.HTTPClient = oauthClient(r.tr)
		cfg.Group = r.group
		cfg.DeviceNotice = r.notice
		if az, err = oauth.New(cfg); err != nil {
			return nil, err
		}
		r.azs[string(key)] = az
	}
	return oauthHTTPClient(az, r.tr), nil
}

// close stops every login in progress; after the gateway's Close.
func (r *remoteAuths) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, az := range r.azs {
		az.Close()
		delete(r.azs, k)
	}
}

// hostNotice passes a device login's code to the host's MCP session as a
// log notification, once the bridge that speaks to the host exists and
// the host can take one (connect.Bridge.LogToHost); stderr has it anyway.
type hostNotice struct {
	b atomic.Pointer[connect.Bridge]
}

// device is oauth.Config.DeviceNotice.
func (h *hostNotice) device(server string, n oauth.DeviceNotice) {
	b := h.b.Load()
	if b == nil {
		return
	}
	msg := fmt.Sprintf("mcp-bridge: to authorize access to %s, open %s on any device with a browser and enter the code %s (it expires in %s)",
		server, n.VerificationURI, n.UserCode, n.ExpiresIn.Round(time.Second))
	data := map[string]string{"message": msg, "server": server, "verification_uri": n.VerificationURI, "user_code": n.UserCode}
	if n.VerificationURIComplete != "" {
		data["verification_uri_complete"] = n.VerificationURIComplete
	}
	b.LogToHost("warning", data)
}

// oauthHTTPClient is the HTTP client connect uses with OAuth on: t (nil:
// the transport httpclient would build for itself) wrapped by
// oauth.Transport.
func oauthHTTPClient(a *oauth.Authorizer, t *http.Transport) *http.Client {
	if t == nil {
		t = httpclient.NewTransport()
	}
	return &http.Client{Transport: &oauth.Transport{Base: t, Auth: a}}
}
