//! How deeply a manifest nests, measured without parsing it.
//!
//! A YAML parser keeps state per open collection, and libyaml (under `serde_norway`) looks at
//! all of it for every token: a document nested 100,000 levels deep takes it tens of seconds
//! before the deserializer's own recursion limit can refuse it. So the directory source first
//! estimates each document's depth with one pass over its text and leaves out, unparsed, any
//! document estimated deeper than [`PRESCAN_LIMIT`]. The estimate never undercounts: block
//! nesting needs at least one column per level, and flow nesting one bracket per level. The
//! exact limit an object must meet ([`MAX_DEPTH`](crate::informer::object::MAX_DEPTH)) is
//! checked on the parsed value.

/// Documents whose estimated depth exceeds this are refused before parsing. Generous, as the
/// estimate counts indentation columns rather than levels.
pub const PRESCAN_LIMIT: usize = 1024;

/// A YAML stream cut into documents at `---` lines.
pub(super) struct Documents<'a> {
    /// Each document's text (its `---` line included), in order.
    pub parts: Vec<&'a str>,
    /// Whether the first part is text before any `---` that holds no content (then it is
    /// not a document of its own).
    pub leading_empty: bool,
}

fn is_marker(line: &str) -> bool {
    line.strip_prefix("---").is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

fn has_content(text: &str) -> bool {
    text.lines().any(|l| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('#') && !t.starts_with('%')
    })
}

/// Cuts a YAML stream at its document markers (`---` at the start of a line).
pub(super) fn split_documents(text: &str) -> Documents<'_> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if is_marker(line) && offset > start {
            parts.push(&text[start..offset]);
            start = offset;
        }
        offset += line.len();
    }
    parts.push(&text[start..]);
    let leading_empty = parts.first().is_some_and(|p| !p.lines().next().is_some_and(is_marker) && !has_content(p));
    Documents { parts, leading_empty }
}

/// An upper bound on how deeply a YAML document's collections nest: one, plus the largest
/// indentation (spaces and block indicators `-`, `?`, `:` opening a line) plus the open flow
/// brackets seen at any point, skipping quoted scalars and comments.
pub fn estimated_depth(text: &str) -> usize {
    let bytes = text.as_bytes();
    let (mut flow, mut max) = (0usize, 0usize);
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        // At a line start (outside quotes): the indentation and block indicators.
        let mut prefix = 0;
        if quote.is_none() {
            while i < bytes.len() && matches!(bytes[i], b' ' | b'\t' | b'-' | b'?' | b':') {
                prefix += 1;
                i += 1;
            }
            max = max.max(prefix + flow + 1);
        }
        // The previous byte, and the previous one that is not a blank.
        let (mut last, mut prev) = (b' ', b' ');
        while i < bytes.len() && bytes[i] != b'\n' {
            let b = bytes[i];
            match quote {
                Some(b'"') => match b {
                    b'\\' => i += 1,
                    b'"' => quote = None,
                    _ => {}
                },
                Some(_) => {
                    if b == b'\'' {
                        if bytes.get(i + 1) == Some(&b'\'') {
                            i += 1;
                        } else {
                            quote = None;
                        }
                    }
                }
                None => match b {
                    b'"' | b'\'' if matches!(prev, b' ' | b'\t' | b'[' | b'{' | b',' | b':' | b'-' | b'?') => {
                        quote = Some(b);
                    }
                    b'#' if matches!(last, b' ' | b'\t') => {
                        while i < bytes.len() && bytes[i] != b'\n' {
                            i += 1;
                        }
                        break;
                    }
                    b'[' | b'{' => {
                        flow += 1;
                        max = max.max(prefix + flow + 1);
                    }
                    b']' | b'}' => flow = flow.saturating_sub(1),
                    _ => {}
                },
            }
            if b != b' ' && b != b'\t' {
                prev = b;
            }
            last = b;
            i += 1;
        }
        i += 1;
    }
    max
}

/// How deeply a JSON value's arrays and objects nest (a scalar is 0), without recursion.
pub fn value_depth(value: &serde_json::Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 1)];
    while let Some((v, depth)) = stack.pop() {
        match v {
            serde_json::Value::Array(items) => {
                deepest = deepest.max(depth);
                stack.extend(items.iter().map(|i| (i, depth + 1)));
            }
            serde_json::Value::Object(map) => {
                deepest = deepest.max(depth);
                stack.extend(map.values().map(|i| (i, depth + 1)));
            }
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_never_undercount_block_and_flow_nesting() {
        let block = "a:\n  b:\n    c:\n      - - x\n";
        assert!(estimated_depth(block) >= 5, "{}", estimated_depth(block));
        assert!(estimated_depth("a: [[[{b: [1]}]]]\n") >= 6);
        let compact = format!("{}x\n", "- ".repeat(5_000));
        assert!(estimated_depth(&compact) > PRESCAN_LIMIT);
        let flow = format!("a: {}", "[".repeat(100_000));
        assert!(estimated_depth(&flow) > PRESCAN_LIMIT);
    }

    #[test]
    fn brackets_in_quotes_and_comments_are_not_nesting() {
        let text = format!("a: \"{0}\\\"{0}\"\nb: '{0}''{0}'\n# {0}\nc: x # {0}\nd: don't {{}}\n", "[".repeat(2_000));
        assert!(estimated_depth(&text) < 10, "{}", estimated_depth(&text));
    }

    #[test]
    fn splits_at_document_markers() {
        let docs = split_documents("# c\n---\na: 1\n--- b\n---\n");
        assert!(docs.leading_empty);
        assert_eq!(docs.parts, ["# c\n", "---\na: 1\n", "--- b\n", "---\n"]);
        let docs = split_documents("a: 1\n---x: 2\n---\nb: 2");
        assert!(!docs.leading_empty);
        assert_eq!(docs.parts, ["a: 1\n---x: 2\n", "---\nb: 2"]);
    }

    #[test]
    fn value_depth_counts_collections() {
        assert_eq!(value_depth(&serde_json::json!(1)), 0);
        assert_eq!(value_depth(&serde_json::json!({"a": [1, {"b": []}]})), 4);
    }
}
