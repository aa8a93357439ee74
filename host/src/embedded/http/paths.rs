//! Kubernetes API paths: `/api/v1[/namespaces/NS]/PLURAL[/NAME[/status|/scale]]` and
//! `/apis/GROUP/VERSION/…` the same way.

use super::openapi::OpenApi;

/// A path to a resource, a collection of it, or one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ResourcePath {
    /// The group ("" for the core group).
    pub group: String,
    /// The version.
    pub version: String,
    /// The namespace in the path, if any.
    pub namespace: Option<String>,
    /// The plural resource name.
    pub plural: String,
    /// The object's name, for an object path.
    pub name: Option<String>,
    /// `status`, for the status subresource.
    pub status: bool,
    /// `scale`, for the scale subresource.
    pub scale: bool,
}

impl ResourcePath {
    /// The `apiVersion` of the path's group and version.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }
}

/// What a path asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// `/version`.
    Version,
    /// `/healthz`, `/livez`, `/readyz` (and their `?verbose` forms): the server's health.
    Health,
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    Groups,
    /// `/apis/GROUP`.
    Group(String),
    /// `/api/v1` or `/apis/GROUP/VERSION`.
    Resources {
        /// The group.
        group: String,
        /// The version.
        version: String,
    },
    /// A resource path.
    Resource(ResourcePath),
    /// What needs a part of a cluster the embedded one does not run (a kubelet, a
    /// metrics server): the subresource or API group asked for, e.g. `pods/log`.
    Unserved(Unserved),
    /// `/openapi/v2`, `/openapi/v3`, `/openapi/v3/<group-version>`.
    OpenApi(OpenApi),
    /// Anything else.
    NotFound,
}

/// What a request asks of a part of a cluster the embedded one does not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Unserved {
    /// A subresource a kubelet answers: `log`, `exec`, `attach`, `portforward`, `proxy`, as
    /// `pods/log`.
    Kubelet(String),
    /// The API group of the metrics server (`kubectl top`).
    Metrics,
}

/// The subresources only a kubelet (or, for `proxy`, the network to a node or pod) answers.
const KUBELET_SUBRESOURCES: [&str; 5] = ["log", "exec", "attach", "portforward", "proxy"];

/// Parses a request path.
pub fn route(path: &str) -> Route {
    let parts: Vec<&str> = path.trim_matches('/').split('/').filter(|p| !p.is_empty()).collect();
    let (group, version, rest) = match parts.as_slice() {
        ["version"] => return Route::Version,
        ["healthz" | "livez" | "readyz"] => return Route::Health,
        ["openapi", "v2"] => return Route::OpenApi(OpenApi::V2),
        ["openapi", "v3"] => return Route::OpenApi(OpenApi::V3Root),
        ["openapi", "v3", rest @ ..] => return Route::OpenApi(OpenApi::V3(rest.join("/"))),
        ["api"] => return Route::CoreVersions,
        ["apis"] => return Route::Groups,
        ["apis", "metrics.k8s.io", ..] => return Route::Unserved(Unserved::Metrics),
        ["apis", group] => return Route::Group((*group).to_owned()),
        ["api", version, rest @ ..] => (String::new(), (*version).to_owned(), rest),
        ["apis", group, version, rest @ ..] => ((*group).to_owned(), (*version).to_owned(), rest),
        _ => return Route::NotFound,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some((*ns).to_owned()), rest),
        rest => (None, rest),
    };
    let resource = |plural: &str, name: Option<&str>, subresource: Option<&str>| {
        Route::Resource(ResourcePath {
            group: group.clone(),
            version: version.clone(),
            namespace: namespace.clone(),
            plural: plural.to_owned(),
            name: name.map(str::to_owned),
            status: subresource == Some("status"),
            scale: subresource == Some("scale"),
        })
    };
    match rest {
        [] => Route::Resources { group, version },
        [plural] => resource(plural, None, None),
        [plural, name] => resource(plural, Some(name), None),
        [plural, name, sub @ ("status" | "scale")] => resource(plural, Some(name), Some(sub)),
        [plural, _, sub, ..] if KUBELET_SUBRESOURCES.contains(sub) => {
            Route::Unserved(Unserved::Kubelet(format!("{plural}/{sub}")))
        }
        _ => Route::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_their_resource() {
        assert_eq!(route("/api"), Route::CoreVersions);
        assert_eq!(route("/apis/apps/v1"), Route::Resources { group: "apps".into(), version: "v1".into() });
        assert_eq!(route("/apis/apps"), Route::Group("apps".into()));
        assert_eq!(route("/readyz"), Route::Health);
        let Route::Resource(p) = route("/apis/apps/v1/namespaces/shop/deployments/web/status") else { panic!() };
        assert_eq!(
            (p.api_version(), p.namespace.as_deref(), p.plural.as_str(), p.name.as_deref(), p.status),
            ("apps/v1".into(), Some("shop"), "deployments", Some("web"), true)
        );
        let Route::Resource(p) = route("/api/v1/namespaces") else { panic!() };
        assert_eq!((p.plural.as_str(), p.namespace), ("namespaces", None), "the collection of Namespaces");
        let Route::Resource(p) = route("/api/v1/namespaces/shop") else { panic!() };
        assert_eq!((p.plural.as_str(), p.name.as_deref()), ("namespaces", Some("shop")), "one Namespace");
        assert_eq!(route("/healthz"), Route::Health);
        assert_eq!(route("/metrics"), Route::NotFound);
        assert_eq!(route("/openapi/v2"), Route::OpenApi(OpenApi::V2));
        assert_eq!(route("/openapi/v3"), Route::OpenApi(OpenApi::V3Root));
        assert_eq!(route("/openapi/v3/apis/apps/v1"), Route::OpenApi(OpenApi::V3("apis/apps/v1".into())));
    }

    #[test]
    fn what_a_kubelet_or_metrics_server_answers_is_unserved_not_missing() {
        let log = route("/api/v1/namespaces/shop/pods/web/log");
        assert_eq!(log, Route::Unserved(Unserved::Kubelet("pods/log".into())));
        let proxied = route("/api/v1/namespaces/shop/services/web/proxy/healthz");
        assert_eq!(proxied, Route::Unserved(Unserved::Kubelet("services/proxy".into())));
        assert_eq!(route("/apis/metrics.k8s.io/v1beta1/nodes"), Route::Unserved(Unserved::Metrics));
        assert_eq!(route("/api/v1/namespaces/shop/pods/web/nothing"), Route::NotFound);
    }
}
