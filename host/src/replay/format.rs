//! The recording format: JSON Lines. The first line is a header naming the format and its
//! version; each other line is one notification an informer delivered, with the time since
//! the recording started:
//!
//! ```text
//! {"type":"header","format":"wink-recording","version":1,"started":"2026-11-24T21:00:00Z","source":"dir:examples/cluster","resources":["apps/v1/Deployment"]}
//! {"type":"add","atMs":3,"resource":"apps/v1/Deployment","initial":true,"object":{…}}
//! {"type":"update","atMs":812,"resource":"apps/v1/Deployment","old":{…},"object":{…}}
//! {"type":"delete","atMs":950,"resource":"v1/ConfigMap","unknown":false,"object":{…}}
//! ```
//!
//! A reader that finds a newer version refuses the file; a line that does not parse is an
//! error naming its line number, and the lines around it still read.

use std::io::BufRead;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The format's name, in the header.
pub const FORMAT: &str = "wink-recording";
/// The format's version this build writes and reads.
pub const VERSION: u32 = 1;

/// One line of a recording.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", rename_all_fields = "camelCase")]
pub enum Line {
    /// The first line.
    Header {
        /// [`FORMAT`].
        format: String,
        /// [`VERSION`].
        version: u32,
        /// When the recording started (RFC 3339).
        started: String,
        /// Where the objects came from (`dir:PATH`, `kube`, …).
        source: String,
        /// The resources recorded, as `apiVersion/Kind`.
        resources: Vec<String>,
    },
    /// An object added (`initial`: part of an initial list).
    Add {
        /// Milliseconds since the recording started.
        at_ms: u64,
        /// `apiVersion/Kind`.
        resource: String,
        /// Whether it came with the initial list.
        initial: bool,
        /// The object.
        object: Value,
    },
    /// An object changed.
    Update {
        /// Milliseconds since the recording started.
        at_ms: u64,
        /// `apiVersion/Kind`.
        resource: String,
        /// The object before.
        old: Value,
        /// The object after.
        object: Value,
    },
    /// An object deleted (`unknown`: its final state was not seen, a relist inferred it).
    Delete {
        /// Milliseconds since the recording started.
        at_ms: u64,
        /// `apiVersion/Kind`.
        resource: String,
        /// Whether the final state is unknown.
        unknown: bool,
        /// Its last known state.
        object: Value,
    },
}

impl Line {
    /// `apiVersion/Kind` of an event line.
    pub fn resource(&self) -> Option<&str> {
        match self {
            Line::Header { .. } => None,
            Line::Add { resource, .. } | Line::Update { resource, .. } | Line::Delete { resource, .. } => {
                Some(resource)
            }
        }
    }
}

/// Why a recording, or one of its lines, cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// The file cannot be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file does not start with a header of a version this build reads.
    #[error("{path}: not a wink recording ({why})")]
    NotARecording {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with its first line.
        why: String,
    },
    /// One line does not parse.
    #[error("{path}:{line}: {message}")]
    Line {
        /// The file.
        path: std::path::PathBuf,
        /// The line number (1-based).
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// A recording read: its header, its event lines (with their line numbers), and the lines
/// that did not parse.
#[derive(Debug)]
pub struct Recording {
    /// The header line.
    pub header: Line,
    /// The events, in order, with their line numbers.
    pub events: Vec<(usize, Line)>,
    /// The lines that did not parse (each named).
    pub errors: Vec<FormatError>,
}

/// Reads the recording at `path`.
pub fn read(path: &Path) -> Result<Recording, FormatError> {
    let io = |source| FormatError::Io { path: path.to_owned(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut lines = std::io::BufReader::new(file).lines().enumerate();
    let not_a_recording = |why: String| FormatError::NotARecording { path: path.to_owned(), why };
    let first = match lines.next() {
        Some((_, line)) => line.map_err(io)?,
        None => return Err(not_a_recording("it is empty".into())),
    };
    let header: Line = serde_json::from_str(&first).map_err(|e| not_a_recording(format!("line 1: {e}")))?;
    match &header {
        Line::Header { format, version, .. } if format == FORMAT && *version <= VERSION => {}
        Line::Header { format, version, .. } => {
            return Err(not_a_recording(format!(
                "format {format} version {version}; this wink reads {FORMAT} {VERSION}"
            )));
        }
        _ => return Err(not_a_recording("line 1 is not a header".into())),
    }
    let (mut events, mut errors) = (Vec::new(), Vec::new());
    for (index, line) in lines {
        let number = index + 1;
        let text = line.map_err(io)?;
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Line>(&text) {
            Ok(Line::Header { .. }) => errors.push(FormatError::Line {
                path: path.to_owned(),
                line: number,
                message: "a second header".into(),
            }),
            Ok(event) => events.push((number, event)),
            Err(e) => errors.push(FormatError::Line { path: path.to_owned(), line: number, message: e.to_string() }),
        }
    }
    Ok(Recording { header, events, errors })
}

/// One line's text.
pub(crate) fn to_line(line: &Line) -> String {
    let mut text = serde_json::to_string(line).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn header() -> Line {
        Line::Header {
            format: FORMAT.into(),
            version: VERSION,
            started: "2026-11-24T21:00:00Z".into(),
            source: "dir:cluster".into(),
            resources: vec!["v1/Pod".into()],
        }
    }

    #[test]
    fn lines_round_trip_and_a_bad_line_is_named_while_the_rest_reads() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "ns"}});
        let add = Line::Add { at_ms: 3, resource: "v1/Pod".into(), initial: true, object: pod.clone() };
        let delete = Line::Delete { at_ms: 9, resource: "v1/Pod".into(), unknown: false, object: pod };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.jsonl");
        let text =
            [to_line(&header()), to_line(&add), "{\"type\":\"add\",\"atMs\":\n".into(), to_line(&delete)].concat();
        std::fs::write(&path, text).unwrap();
        let recording = read(&path).unwrap();
        assert_eq!(recording.header, header());
        assert_eq!(recording.events, [(2, add), (4, delete)]);
        assert_eq!(recording.errors.len(), 1);
        let message = recording.errors[0].to_string();
        assert!(message.contains("rec.jsonl:3:"), "{message}");
    }

    #[test]
    fn a_file_without_a_header_of_a_known_version_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.jsonl");
        std::fs::write(&path, "{\"type\":\"add\"}\n").unwrap();
        assert!(matches!(read(&path), Err(FormatError::NotARecording { .. })));
        let newer = Line::Header {
            format: FORMAT.into(),
            version: VERSION + 1,
            started: String::new(),
            source: String::new(),
            resources: Vec::new(),
        };
        std::fs::write(&path, to_line(&newer)).unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("version 2"), "{err}");
    }
}
