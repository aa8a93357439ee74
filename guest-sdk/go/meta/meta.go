// Package meta is what every controller does with metadata: controller owner references
// and label selectors, with the rules of apimachinery's metav1.GetControllerOf and
// LabelSelectorAsSelector and controller-runtime's SetControllerReference. It makes no host
// call (package wink wraps it for its Objects), so its tests run natively: `go test ./meta`.
package meta

import (
	"errors"
	"fmt"
	"slices"
)

// Owner is the object that owns: what an owner reference names.
type Owner struct {
	APIVersion, Kind, Namespace, Name, UID string
}

// Ref is one entry of `metadata.ownerReferences` (package wink's OwnerReference).
type Ref struct {
	APIVersion, Kind, Name, UID string
	// Controller says whether this owner is the managing controller.
	Controller bool
}

// ErrAlreadyOwned is what [SetControllerReference] returns (wrapped) when another object is
// the controller already: controller-runtime's AlreadyOwnedError.
var ErrAlreadyOwned = errors.New("already controlled by another object")

// ErrInvalidSelector is what [Matches] returns (wrapped) for a selector the API server would
// refuse.
var ErrInvalidSelector = errors.New("invalid label selector")

// ControllerOf returns the reference with Controller set, if any.
func ControllerOf(refs []Ref) (Ref, bool) {
	for _, r := range refs {
		if r.Controller {
			return r, true
		}
	}
	return Ref{}, false
}

// IsControlledBy says whether the object whose references are refs is controlled by the
// object with uid ownerUID.
func IsControlledBy(refs []Ref, ownerUID string) bool {
	c, ok := ControllerOf(refs)
	return ok && ownerUID != "" && c.UID == ownerUID
}

// ControllerReference is the owner reference naming owner as controller, as JSON for
// `metadata.ownerReferences` (blockOwnerDeletion set, as controller-runtime sets it).
func ControllerReference(owner Owner) (map[string]any, error) {
	if owner.UID == "" {
		return nil, fmt.Errorf("%s %s has no uid: it cannot own anything yet", owner.Kind, owner.Name)
	}
	return map[string]any{
		"apiVersion": owner.APIVersion, "kind": owner.Kind, "name": owner.Name, "uid": owner.UID,
		"controller": true, "blockOwnerDeletion": true,
	}, nil
}

// SetControllerReference makes owner the controller of obj (an object about to be written,
// as decoded JSON): a reference to the same owner (by uid) is replaced and other owners are
// kept; another controller is refused ([ErrAlreadyOwned]), as is a namespaced owner in
// another namespace (the garbage collector would never find it).
func SetControllerReference(owner Owner, obj map[string]any) error {
	ref, err := ControllerReference(owner)
	if err != nil {
		return err
	}
	m, _ := obj["metadata"].(map[string]any)
	if m == nil {
		m = map[string]any{}
		obj["metadata"] = m
	}
	if ns, _ := m["namespace"].(string); owner.Namespace != "" && ns != "" && ns != owner.Namespace {
		return fmt.Errorf("%s %s/%s cannot own an object in namespace %s", owner.Kind, owner.Namespace, owner.Name, ns)
	}
	existing, _ := m["ownerReferences"].([]any)
	refs := make([]any, 0, len(existing)+1)
	for _, e := range existing {
		r, _ := e.(map[string]any)
		if r["uid"] == owner.UID {
			continue
		}
		if r["controller"] == true {
			return fmt.Errorf("%w: %v %v", ErrAlreadyOwned, r["kind"], r["name"])
		}
		refs = append(refs, e)
	}
	m["ownerReferences"] = append(refs, ref)
	return nil
}

// Selector is a LabelSelector (the `selector` of a Deployment, a NetworkPolicy's
// `podSelector`); it decodes from its JSON.
type Selector struct {
	MatchLabels      map[string]string `json:"matchLabels,omitempty"`
	MatchExpressions []Requirement     `json:"matchExpressions,omitempty"`
}

// Requirement is one entry of `matchExpressions`.
type Requirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// Matches says whether labels match selector: every matchLabels entry and every
// expression (In, NotIn, Exists, DoesNotExist). An empty selector matches everything, a nil
// one nothing, as LabelSelectorAsSelector has it; an invalid one is an error
// ([ErrInvalidSelector]).
func Matches(selector *Selector, labels map[string]string) (bool, error) {
	if selector == nil {
		return false, nil
	}
	matches := true
	for k, v := range selector.MatchLabels {
		if got, ok := labels[k]; !ok || got != v {
			matches = false
		}
	}
	for _, r := range selector.MatchExpressions {
		if r.Key == "" {
			return false, fmt.Errorf("%w: an expression has no key", ErrInvalidSelector)
		}
		got, ok := labels[r.Key]
		switch {
		case (r.Operator == "In" || r.Operator == "NotIn") && len(r.Values) == 0:
			return false, fmt.Errorf("%w: operator %s on %s needs values", ErrInvalidSelector, r.Operator, r.Key)
		case (r.Operator == "Exists" || r.Operator == "DoesNotExist") && len(r.Values) > 0:
			return false, fmt.Errorf("%w: operator %s on %s takes no values", ErrInvalidSelector, r.Operator, r.Key)
		case r.Operator == "In":
			matches = matches && ok && slices.Contains(r.Values, got)
		case r.Operator == "NotIn":
			matches = matches && (!ok || !slices.Contains(r.Values, got))
		case r.Operator == "Exists":
			matches = matches && ok
		case r.Operator == "DoesNotExist":
			matches = matches && !ok
		default:
			return false, fmt.Errorf("%w: operator %q is not In, NotIn, Exists or DoesNotExist", ErrInvalidSelector, r.Operator)
		}
	}
	return matches, nil
}
