// Writes what the embedded API's protobuf conversion (host/src/embedded/http/protobuf/) is
// checked against, from client-go itself:
//
//   - zero_kept.txt: for each protobuf message of the API, the scalar fields whose zero value
//     Go's JSON keeps (a pointer, or a field with neither `omitempty` nor `omitzero`), and
//     the Time fields whose zero value it writes as `null` (not a pointer, no `omitzero`). Any other scalar field
//     at its zero value is one Go's protobuf encoder writes but its JSON leaves out.
//   - inlined.txt: for each message, the fields Go's JSON writes inline (embedded, unnamed):
//     their fields are the message's own in JSON (a Probe's `handler`).
//   - fixtures/NAME.pb and NAME.json: objects as client-go's protobuf serializer writes them
//     (the `k8s\0` envelope around a runtime.Unknown) and as its JSON serializer writes them.
//
// Run from tests/control-plane:
//
//	go run ./protobuf-fixtures ../../host/src/embedded/http/protobuf
package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
)

func main() {
	out := os.Args[1]
	must(os.MkdirAll(filepath.Join(out, "fixtures"), 0o755))
	kept, inlined := fieldRules()
	must(os.WriteFile(filepath.Join(out, "zero_kept.txt"), kept, 0o644))
	must(os.WriteFile(filepath.Join(out, "inlined.txt"), inlined, 0o644))
	for name, obj := range fixtures() {
		var pb bytes.Buffer
		must(protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &pb))
		js, err := json.Marshal(obj)
		must(err)
		must(os.WriteFile(filepath.Join(out, "fixtures", name+".pb"), pb.Bytes(), 0o644))
		must(os.WriteFile(filepath.Join(out, "fixtures", name+".json"), append(js, '\n'), 0o644))
	}
	// metav1.Duration is in no object of k8s.io/api: the bare message and its JSON.
	d := metav1.Duration{Duration: 90*time.Minute + 1500*time.Millisecond}
	pb, err := d.Marshal()
	must(err)
	js, err := json.Marshal(d)
	must(err)
	must(os.WriteFile(filepath.Join(out, "fixtures", "duration.pb"), pb, 0o644))
	must(os.WriteFile(filepath.Join(out, "fixtures", "duration.json"), append(js, '\n'), 0o644))
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// The protobuf message name of a Go type of the API: its package path, dotted.
func messageName(t reflect.Type) string {
	pkg := strings.NewReplacer("/", ".", "-", "_").Replace(t.PkgPath())
	return pkg + "." + t.Name()
}

// The zero_kept.txt and inlined.txt tables.
func fieldRules() ([]byte, []byte) {
	types := map[reflect.Type]bool{}
	for _, t := range scheme.Scheme.AllKnownTypes() {
		walk(t, types)
	}
	for _, obj := range []any{apiextensionsv1.CustomResourceDefinition{}, apiextensionsv1.CustomResourceDefinitionList{}, metav1.APIResourceList{}, metav1.WatchEvent{}, metav1.Status{}} {
		walk(reflect.TypeOf(obj), types)
	}
	var lines, inlinedLines []string
	for t := range types {
		var kept, inlined []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := protoName(f)
			if name == "" {
				continue
			}
			tag := f.Tag.Get("json")
			// Go's JSON inlines an embedded struct its tag gives no name.
			if f.Anonymous && strings.Split(tag, ",")[0] == "" {
				inlined = append(inlined, name)
				continue
			}
			ft, pointer := f.Type, false
			if ft.Kind() == reflect.Pointer {
				ft, pointer = ft.Elem(), true
			}
			// A zero Time is `null` in Go's JSON, unless `omitzero` leaves it out.
			if ft == reflect.TypeOf(metav1.Time{}) || ft == reflect.TypeOf(metav1.MicroTime{}) {
				if !pointer && !strings.Contains(tag, ",omitzero") {
					kept = append(kept, name)
				}
				continue
			}
			switch ft.Kind() {
			case reflect.Struct, reflect.Slice, reflect.Map, reflect.Array, reflect.Interface:
				continue
			}
			omitted := strings.Contains(tag, ",omitempty") || strings.Contains(tag, ",omitzero")
			if pointer || !omitted {
				kept = append(kept, name)
			}
		}
		if len(kept) > 0 {
			sort.Strings(kept)
			lines = append(lines, messageName(t)+" "+strings.Join(kept, " "))
		}
		if len(inlined) > 0 {
			sort.Strings(inlined)
			inlinedLines = append(inlinedLines, messageName(t)+" "+strings.Join(inlined, " "))
		}
	}
	sort.Strings(lines)
	sort.Strings(inlinedLines)
	return []byte(strings.Join(lines, "\n") + "\n"), []byte(strings.Join(inlinedLines, "\n") + "\n")
}

func protoName(f reflect.StructField) string {
	for _, part := range strings.Split(f.Tag.Get("protobuf"), ",") {
		if name, ok := strings.CutPrefix(part, "name="); ok {
			return name
		}
	}
	return ""
}

func walk(t reflect.Type, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array {
		if t.Kind() == reflect.Map {
			walk(t.Key(), seen)
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || !strings.HasPrefix(t.PkgPath(), "k8s.io/") {
		return
	}
	seen[t] = true
	for i := 0; i < t.NumField(); i++ {
		walk(t.Field(i).Type, seen)
	}
}

func typed(obj runtime.Object, gv schema.GroupVersion, kind string) runtime.Object {
	obj.GetObjectKind().SetGroupVersionKind(gv.WithKind(kind))
	return obj
}

func ptr[T any](v T) *T { return &v }

func fixtures() map[string]runtime.Object {
	created := metav1.Unix(1767225600, 0)
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "default"}
	}
	core := corev1.SchemeGroupVersion
	return map[string]runtime.Object{
		// What `kubectl create namespace x` sends.
		"namespace": typed(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, core, "Namespace"),
		"configmap": typed(&corev1.ConfigMap{
			ObjectMeta: meta("c"),
			Data:       map[string]string{"a": "b", "empty": ""},
			BinaryData: map[string][]byte{"bin": {0, 1, 2, 0xff}},
		}, core, "ConfigMap"),
		"secret": typed(&corev1.Secret{
			ObjectMeta: meta("s"),
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{"password": []byte("hunter2")},
			StringData: map[string]string{"user": "admin"},
		}, core, "Secret"),
		"deployment": typed(&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr(int32(1)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge:       ptr(intstr.FromString("25%")),
					MaxUnavailable: ptr(intstr.FromInt32(0)),
				}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name:      "nginx",
						Image:     "nginx",
						Resources: corev1.ResourceRequirements{},
					}}},
				},
			},
		}, appsv1.SchemeGroupVersion, "Deployment"),
		// Time, Quantity, IntOrString (both forms), FieldsV1, int64, pointers at zero.
		"pod": typed(&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: "p", Namespace: "default", Generation: 3, CreationTimestamp: created,
				ManagedFields: []metav1.ManagedFieldsEntry{{
					Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
					Time: &created, FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:containers":{}}}`)},
				}},
			},
			Spec: corev1.PodSpec{
				AutomountServiceAccountToken:  ptr(false),
				TerminationGracePeriodSeconds: ptr(int64(0)),
				SecurityContext:               &corev1.PodSecurityContext{RunAsUser: ptr(int64(0))},
				Containers: []corev1.Container{{
					Name: "c", Image: "busybox",
					Resources: corev1.ResourceRequirements{
						Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
						Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
					},
					LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
						HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)},
					}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
						TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")},
					}},
				}},
			},
		}, core, "Pod"),
		// MicroTime.
		"lease": typed(&coordinationv1.Lease{
			ObjectMeta: meta("l"),
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr("me"),
				LeaseDurationSeconds: ptr(int32(15)),
				RenewTime:            &metav1.MicroTime{Time: time.Unix(1767225600, 123456000)},
			},
		}, coordinationv1.SchemeGroupVersion, "Lease"),
		"event": typed(&eventsv1.Event{
			ObjectMeta:               meta("e"),
			EventTime:                metav1.MicroTime{Time: time.Unix(1767225600, 5000)},
			DeprecatedFirstTimestamp: created,
			Reason:                   "Started",
			Type:                     "Normal",
		}, eventsv1.SchemeGroupVersion, "Event"),
		// RawExtension.
		"controllerrevision": typed(&appsv1.ControllerRevision{
			ObjectMeta: meta("r"),
			Data:       runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"metadata":{"labels":{"a":"b"}}}}}`)},
			Revision:   2,
		}, appsv1.SchemeGroupVersion, "ControllerRevision"),
		// What `kubectl auth can-i create pods` sends.
		"selfsubjectaccessreview": typed(&authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "create", Resource: "pods"},
			},
		}, authorizationv1.SchemeGroupVersion, "SelfSubjectAccessReview"),
		// ExtraValue.
		"subjectaccessreview": typed(&authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               "jane",
				Groups:             []string{"dev"},
				Extra:              map[string]authorizationv1.ExtraValue{"scopes": {"a", "b"}},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"},
			},
		}, authorizationv1.SchemeGroupVersion, "SubjectAccessReview"),
		"selfsubjectreview": typed(&authenticationv1.SelfSubjectReview{
			Status: authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{
				Username: "system:admin", Groups: []string{"system:masters"},
				Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}},
			}},
		}, authenticationv1.SchemeGroupVersion, "SelfSubjectReview"),
		"job": typed(&batchv1.Job{
			ObjectMeta: meta("j"),
			Spec: batchv1.JobSpec{
				BackoffLimit: ptr(int32(0)),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "j", Image: "busybox"}},
				}},
			},
		}, batchv1.SchemeGroupVersion, "Job"),
		// What a delete with `--dry-run=server --grace-period=0` sends.
		"deleteoptions": typed(&metav1.DeleteOptions{
			GracePeriodSeconds: ptr(int64(0)),
			PropagationPolicy:  ptr(metav1.DeletePropagationForeground),
			DryRun:             []string{metav1.DryRunAll},
			Preconditions:      &metav1.Preconditions{UID: ptr(types.UID("u-1"))},
		}, metav1.SchemeGroupVersion, "DeleteOptions"),
		"status": typed(&metav1.Status{
			Status: metav1.StatusFailure, Message: `namespaces "x" not found`, Reason: metav1.StatusReasonNotFound,
			Details: &metav1.StatusDetails{Name: "x", Kind: "namespaces"}, Code: 404,
		}, metav1.SchemeGroupVersion, "Status"),
		"configmaplist": typed(&corev1.ConfigMapList{
			ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: "abc"},
			Items:    []corev1.ConfigMap{{ObjectMeta: meta("c"), Data: map[string]string{"a": "b"}}},
		}, core, "ConfigMapList"),
	}
}
