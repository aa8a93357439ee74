//! What a change to the folder means when files share objects, move, are rewritten, or hide:
//! the cache follows what re-applying the folder with `kubectl apply -f` would hold, and
//! changes only where that result changes.

use std::os::unix::fs::symlink;

use super::*;

fn cm(name: &str, value: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: ns\ndata:\n  v: '{value}'\n")
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The ConfigMaps' values by key, and the ConfigMap source's resourceVersion.
fn cache(src: &DirSource) -> (BTreeMap<String, String>, u64) {
    let mut state = src.state.lock();
    let source = state.source("v1", "ConfigMap");
    let values = source
        .objects()
        .iter()
        .map(|o| (o.key().to_owned(), o.to_value().unwrap()["data"]["v"].as_str().unwrap_or_default().to_owned()))
        .collect();
    (values, source.resource_version())
}

/// Makes a file look as if it had been left alone for a while.
fn settled(path: &Path) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(std::time::SystemTime::now() - Duration::from_secs(60)).unwrap();
}

fn conflicts(errors: &[DirSourceError]) -> Vec<String> {
    errors.iter().filter(|e| matches!(e, DirSourceError::Conflict { .. })).map(ToString::to_string).collect()
}

/// Deleting one of two files that define an object keeps it; the object goes with its last
/// definition.
#[test]
fn an_object_defined_in_two_files_lives_while_either_does() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("a.yaml"), &cm("shared", "1"));
    write(&dir.path().join("b.yaml"), &cm("shared", "1"));
    let src = DirSource::open(dir.path()).unwrap();
    let (values, rv) = cache(&src);
    assert_eq!(values, BTreeMap::from([("ns/shared".to_owned(), "1".to_owned())]));
    std::fs::remove_file(dir.path().join("a.yaml")).unwrap();
    assert!(src.rescan().unwrap().is_empty());
    assert_eq!(cache(&src), (values, rv), "still there, and no event");
    std::fs::remove_file(dir.path().join("b.yaml")).unwrap();
    src.rescan().unwrap();
    assert!(cache(&src).0.is_empty(), "gone with its last definition");
}

/// Differing definitions: the last path in sort order wins, with one warning naming both
/// files; editing the losing file changes nothing; removing the winner makes the other
/// definition current (one update).
#[test]
fn the_last_path_wins_between_differing_definitions_with_one_warning() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("a.yaml"), &cm("shared", "from-a"));
    let src = DirSource::open(dir.path()).unwrap();
    write(&dir.path().join("z/b.yaml"), &cm("shared", "from-b"));
    let warned = conflicts(&src.rescan().unwrap());
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].contains("a.yaml") && warned[0].contains("z/b.yaml wins"), "{}", warned[0]);
    let (values, rv) = cache(&src);
    assert_eq!(values["ns/shared"], "from-b");
    // An edit of the losing definition: the result is unchanged, so no event and no warning.
    write(&dir.path().join("a.yaml"), &cm("shared", "from-a, edited"));
    assert!(conflicts(&src.rescan().unwrap()).is_empty(), "warned once, not on every change elsewhere");
    assert_eq!(cache(&src).1, rv);
    std::fs::remove_file(dir.path().join("z/b.yaml")).unwrap();
    src.rescan().unwrap();
    let (values, after) = cache(&src);
    assert_eq!(values["ns/shared"], "from-a, edited");
    assert_eq!(after, rv + 1, "one update");
}

/// A rename with unchanged content and a rewrite of identical content produce no events; a
/// one-line change produces one update.
#[test]
fn renames_and_identical_rewrites_are_no_events() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("old.yaml"), &format!("{}---\n{}", cm("a", "1"), cm("b", "1")));
    let src = DirSource::open(dir.path()).unwrap();
    let (values, rv) = cache(&src);
    std::fs::rename(dir.path().join("old.yaml"), dir.path().join("sub-new.yaml")).unwrap();
    src.rescan().unwrap();
    assert_eq!(cache(&src), (values.clone(), rv), "renamed: nothing happened");
    write(&dir.path().join("sub-new.yaml"), &format!("{}---\n{}", cm("a", "1"), cm("b", "1")));
    src.rescan().unwrap();
    assert_eq!(cache(&src), (values, rv), "rewritten with the same text: nothing happened");
    write(&dir.path().join("sub-new.yaml"), &format!("{}---\n{}", cm("a", "1"), cm("b", "2")));
    src.rescan().unwrap();
    assert_eq!(cache(&src).1, rv + 1, "one update");
}

/// Folders and files whose names start with `.` hold no cluster objects (`.git`), and a
/// mounted ConfigMap's `..data` / `..<timestamp>` folders are not read again beside the
/// top-level links that name their files.
#[test]
fn hidden_entries_are_skipped_and_a_mounted_config_map_counts_once() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join(".git/objects.yaml"), &cm("from-git", "1"));
    write(&dir.path().join(".hidden.yaml"), &cm("hidden", "1"));
    let mount = dir.path().join("mounted");
    write(&mount.join("..2024_11_23_10_00_00.1/app.yaml"), &cm("app", "1"));
    symlink("..2024_11_23_10_00_00.1", mount.join("..data")).unwrap();
    symlink("..data/app.yaml", mount.join("app.yaml")).unwrap();
    let src = DirSource::open(dir.path()).unwrap();
    assert_eq!(cache(&src).0, BTreeMap::from([("ns/app".to_owned(), "1".to_owned())]));
}

/// kubelet's atomic update of a ConfigMap volume (new timestamped folder, `..data_tmp` link,
/// rename over `..data`, old folder removed), repeated: each round changes exactly the
/// objects whose content changed, and never loses one.
#[test]
fn a_config_map_volume_swap_changes_exactly_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let mount = dir.path().join("mounted");
    let round_dir = |n: usize| format!("..2024_11_23_10_00_00.{n}");
    let files = |n: usize| [("a.yaml", cm("a", &(n / 3).to_string())), ("b.yaml", cm("b", "fixed"))];
    for (name, text) in files(0) {
        write(&mount.join(round_dir(0)).join(name), &text);
        symlink(format!("..data/{name}"), mount.join(name)).unwrap();
    }
    symlink(round_dir(0), mount.join("..data")).unwrap();
    let src = DirSource::open(dir.path()).unwrap();
    let (mut values, mut rv) = cache(&src);
    for n in 1..30 {
        for (name, text) in files(n) {
            write(&mount.join(round_dir(n)).join(name), &text);
        }
        symlink(round_dir(n), mount.join("..data_tmp")).unwrap();
        std::fs::rename(mount.join("..data_tmp"), mount.join("..data")).unwrap();
        std::fs::remove_dir_all(mount.join(round_dir(n - 1))).unwrap();
        src.rescan().unwrap();
        let (now, now_rv) = cache(&src);
        let changed = values.iter().filter(|(k, v)| now.get(*k) != Some(*v)).count() as u64;
        assert_eq!(now.len(), 2, "round {n}: nothing lost: {now:?}");
        assert_eq!(now_rv - rv, changed, "round {n}: one event per changed object");
        (values, rv) = (now, now_rv);
    }
    assert_eq!(values["ns/a"], "9");
}

/// A file that stays malformed is warned about once per change of it, not on every rescan
/// that another file's change causes; fixed and broken again, it is warned about again.
#[test]
fn a_persisting_warning_is_logged_once_per_change() {
    use crate::logging::{Captured, LogFormat, subscriber};
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("bad.yaml"), "kind: [");
    let captured = Captured::default();
    let writer = captured.clone();
    let logs = subscriber(LogFormat::Text, tracing_subscriber::EnvFilter::new("warn"), move || writer.clone(), false);
    tracing::subscriber::with_default(logs, || {
        let src = DirSource::open(dir.path()).unwrap();
        for n in 0..3 {
            write(&dir.path().join("other.yaml"), &cm("other", &n.to_string()));
            let errors = src.rescan().unwrap();
            src.report(errors);
        }
        write(&dir.path().join("bad.yaml"), &cm("bad", "fixed"));
        let errors = src.rescan().unwrap();
        src.report(errors);
        write(&dir.path().join("bad.yaml"), "kind: [");
        settled(&dir.path().join("bad.yaml"));
        let errors = src.rescan().unwrap();
        src.report(errors);
    });
    let text = String::from_utf8(captured.0.lock().clone()).unwrap();
    assert_eq!(text.lines().filter(|l| l.contains("bad.yaml")).count(), 2, "{text}");
}

/// A file regenerated in place (`helm template > f`) can be read half-written: it keeps its
/// objects while it looks so and was just modified, so regenerating identical content is no
/// event at all; a file that really shrank is believed once it has been left alone.
#[test]
fn a_half_written_file_keeps_its_objects_until_it_settles() {
    let dir = tempfile::tempdir().unwrap();
    let full: String = (0..10).map(|i| format!("{}---\n", cm(&format!("c{i}"), "1"))).collect();
    let path = dir.path().join("generated.yaml");
    write(&path, &full);
    let src = DirSource::open(dir.path()).unwrap();
    let (values, rv) = cache(&src);
    assert_eq!(values.len(), 10);
    // The first three documents are written so far.
    let head: String = (0..3).map(|i| format!("{}---\n", cm(&format!("c{i}"), "1"))).collect();
    write(&path, &head);
    src.rescan().unwrap();
    assert!(src.unsettled(), "a settle rescan is due");
    assert_eq!(cache(&src), (values.clone(), rv), "nothing deleted while it looks half-written");
    write(&path, &full);
    src.rescan().unwrap();
    assert!(!src.unsettled());
    assert_eq!(cache(&src), (values, rv), "regenerated with the same content: no event");
    // A real shrink, left alone: believed.
    write(&path, &head);
    settled(&path);
    src.rescan().unwrap();
    assert_eq!(cache(&src).0.len(), 3);
    assert_eq!(cache(&src).1, rv + 7, "seven deletes");
}
