//go:build wasip1

package wink

// Garbage collection at the edges of calls only.
//
// While the host writes results into the plugin's memory it calls cabi_realloc, and the
// component model forbids calling out of the component until it is done. Go's collector, once
// started, reads the clock (an import) from whatever allocates, so a collection started or
// assisted inside cabi_realloc traps. The SDK therefore turns the automatic collector off and
// collects itself when a call has ended, as GOGC=100 would: once the heap allocated since the
// last collection reaches what survived it (and at least minGrowth).

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// minGrowth is the least allocation between two collections.
const minGrowth = 4 << 20

var (
	heapSamples = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/live:bytes"}}
	// allocatedAtGC and liveAtGC are the heap's figures after the last collection.
	allocatedAtGC, liveAtGC uint64
)

func init() {
	debug.SetGCPercent(-1)
	collect()
}

// collect runs a whole collection (none is left half done) and notes the heap after it.
func collect() {
	runtime.GC()
	metrics.Read(heapSamples)
	allocatedAtGC, liveAtGC = heapSamples[0].Value.Uint64(), heapSamples[1].Value.Uint64()
}

// collectIfGrown collects when the heap has grown enough since the last collection. It runs
// after every export, outside any import.
func collectIfGrown() {
	metrics.Read(heapSamples)
	if heapSamples[0].Value.Uint64()-allocatedAtGC >= max(liveAtGC, minGrowth) {
		collect()
	}
}
