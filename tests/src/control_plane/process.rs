//! The control plane's child processes: started so that they die with the test binary, their
//! output kept in a log file for failure messages, and stopped on demand.
//!
//! The shared control plane lives in a `static`, whose destructor never runs, and a test
//! binary may be killed: so every child gets `PR_SET_PDEATHSIG` (SIGKILL). Linux sends that
//! signal when the *thread* that forked the child ends, not the process, so children are
//! spawned by one thread that lives as long as the test binary; a control plane started from
//! a short-lived thread (tokio's blocking pool) is not killed when that thread ends.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;

use anyhow::{Context, Result};
use parking_lot::Mutex;

/// A free TCP port on 127.0.0.1 (free when asked: another process may take it before ours
/// binds it, which tests accept, as envtest does).
pub fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0").context("binding a free loopback port")?.local_addr()?.port())
}

/// A running server process of the control plane, its stdout and stderr in `log`.
pub struct Server {
    child: Mutex<Child>,
    log: PathBuf,
}

impl Server {
    /// Starts `binary args…` with its output appended to `log`.
    pub fn start(binary: &Path, args: &[String], log: PathBuf) -> Result<Self> {
        let out = File::options()
            .create(true)
            .append(true)
            .open(&log)
            .with_context(|| format!("creating {}", log.display()))?;
        let mut command = Command::new(binary);
        command.args(args).stdin(Stdio::null()).stdout(out.try_clone()?).stderr(out);
        let child = spawn_dying_with_us(command).with_context(|| format!("starting {}", binary.display()))?;
        Ok(Self { child: Mutex::new(child), log })
    }

    /// Its exit status, if it has exited.
    pub fn exited(&self) -> Option<ExitStatus> {
        self.child.lock().try_wait().ok().flatten()
    }

    /// Kills it (SIGKILL) and reaps it; nothing if it has exited.
    pub fn kill(&self) {
        let mut child = self.child.lock();
        let _ = child.kill();
        let _ = child.wait();
    }

    /// The last `lines` lines of its output, indented, for failure messages.
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&self.log, lines).unwrap_or_else(|e| format!("    (cannot read {}: {e})", self.log.display()))
    }
}

impl Drop for Server {
    /// Kills it: a control plane that fails to start, or is dropped, leaves no process behind.
    fn drop(&mut self) {
        self.kill();
    }
}

/// The last `lines` lines of the file at `path` (its last 64 KiB at most).
fn tail(path: &Path, lines: usize) -> io::Result<String> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    let skip = all.len().saturating_sub(lines);
    Ok(all[skip..].iter().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n"))
}

type SpawnRequest = (Command, mpsc::SyncSender<io::Result<Child>>);

/// Spawns `command` from the spawner thread, with SIGKILL as its parent-death signal.
fn spawn_dying_with_us(command: Command) -> io::Result<Child> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (requests, receive) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("control-plane-spawner".into())
            .spawn(move || {
                // The sender lives in a static: this loop, and the thread, last until exit.
                for (mut command, reply) in receive {
                    let _ = reply.send(spawn_with_death_signal(&mut command));
                }
            })
            .expect("starting the control plane's spawner thread");
        Mutex::new(requests)
    });
    let (reply, answer) = mpsc::sync_channel(1);
    spawner.lock().send((command, reply)).map_err(|_| io::Error::other("the spawner thread is gone"))?;
    answer.recv().map_err(|_| io::Error::other("the spawner thread did not answer"))?
}

#[allow(unsafe_code, reason = "pre_exec runs prctl(2), an async-signal-safe system call, in the forked child")]
fn spawn_with_death_signal(command: &mut Command) -> io::Result<Child> {
    // SAFETY: the closure only makes system calls (prctl, getppid, kill), which are
    // async-signal-safe, and allocates nothing.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then we belong to init.
            if libc::getppid() == 1 {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
            Ok(())
        });
    }
    command.spawn()
}
