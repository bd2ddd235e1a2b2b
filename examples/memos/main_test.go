package main

import (
	"testing"

	"go.uber.org/goleak"
)

// The tests run the server in-process; every goroutine it starts must be
// gone when they end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
