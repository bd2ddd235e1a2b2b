// Command hostilechild is a 2026-07-28 MCP stdio server that misbehaves on
// request, for the bridge's budget tests. It answers server/discover (so
// the bridge takes it for ready) and one tool, "big" {"bytes": N}: a result
// whose text is N bytes long.
//
// With -deaf it stops reading its stdin once it has answered
// server/discover. With -marker PATH as well, going deaf creates PATH, and
// a child started while PATH exists takes 2 s to start serving: the
// bridge's restart of a hung child is then visible long enough to be
// observed.
//
// With -crash PATH it appends a line to PATH and exits with status 3 at
// once: a crash loop, each start counted in PATH.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"time"
)

func main() {
	deaf := flag.Bool("deaf", false, "stop reading stdin after answering server/discover")
	marker := flag.String("marker", "", "file created on going deaf; its presence slows the start")
	crash := flag.String("crash", "", "append a line to this file and exit 3 at once")
	flag.Parse()
	if *crash != "" {
		f, err := os.OpenFile(*crash, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			f.WriteString("start\n")
			f.Close()
		}
		os.Exit(3)
	}
	if *marker != "" {
		if _, err := os.Stat(*marker); err == nil {
			time.Sleep(2 * time.Second)
		}
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					Bytes int `json:"bytes"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil {
			continue
		}
		switch {
		case m.Method == "server/discover":
			out.WriteString(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"supportedVersions":["2026-07-28"],"capabilities":{},"serverInfo":{"name":"hostilechild","version":"1"}}}` + "\n")
			if *deaf {
				out.Flush()
				if *marker != "" {
					os.WriteFile(*marker, nil, 0o600)
				}
				for { // never read again, never answer
					time.Sleep(time.Hour)
				}
			}
		case m.Method == "tools/call" && m.Params.Name == "big":
			out.WriteString(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[{"type":"text","text":"`)
			out.Write(bytes.Repeat([]byte("x"), m.Params.Arguments.Bytes))
			out.WriteString(`"}]}}` + "\n")
		default:
			out.WriteString(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32601,"message":"Method not found"}}` + "\n")
		}
		out.Flush()
	}
}
