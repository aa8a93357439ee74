//! Server-side printing: the columns kube-apiserver's printers (`pkg/printers/internalversion`)
//! give a built-in kind and the cells of one object, for a `Table` answer
//! (`kubectl get`, `get -o wide`: the columns of priority 1). A kind without a printer gets
//! the default table convertor's `Name` and `Created At`; custom resources' columns are
//! their definition's (see [`custom`]).

mod custom;
mod others;
mod workloads;

use serde_json::{Value, json};

pub(crate) use custom::custom_columns;

/// One column of a Table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// Its header (`NAME`, `READY` as kubectl prints it).
    pub name: &'static str,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub kind: &'static str,
    /// `name` for the object's name column, else empty.
    pub format: &'static str,
    /// 0: always printed; 1: with `-o wide`.
    pub priority: u8,
    /// What it shows.
    pub description: &'static str,
}

impl Column {
    /// The column as a `TableColumnDefinition`.
    pub fn definition(&self) -> Value {
        json!({"name": self.name, "type": self.kind, "format": self.format, "description": self.description, "priority": self.priority})
    }
}

const fn col(name: &'static str, kind: &'static str, priority: u8, description: &'static str) -> Column {
    Column { name, kind, format: "", priority, description }
}

/// The object's name column.
pub(crate) const NAME: Column =
    Column { name: "Name", kind: "string", format: "name", priority: 0, description: NAME_DOC };

/// ObjectMeta's documentation of `name`, which kube-apiserver's Tables quote.
const NAME_DOC: &str = "Name must be unique within a namespace. Is required when creating resources, although \
    some resources may allow a client to request the generation of an appropriate name automatically. Name is \
    primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: \
    https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// ObjectMeta's documentation of `creationTimestamp`, which kube-apiserver's Tables quote.
const CREATED_DOC: &str = "CreationTimestamp is a timestamp representing the server time when this object was \
    created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not \
    set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null \
    for lists. More info: \
    https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// The age column most printers end with.
pub(crate) const AGE: Column = col("Age", "string", 0, CREATED_DOC);

/// A printer: the columns of a kind and the cells of one object (`now` in Unix seconds).
pub struct Printer {
    /// The columns.
    pub columns: &'static [Column],
    /// The cells of an object, one per column.
    pub cells: fn(&Value, i64) -> Vec<Value>,
}

/// The printer of the built-in kind `kind` of `group`, or the default one.
pub fn printer(group: &str, kind: &str) -> Printer {
    workloads::printer(group, kind).or_else(|| others::printer(group, kind)).unwrap_or(DEFAULT)
}

/// The default table convertor's: `Name` and `Created At` (the RFC 3339 time).
const DEFAULT: Printer = Printer {
    columns: &[NAME, col("Created At", "date", 0, CREATED_DOC)],
    cells: |object, _| vec![json!(name(object)), json!(text(object, "/metadata/creationTimestamp"))],
};

/// The object's name.
pub(crate) fn name(object: &Value) -> &str {
    text(object, "/metadata/name")
}

/// The string at `pointer`, or "".
pub(crate) fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// The integer at `pointer`, or 0.
pub(crate) fn int(object: &Value, pointer: &str) -> i64 {
    object.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// The array at `pointer`, or none.
pub(crate) fn items<'a>(object: &'a Value, pointer: &str) -> &'a [Value] {
    object.pointer(pointer).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The object's age as kubectl shows it.
pub(crate) fn age(object: &Value, now: i64) -> Value {
    json!(since(text(object, "/metadata/creationTimestamp"), now))
}

/// How long ago an RFC 3339 time was, as `duration.HumanDuration`; `<unknown>` without one.
pub(crate) fn since(time: &str, now: i64) -> String {
    match humantime::parse_rfc3339_weak(time) {
        Ok(t) => {
            let at =
                t.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
            human_duration(now - at)
        }
        Err(_) if time.is_empty() => "<unknown>".into(),
        Err(_) => "<invalid>".into(),
    }
}

/// apimachinery's `duration.HumanDuration` of `seconds`: `45s`, `5m30s`, `3h`, `2d4h`, `3y`.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 { format!("{minutes}m") } else { format!("{minutes}m{s}s") };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 { format!("{hours}h") } else { format!("{hours}h{m}m") };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 { format!("{}d", hours / 24) } else { format!("{}d{h}h", hours / 24) };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let d = (hours / 24) % 365;
        return if d == 0 { format!("{}y", hours / 24 / 365) } else { format!("{}y{d}d", hours / 24 / 365) };
    }
    format!("{}y", hours / 24 / 365)
}

/// A label selector (`matchLabels`, `matchExpressions`) in its string form, `<none>` when
/// empty, as the printers show one.
pub(crate) fn selector(object: &Value, pointer: &str) -> String {
    let selector = object.pointer(pointer).map(crate::kube::LabelSelector::of_object).unwrap_or_default();
    if selector.is_empty() { "<none>".into() } else { selector.to_string() }
}

/// A map of labels as `a=b,c=d`, `<none>` when empty.
pub(crate) fn labels(object: &Value, pointer: &str) -> String {
    let labels = object.pointer(pointer).map(crate::kube::LabelSelector::of_labels).unwrap_or_default();
    if labels.is_empty() { "<none>".into() } else { labels.to_string() }
}

/// The containers' names and images of a pod template at `spec`, comma-separated.
pub(crate) fn containers(object: &Value, spec: &str) -> (String, String) {
    let containers = items(object, &format!("{spec}/containers"));
    let names: Vec<&str> = containers.iter().map(|c| text(c, "/name")).collect();
    let images: Vec<&str> = containers.iter().map(|c| text(c, "/image")).collect();
    (names.join(","), images.join(","))
}

/// `value` or `<none>` when empty.
pub(crate) fn or_none(value: &str) -> String {
    if value.is_empty() { "<none>".into() } else { value.to_owned() }
}

#[cfg(test)]
#[path = "printers_tests.rs"]
mod tests;
