//go:build wasip1

package wink

// The functions the host provides, by their names in `wink:plugin@0.4.0`, lowered as the
// canonical ABI flattens them: strings as (pointer, length), options as (discriminant,
// value…), results larger than one value written to a return area whose address is the last
// argument, and arguments of more than 16 values passed in memory.

import "unsafe"

//go:wasmimport wink:plugin/log@0.4.0 log
func importLog(level uint32, msg unsafe.Pointer, msgLen uint32)

//go:wasmimport wink:plugin/types@0.4.0 [method]event-object.api-version
func importObjectAPIVersion(handle uint32, ret unsafe.Pointer)

//go:wasmimport wink:plugin/types@0.4.0 [method]event-object.kind
func importObjectKind(handle uint32, ret unsafe.Pointer)

//go:wasmimport wink:plugin/types@0.4.0 [method]event-object.namespace
func importObjectNamespace(handle uint32, ret unsafe.Pointer)

//go:wasmimport wink:plugin/types@0.4.0 [method]event-object.name
func importObjectName(handle uint32, ret unsafe.Pointer)

//go:wasmimport wink:plugin/types@0.4.0 [method]event-object.uid
func importObjectUID(handle uint32, ret unsafe.Pointer)

//go:wasmimport wink:plugin/types@0.4.0 [method]event-object.resource-version
func importObjectResourceVersion(handle uint32, ret unsafe.Pointer)

//go:wasmimport wink:plugin/types@0.4.0 [method]event-object.generation
func importObjectGeneration(handle uint32, ret unsafe.Pointer)

//go:wasmimport wink:plugin/types@0.4.0 [method]event-object.label
func importObjectLabel(handle uint32, key unsafe.Pointer, keyLen uint32, ret unsafe.Pointer)

//go:wasmimport wink:plugin/types@0.4.0 [method]event-object.annotation
func importObjectAnnotation(handle uint32, key unsafe.Pointer, keyLen uint32, ret unsafe.Pointer)

//go:wasmimport wink:plugin/types@0.4.0 [method]event-object.meta
func importObjectMeta(handle uint32, ret unsafe.Pointer)

//go:wasmimport wink:plugin/types@0.4.0 [method]event-object.json
func importObjectJSON(handle uint32, ret unsafe.Pointer)

//go:wasmimport wink:plugin/types@0.4.0 [resource-drop]event-object
func importObjectDrop(handle uint32)

//go:wasmimport wink:plugin/cache@0.4.0 get
func importCacheGet(
	apiVersion unsafe.Pointer, apiVersionLen uint32, kind unsafe.Pointer, kindLen uint32,
	key unsafe.Pointer, keyLen uint32, ret unsafe.Pointer)

//go:wasmimport wink:plugin/cache@0.4.0 list
func importCacheList(
	apiVersion unsafe.Pointer, apiVersionLen uint32, kind unsafe.Pointer, kindLen uint32,
	hasNamespace uint32, namespace unsafe.Pointer, namespaceLen uint32, ret unsafe.Pointer)

//go:wasmimport wink:plugin/cache@0.4.0 by-index
func importCacheByIndex(
	apiVersion unsafe.Pointer, apiVersionLen uint32, kind unsafe.Pointer, kindLen uint32,
	index unsafe.Pointer, indexLen uint32, value unsafe.Pointer, valueLen uint32, ret unsafe.Pointer)

//go:wasmimport wink:plugin/cluster@0.4.0 get
func importClusterGet(
	apiVersion unsafe.Pointer, apiVersionLen uint32, kind unsafe.Pointer, kindLen uint32,
	hasNamespace uint32, namespace unsafe.Pointer, namespaceLen uint32,
	name unsafe.Pointer, nameLen uint32, ret unsafe.Pointer)

//go:wasmimport wink:plugin/cluster@0.4.0 create
func importClusterCreate(json unsafe.Pointer, jsonLen uint32, ret unsafe.Pointer)

//go:wasmimport wink:plugin/cluster@0.4.0 update
func importClusterUpdate(json unsafe.Pointer, jsonLen uint32, ret unsafe.Pointer)

//go:wasmimport wink:plugin/cluster@0.4.0 update-status
func importClusterUpdateStatus(json unsafe.Pointer, jsonLen uint32, ret unsafe.Pointer)

//go:wasmimport wink:plugin/cluster@0.4.0 patch
func importClusterPatch(
	apiVersion unsafe.Pointer, apiVersionLen uint32, kind unsafe.Pointer, kindLen uint32,
	hasNamespace uint32, namespace unsafe.Pointer, namespaceLen uint32,
	name unsafe.Pointer, nameLen uint32,
	patchType uint32, body unsafe.Pointer, bodyLen uint32, force uint32, ret unsafe.Pointer)

//go:wasmimport wink:plugin/cluster@0.4.0 patch-status
func importClusterPatchStatus(
	apiVersion unsafe.Pointer, apiVersionLen uint32, kind unsafe.Pointer, kindLen uint32,
	hasNamespace uint32, namespace unsafe.Pointer, namespaceLen uint32,
	name unsafe.Pointer, nameLen uint32,
	patchType uint32, body unsafe.Pointer, bodyLen uint32, force uint32, ret unsafe.Pointer)

// importClusterDelete takes its 19 argument values in memory (see deleteArgs).
//
//go:wasmimport wink:plugin/cluster@0.4.0 delete
func importClusterDelete(args unsafe.Pointer, ret unsafe.Pointer)

// importClusterRecordEvent takes the event record in memory (see eventArgs).
//
//go:wasmimport wink:plugin/cluster@0.4.0 record-event
func importClusterRecordEvent(event unsafe.Pointer, ret unsafe.Pointer)
