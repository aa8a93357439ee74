//! The protobuf messages of the Kubernetes API: the `generated.proto` files of `k8s.io/api`,
//! `k8s.io/apimachinery` and `k8s.io/apiextensions-apiserver` (vendored under `host/proto/`,
//! compiled by `build.rs` with protox), which message a kind is, which of its scalar fields
//! Go's JSON keeps at their zero value (`zero_kept.txt`), and which fields Go's JSON writes
//! inline (`inlined.txt`: an embedded struct, such as a Volume's `volumeSource`). Both
//! tables are written from client-go's own types by `tests/control-plane/protobuf-fixtures`.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use prost_reflect::{DescriptorPool, MessageDescriptor};

/// The compiled `FileDescriptorSet` of every vendored `generated.proto`.
const DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kubernetes.fds"));

/// Per message, the scalar fields whose zero value Go's JSON keeps (a pointer, or a field
/// with neither `omitempty` nor `omitzero`): one line per message, its name then its fields.
const ZERO_KEPT: &str = include_str!("zero_kept.txt");

/// The apimachinery package of `metav1` (`Status`, `DeleteOptions`, `Time`, ...).
pub(super) const META_V1: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";

/// The descriptors of every message of the API.
pub(super) fn pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    // The set is compiled from the vendored files by build.rs: it always decodes.
    POOL.get_or_init(|| DescriptorPool::decode(DESCRIPTORS).expect("build.rs compiled the API's descriptors"))
}

/// The message `name` (e.g. `k8s.io.api.core.v1.Pod`).
pub(super) fn message(name: &str) -> Option<MessageDescriptor> {
    pool().get_message_by_name(name)
}

/// The protobuf package of an API group at `version`, as go-to-protobuf names it after the
/// Go package (`k8s.io/api/apps/v1` is `k8s.io.api.apps.v1`).
fn package(group: &str, version: &str) -> String {
    match group {
        "" => format!("k8s.io.api.core.{version}"),
        "meta.k8s.io" => format!("k8s.io.apimachinery.pkg.apis.meta.{version}"),
        "apiextensions.k8s.io" => format!("k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.{version}"),
        "internal.apiserver.k8s.io" => format!("k8s.io.api.apiserverinternal.{version}"),
        // `apps`, `rbac.authorization.k8s.io` is `rbac`, `flowcontrol.apiserver.k8s.io` is
        // `flowcontrol`: the Go package is the group's first label.
        group => format!("k8s.io.api.{}.{version}", group.split('.').next().unwrap_or(group)),
    }
}

/// The message of `kind` at `api_version`, if the API has one. `Status` and the options
/// kinds are `metav1`'s whatever the version says (kube-apiserver answers them as `v1`).
pub(super) fn message_of(api_version: &str, kind: &str) -> Option<MessageDescriptor> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    if matches!(kind, "Status" | "DeleteOptions" | "WatchEvent") {
        return message(&format!("{META_V1}.{kind}"));
    }
    message(&format!("{}.{kind}", package(group, version)))
}

/// Per message, the fields Go's JSON writes inline: one line per message, its name then its
/// fields.
const INLINED: &str = include_str!("inlined.txt");

type Table = HashMap<&'static str, HashSet<&'static str>>;

fn table(text: &'static str) -> Table {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            Some((words.next()?, words.collect()))
        })
        .collect()
}

/// Whether Go's JSON keeps the field `field` of `message` when it is at its zero value.
pub(super) fn zero_kept(message: &str, field: &str) -> bool {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| table(ZERO_KEPT)).get(message).is_some_and(|fields| fields.contains(field))
}

/// Whether Go's JSON writes the fields of the field `field` of `message` as `message`'s own.
pub(super) fn inlined(message: &str, field: &str) -> bool {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| table(INLINED)).get(message).is_some_and(|fields| fields.contains(field))
}
