//! Media types as HTTP writes them: a `Content-Type`'s type and parameters, and the media
//! ranges of an `Accept` header in the order a server should try them (highest quality
//! first, then the more specific, then as written — goautoneg's order, which
//! kube-apiserver's negotiation and kube-openapi's handler use).

use axum::http::{HeaderMap, header};

/// A media type's `type/subtype` and its parameters (`name=value`), trimmed.
fn media_type(value: &str) -> (&str, impl Iterator<Item = (&str, &str)>) {
    let mut parts = value.split(';');
    let mime = parts.next().unwrap_or_default().trim();
    let params = parts.filter_map(|p| p.split_once('=')).map(|(k, v)| (k.trim(), v.trim()));
    (mime, params)
}

/// The `type/subtype` of a request's `Content-Type`, without its parameters; empty when it
/// has none.
pub(super) fn content_type(headers: &HeaderMap) -> &str {
    let value = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    media_type(value).0
}

/// One media range of an `Accept` header.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct MediaRange {
    /// The type (`application`, or `*`).
    pub kind: String,
    /// The subtype (`json`, or `*`).
    pub subtype: String,
    /// Its quality, `q` (1 when not given).
    pub quality: f32,
    /// Its other parameters (`as=Table`, `stream=watch`).
    pub params: Vec<(String, String)>,
}

impl MediaRange {
    /// How specific the range is: `*/*` 0, `type/*` 1, `type/subtype` 2.
    fn specificity(&self) -> u8 {
        match (self.kind.as_str(), self.subtype.as_str()) {
            ("*", _) => 0,
            (_, "*") => 1,
            _ => 2,
        }
    }

    /// Whether the range admits `type/subtype`.
    pub fn admits(&self, mime: &str) -> bool {
        let (kind, subtype) = mime.split_once('/').unwrap_or((mime, ""));
        (self.kind == "*" || self.kind.eq_ignore_ascii_case(kind))
            && (self.subtype == "*" || self.subtype.eq_ignore_ascii_case(subtype))
    }

    /// The range's `type/subtype`.
    pub fn mime(&self) -> String {
        format!("{}/{}", self.kind, self.subtype)
    }
}

/// The media ranges of `headers`' `Accept` the client takes at all (quality above 0), in the
/// order to try them; none when there is no `Accept`.
pub(super) fn accepted(headers: &HeaderMap) -> Vec<MediaRange> {
    let accept = headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok()).collect::<Vec<_>>().join(",");
    let mut ranges: Vec<MediaRange> = accept
        .split(',')
        .filter(|r| !r.trim().is_empty())
        .map(|range| {
            let (mime, params) = media_type(range);
            let (kind, subtype) = mime.split_once('/').unwrap_or((mime, "*"));
            let mut quality = 1.0_f32;
            let mut others = Vec::new();
            for (name, value) in params {
                if name == "q" {
                    quality = value.parse().unwrap_or(0.0);
                } else {
                    others.push((name.to_owned(), value.to_owned()));
                }
            }
            MediaRange { kind: kind.to_owned(), subtype: subtype.to_owned(), quality, params: others }
        })
        .filter(|r| r.quality > 0.0)
        .collect();
    // A stable sort keeps the written order among equals.
    ranges.sort_by(|a, b| b.quality.total_cmp(&a.quality).then(b.specificity().cmp(&a.specificity())));
    ranges
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn accept(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_str(value).unwrap());
        headers
    }

    fn order(value: &str) -> Vec<String> {
        accepted(&accept(value)).iter().map(MediaRange::mime).collect()
    }

    #[test]
    fn ranges_are_tried_by_quality_then_specificity_then_as_written() {
        assert_eq!(order("application/json, application/yaml"), ["application/json", "application/yaml"]);
        assert_eq!(order("*/*;q=0.8, application/json;q=0.9, text/plain"), ["text/plain", "application/json", "*/*"]);
        assert_eq!(order("*/*, application/*, application/json"), ["application/json", "application/*", "*/*"]);
        assert_eq!(order("application/json;q=0, text/plain"), ["text/plain"], "q=0 refuses");
        assert!(accepted(&HeaderMap::new()).is_empty());
    }

    #[test]
    fn parameters_other_than_quality_are_kept() {
        let ranges = accepted(&accept("application/json;as=Table;v=v1;g=meta.k8s.io;q=0.9"));
        assert_eq!(ranges[0].quality, 0.9);
        assert_eq!(ranges[0].params[0], ("as".to_owned(), "Table".to_owned()));
        assert!(ranges[0].admits("application/json") && !ranges[0].admits("application/yaml"));
        assert!(accepted(&accept("*/*"))[0].admits("application/json"));
    }
}
