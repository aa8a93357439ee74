//! Helpers shared by the guest toolchains: where toolchains live, a lock so two builds never
//! install at once, running a tool with its output kept for the error message, and the hash
//! of a plugin's inputs that lets a rebuild skip an unchanged plugin.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

/// The folder toolchains are installed into: `$WINK_TOOLCHAINS_DIR`, or
/// `<repo>/.wink/toolchains` (ignored by git, like all of `.wink/`).
pub fn toolchains_dir(repo: &Path) -> PathBuf {
    match std::env::var_os("WINK_TOOLCHAINS_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => repo.join(".wink").join("toolchains"),
    }
}

/// Holds an exclusive lock on `<dir>/.lock` until dropped, so concurrent builds (a test run
/// and a demo) never install the same toolchain at once.
pub struct InstallLock {
    _file: fs::File,
}

impl InstallLock {
    /// Waits for the lock of `dir` (created if missing).
    pub fn acquire(dir: &Path) -> Result<Self> {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(".lock");
        let file = fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        file.lock().with_context(|| format!("locking {}", path.display()))?;
        Ok(Self { _file: file })
    }
}

/// Runs `command`, capturing its output. Fails with the command line and the end of its
/// output when it cannot start or exits unsuccessfully.
pub fn run(command: &mut Command) -> Result<Output> {
    let line = describe(command);
    let output = command.output().with_context(|| format!("cannot run `{line}`"))?;
    if !output.status.success() {
        bail!("`{line}` failed ({}):\n{}", output.status, tail(&output, 40));
    }
    Ok(output)
}

/// The program and arguments of `command`, as a shell would show them (roughly).
pub fn describe(command: &Command) -> String {
    let mut parts = vec![command.get_program().to_string_lossy().into_owned()];
    parts.extend(command.get_args().map(|a| a.to_string_lossy().into_owned()));
    parts.join(" ")
}

/// The last `lines` lines of a command's stderr and stdout.
pub fn tail(output: &Output, lines: usize) -> String {
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let all: Vec<&str> = text.lines().collect();
    let skip = all.len().saturating_sub(lines);
    all[skip..].iter().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}

/// The first line of what `program args…` prints, if it runs and succeeds.
pub fn version_of(program: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines().next().map(|l| l.trim().to_owned())
}

/// Hashes what a guest build reads: a description of the toolchain and every file under
/// `roots` (by path relative to its root, then contents), skipping caches and dependencies.
pub struct InputHash(Sha256);

impl InputHash {
    /// A hash over `toolchain` (versions and flags).
    pub fn new(toolchain: &str) -> Self {
        let mut hash = Sha256::new();
        hash.update(toolchain.as_bytes());
        hash.update([0]);
        Self(hash)
    }

    /// Adds every file under `root`, as part `label` of the inputs.
    pub fn add_tree(&mut self, label: &str, root: &Path) -> Result<()> {
        let mut files = Vec::new();
        collect_files(root, root, &mut files)?;
        files.sort();
        self.0.update(label.as_bytes());
        self.0.update([0]);
        for relative in files {
            let bytes = fs::read(root.join(&relative)).with_context(|| format!("reading {}", relative.display()))?;
            self.0.update(relative.to_string_lossy().as_bytes());
            self.0.update([0]);
            self.0.update((bytes.len() as u64).to_le_bytes());
            self.0.update(&bytes);
        }
        Ok(())
    }

    /// The hash, in hex.
    pub fn finish(self) -> String {
        hex::encode(self.0.finalize())
    }
}

/// Folders a plugin build never reads from its sources.
pub fn is_skipped_dir(name: &str) -> bool {
    matches!(name, "__pycache__" | "node_modules" | "target") || name.starts_with('.')
}

fn collect_files(root: &Path, dir: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        // Symbolic links are followed: `wit/v<version>/deps` links to the shared `wit/deps`.
        if path.is_dir() {
            if !is_skipped_dir(&name) {
                collect_files(root, &path, files)?;
            }
        } else if !name.ends_with(".pyc") {
            files.push(path.strip_prefix(root).expect("walked from root").to_owned());
        }
    }
    Ok(())
}

/// Copies the files under `from` into `to` (created), skipping what [`is_skipped_dir`]
/// skips and the files named in `except`.
pub fn copy_tree(from: &Path, to: &Path, except: &[&str]) -> Result<()> {
    let mut files = Vec::new();
    collect_files(from, from, &mut files)?;
    for relative in files {
        if except.iter().any(|e| relative == Path::new(e)) {
            continue;
        }
        let dest = to.join(&relative);
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        fs::copy(from.join(&relative), &dest).with_context(|| format!("copying to {}", dest.display()))?;
    }
    Ok(())
}

/// Empties `dir` (created if missing).
pub fn fresh_dir(dir: &Path) -> Result<()> {
    if dir.exists() {
        fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}
