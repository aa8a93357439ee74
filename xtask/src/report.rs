//! What one `build-plugins` run built and what failed, printed as it happens and summed up at
//! the end. A failure (a toolchain that cannot be installed, a plugin that does not compile)
//! does not stop the build: the other plugins are still built, and the summary names every
//! failure with its cause.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// The outcome of one `build-plugins` run.
#[derive(Default)]
pub struct Report {
    /// Plugins built, in the order they were built.
    pub built: Vec<BuiltPlugin>,
    /// What failed, in the order it failed.
    pub failures: Vec<Failure>,
}

/// One plugin that was built and written.
pub struct BuiltPlugin {
    /// The plugin's language (`rust`, `python`, `javascript`, `c`).
    pub language: &'static str,
    /// The plugin's name.
    pub name: String,
    /// Where its component was written.
    pub component_path: PathBuf,
}

/// Something that could not be built.
pub struct Failure {
    /// What failed: `python toolchain`, `plugin image-policy (python)`…
    pub what: String,
    /// Why, with the chain of causes.
    pub error: anyhow::Error,
}

impl Report {
    /// Records a built plugin and prints one line about it.
    pub fn built(&mut self, plugin: BuiltPlugin, detail: impl fmt::Display) {
        println!("{}: {} ({}); {detail}", plugin.name, plugin.component_path.display(), plugin.language);
        self.built.push(plugin);
    }

    /// Records a failure and prints it at once.
    pub fn failed(&mut self, what: impl Into<String>, error: anyhow::Error) {
        let what = what.into();
        eprintln!("xtask: FAILED: {what}: {error:#}");
        self.failures.push(Failure { what, error });
    }

    /// Whether anything failed.
    pub fn has_failures(&self) -> bool {
        !self.failures.is_empty()
    }

    /// An error summing up the failures (each was printed in full when it happened), or `Ok`
    /// when there were none.
    pub fn into_result(self) -> anyhow::Result<()> {
        if self.failures.is_empty() {
            return Ok(());
        }
        let lines: Vec<String> = self
            .failures
            .iter()
            .map(|f| {
                let error = format!("{:#}", f.error);
                let first = error.lines().next().unwrap_or_default();
                format!("- {}: {first}", f.what)
            })
            .collect();
        anyhow::bail!(
            "{} of the plugin build failed ({} plugins built; the errors are printed in full above):\n{}",
            if self.failures.len() == 1 { "one part".to_owned() } else { format!("{} parts", self.failures.len()) },
            self.built.len(),
            lines.join("\n")
        )
    }
}

/// `1.2 s` or `340 ms`.
pub fn seconds(d: Duration) -> String {
    if d >= Duration::from_secs(1) { format!("{:.1} s", d.as_secs_f64()) } else { format!("{} ms", d.as_millis()) }
}
