//! Where benchmarks put their figures, and the statistics they share.
//!
//! Criterion measures and prints times; the tables of `BENCHMARKS.md` need more (events/s,
//! bytes per object, percentiles, ratios against a peer measured in the same run). Each
//! bench therefore also writes one [`Report`] as JSON to
//! `<results dir>/<bench>.json`; `wink-bench-table` renders every report found there as
//! Markdown. The results directory is `$WINK_BENCH_RESULTS`, else
//! `$CARGO_TARGET_DIR/wink-bench`, else `<repo>/target/wink-bench`.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One table of a report.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Table {
    /// What the table shows.
    pub caption: String,
    /// Column headers.
    pub columns: Vec<String>,
    /// Rows of cells, already formatted.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with these headers.
    pub fn new(caption: impl Into<String>, columns: &[&str]) -> Self {
        Self { caption: caption.into(), columns: columns.iter().map(|c| (*c).to_owned()).collect(), rows: Vec::new() }
    }

    /// Appends a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
}

/// The figures of one benchmark file.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Report {
    /// The bench's file name, e.g. `informer_throughput`.
    pub bench: String,
    /// Its heading, e.g. `1. Informer throughput vs kube-rs`.
    pub title: String,
    /// How it was measured (one paragraph).
    pub method: String,
    /// Its tables.
    pub tables: Vec<Table>,
    /// Target verdicts and remarks, one line each.
    pub notes: Vec<String>,
    /// The goals it measures, for the table at the top of `BENCHMARKS.md`.
    #[serde(default)]
    pub goals: Vec<Goal>,
}

/// One goal as a benchmark measured it: a row of "Where wink stands".
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Goal {
    /// The goal, e.g. `informer throughput ≥ 5× the faster kube-rs consumer, 4 KB Pods`.
    pub goal: String,
    /// wink's figure.
    pub wink: String,
    /// The peer's figure in the same run (empty when the goal is a bound).
    pub peer: String,
    /// wink's figure against the peer's, e.g. `5.60×` (empty when none).
    pub ratio: String,
    /// Whether it was met (`None`: a figure reported, with no bound).
    pub met: Option<bool>,
}

impl Goal {
    /// A goal met or missed (`met`), or only reported (`None`).
    pub fn new(goal: impl Into<String>, wink: impl Into<String>, met: Option<bool>) -> Self {
        Self { goal: goal.into(), wink: wink.into(), met, ..Self::default() }
    }

    /// With the peer's figure and the ratio.
    #[must_use]
    pub fn against(mut self, peer: impl Into<String>, ratio: impl Into<String>) -> Self {
        self.peer = peer.into();
        self.ratio = ratio.into();
        self
    }

    /// The verdict cell: met, **missed** or reported.
    pub fn verdict(&self) -> &'static str {
        self.met.map_or("reported", verdict)
    }
}

/// The "Where wink stands" table of `reports`' goals, with the benchmark each comes from.
pub fn goals_table(reports: &[Report]) -> String {
    let mut out =
        String::from("| goal | wink | peer, same run | ratio | verdict | benchmark |\n|---|---|---|---|---|---|\n");
    for report in reports {
        let bench = report.title.split_once('.').map_or(report.title.as_str(), |(n, _)| n);
        for g in &report.goals {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {bench} |\n",
                g.goal,
                g.wink,
                g.peer,
                g.ratio,
                g.verdict()
            ));
        }
    }
    out
}

impl Report {
    /// An empty report.
    pub fn new(bench: &str, title: &str, method: &str) -> Self {
        Self { bench: bench.into(), title: title.into(), method: method.into(), ..Self::default() }
    }

    /// Writes the report to `<results dir>/<bench>.json` and prints it.
    pub fn write(&self) {
        let dir = results_dir();
        let path = dir.join(format!("{}.json", self.bench));
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(&path, serde_json::to_string_pretty(self).expect("reports serialize")));
        match written {
            Ok(()) => eprintln!("wink-bench: wrote {}", path.display()),
            Err(e) => eprintln!("wink-bench: cannot write {}: {e}", path.display()),
        }
        eprintln!("{}", self.to_markdown());
    }

    /// The report as Markdown: a heading, the method, the tables, the notes.
    pub fn to_markdown(&self) -> String {
        let mut out = format!("### {}\n\n{}\n", self.title, self.method);
        for table in &self.tables {
            out.push('\n');
            if !table.caption.is_empty() {
                out.push_str(&format!("{}\n\n", table.caption));
            }
            out.push_str(&format!("| {} |\n", table.columns.join(" | ")));
            out.push_str(&format!("|{}\n", "---|".repeat(table.columns.len())));
            for row in &table.rows {
                out.push_str(&format!("| {} |\n", row.join(" | ")));
            }
        }
        if !self.notes.is_empty() {
            out.push('\n');
            for note in &self.notes {
                out.push_str(&format!("- {note}\n"));
            }
        }
        out
    }
}

/// The directory reports are written to and read from.
pub fn results_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("WINK_BENCH_RESULTS") {
        return PathBuf::from(dir);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| wink_tests::repo_root().join("target"));
    target.join("wink-bench")
}

/// The median of some durations (zero when empty).
pub fn median(samples: &[Duration]) -> Duration {
    percentile(samples, 50.0)
}

/// The `p`-th percentile (nearest rank) of some durations (zero when empty).
pub fn percentile(samples: &[Duration], p: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Formats a duration with a unit that fits: `850 ns`, `12.3 µs`, `4.56 ms`, `1.23 s`.
pub fn human_duration(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.2} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// Formats a rate with thousands separators: `123,456`.
pub fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `met` or `missed`, for a target verdict.
pub fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "**missed**" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_goals_table_has_a_row_per_goal_with_its_benchmark_and_verdict() {
        let mut report = Report::new("many_plugins", "5. Many plugins", "");
        report.goals.push(Goal::new("start < 1 s", "274 ms", Some(true)));
        report.goals.push(Goal::new("lag ≤ 200 µs", "309 µs", Some(false)).against("alone 309 µs", "1.00×"));
        report.goals.push(Goal::new("first event after recycling", "88 µs", None));
        let table = goals_table(&[report]);
        let rows: Vec<&str> = table.lines().skip(2).collect();
        assert_eq!(
            rows,
            [
                "| start < 1 s | 274 ms |  |  | met | 5 |",
                "| lag ≤ 200 µs | 309 µs | alone 309 µs | 1.00× | **missed** | 5 |",
                "| first event after recycling | 88 µs |  |  | reported | 5 |",
            ]
        );
    }

    #[test]
    fn percentiles_use_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        assert_eq!(percentile(&samples, 50.0), Duration::from_micros(50));
        assert_eq!(percentile(&samples, 99.0), Duration::from_micros(99));
        assert_eq!(percentile(&samples, 100.0), Duration::from_micros(100));
        assert_eq!(median(&[]), Duration::ZERO);
    }

    #[test]
    fn formats_numbers() {
        assert_eq!(thousands(1_234_567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(human_duration(Duration::from_nanos(12_340)), "12.34 µs");
        let report = Report { tables: vec![Table::new("t", &["a", "b"])], ..Report::new("x", "X", "how") };
        assert!(report.to_markdown().contains("| a | b |\n|---|---|\n"));
    }
}
