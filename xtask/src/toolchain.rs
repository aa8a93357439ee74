//! Makes sure the Rust toolchain can build for `wasm32-unknown-unknown`.

use std::io::ErrorKind;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The target plugins are built for: no WASI, so components import only what wink grants.
pub const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// Installs [`WASM_TARGET`] with rustup when the active toolchain lacks it. Without rustup,
/// succeeds only if the target's standard library is already in rustc's sysroot.
pub fn ensure_wasm_target() -> Result<()> {
    let listed = Command::new("rustup").args(["target", "list", "--installed"]).output();
    let output = match listed {
        Ok(output) => output,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            if sysroot_has_target()? {
                return Ok(());
            }
            bail!(
                "rustup is not installed and rustc's sysroot has no {WASM_TARGET} standard \
                 library: install rustup (https://rustup.rs) and run \
                 `rustup target add {WASM_TARGET}`, or install that target's std another way"
            );
        }
        Err(e) => return Err(e).context("running `rustup target list --installed`"),
    };
    if !output.status.success() {
        bail!(
            "`rustup target list --installed` failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let installed = String::from_utf8_lossy(&output.stdout);
    if installed.lines().any(|line| line.trim() == WASM_TARGET) {
        return Ok(());
    }
    eprintln!("xtask: installing the {WASM_TARGET} target with rustup");
    let status =
        Command::new("rustup").args(["target", "add", WASM_TARGET]).status().context("running `rustup target add`")?;
    if !status.success() {
        bail!("`rustup target add {WASM_TARGET}` failed ({status})");
    }
    Ok(())
}

/// Whether rustc's sysroot holds the standard library for [`WASM_TARGET`].
fn sysroot_has_target() -> Result<bool> {
    let output =
        Command::new("rustc").args(["--print", "sysroot"]).output().context("running `rustc --print sysroot`")?;
    if !output.status.success() {
        bail!("`rustc --print sysroot` failed ({})", output.status);
    }
    let sysroot = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    Ok(sysroot.join("lib/rustlib").join(WASM_TARGET).join("lib").is_dir())
}
