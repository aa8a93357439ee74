//go:build wasip1

package wink

import (
	"errors"
	"fmt"
)

// The kinds of a failed request, matched with errors.Is: `errors.Is(err, wink.ErrConflict)`.
var (
	// ErrNotPermitted: refused by wink before any request was made, because the plugin's
	// manifest does not grant it (also a cache read the manifest does not grant).
	ErrNotPermitted = errors.New("not permitted")
	// ErrForbidden: refused by the API server's authorization (HTTP 403).
	ErrForbidden = errors.New("forbidden")
	// ErrNotFound: the object, its namespace or its kind does not exist (HTTP 404).
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: an object with this name already exists (HTTP 409).
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict: the object changed since it was read, or a precondition failed (HTTP 409).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the server refused the object as invalid (HTTP 422); see RequestError.Causes.
	ErrInvalid = errors.New("invalid")
	// ErrBadRequest: a malformed request (HTTP 400, 405, 415).
	ErrBadRequest = errors.New("bad request")
	// ErrRateLimited: the plugin's request budget is spent, or the server answered 429.
	ErrRateLimited = errors.New("rate limited")
	// ErrTimedOut: no answer within the plugin's request timeout.
	ErrTimedOut = errors.New("timed out")
	// ErrUnavailable: the API server cannot be reached or failed (HTTP 5xx).
	ErrUnavailable = errors.New("unavailable")
	// ErrUnknownIndex: a cache read named an index the resource does not have.
	ErrUnknownIndex = errors.New("unknown index")
)

// requestKinds are the cases of the contract's `request-error`, in order.
var requestKinds = []error{
	ErrNotPermitted, ErrForbidden, ErrNotFound, ErrAlreadyExists, ErrConflict,
	ErrInvalid, ErrBadRequest, ErrRateLimited, ErrTimedOut, ErrUnavailable,
}

// Cause is one field at fault in an invalid object.
type Cause struct {
	// Field is e.g. `metadata.name`; empty when not about a field.
	Field string
	// Reason is machine-readable, e.g. `FieldValueInvalid`.
	Reason string
	// Message is human-readable.
	Message string
}

// RequestError is a failed cluster request or cache read. errors.Is matches its Kind.
type RequestError struct {
	// Kind is one of the Err… values of this package.
	Kind error
	// Message is the host's or the server's message.
	Message string
	// Causes are the fields at fault, for ErrInvalid.
	Causes []Cause
}

func (e *RequestError) Error() string { return fmt.Sprintf("%v: %s", e.Kind, e.Message) }

// Unwrap gives the kind, so that errors.Is(err, ErrConflict) works.
func (e *RequestError) Unwrap() error { return e.Kind }

// loadRequestError reads a `request-error` variant at p.
func loadRequestError(p uintptr) *RequestError {
	discriminant := int(loadU8(p))
	e := &RequestError{Kind: ErrUnavailable}
	if discriminant < len(requestKinds) {
		e.Kind = requestKinds[discriminant]
	}
	e.Message = loadString(p + 4)
	if e.Kind == ErrInvalid {
		loadList(p+12, 24, func(c uintptr) {
			e.Causes = append(e.Causes, Cause{Field: loadString(c), Reason: loadString(c + 8), Message: loadString(c + 16)})
		})
	}
	return e
}
