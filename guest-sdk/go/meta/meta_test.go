package meta

import (
	"encoding/json"
	"errors"
	"os"
	"testing"
)

func TestTheControllerIsTheReferenceMarkedControllerMatchedByUID(t *testing.T) {
	refs := []Ref{{Kind: "ConfigMap", Name: "c", UID: "u-3"}, {Kind: "Deployment", Name: "web", UID: "u-9", Controller: true}}
	if c, ok := ControllerOf(refs); !ok || c.UID != "u-9" {
		t.Fatalf("controller: %v %v", c, ok)
	}
	if !IsControlledBy(refs, "u-9") || IsControlledBy(refs, "u-8") || IsControlledBy(refs[:1], "u-3") {
		t.Fatal("controlled by the controller's uid only")
	}
}

func TestSettingTheControllerKeepsOtherOwnersAndRefusesASecond(t *testing.T) {
	web := Owner{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web", UID: "u-9"}
	svc := map[string]any{"metadata": map[string]any{"name": "web", "namespace": "shop",
		"ownerReferences": []any{map[string]any{"kind": "ConfigMap", "name": "c", "uid": "u-3"}}}}
	for range 2 {
		if err := SetControllerReference(web, svc); err != nil {
			t.Fatal(err)
		}
	}
	refs := svc["metadata"].(map[string]any)["ownerReferences"].([]any)
	if len(refs) != 2 || refs[1].(map[string]any)["blockOwnerDeletion"] != true {
		t.Fatalf("the same owner is replaced, other owners kept: %v", refs)
	}
	other := web
	other.UID = "u-7"
	if err := SetControllerReference(other, svc); !errors.Is(err, ErrAlreadyOwned) {
		t.Fatalf("a second controller: %v", err)
	}
	elsewhere := map[string]any{"metadata": map[string]any{"name": "x", "namespace": "ops"}}
	if err := SetControllerReference(web, elsewhere); err == nil {
		t.Fatal("an owner in another namespace")
	}
	if _, err := ControllerReference(Owner{Kind: "Deployment", Name: "new"}); err == nil {
		t.Fatal("an owner without a uid")
	}
}

func TestSelectors(t *testing.T) {
	labels := map[string]string{"app": "web", "tier": "front"}
	expr := func(key, op string, values ...string) *Selector {
		return &Selector{MatchExpressions: []Requirement{{Key: key, Operator: op, Values: values}}}
	}
	cases := []struct {
		name     string
		selector *Selector
		want     bool
	}{
		{"empty: everything", &Selector{}, true},
		{"nil: nothing", nil, false},
		{"matchLabels", &Selector{MatchLabels: map[string]string{"app": "web"}}, true},
		{"matchLabels, all", &Selector{MatchLabels: map[string]string{"app": "web", "tier": "back"}}, false},
		{"In", expr("tier", "In", "front", "edge"), true},
		{"In needs the key", expr("zone", "In", "a"), false},
		{"NotIn without the key", expr("zone", "NotIn", "a"), true},
		{"NotIn", expr("tier", "NotIn", "front"), false},
		{"Exists", expr("tier", "Exists"), true},
		{"DoesNotExist", expr("zone", "DoesNotExist"), true},
	}
	for _, c := range cases {
		if got, err := Matches(c.selector, labels); err != nil || got != c.want {
			t.Errorf("%s: %v %v", c.name, got, err)
		}
	}
	for _, bad := range []*Selector{expr("tier", "Equals", "a"), expr("tier", "In"), expr("tier", "Exists", "a"), expr("", "Exists")} {
		if _, err := Matches(bad, labels); !errors.Is(err, ErrInvalidSelector) {
			t.Errorf("%v: %v", bad.MatchExpressions, err)
		}
	}
}

// TestTheSharedSelectorCorpus runs the label selector cases every SDK and the host agree on
// (tests/conformance/label-selectors.json).
func TestTheSharedSelectorCorpus(t *testing.T) {
	text, err := os.ReadFile("../../../tests/conformance/label-selectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var corpus struct {
		Labels map[string]string `json:"labels"`
		Cases  []struct {
			Name     string    `json:"name"`
			Selector *Selector `json:"selector"`
			Expect   any       `json:"expect"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(text, &corpus); err != nil {
		t.Fatal(err)
	}
	for _, c := range corpus.Cases {
		got, err := Matches(c.Selector, corpus.Labels)
		if c.Expect == "invalid" {
			if !errors.Is(err, ErrInvalidSelector) {
				t.Errorf("%s: got %v, %v; want ErrInvalidSelector", c.Name, got, err)
			}
		} else if err != nil || got != c.Expect {
			t.Errorf("%s: got %v, %v; want %v", c.Name, got, err, c.Expect)
		}
	}
}
