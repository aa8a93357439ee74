//! The directory source does not trust its files: special files, link loops, oversized files
//! and deeply nested documents are skipped, each named in an error, and everything else is
//! still read.

use std::path::Path;

use super::*;
use crate::source::dir_read::read_capped;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

fn pod(name: &str) -> String {
    format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: shop}}\n")
}

fn pods(src: &DirSource) -> Vec<String> {
    let mut state = src.state.lock();
    state.source("v1", "Pod").objects().iter().map(|o| o.name().to_owned()).collect()
}

fn messages(errors: &[DirSourceError]) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Regression: a link to `/dev/zero` was read until the process was killed.
#[test]
fn a_link_to_a_device_is_skipped_and_named() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "good.yaml", &pod("good"));
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero.yaml")).unwrap();
    let src = DirSource::open(dir.path()).unwrap();
    assert_eq!(pods(&src), ["good"]);
    let errors = src.rescan().unwrap();
    assert!(
        matches!(&errors[..], [DirSourceError::NotAFile { path, file_type: "a character device" }] if path.ends_with("zero.yaml")),
        "{:?}",
        messages(&errors)
    );
    assert!(messages(&errors)[0].contains("zero.yaml"));
}

/// Regression: opening a FIFO (or a link to one) waited for a writer, at startup and when
/// one was added later, and the source stopped.
#[test]
fn a_fifo_is_never_opened_at_startup_or_when_added() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "good.yaml", &pod("good"));
    mkfifo(&dir.path().join("pipe.yaml"));
    let src = DirSource::open(dir.path()).unwrap();
    assert_eq!(pods(&src), ["good"]);

    let outside = tempfile::tempdir().unwrap();
    mkfifo(&outside.path().join("fifo"));
    std::os::unix::fs::symlink(outside.path().join("fifo"), dir.path().join("linked.yml")).unwrap();
    write(dir.path(), "later.yaml", &pod("later"));
    let errors = src.rescan().unwrap();
    let mut skipped: Vec<String> = errors
        .iter()
        .map(|e| match e {
            DirSourceError::NotAFile { path, file_type: "a FIFO" } => {
                path.file_name().unwrap().to_string_lossy().into()
            }
            other => panic!("unexpected {other}"),
        })
        .collect();
    skipped.sort();
    assert_eq!(skipped, ["linked.yml", "pipe.yaml"]);
    assert_eq!(pods(&src), ["good", "later"], "changes keep flowing");
}

/// Regression: a link from a folder to its own ancestor was walked forever.
#[test]
fn a_folder_link_loop_is_skipped_and_the_rest_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    write(&a, "in-a.yaml", &pod("in-a"));
    write(&b, "in-b.yaml", &pod("in-b"));
    std::os::unix::fs::symlink(dir.path(), a.join("up")).unwrap();
    std::os::unix::fs::symlink(&a, b.join("to-a")).unwrap();
    std::os::unix::fs::symlink(&b, a.join("to-b")).unwrap();
    let src = DirSource::open(dir.path()).unwrap();
    assert_eq!(pods(&src), ["in-a", "in-b"]);
    let errors = src.rescan().unwrap();
    assert!(!errors.is_empty());
    for err in &errors {
        assert!(matches!(err, DirSourceError::Loop { .. }), "{err}");
        assert!(err.to_string().contains("loops back to"), "{err}");
    }
}

#[test]
fn an_oversized_file_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "good.yaml", &pod("good"));
    // Sparse: larger than the default limit without taking the space.
    let huge = std::fs::File::create(dir.path().join("huge.yaml")).unwrap();
    huge.set_len(DirSourceOptions::default().max_file_bytes + 1).unwrap();
    let src = DirSource::open(dir.path()).unwrap();
    assert_eq!(pods(&src), ["good"]);
    let errors = src.rescan().unwrap();
    assert!(
        matches!(&errors[..], [DirSourceError::TooLarge { path, limit: 16_777_216 }] if path.ends_with("huge.yaml")),
        "{:?}",
        messages(&errors)
    );

    let small =
        DirSource::open_with(dir.path(), DirSourceOptions { max_file_bytes: 100, ..DirSourceOptions::default() })
            .unwrap();
    write(dir.path(), "long.yaml", &format!("{}# {}\n", pod("long"), "x".repeat(100)));
    let errors = small.rescan().unwrap();
    assert_eq!(errors.iter().filter(|e| matches!(e, DirSourceError::TooLarge { .. })).count(), 2);
    assert_eq!(pods(&small), ["good"]);
}

/// A file can grow between its size check and its reading: reading stops at the limit.
#[test]
fn reading_stops_at_the_limit() {
    let endless = std::io::repeat(b'a');
    let err = read_capped(endless, Path::new("growing.yaml"), 1024).unwrap_err();
    assert!(matches!(err, DirSourceError::TooLarge { limit: 1024, .. }), "{err}");
    assert_eq!(read_capped(&b"abc"[..], Path::new("x.yaml"), 3).unwrap(), "abc");
}

fn nested_pod(name: &str, levels: usize) -> String {
    // The pod's mapping is level 1, then the arrays of `spec`.
    let inner = levels - 1;
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: shop}}\nspec: {}{}\n",
        "[".repeat(inner),
        "]".repeat(inner)
    )
}

/// Regression: a document nested 128 levels deep was accepted, and deleting its object
/// panicked the watcher's task, after which no change was delivered.
#[test]
fn a_document_nested_past_the_object_limit_is_refused_alone() {
    let dir = tempfile::tempdir().unwrap();
    let src = DirSource::open(dir.path()).unwrap();
    let text = [pod("first"), nested_pod("too-deep", MAX_DEPTH + 1), nested_pod("deepest", MAX_DEPTH), pod("last")]
        .join("---\n");
    write(dir.path(), "mixed.yaml", &text);
    let errors = src.rescan().unwrap();
    assert_eq!(messages(&errors).len(), 1, "{:?}", messages(&errors));
    let message = errors[0].to_string();
    assert!(message.contains("mixed.yaml") && message.contains("document 2: nested deeper than 127"), "{message}");
    assert_eq!(pods(&src), ["deepest", "first", "last"]);
    std::fs::remove_file(dir.path().join("mixed.yaml")).unwrap();
    assert!(src.rescan().unwrap().is_empty());
    assert!(pods(&src).is_empty());
}

/// Regression: a document nested 100,000 levels deep kept the parser busy for half a minute.
#[test]
fn a_document_nested_100000_levels_deep_is_refused_before_parsing() {
    let dir = tempfile::tempdir().unwrap();
    let src = DirSource::open(dir.path()).unwrap();
    let flow = nested_pod("flow", 100_000);
    let block = format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: block}}\nspec:\n  {}x\n", "- ".repeat(100_000));
    write(dir.path(), "deep.yaml", &[pod("first"), flow, pod("middle"), block, pod("last")].join("---\n"));
    write(dir.path(), "deep.json", &format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)));
    write(dir.path(), "other.yaml", &pod("other"));
    let mut errors = messages(&src.rescan().unwrap());
    errors.sort();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors[0].contains("deep.json") && errors[0].contains("recursion limit"), "{errors:?}");
    assert!(errors[1].contains("deep.yaml: document 2: nested deeper than"), "{errors:?}");
    assert!(errors[2].contains("deep.yaml: document 4: nested deeper than"), "{errors:?}");
    assert_eq!(pods(&src), ["first", "last", "middle", "other"]);
}

/// Between the object limit and the estimate's limits, the document is refused as it is
/// read, alone too.
#[test]
fn a_document_past_the_object_limit_within_the_estimate_is_refused_alone() {
    let dir = tempfile::tempdir().unwrap();
    let src = DirSource::open(dir.path()).unwrap();
    write(dir.path(), "deep.yaml", &[pod("first"), nested_pod("deep", 200), pod("last")].join("---\n"));
    let errors = messages(&src.rescan().unwrap());
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("deep.yaml: document 2: nested deeper than 127 levels"), "{errors:?}");
    assert_eq!(pods(&src), ["first", "last"]);
}

/// Links to regular files and to folders (outside the folder too) are followed.
#[test]
fn links_to_files_and_folders_are_followed() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "linked-file.yaml", &pod("linked-file"));
    std::fs::create_dir(outside.path().join("folder")).unwrap();
    write(&outside.path().join("folder"), "in-folder.yaml", &pod("in-folder"));
    std::os::unix::fs::symlink(outside.path().join("linked-file.yaml"), dir.path().join("file.yaml")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("folder"), dir.path().join("folder")).unwrap();
    let src = DirSource::open(dir.path()).unwrap();
    assert!(src.rescan().unwrap().is_empty());
    assert_eq!(pods(&src), ["in-folder", "linked-file"]);
}
