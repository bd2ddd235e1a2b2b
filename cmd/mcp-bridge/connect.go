package main

import (
	"context"
	"errors"
	"io"
)

func runConnect(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return errors.New("connect: not implemented yet")
}
