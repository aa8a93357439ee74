//go:build wasip1

package wink

// The canonical ABI of the component model, as far as the wink contract uses it: memory the
// host writes into (cabi_realloc), and reading what it wrote (strings, lists, options).
//
// Go's garbage collector does not move objects, so a pointer into memory the host filled
// stays valid while Go holds it. What the host allocates during one import call is pinned
// until the call's results are read, since a reentrant cabi_realloc may collect garbage.

import (
	"unsafe"
)

// pinned holds what the host allocated during the current import call.
var pinned [][]uint64

//go:wasmexport cabi_realloc
func cabiRealloc(old unsafe.Pointer, oldSize, align, newSize uint32) unsafe.Pointer {
	if newSize == 0 {
		return unsafe.Pointer(uintptr(align))
	}
	words := (uintptr(newSize) + uintptr(align) + 7) / 8
	block := make([]uint64, words)
	pinned = append(pinned, block)
	p := uintptr(unsafe.Pointer(&block[0]))
	p = (p + uintptr(align) - 1) &^ (uintptr(align) - 1)
	if old != nil && oldSize > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(p)), oldSize), unsafe.Slice((*byte)(old), oldSize))
	}
	return unsafe.Pointer(p)
}

// unpin lets the collector have what the host allocated, once Go references what it keeps.
func unpin() {
	clear(pinned)
	pinned = pinned[:0]
}

// area is a return area for an import: 8-aligned, large enough for every result of the
// contract (a cache `get`, 136 bytes, is the largest).
type area [18]uint64

// importArea receives the results of the current import call.
var importArea area

func (a *area) ptr() unsafe.Pointer { return unsafe.Pointer(a) }

func (a *area) at(offset uintptr) uintptr { return uintptr(unsafe.Pointer(a)) + offset }

// Reading guest memory at an address.

func loadU8(p uintptr) uint8   { return *(*uint8)(unsafe.Pointer(p)) }
func loadU32(p uintptr) uint32 { return *(*uint32)(unsafe.Pointer(p)) }
func loadI64(p uintptr) int64  { return *(*int64)(unsafe.Pointer(p)) }

// loadString reads a string (pointer, length) at p. The result references the host's copy.
func loadString(p uintptr) string {
	n := loadU32(p + 4)
	if n == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Pointer(uintptr(loadU32(p)))), n)
}

// loadOptionString reads an option<string> at p.
func loadOptionString(p uintptr) (string, bool) {
	if loadU8(p) == 0 {
		return "", false
	}
	return loadString(p + 4), true
}

// loadList calls each for the address of every element of the list at p.
func loadList(p uintptr, size uintptr, each func(uintptr)) {
	base := uintptr(loadU32(p))
	for i := uintptr(0); i < uintptr(loadU32(p+4)); i++ {
		each(base + i*size)
	}
}

// Writing the arguments of an import that takes them in memory (more than 16 values).

func storeU8(p uintptr, v uint8)   { *(*uint8)(unsafe.Pointer(p)) = v }
func storeU32(p uintptr, v uint32) { *(*uint32)(unsafe.Pointer(p)) = v }
func storeI64(p uintptr, v int64)  { *(*int64)(unsafe.Pointer(p)) = v }

func storeString(p uintptr, s string) {
	storeU32(p, uint32(uintptr(unsafe.Pointer(unsafe.StringData(s)))))
	storeU32(p+4, uint32(len(s)))
}

func storeOptionString(p uintptr, s string, some bool) {
	if !some {
		storeU8(p, 0)
		return
	}
	storeU8(p, 1)
	storeString(p+4, s)
}

// str passes a string to an import as (pointer, length).
func str(s string) (unsafe.Pointer, uint32) {
	return unsafe.Pointer(unsafe.StringData(s)), uint32(len(s))
}

// optionString passes an option<string> to an import; the empty string is none.
func optionString(s string) (uint32, unsafe.Pointer, uint32) {
	if s == "" {
		return 0, nil, 0
	}
	p, n := str(s)
	return 1, p, n
}
