//! Compiles the protocol descriptions the embedded API reads at run time, with protox (pure
//! Rust: no `protoc` is needed):
//! - the Kubernetes API's `generated.proto` files (vendored under `proto/`, see
//!   `proto/README.md`) into one `FileDescriptorSet`, read by the protobuf conversion
//!   (`src/embedded/http/protobuf/descriptors.rs`);
//! - gnostic's `openapi.v2` (`openapi/OpenAPIv2.proto`, the message `/openapi/v2` answers in
//!   protobuf), read by `src/embedded/http/openapi/gnostic.rs`.

use std::path::{Path, PathBuf};

fn protos(dir: &Path, root: &Path, found: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            protos(&path, root, found)?;
        } else if path.extension().is_some_and(|e| e == "proto") {
            found.push(path.strip_prefix(root).map_err(std::io::Error::other)?.to_path_buf());
        }
    }
    Ok(())
}

/// Compiles every `.proto` under `root` into `out`, a `FileDescriptorSet`.
fn compile(root: &Path, out: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let mut files = Vec::new();
    protos(root, root, &mut files)?;
    files.sort();
    let mut compiler = protox::Compiler::new([root])?;
    compiler.include_imports(true).include_source_info(false);
    compiler.open_files(files)?;
    std::fs::write(out, compiler.encode_file_descriptor_set())?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    println!("cargo:rerun-if-changed=proto");
    println!("cargo:rerun-if-changed=openapi/OpenAPIv2.proto");
    compile(&manifest.join("proto"), &out.join("kubernetes.fds"))?;
    compile(&manifest.join("openapi"), &out.join("openapiv2.bin"))?;
    Ok(())
}
