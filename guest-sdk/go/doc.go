//go:build wasip1

// Package wink writes wink handler plugins in Go: a [Handler] receives every add, update and
// delete of the Kubernetes objects its manifest names, reads them lazily ([Object]), reads
// the host's informer cache ([Cache]), sends requests to the cluster ([Cluster]) within the
// permissions its manifest grants, and logs through [log/slog] into the host's log.
//
// A plugin is a main package that registers its handler in an init function:
//
//	func init() { wink.Handle(&auditor{}) }
//	func main() {}
//
// built with Go's own compiler for WASI preview 1 as a library
// (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared), which `cargo xtask build-plugins`
// does and then makes a component of the `wink:plugin@0.4.0` world.
//
// The sandbox: a plugin gets the clocks, randomness and the log; files, sockets, the
// environment and exiting are refused (their calls fail with "not capable"). Standard output
// and standard error go to the log. Goroutines run within a call; a sleep spins on the clock
// and counts against the call's time limit (use [Action.RequeueAfter] instead). Garbage is
// collected between calls (see gc.go).
package wink

// WITVersion is the version of the `wink:plugin` contract this SDK implements.
const WITVersion = "0.4.0"
