//! Compiles the Kubernetes API's `generated.proto` files (vendored under `proto/`, see
//! `proto/README.md`) into one `FileDescriptorSet`, which the embedded API's protobuf
//! conversion reads (`src/embedded/http/protobuf/descriptors.rs`). protox is pure Rust:
//! no `protoc` is needed.

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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("proto");
    println!("cargo:rerun-if-changed=proto");
    let mut files = Vec::new();
    protos(&root, &root, &mut files)?;
    files.sort();
    let mut compiler = protox::Compiler::new([&root])?;
    compiler.include_imports(true).include_source_info(false);
    compiler.open_files(files)?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?).join("kubernetes.fds");
    std::fs::write(out, compiler.encode_file_descriptor_set())?;
    Ok(())
}
