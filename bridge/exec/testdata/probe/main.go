// Command probe is the program exec's tests declare as tools: it shows
// what it received (argv, environment) and misbehaves on request.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		os.Exit(2)
	}
	switch os.Args[1] {
	case "argv": // the arguments, as one JSON array
		b, _ := json.Marshal(os.Args[1:])
		fmt.Println(string(b))
	case "env": // the whole environment, as a JSON object
		env := map[string]string{}
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		b, _ := json.Marshal(env)
		fmt.Println(string(b))
	case "pwd":
		wd, _ := os.Getwd()
		fmt.Println(wd)
	case "exit": // some output on both streams, then exit N
		n, _ := strconv.Atoi(os.Args[2])
		fmt.Println("to stdout")
		fmt.Fprintln(os.Stderr, "to stderr")
		os.Exit(n)
	case "flood": // N bytes of lines on stdout
		n, _ := strconv.Atoi(os.Args[2])
		w := bufio.NewWriterSize(os.Stdout, 64<<10)
		line := strings.Repeat("x", 99) + "\n"
		for ; n >= len(line); n -= len(line) {
			w.WriteString(line)
		}
		w.WriteString(line[:n])
		w.Flush()
	case "binary":
		os.Stdout.Write([]byte{0xff, 0xfe, 0x00, 'a', 0x80})
	case "lines": // N lines, one every 300ms
		n, _ := strconv.Atoi(os.Args[2])
		for i := range n {
			fmt.Println("line", i)
			time.Sleep(300 * time.Millisecond)
		}
	case "spawn": // a grandchild, both ignoring SIGTERM; their pids on stdout (and in file $2 if given); sleep
		signal.Ignore(syscall.SIGTERM)
		gc := exec.Command(os.Args[0], "sleep")
		if err := gc.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		pids := fmt.Sprintf("%d %d\n", os.Getpid(), gc.Process.Pid)
		os.Stdout.WriteString(pids)
		if len(os.Args) > 2 {
			os.WriteFile(os.Args[2]+".tmp", []byte(pids), 0o600)
			os.Rename(os.Args[2]+".tmp", os.Args[2])
		}
		time.Sleep(time.Hour)
	case "sleep":
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(time.Hour)
	default:
		os.Exit(2)
	}
}
