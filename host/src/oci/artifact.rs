//! A plugin folder as the two blobs of its OCI artifact, and back.
//!
//! Only the manifest and its component travel: the component must sit next to the manifest
//! (`component: name.wasm`), so that a pulled folder is exactly what was pushed. A pulled
//! artifact is not trusted: its file name must be a plain name (no folder, no `..`), the
//! manifest must name that same file, and both must parse — before anything is written.

use std::path::{Component, Path, PathBuf};

use crate::plugin::manifest::{MANIFEST_FILE, Manifest};

/// The `artifactType` of a wink plugin's OCI manifest.
pub(crate) const ARTIFACT_TYPE: &str = "application/vnd.wink.plugin.v1";
/// The media type of the config blob: the plugin's `plugin.yaml`.
pub(crate) const MANIFEST_MEDIA_TYPE: &str = "application/vnd.wink.plugin.manifest.v1+yaml";
/// The media type of the layer: the WebAssembly component.
pub(crate) const COMPONENT_MEDIA_TYPE: &str = "application/wasm";
/// The annotation that names a layer's file.
pub(crate) const TITLE_ANNOTATION: &str = "org.opencontainers.image.title";

/// Why a plugin folder cannot be published, or a pulled artifact cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// The folder's manifest is invalid.
    #[error(transparent)]
    Manifest(#[from] crate::plugin::manifest::ManifestError),
    /// The manifest names a component outside its folder.
    #[error("{}: `component` must be a file next to plugin.yaml to be published, not {}", manifest.display(), component.display())]
    ComponentNotBeside {
        /// The manifest.
        manifest: PathBuf,
        /// What it names.
        component: PathBuf,
    },
    /// A pulled artifact names its component with something other than a plain file name.
    #[error("the artifact's component name {0:?} is not a plain file name")]
    UnsafeName(String),
    /// A pulled artifact's manifest names another file than the artifact's component.
    #[error("the artifact's plugin.yaml names component {named:?}, but its layer is {title:?}")]
    NameMismatch {
        /// What plugin.yaml names.
        named: String,
        /// The layer's title.
        title: String,
    },
    /// A file could not be read or written.
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// A plugin's manifest and component, as published.
#[derive(Clone, Debug)]
pub(crate) struct PluginArtifact {
    /// The plugin's name (from its manifest).
    pub name: String,
    /// `plugin.yaml`, byte for byte.
    pub manifest: Vec<u8>,
    /// The component's file name.
    pub component_name: String,
    /// The component.
    pub component: Vec<u8>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ArtifactError + '_ {
    move |source| ArtifactError::Io { path: path.to_owned(), source }
}

/// Whether `name` is one plain path component (no separator, not `.`/`..`, not empty).
fn plain_file_name(name: &str) -> bool {
    let mut parts = Path::new(name).components();
    matches!((parts.next(), parts.next()), (Some(Component::Normal(n)), None) if n == name)
}

impl PluginArtifact {
    /// Reads the plugin in `dir` (its `plugin.yaml` and the component it names).
    pub fn from_dir(dir: &Path) -> Result<Self, ArtifactError> {
        let manifest_path = dir.join(MANIFEST_FILE);
        let parsed = Manifest::load(&manifest_path)?;
        let named = parsed.component.to_string_lossy().into_owned();
        if !plain_file_name(&named) {
            return Err(ArtifactError::ComponentNotBeside { manifest: manifest_path, component: parsed.component });
        }
        let manifest = std::fs::read(&manifest_path).map_err(io(&manifest_path))?;
        let component_path = dir.join(&named);
        let component = std::fs::read(&component_path).map_err(io(&component_path))?;
        Ok(Self { name: parsed.name.to_string(), manifest, component_name: named, component })
    }

    /// Checks a pulled artifact before it is written: a plain component name, and a manifest
    /// that parses and names that component.
    pub fn validate(manifest: Vec<u8>, component_name: String, component: Vec<u8>) -> Result<Self, ArtifactError> {
        if !plain_file_name(&component_name) {
            return Err(ArtifactError::UnsafeName(component_name));
        }
        let text = String::from_utf8_lossy(&manifest);
        let parsed = Manifest::parse(&text, Path::new(MANIFEST_FILE))?;
        let named = parsed.component.to_string_lossy().into_owned();
        if named != component_name {
            return Err(ArtifactError::NameMismatch { named, title: component_name });
        }
        Ok(Self { name: parsed.name.to_string(), manifest, component_name, component })
    }

    /// Writes the plugin into `dir` (created if missing), replacing what was there as a
    /// whole: the files are written into a sibling folder which then takes `dir`'s place, so
    /// a folder watcher never sees half a plugin.
    pub fn write_to(&self, dir: &Path) -> Result<(), ArtifactError> {
        let parent = dir.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(io(parent))?;
        let staging = tempfile::Builder::new().prefix(".wink-pull-").tempdir_in(parent).map_err(io(parent))?;
        let write = |name: &str, bytes: &[u8]| {
            let path = staging.path().join(name);
            std::fs::write(&path, bytes).map_err(io(&path))
        };
        write(MANIFEST_FILE, &self.manifest)?;
        write(&self.component_name, &self.component)?;
        let old = parent.join(format!(".wink-old-{}", std::process::id()));
        let had_old = dir.exists();
        if had_old {
            let _ = std::fs::remove_dir_all(&old);
            std::fs::rename(dir, &old).map_err(io(dir))?;
        }
        let staged = staging.keep();
        std::fs::rename(&staged, dir).map_err(io(dir))?;
        if had_old {
            let _ = std::fs::remove_dir_all(&old);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = "name: p\ncomponent: p.wasm\nresources:\n  - apiVersion: v1\n    kind: Pod\n";

    #[test]
    fn only_plain_file_names_are_accepted() {
        for ok in ["p.wasm", "a-b_c.wasm"] {
            assert!(plain_file_name(ok), "{ok}");
        }
        for bad in ["", ".", "..", "../p.wasm", "/etc/passwd", "a/b.wasm", "./p.wasm"] {
            assert!(!plain_file_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_pulled_artifact_is_checked_before_anything_is_written() {
        let ok = PluginArtifact::validate(MANIFEST.into(), "p.wasm".into(), b"\0asm".to_vec()).unwrap();
        assert_eq!(ok.name, "p");
        let escape = PluginArtifact::validate(MANIFEST.into(), "../p.wasm".into(), vec![]);
        assert!(matches!(escape, Err(ArtifactError::UnsafeName(_))), "{escape:?}");
        let other = PluginArtifact::validate(MANIFEST.into(), "q.wasm".into(), vec![]);
        assert!(matches!(other, Err(ArtifactError::NameMismatch { .. })), "{other:?}");
        let broken = PluginArtifact::validate(b"name: [".to_vec(), "p.wasm".into(), vec![]);
        assert!(matches!(broken, Err(ArtifactError::Manifest(_))), "{broken:?}");
    }

    #[test]
    fn a_folder_round_trips_and_a_rewrite_replaces_it_whole() {
        let root = tempfile::tempdir().unwrap();
        let src = root.path().join("src");
        std::fs::create_dir(&src).unwrap();
        std::fs::write(src.join(MANIFEST_FILE), MANIFEST).unwrap();
        std::fs::write(src.join("p.wasm"), b"v1").unwrap();
        let artifact = PluginArtifact::from_dir(&src).unwrap();
        let out = root.path().join("out");
        artifact.write_to(&out).unwrap();
        std::fs::write(out.join("stale.txt"), b"x").unwrap();
        let v2 = PluginArtifact { component: b"v2".to_vec(), ..artifact };
        v2.write_to(&out).unwrap();
        assert_eq!(std::fs::read(out.join("p.wasm")).unwrap(), b"v2");
        assert_eq!(std::fs::read_to_string(out.join(MANIFEST_FILE)).unwrap(), MANIFEST);
        assert!(!out.join("stale.txt").exists(), "the folder is replaced as a whole");
        let leftovers: Vec<_> = std::fs::read_dir(root.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(leftovers.len(), 2, "no staging folder left: {leftovers:?}");
    }

    #[test]
    fn a_component_outside_the_folder_cannot_be_published() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(MANIFEST_FILE), MANIFEST.replace("p.wasm", "build/p.wasm")).unwrap();
        let err = PluginArtifact::from_dir(dir.path()).unwrap_err();
        assert!(matches!(err, ArtifactError::ComponentNotBeside { .. }), "{err:?}");
    }
}
