//! How deeply a manifest nests, measured without parsing it.
//!
//! libyaml (under `serde_norway`) keeps state per open flow collection (`[`, `{`) and looks at
//! all of it for every token, so its work grows with the square of the flow depth: 10,000
//! levels take it a quarter of a second, 40,000 over three, 100,000 half a minute, all
//! before the deserializer's own recursion limit can refuse the document. (Block nesting
//! costs it linear time.) So the directory source first estimates each document's depth
//! with one pass over its text and leaves out, unparsed, any document whose
//! [`Estimate::too_deep_to_parse`]. The estimate is meant never to undercount: flow nesting
//! needs one bracket per level, block nesting one column per level; quoted scalars and
//! comments are skipped. The exact limit an object must meet
//! ([`MAX_DEPTH`](crate::informer::object::MAX_DEPTH)) is checked on the parsed value.

/// Documents whose estimated flow depth exceeds this are refused before parsing: twice the
/// deepest object, leaving room for brackets in plain text that the estimate counts.
pub(crate) const FLOW_PRESCAN_LIMIT: usize = 256;

/// Documents whose estimated overall depth exceeds this are refused before parsing.
/// Generous, as the estimate counts indentation columns rather than levels.
pub(crate) const PRESCAN_LIMIT: usize = 1024;

/// How deeply a document may nest, estimated from its text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Estimate {
    /// The most flow collections (`[`, `{`) open at once.
    pub flow: usize,
    /// An upper bound on the nesting overall: one, plus the largest indentation (spaces and
    /// block indicators `-`, `?`, `:` opening a line) plus the open flow collections.
    pub overall: usize,
}

impl Estimate {
    /// Whether the document is refused before the YAML parser sees it.
    pub fn too_deep_to_parse(&self) -> bool {
        self.flow > FLOW_PRESCAN_LIMIT || self.overall > PRESCAN_LIMIT
    }
}

/// A YAML stream cut into documents at `---` lines.
pub(crate) struct Documents<'a> {
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
pub(crate) fn split_documents(text: &str) -> Documents<'_> {
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

/// Estimates how deeply a YAML document's collections nest (see [`Estimate`]), skipping
/// quoted scalars and comments.
pub(crate) fn estimated_depth(text: &str) -> Estimate {
    let bytes = text.as_bytes();
    let (mut flow, mut max, mut max_flow) = (0usize, 0usize, 0usize);
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
                        max_flow = max_flow.max(flow);
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
    Estimate { flow: max_flow, overall: max }
}

/// How deeply a JSON value's arrays and objects nest (a scalar is 0), without recursion.
pub(crate) fn value_depth(value: &serde_json::Value) -> usize {
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
        assert!(estimated_depth(block).overall >= 5, "{:?}", estimated_depth(block));
        assert_eq!(estimated_depth("a: [[[{b: [1]}]]]\n"), Estimate { flow: 5, overall: 6 });
        let compact = format!("{}x\n", "- ".repeat(5_000));
        assert!(estimated_depth(&compact).too_deep_to_parse());
        let flow = format!("a: {}", "[".repeat(FLOW_PRESCAN_LIMIT + 1));
        assert!(estimated_depth(&flow).too_deep_to_parse());
        let flow = format!("a: {}", "[".repeat(FLOW_PRESCAN_LIMIT));
        assert!(!estimated_depth(&flow).too_deep_to_parse());
    }

    #[test]
    fn brackets_in_quotes_and_comments_are_not_nesting() {
        let text = format!("a: \"{0}\\\"{0}\"\nb: '{0}''{0}'\n# {0}\nc: x # {0}\nd: don't {{}}\n", "[".repeat(2_000));
        assert!(estimated_depth(&text).overall < 10, "{:?}", estimated_depth(&text));
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
