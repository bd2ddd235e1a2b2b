package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

const completionHelp = `Usage: mcp-bridge completion bash|zsh|fish|powershell

Prints a completion script for the shell: subcommands, each command's flags,
the values of enumerated flags and file names where a flag takes a file.

  bash:       source <(mcp-bridge completion bash)        (or save it under
              /etc/bash_completion.d/ or ~/.local/share/bash-completion/completions/mcp-bridge)
  zsh:        mcp-bridge completion zsh > "${fpath[1]}/_mcp-bridge"
  fish:       mcp-bridge completion fish > ~/.config/fish/completions/mcp-bridge.fish
  powershell: mcp-bridge completion powershell | Out-String | Invoke-Expression
              (add the line to $PROFILE to keep it)
`

// cmdSpec is one completable command: its words after "mcp-bridge" and its
// flags, built by the same functions that parse them, so a new flag is
// completed without being listed twice.
type cmdSpec struct {
	name    string // "serve", "auth login"
	summary string
	flags   *pflag.FlagSet // nil: takes none
}

func commandSpecs() []cmdSpec {
	var (
		sf serveFlags
		cf connectFlags
		o  oauthFlags
		lf logFlags
		ca caFlag
		ef execFlags
	)
	return []cmdSpec{
		{"serve", "expose a local stdio MCP server at an HTTP /mcp endpoint", serveFlagSet(&sf, io.Discard)},
		{"connect", "use a remote MCP server from a stdio-only host", connectFlagSet(&cf, io.Discard)},
		{"exec", "serve command-line programs as MCP tools on stdio", execFlagSet(&ef, io.Discard)},
		{"auth", "log in to an OAuth-protected server ahead of time, show or forget logins", nil},
		{"auth login", "log in to the MCP server at URL now", authLoginFlagSet(&o, &lf, &ca, io.Discard)},
		{"auth status", "list stored logins", authStatusFlagSet(new(string), io.Discard)},
		{"auth logout", "forget the login stored for URL", nil},
		{"completion", "print a shell completion script", nil},
		{"version", "print the version", nil},
		{"help", "show a command's usage", nil},
	}
}

// flagChoices are the values of the enumerated flags (checked against the
// flag sets by TestCompletionChoicesExist); fileFlags take a path.
var (
	flagChoices = map[string][]string{
		"log-level":      {"trace", "debug", "info", "warn", "error", "none"},
		"log-format":     {"auto", "json", "console"},
		"protocol":       {"auto", "modern", "legacy"},
		"transport":      {"auto", "streamable-http", "sse"},
		"session-mode":   {"auto", "per-session", "shared"},
		"child-per":      {"shared", "principal"},
		"child-protocol": {"auto", "modern", "legacy"},
		"oauth-grant":    {"authorization_code", "device_code", "client_credentials"},
	}
	fileFlags = []string{"tools", "config", "auth-token-file", "tls-cert", "tls-key", "ca-file", "oauth-client-key", "log-file"}
	shells    = []string{"bash", "zsh", "fish", "powershell"}
)

func runCompletion(args []string, stdout io.Writer) error {
	if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
		fmt.Fprint(stdout, completionHelp)
		return nil
	}
	if len(args) != 1 {
		return usageHint("completion", "want one shell: %s", strings.Join(shells, ", "))
	}
	specs := commandSpecs()
	switch args[0] {
	case "bash":
		writeBash(stdout, specs)
	case "zsh":
		writeZsh(stdout, specs)
	case "fish":
		writeFish(stdout, specs)
	case "powershell":
		writePowerShell(stdout, specs)
	default:
		return usageHint("completion", "unknown shell %q: want %s", args[0], strings.Join(shells, ", "))
	}
	return nil
}

// flagWords lists a flag set's names as typed: --long (and -s).
func flagWords(fs *pflag.FlagSet) []string {
	var w []string
	if fs == nil {
		return nil
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		w = append(w, "--"+f.Name)
		if f.Shorthand != "" {
			w = append(w, "-"+f.Shorthand)
		}
	})
	return append(w, "--help")
}

// valueFlags lists the flags that take a value (every one but booleans).
func valueFlags(specs []cmdSpec) []string {
	var names []string
	for _, s := range specs {
		if s.flags == nil {
			continue
		}
		s.flags.VisitAll(func(f *pflag.Flag) {
			if f.NoOptDefVal == "" && !slices.Contains(names, f.Name) {
				names = append(names, f.Name)
			}
		})
	}
	slices.Sort(names)
	return names
}

func subcommands(specs []cmdSpec, parent string) []string {
	var w []string
	for _, s := range specs {
		name, ok := strings.CutPrefix(s.name, parent)
		if parent != "" && !ok {
			continue
		}
		name = strings.TrimPrefix(name, " ")
		if name != "" && !strings.Contains(name, " ") {
			w = append(w, name)
		}
	}
	return w
}

func writeBash(w io.Writer, specs []cmdSpec) {
	fmt.Fprint(w, `# bash completion for mcp-bridge (mcp-bridge completion bash)
_mcp_bridge() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd="" i
	for ((i = 1; i < COMP_CWORD; i++)); do
		# everything after serve's -- is the child's command line
		if [[ ${COMP_WORDS[i]} == -- ]]; then
			COMPREPLY=($(compgen -c -- "$cur"))
			return
		fi
	done
	if ((COMP_CWORD > 1)); then cmd=${COMP_WORDS[1]}; fi
	if [[ $cmd == auth ]] && ((COMP_CWORD > 2)); then cmd="auth ${COMP_WORDS[2]}"; fi
	case $prev in
`)
	for _, name := range sortedKeys(flagChoices) {
		fmt.Fprintf(w, "\t--%s) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", name, strings.Join(flagChoices[name], " "))
	}
	fmt.Fprintf(w, "\t%s) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n", "--"+strings.Join(fileFlags, "|--"))
	var free []string
	for _, n := range valueFlags(specs) {
		if _, ok := flagChoices[n]; !ok && !slices.Contains(fileFlags, n) {
			free = append(free, "--"+n)
		}
	}
	fmt.Fprintf(w, "\t%s|-H) return ;;\n\tesac\n\tlocal words\n\tcase $cmd in\n", strings.Join(free, "|"))
	fmt.Fprintf(w, "\t\"\") words=%q ;;\n", strings.Join(subcommands(specs, ""), " "))
	fmt.Fprintf(w, "\tauth) words=%q ;;\n", strings.Join(subcommands(specs, "auth"), " "))
	fmt.Fprintf(w, "\tcompletion) words=%q ;;\n", strings.Join(shells, " "))
	fmt.Fprintf(w, "\thelp) words=%q ;;\n", strings.Join(subcommands(specs, ""), " "))
	for _, s := range specs {
		if s.flags != nil {
			fmt.Fprintf(w, "\t%q) words=%q ;;\n", s.name, strings.Join(flagWords(s.flags), " "))
		}
	}
	fmt.Fprint(w, `	*) return ;;
	esac
	if [[ $cur == -* || $cmd == "" || $cmd == auth || $cmd == completion || $cmd == help ]]; then
		COMPREPLY=($(compgen -W "$words" -- "$cur"))
	fi
}
complete -o default -F _mcp_bridge mcp-bridge
`)
}

// zshQuote makes s safe inside a single-quoted _arguments spec.
func zshQuote(s string) string {
	r := strings.NewReplacer("'", "", "[", "(", "]", ")", ":", " ", "\\", "", "`", "")
	return r.Replace(s)
}

// summaryOf is the first clause of a flag's usage, for a menu.
func summaryOf(f *pflag.Flag) string {
	_, u := pflag.UnquoteUsage(f)
	u, _, _ = strings.Cut(u, ";")
	u, _, _ = strings.Cut(u, " (")
	if len(u) > 70 {
		u = u[:70]
	}
	return u
}

func writeZsh(w io.Writer, specs []cmdSpec) {
	fmt.Fprint(w, "#compdef mcp-bridge\n# zsh completion for mcp-bridge (mcp-bridge completion zsh)\n_mcp_bridge() {\n\tlocal -a cmds\n\tcmds=(\n")
	for _, s := range specs {
		if !strings.Contains(s.name, " ") {
			fmt.Fprintf(w, "\t\t'%s:%s'\n", s.name, zshQuote(s.summary))
		}
	}
	fmt.Fprint(w, "\t)\n\tif (( CURRENT == 2 )); then\n\t\t_describe 'command' cmds\n\t\treturn\n\tfi\n\tlocal cmd=$words[2]\n")
	fmt.Fprint(w, "\tif [[ $cmd == auth ]]; then\n\t\tif (( CURRENT == 3 )); then\n\t\t\tcompadd login status logout\n\t\t\treturn\n\t\tfi\n\t\tcmd=\"auth $words[3]\"\n\t\tshift 2 words; (( CURRENT -= 2 ))\n\telse\n\t\tshift words; (( CURRENT-- ))\n\tfi\n\tcase $cmd in\n")
	fmt.Fprintf(w, "\tcompletion) compadd %s ;;\n", strings.Join(shells, " "))
	fmt.Fprintf(w, "\thelp) compadd %s ;;\n", strings.Join(subcommands(specs, ""), " "))
	for _, s := range specs {
		if s.flags == nil {
			continue
		}
		fmt.Fprintf(w, "\t'%s')\n\t\t_arguments -s \\\n", s.name)
		s.flags.VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			spec := fmt.Sprintf("--%s[%s]", f.Name, zshQuote(summaryOf(f)))
			if f.NoOptDefVal == "" {
				switch {
				case flagChoices[f.Name] != nil:
					spec += fmt.Sprintf(":%s:(%s)", f.Name, strings.Join(flagChoices[f.Name], " "))
				case slices.Contains(fileFlags, f.Name):
					spec += ":file:_files"
				default:
					spec += fmt.Sprintf(":%s: ", f.Name)
				}
			}
			if f.Shorthand != "" {
				fmt.Fprintf(w, "\t\t\t'*-%s[%s]:value: ' \\\n", f.Shorthand, zshQuote(summaryOf(f)))
			}
			fmt.Fprintf(w, "\t\t\t'%s' \\\n", spec)
		})
		if s.name == "serve" {
			fmt.Fprint(w, "\t\t\t'*:: :_normal'\n\t\t;;\n")
		} else {
			fmt.Fprint(w, "\t\t\t'*: :_files'\n\t\t;;\n")
		}
	}
	fmt.Fprint(w, "\tesac\n}\ncompdef _mcp_bridge mcp-bridge\n")
}

func writeFish(w io.Writer, specs []cmdSpec) {
	fmt.Fprint(w, "# fish completion for mcp-bridge (mcp-bridge completion fish)\ncomplete -c mcp-bridge -f\n")
	fish := strings.NewReplacer("'", "\\'")
	for _, s := range specs {
		if !strings.Contains(s.name, " ") {
			fmt.Fprintf(w, "complete -c mcp-bridge -n __fish_use_subcommand -a %s -d '%s'\n", s.name, fish.Replace(s.summary))
		}
	}
	fmt.Fprintf(w, "complete -c mcp-bridge -n '__fish_seen_subcommand_from auth; and not __fish_seen_subcommand_from %s' -a '%s'\n",
		strings.Join(subcommands(specs, "auth"), " "), strings.Join(subcommands(specs, "auth"), " "))
	fmt.Fprintf(w, "complete -c mcp-bridge -n '__fish_seen_subcommand_from completion' -a '%s'\n", strings.Join(shells, " "))
	fmt.Fprintf(w, "complete -c mcp-bridge -n '__fish_seen_subcommand_from help' -a '%s'\n", strings.Join(subcommands(specs, ""), " "))
	for _, s := range specs {
		if s.flags == nil {
			continue
		}
		cond := "__fish_seen_subcommand_from " + s.name
		if sub, ok := strings.CutPrefix(s.name, "auth "); ok {
			cond = "__fish_seen_subcommand_from auth; and __fish_seen_subcommand_from " + sub
		}
		s.flags.VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			line := fmt.Sprintf("complete -c mcp-bridge -n '%s' -l %s", cond, f.Name)
			if f.Shorthand != "" {
				line += " -s " + f.Shorthand
			}
			if f.NoOptDefVal == "" {
				switch {
				case flagChoices[f.Name] != nil:
					line += fmt.Sprintf(" -x -a '%s'", strings.Join(flagChoices[f.Name], " "))
				case slices.Contains(fileFlags, f.Name):
					line += " -r -F"
				default:
					line += " -x"
				}
			}
			fmt.Fprintf(w, "%s -d '%s'\n", line, fish.Replace(summaryOf(f)))
		})
		if s.name == "serve" {
			fmt.Fprint(w, "complete -c mcp-bridge -n '__fish_seen_subcommand_from serve; and contains -- -- (commandline -opc)' -a '(__fish_complete_subcommand --fcs-skip=3)'\n")
		}
	}
}

func writePowerShell(w io.Writer, specs []cmdSpec) {
	ps := func(words []string) string {
		q := make([]string, len(words))
		for i, x := range words {
			q[i] = "'" + strings.ReplaceAll(x, "'", "''") + "'"
		}
		return "@(" + strings.Join(q, ", ") + ")"
	}
	fmt.Fprint(w, "# PowerShell completion for mcp-bridge (mcp-bridge completion powershell)\n")
	fmt.Fprint(w, "Register-ArgumentCompleter -Native -CommandName 'mcp-bridge', 'mcp-bridge.exe' -ScriptBlock {\n")
	fmt.Fprint(w, "\tparam($wordToComplete, $commandAst, $cursorPosition)\n\t$table = @{\n")
	fmt.Fprintf(w, "\t\t'' = %s\n", ps(subcommands(specs, "")))
	fmt.Fprintf(w, "\t\t'auth' = %s\n", ps(subcommands(specs, "auth")))
	fmt.Fprintf(w, "\t\t'completion' = %s\n", ps(shells))
	fmt.Fprintf(w, "\t\t'help' = %s\n", ps(subcommands(specs, "")))
	for _, s := range specs {
		if s.flags != nil {
			fmt.Fprintf(w, "\t\t'%s' = %s\n", s.name, ps(flagWords(s.flags)))
		}
	}
	fmt.Fprint(w, "\t}\n\t$choices = @{\n")
	for _, name := range sortedKeys(flagChoices) {
		fmt.Fprintf(w, "\t\t'--%s' = %s\n", name, ps(flagChoices[name]))
	}
	fmt.Fprint(w, `	}
	$words = @($commandAst.CommandElements | ForEach-Object { $_.ToString() })
	if ($wordToComplete -ne '') { $words = @($words | Select-Object -SkipLast 1) }
	if ($words -contains '--') { return }
	$key = ''
	if ($words.Count -gt 1) { $key = $words[1] }
	if ($key -eq 'auth' -and $words.Count -gt 2) { $key = 'auth ' + $words[2] }
	$candidates = $table[$key]
	$prev = $words[-1]
	if ($choices.ContainsKey($prev)) { $candidates = $choices[$prev] }
	$candidates | Where-Object { $_ -like "$wordToComplete*" } | ForEach-Object {
		[System.Management.Automation.CompletionResult]::new($_, $_, 'ParameterValue', $_)
	}
}
`)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
