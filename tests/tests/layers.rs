//! The host crate's rooms keep their floors: a room uses only rooms on floors below its
//! own, so no arrow runs back up and no two rooms form a loop (ARCHITECTURE.md names the
//! floors and the rule each room keeps). The plugin room is a house of its own, with floors
//! of its own, kept the same way.
//!
//! The arrows are read from the code as a reader sees them: every `crate::ROOM` path in a
//! file of `host/src` (and every `crate::plugin::ROOM` path in a file of `host/src/plugin`)
//! outside comments. Test code is left out (files whose name holds `test`,
//! and a file's `#[cfg(test)]` module at its end): a test may build its case from any room.
//!
//! Run with `cargo xtask test`, or `cargo test -p wink-tests --test layers`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The host crate's rooms by floor, the lowest first. A room may use the rooms of lower
/// floors, never one of its own floor or above.
const FLOORS: &[&[&str]] = &[
    // Vocabulary: error plumbing, and Kubernetes' kinds, scopes, selectors, RBAC, YAML.
    &["errors", "kube"],
    // client-go's informer and work queue.
    &["informer", "workqueue"],
    // Requests to a cluster; watching a folder; the metrics and health endpoint.
    &["cluster", "fswatch", "serve"],
    // The embedded cluster; handler plugins.
    &["embedded", "plugin"],
    // Sources of objects; scale-out; OCI plugins.
    &["source", "shard", "oci"],
    // The WinkPlugin controller; record and replay.
    &["crd", "replay"],
    // The `wink` subcommands as library functions.
    &["app"],
    // The command line and its log output.
    &["main", "logging"],
];

/// The plugin room's rooms by floor, the lowest first.
const PLUGIN_FLOORS: &[&[&str]] = &[
    // What the rest speaks: the WIT contract and a call's outcome; what a manifest says; the
    // threads guest code runs on.
    &["contract", "manifest", "threads"],
    // What each plugin's deliveries and requests are counted in.
    &["metrics"],
    // The host imports, one capability per module.
    &["imports"],
    // The engine, loading, and the sandbox that composes the imports.
    &["runtime"],
    // A plugin as an informer event handler.
    &["delivery"],
    // A reconciler: events mapped to keys, its work queue and workers.
    &["reconcile"],
    // The registry of deployed plugins.
    &["deploy"],
];

/// A house: its folder, the path prefix that names its rooms, its floors and its root file;
/// and what reading it must find (two of its rooms, one arrow), so that a reader that finds
/// nothing cannot pass for a house in order.
struct House {
    dir: &'static str,
    prefix: &'static str,
    floors: &'static [&'static [&'static str]],
    root: &'static str,
    known_rooms: [&'static str; 2],
    known_arrow: (&'static str, &'static str),
    /// How a failure names the floors table.
    table: &'static str,
}

/// The host crate.
const HOST: House = House {
    dir: "",
    prefix: "crate::",
    floors: FLOORS,
    root: "lib",
    known_rooms: ["kube", "plugin"],
    known_arrow: ("plugin", "informer"),
    table: "FLOORS",
};

/// The plugin room.
const PLUGIN: House = House {
    dir: "plugin",
    prefix: "crate::plugin::",
    floors: PLUGIN_FLOORS,
    root: "mod",
    known_rooms: ["imports", "runtime"],
    known_arrow: ("runtime", "imports"),
    table: "PLUGIN_FLOORS",
};

fn host_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/src")
}

impl House {
    fn src(&self) -> PathBuf {
        host_src().join(self.dir)
    }

    fn floor_of(&self, room: &str) -> Option<usize> {
        self.floors.iter().position(|floor| floor.contains(&room))
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The room a file of `host/src` belongs to: its first folder, or its own name.
fn room_of(relative: &Path) -> String {
    let first = relative.components().next().unwrap().as_os_str().to_string_lossy();
    first.strip_suffix(".rs").unwrap_or(&first).to_owned()
}

/// A file's code without comments and without its `#[cfg(test)]` items (an item ends at
/// its `;`, or where the braces it opens close).
fn code_of(text: &str) -> String {
    let mut kept = Vec::new();
    let mut lines = text.lines().filter(|l| !l.trim_start().starts_with("//"));
    while let Some(line) = lines.next() {
        if line.trim() != "#[cfg(test)]" {
            kept.push(line);
            continue;
        }
        let mut depth = 0usize;
        for item in lines.by_ref() {
            depth += item.matches('{').count();
            depth = depth.saturating_sub(item.matches('}').count());
            let item = item.trim_end();
            if depth == 0 && !item.starts_with("#[") && (item.ends_with(';') || item.ends_with('}')) {
                break;
            }
        }
    }
    kept.join("\n")
}

/// The identifier at the start of `text`.
fn ident(text: &str) -> String {
    text.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// Every room named after `prefix` (`crate::` or `crate::plugin::`) in `code`
/// (`crate::room::…`, or each of `crate::{room::…, other}`).
fn rooms_used(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut rooms = BTreeSet::new();
    for (i, m) in code.match_indices(prefix) {
        if code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[i + m.len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                rooms.extend(group.split(',').map(ident));
            }
            None => drop(rooms.insert(ident(rest))),
        }
    }
    rooms.retain(|room| !room.is_empty());
    rooms
}

/// room → (room it uses → the files that use it).
fn arrows(house: &House) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let src = house.src();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut arrows: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(&src).unwrap();
        if relative.file_name().unwrap().to_string_lossy().contains("test") {
            continue;
        }
        let room = room_of(relative);
        for used in rooms_used(&code_of(&std::fs::read_to_string(&file).unwrap()), house.prefix) {
            if used != room {
                let users = arrows.entry(room.clone()).or_default().entry(used).or_default();
                users.insert(relative.display().to_string());
            }
        }
    }
    arrows
}

/// Fails unless every room of `house` (test files aside) has a floor.
fn assert_every_room_has_a_floor(house: &House) {
    let src = house.src();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let rooms: BTreeSet<String> = files
        .iter()
        .map(|f| f.strip_prefix(&src).unwrap())
        .filter(|f| !f.file_name().unwrap().to_string_lossy().contains("test"))
        .map(room_of)
        .collect();
    let homeless: Vec<&String> = rooms.iter().filter(|r| **r != house.root && house.floor_of(r).is_none()).collect();
    assert!(homeless.is_empty(), "rooms with no floor in {} (and ARCHITECTURE.md): {homeless:?}", house.table);
    assert!(house.known_rooms.iter().all(|r| rooms.contains(*r)), "{} was read: {rooms:?}", src.display());
}

/// Fails on an arrow of `house` that runs sideways or back up.
fn assert_no_back_arrow(house: &House) {
    let arrows = arrows(house);
    let (from, to) = house.known_arrow;
    assert!(arrows.get(from).is_some_and(|used| used.contains_key(to)), "arrows were read: {arrows:?}");
    let mut back = Vec::new();
    for (room, used) in &arrows {
        let Some(floor) = house.floor_of(room) else { continue };
        for (target, files) in used {
            if house.floor_of(target).is_some_and(|f| f >= floor) {
                back.push(format!("{room} (floor {floor}) -> {target}: {files:?}"));
            }
        }
    }
    assert!(back.is_empty(), "arrows in {} that run sideways or back up:\n{}", house.src().display(), back.join("\n"));
}

#[test]
fn every_room_has_a_floor() {
    assert_every_room_has_a_floor(&HOST);
}

#[test]
fn every_room_of_the_plugin_room_has_a_floor() {
    assert_every_room_has_a_floor(&PLUGIN);
}

#[test]
fn no_room_uses_a_room_on_its_own_floor_or_above() {
    assert_no_back_arrow(&HOST);
}

#[test]
fn no_room_of_the_plugin_room_uses_one_on_its_own_floor_or_above() {
    assert_no_back_arrow(&PLUGIN);
}

#[test]
fn the_vocabulary_uses_nothing_of_the_host() {
    let arrows = arrows(&HOST);
    let used: Vec<_> = arrows.get("kube").map(|u| u.keys().collect()).unwrap_or_default();
    assert!(used.is_empty(), "kube/ uses {used:?}");
}

#[test]
fn the_reader_sees_paths_and_skips_comments() {
    let code = code_of(
        "use crate::informer::Object;\n// see crate::app\nfn f() { crate::kube::yaml11::x(); }\n\
         #[cfg(test)]\nmod tests {\n    use crate::app;\n}\n#[cfg(test)]\n#[path = \"t.rs\"]\nmod more;\n\
         fn g() -> crate::source::SourceSpec {}",
    );
    let used = ["informer", "kube", "source"].map(str::to_owned);
    assert_eq!(rooms_used(&code, "crate::"), BTreeSet::from(used), "code after a test item is read");
    assert_eq!(rooms_used("wink_crate::x", "crate::"), BTreeSet::new(), "only a path that starts with `crate::`");
    let grouped = rooms_used("use crate::{plugin::Manifest, source};", "crate::");
    assert_eq!(grouped, BTreeSet::from(["plugin".to_owned(), "source".to_owned()]));
    let inside = rooms_used(
        "use crate::plugin::{imports::HasImports, manifest};\nuse crate::informer::Object;",
        "crate::plugin::",
    );
    assert_eq!(inside, BTreeSet::from(["imports".to_owned(), "manifest".to_owned()]));
}
