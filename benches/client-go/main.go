// Command wink-client-go-peer is client-go's SharedIndexInformer as a consumer of the
// benchmarks (benches/src/client_go.rs): an informer of Pods from the local API server with a
// no-op handler, driven over stdin and reporting over stdout, one line per message.
//
// It is set up as the benchmarks' other consumers are: a LIST in pages of 500 (client-go's
// pager default, as wink's reflector and kube-rs's watcher), then a WATCH; no resync; JSON
// (the local API server speaks nothing else, and the other consumers decode JSON); no
// client-side rate limit (neither kube-rs nor wink has one, client-go's default of 5
// requests/s would throttle the 20 pages of the list); and no streaming list
// (WatchListClient, on by default since client-go 1.35, is turned off: the other consumers
// LIST, and the benchmark holds WATCH requests at a gate while it writes the events).
//
// Commands (stdin):
//
//	start <stream|latency> <pods> <kubeconfig>  a new client and informer of Pods; <pods> are listed
//	expect <n>                                  then n lines "<name> <resourceVersion>": the final states
//	open                                        lets the held WATCH through (stream mode)
//	stop                                        stops the informer
//
// Reports (stdout):
//
//	ready                          after startup
//	synced <started> <synced>      every listed Pod was handled (at <synced>); the informer
//	                               was created at <started>
//	held                           the informer's WATCH waits at the gate (stream mode)
//	done <opened> <done> <calls>   every Pod's final state was handled (at <done>); the gate
//	                               opened at <opened>; <calls> handler calls (initial adds,
//	                               adds and updates) in all
//	update <rv> <at>               (latency mode) the handler returned for an update to <rv>
//	stopped                        the informer stopped
//
// Instants are nanoseconds of CLOCK_MONOTONIC, the clock Rust's Instant reads, so the
// benchmark measures from and to them without the pipe's delay.
//
// The handler mirrors the Rust consumers' tracking (benches/src/track.rs): the no-op handler
// reads the Pod's name, then the delivery is counted: one map lookup by name and a
// comparison of resourceVersions per event.
package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// out writes the report lines; handlers of one informer and the command loop share it.
var out = struct {
	sync.Mutex
	w *bufio.Writer
}{w: bufio.NewWriter(os.Stdout)}

func report(format string, args ...any) {
	out.Lock()
	defer out.Unlock()
	fmt.Fprintf(out.w, format+"\n", args...)
	if err := out.w.Flush(); err != nil {
		os.Exit(1) // The benchmark is gone.
	}
}

// listThenWatch keeps client-go's feature gates but WatchListClient.
type listThenWatch struct{ clientfeatures.Gates }

func (g listThenWatch) Enabled(f clientfeatures.Feature) bool {
	return f != clientfeatures.WatchListClient && g.Gates.Enabled(f)
}

// monoAnchor relates Go's clock to CLOCK_MONOTONIC: (time.Now(), the clock's nanoseconds),
// read back to back; the pair read in the shortest interval of several.
type monoAnchor struct {
	at   time.Time
	nsec int64
}

func anchor() monoAnchor {
	var best monoAnchor
	bestGap := time.Duration(1<<63 - 1)
	for i := 0; i < 100; i++ {
		var ts unix.Timespec
		before := time.Now()
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			fmt.Fprintln(os.Stderr, "wink-client-go-peer: clock_gettime:", err)
			os.Exit(1)
		}
		after := time.Now()
		if gap := after.Sub(before); gap < bestGap {
			bestGap = gap
			best = monoAnchor{at: before.Add(gap / 2), nsec: ts.Nano()}
		}
	}
	return best
}

func (a monoAnchor) mono(t time.Time) int64 { return a.nsec + int64(t.Sub(a.at)) }

// gate holds WATCH requests until opened, as benches/src/gate.rs does for the Rust clients.
type gate struct {
	opened   chan struct{}
	openOnce sync.Once
	openedAt atomic.Pointer[time.Time]
}

func newGate(open bool) *gate {
	g := &gate{opened: make(chan struct{})}
	if open {
		g.open()
	}
	return g
}

func (g *gate) open() {
	g.openOnce.Do(func() {
		now := time.Now()
		g.openedAt.Store(&now)
		close(g.opened)
	})
}

// gated is a client's transport behind a gate.
type gated struct {
	*gate
	next http.RoundTripper
}

func (g gated) RoundTrip(req *http.Request) (*http.Response, error) {
	if w := req.URL.Query().Get("watch"); w == "true" || w == "1" {
		select {
		case <-g.opened:
		default:
			report("held")
			select {
			case <-g.opened:
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
		}
	}
	return g.next.RoundTrip(req)
}

// sink keeps the handler's work from being optimized away.
var sink atomic.Int64

// readName is the benchmarks' no-op handler: it reads the Pod's name.
func readName(obj any) {
	if pod, ok := obj.(*corev1.Pod); ok {
		sink.Add(int64(len(pod.Name)))
	}
}

// tracked is the no-op handler followed by the progress bookkeeping of one run.
type tracked struct {
	latency     bool
	clock       monoAnchor
	gate        *gate
	startedAt   time.Time
	initialLeft atomic.Int64
	calls       atomic.Int64
	targetLock  sync.RWMutex
	target      map[string]uint64
	left        atomic.Int64
}

func (t *tracked) initial() {
	t.calls.Add(1)
	if t.initialLeft.Add(-1) == 0 {
		report("synced %d %d", t.clock.mono(t.startedAt), t.clock.mono(time.Now()))
	}
}

func (t *tracked) seen(name, resourceVersion string) {
	t.calls.Add(1)
	t.targetLock.RLock()
	defer t.targetLock.RUnlock()
	want, ok := t.target[name]
	if !ok {
		return
	}
	if rv, err := strconv.ParseUint(resourceVersion, 10, 64); err == nil && rv == want && t.left.Add(-1) == 0 {
		now := time.Now()
		opened := t.gate.openedAt.Load()
		report("done %d %d %d", t.clock.mono(*opened), t.clock.mono(now), t.calls.Load())
	}
}

func (t *tracked) OnAdd(obj any, isInInitialList bool) {
	readName(obj)
	if isInInitialList {
		t.initial()
	} else if pod, ok := obj.(*corev1.Pod); ok {
		t.seen(pod.Name, pod.ResourceVersion)
	}
}

func (t *tracked) OnUpdate(_, newObj any) {
	readName(newObj)
	pod, ok := newObj.(*corev1.Pod)
	if !ok {
		return
	}
	if t.latency {
		// The handler returned: stamped now, written after.
		at := time.Now()
		report("update %s %d", pod.ResourceVersion, t.clock.mono(at))
		return
	}
	t.seen(pod.Name, pod.ResourceVersion)
}

func (t *tracked) OnDelete(obj any) { readName(obj) }

// run is one started informer.
type run struct {
	handler *tracked
	stop    chan struct{}
	factory informers.SharedInformerFactory
}

func start(mode string, pods int64, kubeconfig string, clock monoAnchor) (*run, error) {
	latency := mode == "latency"
	if !latency && mode != "stream" {
		return nil, fmt.Errorf("unknown mode %q", mode)
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	config.ContentType = "application/json"
	config.AcceptContentTypes = "application/json"
	config.QPS = -1
	g := newGate(latency)
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper { return gated{g, rt} })
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	handler := &tracked{latency: latency, clock: clock, gate: g, target: map[string]uint64{}}
	handler.initialLeft.Store(pods)
	handler.left.Store(1<<63 - 1)
	r := &run{handler: handler, stop: make(chan struct{})}
	// Timed from here, as the Rust consumers are timed from their informer's creation.
	handler.startedAt = time.Now()
	r.factory = informers.NewSharedInformerFactory(clientset, 0)
	informer := r.factory.Core().V1().Pods().Informer()
	if _, err := informer.AddEventHandler(handler); err != nil {
		return nil, err
	}
	r.factory.Start(r.stop)
	return r, nil
}

func (r *run) expect(target map[string]uint64) {
	r.handler.targetLock.Lock()
	r.handler.target = target
	r.handler.targetLock.Unlock()
	r.handler.left.Store(int64(len(target)))
}

func (r *run) shutdown() {
	close(r.stop)
	r.handler.gate.open()
	r.factory.Shutdown()
}

func main() {
	clientfeatures.ReplaceFeatureGates(listThenWatch{clientfeatures.FeatureGates()})
	clock := anchor()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64*1024), 1024*1024)
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "wink-client-go-peer: "+format+"\n", args...)
		os.Exit(2)
	}
	var current *run
	report("ready")
	for in.Scan() {
		words := strings.Fields(in.Text())
		if len(words) == 0 {
			continue
		}
		switch words[0] {
		case "start":
			if len(words) != 4 || current != nil {
				fail("bad start: %q", in.Text())
			}
			pods, err := strconv.ParseInt(words[2], 10, 64)
			if err != nil {
				fail("bad Pod count: %v", err)
			}
			if current, err = start(words[1], pods, words[3], clock); err != nil {
				fail("starting the informer: %v", err)
			}
		case "expect":
			if len(words) != 2 || current == nil {
				fail("bad expect: %q", in.Text())
			}
			n, err := strconv.Atoi(words[1])
			if err != nil {
				fail("bad count: %v", err)
			}
			target := make(map[string]uint64, n)
			for i := 0; i < n && in.Scan(); i++ {
				var name string
				var rv uint64
				if _, err := fmt.Sscan(in.Text(), &name, &rv); err != nil {
					fail("bad target %q: %v", in.Text(), err)
				}
				target[name] = rv
			}
			current.expect(target)
		case "open":
			if current == nil {
				fail("open without start")
			}
			current.handler.gate.open()
		case "stop":
			if current != nil {
				current.shutdown()
				current = nil
			}
			// Not timed: the next run starts with the previous one's garbage collected.
			runtime.GC()
			debug.FreeOSMemory()
			report("stopped")
		default:
			fail("unknown command %q", words[0])
		}
	}
	if current != nil {
		current.shutdown()
	}
}
