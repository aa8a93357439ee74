package wink

import "wink.dev/wink/meta"

// ControllerOf returns o's owner reference with Controller set, if any
// (metav1.GetControllerOf).
func ControllerOf(o *Object) (OwnerReference, bool) {
	return meta.ControllerOf(o.Meta().OwnerReferences)
}

// IsControlledBy says whether owner is o's controller, matched by uid (metav1.IsControlledBy).
func IsControlledBy(o, owner *Object) bool {
	return meta.IsControlledBy(o.Meta().OwnerReferences, owner.UID())
}

// SetControllerReference makes owner the controller of obj, an object about to be written
// (decoded JSON): blockOwnerDeletion set, other owners kept; another controller is refused
// (errors.Is(err, meta.ErrAlreadyOwned)), as controller-runtime's SetControllerReference
// does. For label selectors, see [meta.Matches].
func SetControllerReference(owner *Object, obj map[string]any) error {
	return meta.SetControllerReference(meta.Owner{
		APIVersion: owner.APIVersion(), Kind: owner.Kind(), Namespace: owner.Namespace(),
		Name: owner.Name(), UID: owner.UID(),
	}, obj)
}
