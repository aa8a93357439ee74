//! The kinds a test adds to the local API server besides the built-in ones (as installing a
//! CRD would), with their selectable fields.

/// One kind a test registers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceDef {
    /// API group (`""` for core).
    pub group: String,
    /// Version, e.g. `v1`.
    pub version: String,
    /// Kind, e.g. `Widget`.
    pub kind: String,
    /// Plural resource name, e.g. `widgets`.
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Whether it has a status subresource.
    pub status: bool,
    /// Field selector labels besides `metadata.name` and `metadata.namespace`, each with the
    /// JSON pointer it reads (a CRD's `selectableFields`).
    pub selectable_fields: Vec<(String, String)>,
}

impl ResourceDef {
    /// A custom resource (as a CRD defines it), without a status subresource.
    pub fn custom(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
            status: false,
            selectable_fields: Vec::new(),
        }
    }

    /// With a status subresource.
    pub fn with_status(mut self) -> Self {
        self.status = true;
        self
    }

    /// Adds a selectable field.
    pub fn with_field(mut self, label: &str, pointer: &str) -> Self {
        self.selectable_fields.push((label.into(), pointer.into()));
        self
    }

    /// `group/version`, or `version` for core.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }
}
