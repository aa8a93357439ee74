//! C plugins, built with Debian's clang 14 and wasi-libc, unpacked into a project-local
//! folder ([`debian`]), and bindings from wit-bindgen's C generator, used as a library.
//!
//! Build:
//! 1. the bindings of both worlds of the SDK's contract version, each in its own folder
//!    (`handler_plugin.{h,c}` and `handler_plugin_component_type.o`, which carries the world
//!    into the core module; `reconciler_plugin.*` likewise), once per run;
//! 2. `clang --target=wasm32-wasi -mexec-model=reactor` over the plugin's `*.c`, the SDK's
//!    `guest-sdk/c/*.c` and the bindings of the plugin's world ([`super::world_of`]; a
//!    reconciler is compiled with `-DWINK_RECONCILER`, which picks the SDK's reconciler
//!    exports), linked by `wasm-ld` against wasi-libc. The reactor
//!    model exports `_initialize` (run by the component before any export) instead of
//!    `_start`; the SDK uses only the parts of libc that need no WASI call (memory, strings,
//!    `snprintf` — from wasi-libc's long-double printf, see [`CFLAGS`]), so the core module
//!    imports nothing from WASI;
//! 3. `wit-component` turns the core module into a component. With no WASI adapter given,
//!    a core module that still imported WASI would fail here, naming the import.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use wit_bindgen_core::wit_parser::Resolve;

use super::{debian, tools};
use crate::component;

/// The Debian packages of the toolchain (bookworm), in unpacking order.
pub const PACKAGES: &[debian::Pinned] = &[
    ("libllvm14", "1:14.0.6-12"),
    ("libclang-cpp14", "1:14.0.6-12"),
    ("clang-14", "1:14.0.6-12"),
    ("lld-14", "1:14.0.6-12"),
    ("libclang-common-14-dev", "1:14.0.6-12"),
    // After libclang-common-14-dev, whose files it replaces.
    ("libclang-rt-14-dev-wasm32", "1:14.0.6-12"),
    ("wasi-libc", "0.0~git20220510.9886d3d-2"),
];

/// The compiler flags every C plugin is built with (besides include paths).
const CFLAGS: &[&str] = &[
    "--target=wasm32-wasi",
    "-mexec-model=reactor",
    "-std=c11",
    "-O2",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wno-unused-parameter",
    // `-fuse-ld` (below) is unused while compiling.
    "-Wno-unused-command-line-argument",
    "-Wl,--strip-all",
    // wasi-libc's default printf writes "long double not supported" to stderr, which links
    // stdio's file machinery and with it WASI's fd_write, fd_seek and fd_close. Its printf
    // with long double support has no such path: `snprintf` then needs no WASI at all.
    "-lc-printscan-long-double",
];

/// The C generator's crate version (bindings change with it).
const WIT_BINDGEN_C: &str = "0.63";

/// An unpacked clang and the generated bindings.
pub struct Toolchain {
    clang: PathBuf,
    wasm_ld: PathBuf,
    sysroot: PathBuf,
    library_path: PathBuf,
    bindings: PathBuf,
}

impl Toolchain {
    /// What the build depends on besides its sources: the packages, the generator and flags.
    pub fn fingerprint(&self) -> String {
        let packages: Vec<String> = PACKAGES.iter().map(|(n, v)| format!("{n}={v}")).collect();
        format!("{} wit-bindgen-c {WIT_BINDGEN_C} {}", packages.join(" "), CFLAGS.join(" "))
    }

    /// Builds the plugin in `plugin_dir` into a component under `work`; returns its path.
    pub fn build(&self, repo: &Path, plugin_dir: &Path, work: &Path) -> Result<PathBuf> {
        let sdk = repo.join("guest-sdk").join("c");
        let mut sources = c_files(plugin_dir)?;
        if sources.is_empty() {
            bail!("{} has no .c file", plugin_dir.display());
        }
        sources.extend(c_files(&sdk)?);
        let world = super::world_of(plugin_dir)?;
        let (bindings, stem) = (self.bindings.join(world), world.replace('-', "_"));
        sources.push(bindings.join(format!("{stem}.c")));
        let core = work.join("core.wasm");
        tools::run(
            Command::new(&self.clang)
                .env("LD_LIBRARY_PATH", &self.library_path)
                .arg(format!("--sysroot={}", self.sysroot.display()))
                // Debian's clang looks for `wasm-ld-14` on PATH: name the unpacked one.
                .arg(format!("-fuse-ld={}", self.wasm_ld.display()))
                .args(CFLAGS)
                .args((world == crate::component::RECONCILER_WORLD).then_some("-DWINK_RECONCILER"))
                .arg("-I")
                .arg(&bindings)
                .arg("-I")
                .arg(&sdk)
                .arg("-I")
                .arg(plugin_dir)
                .args(&sources)
                .arg(bindings.join(format!("{stem}_component_type.o")))
                .arg("-o")
                .arg(&core),
        )?;
        let module = fs::read(&core).with_context(|| format!("reading {}", core.display()))?;
        let bytes = component::encode(&module).context("componentizing the core module (a WASI import left?)")?;
        let output = work.join("component.wasm");
        fs::write(&output, bytes).with_context(|| format!("writing {}", output.display()))?;
        Ok(output)
    }
}

/// Unpacks the pinned packages into `<toolchains>/c` (unless they are there) and generates
/// the bindings of the C SDK's contract ([`super::sdk_contract`]) into `<build>/c-bindings`.
pub fn install(repo: &Path, toolchains: &Path, build: &Path) -> Result<Toolchain> {
    let dir = toolchains.join("c");
    let root = {
        let _lock = tools::InstallLock::acquire(toolchains)?;
        debian::install(&dir, PACKAGES)?
    };
    let llvm = root.join("usr/lib/llvm-14");
    let toolchain = Toolchain {
        clang: llvm.join("bin/clang"),
        wasm_ld: llvm.join("bin/wasm-ld"),
        sysroot: root.join("usr"),
        library_path: root.join("usr/lib/x86_64-linux-gnu"),
        bindings: build.join("c-bindings"),
    };
    let version = Command::new(&toolchain.clang)
        .env("LD_LIBRARY_PATH", &toolchain.library_path)
        .arg("--version")
        .output()
        .with_context(|| format!("running {}", toolchain.clang.display()))?;
    if !version.status.success() {
        bail!(
            "{} does not run (a shared library of LLVM 14 missing on this machine?):\n{}",
            toolchain.clang.display(),
            tools::tail(&version, 10)
        );
    }
    generate_bindings(&super::sdk_contract(repo, super::Language::C), &toolchain.bindings)?;
    Ok(toolchain)
}

/// Writes wit-bindgen's C bindings of each world (`handler-plugin`, `reconciler-plugin`)
/// into `out/<world>/`.
fn generate_bindings(wit: &Path, out: &Path) -> Result<()> {
    tools::fresh_dir(out)?;
    for name in ["handler-plugin", crate::component::RECONCILER_WORLD] {
        let mut resolve = Resolve::new();
        let (package, _) =
            resolve.push_dir(wit).with_context(|| format!("parsing the WIT package in {}", wit.display()))?;
        let world = resolve.select_world(&[package], Some(name))?;
        let mut files = wit_bindgen_core::Files::default();
        wit_bindgen_c::Opts::default().build().generate(&mut resolve, world, &mut files)?;
        let dir = out.join(name);
        tools::fresh_dir(&dir)?;
        for (file, contents) in files.iter() {
            fs::write(dir.join(file), contents).with_context(|| format!("writing {}/{file}", dir.display()))?;
        }
    }
    Ok(())
}

/// The `.c` files directly in `dir`, sorted.
fn c_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compiles `test` (under `guest-sdk/c/tests/`) with the SDK's `sources` natively, with
    /// the machine's C compiler (`$CC` or `cc`), and runs it with the repository's root.
    fn native_test(test: &str, sources: &[&str]) {
        let sdk = crate::repo_root().join("guest-sdk/c");
        let exe = std::env::temp_dir().join(format!("wink-{test}-{}", std::process::id()));
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
        tools::run(
            Command::new(&cc)
                .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
                .arg(&sdk)
                .arg(sdk.join("tests").join(format!("{test}.c")))
                .args(sources.iter().map(|s| sdk.join(s)))
                .arg("-o")
                .arg(&exe),
        )
        .unwrap_or_else(|e| panic!("compiling guest-sdk/c/tests/{test}.c with {cc}: {e:#}"));
        // The repository's root: where a test finds the shared corpora (tests/conformance/).
        let ran = tools::run(Command::new(&exe).arg(crate::repo_root()));
        let _ = fs::remove_file(&exe);
        ran.unwrap_or_else(|e| panic!("{e:#}"));
    }

    /// The SDK's JSON helpers: they parse what plugins read from objects and their config.
    #[test]
    fn sdk_json_helpers_pass_their_native_test() {
        native_test("json_test", &["wink_json.c"]);
    }

    /// The SDK's owner references and label selectors (`wink_meta.c`).
    #[test]
    fn sdk_meta_helpers_pass_their_native_test() {
        native_test("meta_test", &["wink_meta.c", "wink_json.c"]);
    }
}
