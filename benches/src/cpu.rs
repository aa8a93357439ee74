//! CPU time by who spent it, so that a throughput ratio can be read as the consumers' own:
//! the local API server shares the machine's cores with the consumer it serves. In a
//! benchmark that serves from its own runtime ([`server_runtime`], threads named
//! [`SERVER_THREADS`]), a consumer in this process spent the process's CPU time minus the
//! server threads'; client-go's consumer, a child process, its own (`/proc/<pid>/stat`).
//! Linux counts in ticks of 10 ms (USER_HZ): runs of a second or more are read to about 1%.

use std::collections::BTreeMap;
use std::time::Duration;

/// The name of the local API server's runtime threads (a prefix: Linux keeps 15 bytes).
pub const SERVER_THREADS: &str = "bench-apiserver";

/// A runtime for the local API server alone (two workers, named [`SERVER_THREADS`]): start
/// the cluster in it (`server.block_on(BenchCluster::start(..))`) and everything the server
/// spawns runs there, apart from the consumers.
pub fn server_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(SERVER_THREADS)
        .enable_all()
        .build()
        .expect("building the API server's runtime")
}

/// utime + stime of a `/proc/.../stat` line (Linux counts clock ticks of 1/100 s, USER_HZ,
/// on every mainstream configuration).
fn stat_ticks(stat: &str) -> Duration {
    // Fields after the command name (which may hold spaces) start after the last ')';
    // utime and stime are fields 14 and 15 of the line: 12 and 13 after the ')'.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = [11, 12].iter().filter_map(|&i| fields.get(i)?.parse::<u64>().ok()).sum();
    Duration::from_millis(ticks * 10)
}

/// The thread name of a `/proc/.../stat` line (none for a line that is not one: a thread
/// gone before it was read).
fn stat_name(stat: &str) -> Option<&str> {
    match (stat.find('('), stat.rfind(')')) {
        (Some(open), Some(close)) if open < close => Some(&stat[open + 1..close]),
        _ => None,
    }
}

/// CPU time (user + system) this process has spent so far (`/proc/self/stat`).
pub fn of_this_process() -> Duration {
    stat_ticks(&std::fs::read_to_string("/proc/self/stat").unwrap_or_default())
}

/// CPU time the process `pid` has spent so far (zero once it is gone).
pub fn of_process(pid: u32) -> Duration {
    stat_ticks(&std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default())
}

/// CPU time of each thread of this process so far, summed by thread name
/// (`/proc/self/task/*/stat`).
pub fn by_thread() -> BTreeMap<String, Duration> {
    let mut by_name = BTreeMap::new();
    for task in std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten() {
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        if let Some(name) = stat_name(&stat) {
            *by_name.entry(name.to_owned()).or_insert(Duration::ZERO) += stat_ticks(&stat);
        }
    }
    by_name
}

/// CPU time this process has spent outside the API server's threads so far.
pub fn outside_server() -> Duration {
    let server: Duration =
        by_thread().into_iter().filter(|(name, _)| name.starts_with(SERVER_THREADS)).map(|(_, cpu)| cpu).sum();
    of_this_process().saturating_sub(server)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_past_a_name_with_spaces_and_parentheses() {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
        let line = "42 (a (b) c) S 1 42 42 0 -1 4194304 10 0 0 0 150 25 0 0 20 0";
        assert_eq!(stat_name(line), Some("a (b) c"));
        assert_eq!(stat_name(""), None);
        assert_eq!(stat_ticks(line), Duration::from_millis(1750));
    }
}
