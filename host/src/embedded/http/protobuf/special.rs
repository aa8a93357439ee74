//! The messages whose JSON is not their fields: apimachinery's own types, which Go marshals
//! by hand (`Time`, `MicroTime`, `Duration`, `Quantity`, `IntOrString`, `RawExtension`,
//! `FieldsV1`, apiextensions' `JSON`), and the wrapper messages go-to-protobuf makes of a
//! named slice (`ExtraValue`, `Verbs`, `AttestationValue`: `repeated string items`), whose
//! JSON is the array. Both directions, so a rule and its inverse sit side by side.

use prost_reflect::{DynamicMessage, Kind, MessageDescriptor, ReflectMessage as _, Value as Field};
use serde_json::{Value, json};

use super::Error;
use super::descriptors::META_V1;

/// A message with its own JSON form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Special {
    /// `metav1.Time`: RFC 3339 in UTC, whole seconds (its protobuf decoding drops the nanos).
    Time,
    /// `metav1.MicroTime`: RFC 3339 in UTC with six fractional digits.
    MicroTime,
    /// `metav1.Duration`: Go's `time.Duration` text (`1h30m1.5s`).
    Duration,
    /// `resource.Quantity`: its string.
    Quantity,
    /// `intstr.IntOrString`: a number or a string.
    IntOrString,
    /// `runtime.RawExtension`, `metav1.FieldsV1`, apiextensions' `JSON`: raw bytes that are
    /// JSON, embedded as JSON.
    RawJson,
    /// `repeated string items` alone: the array.
    Items,
}

impl Special {
    /// The special form of `message`, if it has one.
    pub(super) fn of(message: &MessageDescriptor) -> Option<Special> {
        let name = message.full_name();
        let special = match name {
            n if n == format!("{META_V1}.Time") => Special::Time,
            n if n == format!("{META_V1}.MicroTime") => Special::MicroTime,
            n if n == format!("{META_V1}.Duration") => Special::Duration,
            n if n == format!("{META_V1}.FieldsV1") => Special::RawJson,
            "k8s.io.apimachinery.pkg.api.resource.Quantity" => Special::Quantity,
            "k8s.io.apimachinery.pkg.util.intstr.IntOrString" => Special::IntOrString,
            "k8s.io.apimachinery.pkg.runtime.RawExtension" => Special::RawJson,
            n if n.starts_with("k8s.io.apiextensions_apiserver.") && n.ends_with(".JSON") => Special::RawJson,
            _ => {
                let mut fields = message.fields();
                let first = fields.next()?;
                let wrapper = fields.next().is_none()
                    && first.name() == "items"
                    && first.is_list()
                    && matches!(first.kind(), Kind::String);
                return wrapper.then_some(Special::Items);
            }
        };
        Some(special)
    }

    /// The JSON of `message`; `None` when Go writes nothing (a zero `Time`).
    pub(super) fn to_json(self, message: &DynamicMessage) -> Result<Option<Value>, Error> {
        let get = |name: &str| message.get_field_by_name(name).map(|v| v.into_owned());
        let int = |name: &str| get(name).and_then(|v| v.as_i64().or_else(|| v.as_i32().map(i64::from))).unwrap_or(0);
        let text = |name: &str| get(name).and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        let bytes = |name: &str| get(name).and_then(|v| v.as_bytes().cloned()).unwrap_or_default();
        Ok(Some(match self {
            // Go marshals a zero Time as an empty message, and decodes one as the zero Time.
            Special::Time | Special::MicroTime if message.fields().next().is_none() => return Ok(None),
            Special::Time => json!(time_text(int("seconds"), 0, false)?),
            Special::MicroTime => json!(time_text(int("seconds"), int("nanos"), true)?),
            Special::Duration => json!(duration_text(int("duration"))),
            Special::Quantity => json!(text("string")),
            Special::IntOrString if int("type") == 1 => json!(text("strVal")),
            Special::IntOrString => json!(int("intVal")),
            Special::RawJson => {
                let field = if message.descriptor().get_field_by_name("Raw").is_some() { "Raw" } else { "raw" };
                let raw = bytes(field);
                if raw.is_empty() {
                    Value::Null
                } else {
                    serde_json::from_slice(&raw).map_err(|e| Error::RawNotJson(e.to_string()))?
                }
            }
            Special::Items => match get("items") {
                Some(Field::List(items)) => items.iter().filter_map(|i| i.as_str()).map(|s| json!(s)).collect(),
                _ => json!([]),
            },
        }))
    }

    /// The message of `value`, described by `descriptor`.
    pub(super) fn message_of_json(self, descriptor: MessageDescriptor, value: &Value) -> Result<DynamicMessage, Error> {
        let mut message = DynamicMessage::new(descriptor);
        let wrong = |expected: &str| Error::Shape { expected: expected.to_owned(), found: value.to_string() };
        match self {
            Special::Time | Special::MicroTime => {
                let text = value.as_str().ok_or_else(|| wrong("an RFC 3339 time"))?;
                let (seconds, nanos) = parse_time(text).ok_or_else(|| wrong("an RFC 3339 time"))?;
                message.set_field_by_name("seconds", Field::I64(seconds));
                // Go's MicroTime keeps microseconds; Time writes what it read.
                let nanos = if self == Special::MicroTime { nanos / 1000 * 1000 } else { nanos };
                message.set_field_by_name("nanos", Field::I32(nanos));
            }
            Special::Duration => {
                let text = value.as_str().ok_or_else(|| wrong("a duration"))?;
                let nanos = parse_duration(text).ok_or_else(|| wrong("a duration"))?;
                message.set_field_by_name("duration", Field::I64(nanos));
            }
            Special::Quantity => {
                let text = match value {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    _ => return Err(wrong("a quantity")),
                };
                message.set_field_by_name("string", Field::String(text));
            }
            Special::IntOrString => match value {
                Value::String(s) => {
                    message.set_field_by_name("type", Field::I64(1));
                    message.set_field_by_name("intVal", Field::I32(0));
                    message.set_field_by_name("strVal", Field::String(s.clone()));
                }
                Value::Number(n) => {
                    let int = n.as_i64().and_then(|i| i32::try_from(i).ok()).ok_or_else(|| wrong("an int32"))?;
                    message.set_field_by_name("type", Field::I64(0));
                    message.set_field_by_name("intVal", Field::I32(int));
                    message.set_field_by_name("strVal", Field::String(String::new()));
                }
                _ => return Err(wrong("an int or a string")),
            },
            Special::RawJson => {
                let field = if message.descriptor().get_field_by_name("Raw").is_some() { "Raw" } else { "raw" };
                message.set_field_by_name(field, Field::Bytes(value.to_string().into_bytes().into()));
            }
            Special::Items => {
                let items = value.as_array().ok_or_else(|| wrong("an array of strings"))?;
                let items = items
                    .iter()
                    .map(|i| {
                        i.as_str().map(|s| Field::String(s.to_owned())).ok_or_else(|| wrong("an array of strings"))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                message.set_field_by_name("items", Field::List(items));
            }
        }
        Ok(message)
    }
}

/// A time as Go's `metav1.Time` (`2006-01-02T15:04:05Z`) or `MicroTime`
/// (`2006-01-02T15:04:05.000000Z`) writes it, in UTC.
fn time_text(seconds: i64, nanos: i64, micro: bool) -> Result<String, Error> {
    let nanos = u32::try_from(nanos).map_err(|_| Error::Time(seconds))?;
    let at = std::time::UNIX_EPOCH
        .checked_add(std::time::Duration::from_secs(u64::try_from(seconds).map_err(|_| Error::Time(seconds))?))
        .ok_or(Error::Time(seconds))?;
    let whole = humantime::format_rfc3339_seconds(at).to_string();
    if !micro {
        return Ok(whole);
    }
    Ok(format!("{}.{:06}Z", whole.trim_end_matches('Z'), nanos / 1000))
}

/// Seconds and nanoseconds of an RFC 3339 time (an offset other than `Z` is converted).
fn parse_time(text: &str) -> Option<(i64, i32)> {
    // humantime reads only UTC (`Z`): convert a numeric offset first.
    let (stamp, offset) = match text.strip_suffix('Z').or_else(|| text.strip_suffix('z')) {
        Some(stamp) => (stamp.to_owned(), 0),
        None => {
            let at = text.len().checked_sub(6)?;
            let (stamp, zone) = text.split_at(at);
            let sign = match zone.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (hours, minutes) = zone[1..].split_once(':')?;
            (stamp.to_owned(), sign * (hours.parse::<i64>().ok()? * 3600 + minutes.parse::<i64>().ok()? * 60))
        }
    };
    let at = humantime::parse_rfc3339_weak(&stamp).ok()?;
    let since = at.duration_since(std::time::UNIX_EPOCH).ok()?;
    let seconds = i64::try_from(since.as_secs()).ok()? - offset;
    Some((seconds, i32::try_from(since.subsec_nanos()).ok()?))
}

/// Go's `time.Duration.String()`: `0s`, `1.5µs`, `2ms`, `1h30m1.5s`.
pub(super) fn duration_text(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    let fraction = |value: u64, unit: u64| {
        let (whole, rest) = (value / unit, value % unit);
        if rest == 0 {
            return whole.to_string();
        }
        let digits = unit.ilog10() as usize;
        let rest = format!("{rest:0digits$}");
        format!("{whole}.{}", rest.trim_end_matches('0'))
    };
    if n < 1_000 {
        return format!("{sign}{n}ns");
    }
    if n < 1_000_000 {
        return format!("{sign}{}µs", fraction(n, 1_000));
    }
    if n < 1_000_000_000 {
        return format!("{sign}{}ms", fraction(n, 1_000_000));
    }
    let (hours, rest) = (n / 3_600_000_000_000, n % 3_600_000_000_000);
    let (minutes, rest) = (rest / 60_000_000_000, rest % 60_000_000_000);
    let seconds = fraction(rest, 1_000_000_000);
    match (hours, minutes) {
        (0, 0) => format!("{sign}{seconds}s"),
        (0, m) => format!("{sign}{m}m{seconds}s"),
        (h, m) => format!("{sign}{h}h{m}m{seconds}s"),
    }
}

/// Go's `time.ParseDuration`: a sequence of decimal numbers with units (`ns`, `us`, `µs`,
/// `ms`, `s`, `m`, `h`), optionally signed.
pub(super) fn parse_duration(text: &str) -> Option<i64> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let unit = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        total += number * unit;
        rest = &rest[unit_end..];
    }
    #[allow(clippy::cast_possible_truncation, reason = "Go's durations are whole nanoseconds within an int64")]
    let nanos = total.round() as i64;
    Some(if negative { -nanos } else { nanos })
}
