//! [`GuestPool`]: the threads guest code runs on, shared by every plugin of a host.
//!
//! Guest code never runs on the async executor's threads. It runs on a fixed set of guest
//! threads (one per core by default), fed by one queue of jobs — a plugin's call, or a whole
//! batch of calls: a thread that finishes a job takes the next one without sleeping, so under
//! load a call costs no thread wake-up, and an idle thread is woken only when a job arrives
//! and every thread sleeps. Awaiting a job's result does not hold an executor thread.
//!
//! **A stuck call does not take a thread from the others.** A watchdog notices a job that has
//! run longer than the pool's slow-call threshold (10 ms by default; plugin calls take
//! microseconds): that thread leaves the pool — on Linux it also moves to the `SCHED_IDLE`
//! scheduling class (nice 19 where that is refused), so a guest spinning until its deadline
//! runs only on a core nobody else wants and yields it at once when another thread wakes —
//! and a fresh thread takes its place. The retired thread ends once its job
//! ends (the per-call deadline bounds that). The call itself is paused between epoch ticks
//! from the same threshold on, soon nine ticks in ten ([`deadline`](crate::plugin::runtime::deadline)). So a
//! stalled plugin costs its neighbours neither a guest thread nor, for long, more than a
//! tenth of a core.
//!
//! **A job runs where it is asked for while the pool has a place free** ([`here`]): on the
//! executor thread that asks for it, with no thread woken.
//!
//! Jobs are stamped, and calls timed, by `quanta`'s clock: the CPU's time-stamp counter where
//! it is invariant (about 10 ns a reading here, against 25–28 ns for the system's monotonic
//! clock, and a lone event reads it four times), the monotonic clock elsewhere. The
//! watchdog's first reading calibrates it as the pool starts, off any event's path.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use quanta::Instant;

use crate::informer::crash::panic_message;
#[cfg(target_os = "linux")]
use crate::plugin::threads::priority::{current_tid, lower_priority};

/// The default slow-call threshold.
pub(crate) const DEFAULT_SLOW_CALL: Duration = Duration::from_millis(10);

type Job = Box<dyn FnOnce() + Send>;

/// Why a job gave no result.
#[derive(Debug, thiserror::Error)]
pub enum GuestPoolError {
    /// The job panicked (host code: the guest cannot panic the host).
    #[error("the job panicked: {0}")]
    Panicked(String),
    /// The pool shut down before running the job.
    #[error("the guest pool is shut down")]
    Closed,
}

struct Worker {
    id: u64,
    /// When its current job started (`None`: waiting for one).
    busy_since: Option<Instant>,
    /// Left the pool: ends after its current job.
    retired: bool,
    #[cfg(target_os = "linux")]
    tid: i32,
}

impl Worker {
    /// It runs a job and still holds its place in the pool.
    fn runs_a_job(&self) -> bool {
        !self.retired && self.busy_since.is_some()
    }
}

#[derive(Default)]
struct State {
    jobs: VecDeque<Job>,
    workers: Vec<Worker>,
    /// Workers counted against the pool's size (not retired).
    active: usize,
    /// Active workers waiting for a job.
    idle: usize,
    next_id: u64,
    retired_calls: u64,
    /// Jobs that left the pool to wait outside the guest ([`block_in_place`]).
    left_to_wait: u64,
    /// Of those, jobs that held their executor thread's other tasks past [`HAND_OVER_AFTER`](here::HAND_OVER_AFTER).
    stalled_hand_overs: u64,
    /// The watchdog sleeps with no deadline (no job was running): a job start must wake it.
    watchdog_idle: bool,
    shutdown: bool,
}

impl State {
    /// Jobs running on the pool's threads that hold a place in it (not slow calls moved out).
    fn running_jobs(&self) -> usize {
        self.workers.iter().filter(|w| w.runs_a_job()).count()
    }
}

struct Shared {
    size: usize,
    slow_call: Duration,
    state: Mutex<State>,
    /// Wakes idle workers (a job arrived, or shutdown).
    work: Condvar,
    /// Wakes the watchdog (a job started, or shutdown).
    watch: Condvar,
    /// The places in the pool its own threads' jobs take: those running and those queued,
    /// at most `size` (`size` once it is shut down). A job asked to run on its caller's
    /// thread runs there only while these and the jobs run so (`borrowed`) leave a place
    /// free. Kept in step with `state` under its lock ([`Shared::publish`]); read without it
    /// by [`GuestPool::try_run_here`], whose jobs keep out of `state` altogether: a lone
    /// event takes no lock of the pool's.
    taken_by_pool: AtomicUsize,
    /// Jobs run on the threads that asked for them that hold a place in the pool now (not
    /// given back: see [`Borrowed::give_back`]).
    borrowed: AtomicUsize,
    /// Jobs run on the threads that asked for them, so far (beside `borrowed`: one cache
    /// line for both).
    borrowed_runs: AtomicU64,
}

thread_local! {
    /// The id of the worker running on this thread, if it is a guest thread.
    static WORKER: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
    /// The pool of the worker running on this thread, if it is a guest thread.
    static POOL: std::cell::RefCell<Option<Arc<Shared>>> = const { std::cell::RefCell::new(None) };
    /// When the job running on this thread started, as the pool stamped it.
    static JOB_STARTED: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
}

/// When the pool's job running on this thread started ([`GuestPool::run`] or
/// [`GuestPool::try_run_here`]; `None` outside a job): the pool reads the clock to watch its
/// jobs anyway, and a job that times itself from the same reading saves reading it again.
pub(crate) fn job_started() -> Option<Instant> {
    JOB_STARTED.with(std::cell::Cell::get)
}

/// Runs `wait`, which blocks on something outside the guest (a request to the cluster), after
/// handing this guest thread's place in its pool to a fresh thread, as tokio's
/// `block_in_place` does: the job in progress goes on on this thread once `wait` returns,
/// and the pool's other jobs do not wait for it meanwhile. A job run on an executor thread
/// ([`GuestPool::try_run_here`]) gives its place back and waits — in tokio's `block_in_place`
/// if the thread still holds the executor's other tasks, the request itself perhaps among
/// them, so they go on on another thread.
/// Outside a guest thread (or on one that already left the pool) it just runs `wait`.
pub(crate) fn block_in_place<R>(wait: impl FnOnce() -> R) -> R {
    let wait = match here::leave_to_wait(wait) {
        Ok(waited) => return waited,
        Err(wait) => wait,
    };
    let id = WORKER.with(std::cell::Cell::get);
    let shared = POOL.with(|pool| pool.borrow().clone());
    if let (Some(id), Some(shared)) = (id, shared) {
        let mut state = shared.state.lock();
        if let Some(me) = state.workers.iter_mut().find(|w| w.id == id && !w.retired) {
            me.retired = true;
            state.active -= 1;
            state.left_to_wait += 1;
            let waiting = state.jobs.len().saturating_sub(state.idle);
            for _ in 0..waiting.min(shared.size.saturating_sub(state.active)) {
                spawn_worker(&shared, &mut state);
            }
            shared.publish(&state);
        }
    }
    wait()
}

impl Shared {
    /// Marks this thread's worker idle (called by a job just before it hands its result
    /// over, so that whoever awaits the result sees the pool's counts up to date).
    fn job_done(&self) {
        let Some(id) = WORKER.with(std::cell::Cell::get) else { return };
        let mut state = self.state.lock();
        if let Some(me) = state.workers.iter_mut().find(|w| w.id == id) {
            me.busy_since = None;
        }
        self.publish(&state);
    }

    /// Keeps `taken_by_pool` in step with `state` (under its lock, after any change to the
    /// queued jobs, the workers' jobs or shutdown). A worker that handed its last result
    /// over counts as free (`job_done`), even before it is back waiting for the next job.
    /// The count is written only when it changes: every lone event reads it, and a pool job
    /// publishes as it starts, as it hands its result over and as it ends.
    fn publish(&self, state: &State) {
        let taken = if state.shutdown { self.size } else { (state.running_jobs() + state.jobs.len()).min(self.size) };
        if self.taken_by_pool.load(Ordering::Relaxed) != taken {
            self.taken_by_pool.store(taken, Ordering::Release);
        }
    }
}

/// Shuts the pool down when the last [`GuestPool`] handle is dropped.
struct Owner(Arc<Shared>);

impl Drop for Owner {
    fn drop(&mut self) {
        let mut state = self.0.state.lock();
        state.shutdown = true;
        self.0.publish(&state);
        drop(state);
        self.0.work.notify_all();
        self.0.watch.notify_all();
    }
}

/// The host-wide threads that run guest code. Cheap to clone; the threads end when the last
/// clone is dropped (after their current job).
#[derive(Clone)]
pub struct GuestPool {
    shared: Arc<Shared>,
    _owner: Arc<Owner>,
}

impl std::fmt::Debug for GuestPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestPool").field("size", &self.shared.size).field("busy", &self.busy()).finish()
    }
}

impl GuestPool {
    /// A pool running at most `size` jobs at once (at least 1), with the default slow-call
    /// threshold.
    pub fn new(size: usize) -> Self {
        Self::with_slow_call(size, DEFAULT_SLOW_CALL)
    }

    /// A pool whose jobs that run longer than `slow_call` leave the pool's capacity.
    pub fn with_slow_call(size: usize, slow_call: Duration) -> Self {
        let shared = Arc::new(Shared {
            size: size.max(1),
            slow_call,
            state: Mutex::default(),
            work: Condvar::new(),
            watch: Condvar::new(),
            taken_by_pool: AtomicUsize::new(0),
            borrowed: AtomicUsize::new(0),
            borrowed_runs: AtomicU64::new(0),
        });
        let watchdog = shared.clone();
        std::thread::Builder::new()
            .name("wink-guest-watchdog".into())
            .spawn(move || watchdog_loop(&watchdog))
            .expect("spawning the guest pool's watchdog");
        Self { _owner: Arc::new(Owner(shared.clone())), shared }
    }

    /// A pool sized to the machine's available parallelism.
    pub fn per_core() -> Self {
        Self::new(std::thread::available_parallelism().map_or(1, usize::from))
    }

    /// How long a job runs before it leaves the pool's capacity.
    pub fn slow_call(&self) -> Duration {
        self.shared.slow_call
    }

    /// The number of jobs that may run at once.
    pub fn size(&self) -> usize {
        self.shared.size
    }

    /// Jobs running now on the pool's threads (not counting slow calls moved out of it).
    pub fn busy(&self) -> usize {
        let on_pool_threads = self.shared.state.lock().running_jobs();
        on_pool_threads + self.shared.borrowed.load(Ordering::Acquire)
    }

    /// Calls that ran past the slow-call threshold and were moved out of the pool so far.
    pub fn slow_calls(&self) -> u64 {
        self.shared.state.lock().retired_calls
    }

    /// Jobs that left the pool to wait outside the guest ([`block_in_place`]) so far.
    pub fn waits(&self) -> u64 {
        self.shared.state.lock().left_to_wait
    }

    /// Jobs run on the thread that asked for them ([`try_run_here`](Self::try_run_here)).
    pub fn borrowed_runs(&self) -> u64 {
        self.shared.borrowed_runs.load(Ordering::Relaxed)
    }

    /// Jobs run on an executor thread that held its other tasks past [`HAND_OVER_AFTER`](here::HAND_OVER_AFTER).
    pub fn stalled_hand_overs(&self) -> u64 {
        self.shared.state.lock().stalled_hand_overs
    }

    /// Runs `job` on a guest thread and returns its result.
    pub async fn run<T, F>(&self, job: F) -> Result<T, GuestPoolError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let shared = self.shared.clone();
        let job: Job = Box::new(move || {
            let result = std::panic::catch_unwind(AssertUnwindSafe(job))
                .map_err(|panic| GuestPoolError::Panicked(panic_message(panic.as_ref())));
            shared.job_done();
            let _ = tx.send(result);
        });
        self.submit(job)?;
        rx.await.map_err(|_| GuestPoolError::Closed)?
    }

    fn submit(&self, job: Job) -> Result<(), GuestPoolError> {
        let mut state = self.shared.state.lock();
        if state.shutdown {
            return Err(GuestPoolError::Closed);
        }
        state.jobs.push_back(job);
        self.shared.publish(&state);
        if state.idle > 0 {
            drop(state);
            self.shared.work.notify_one();
        } else if state.active < self.shared.size {
            spawn_worker(&self.shared, &mut state);
        }
        Ok(())
    }
}

impl Default for GuestPool {
    fn default() -> Self {
        Self::per_core()
    }
}

fn spawn_worker(shared: &Arc<Shared>, state: &mut State) {
    let id = state.next_id;
    state.next_id += 1;
    state.active += 1;
    state.workers.push(Worker {
        id,
        busy_since: None,
        retired: false,
        #[cfg(target_os = "linux")]
        tid: 0,
    });
    let shared = shared.clone();
    let spawned = std::thread::Builder::new().name(format!("wink-guest-{id}")).spawn(move || {
        POOL.with(|pool| *pool.borrow_mut() = Some(shared.clone()));
        worker_loop(&shared, id);
    });
    if spawned.is_err() {
        // Out of threads: the jobs wait for the workers that exist.
        state.active -= 1;
        state.workers.retain(|w| w.id != id);
    }
}

fn worker_loop(shared: &Shared, id: u64) {
    WORKER.with(|w| w.set(Some(id)));
    #[cfg(target_os = "linux")]
    {
        let tid = current_tid();
        if let Some(me) = shared.state.lock().workers.iter_mut().find(|w| w.id == id) {
            me.tid = tid;
        }
    }
    let mut state = shared.state.lock();
    loop {
        let Some(job) = state.jobs.pop_front() else {
            if state.shutdown {
                break;
            }
            state.idle += 1;
            shared.work.wait(&mut state);
            state.idle -= 1;
            continue;
        };
        let started = Instant::now();
        if let Some(me) = state.workers.iter_mut().find(|w| w.id == id) {
            me.busy_since = Some(started);
        }
        shared.publish(&state);
        // A watchdog waiting for a deadline will see this job then; only an idle one needs
        // waking (so a busy pool does not wake it once per job).
        let wake_watchdog = std::mem::take(&mut state.watchdog_idle);
        drop(state);
        if wake_watchdog {
            shared.watch.notify_one();
        }
        JOB_STARTED.with(|s| s.set(Some(started)));
        job();
        JOB_STARTED.with(|s| s.set(None));
        state = shared.state.lock();
        let Some(me) = state.workers.iter_mut().find(|w| w.id == id) else { break };
        me.busy_since = None;
        let retired = me.retired;
        shared.publish(&state);
        if retired {
            break;
        }
    }
    state.workers.retain(|w| w.id != id);
}

/// Moves jobs that run past the slow-call threshold out of the pool's capacity, and starts
/// threads in their place for the jobs that wait.
fn watchdog_loop(shared: &Arc<Shared>) {
    let mut state = shared.state.lock();
    while !state.shutdown {
        let now = Instant::now();
        let mut next_check: Option<Instant> = None;
        let mut retired = 0;
        for worker in state.workers.iter_mut().filter(|w| !w.retired) {
            let Some(since) = worker.busy_since else { continue };
            let due = since + shared.slow_call;
            if due <= now {
                worker.retired = true;
                retired += 1;
                #[cfg(target_os = "linux")]
                lower_priority(worker.tid);
            } else {
                next_check = Some(next_check.map_or(due, |n| n.min(due)));
            }
        }
        if retired > 0 {
            state.retired_calls += retired;
            state.active -= retired as usize;
            let waiting = state.jobs.len().saturating_sub(state.idle);
            for _ in 0..waiting.min(shared.size.saturating_sub(state.active)) {
                spawn_worker(shared, &mut state);
            }
            shared.publish(&state);
            continue;
        }
        match next_check {
            Some(at) => {
                shared.watch.wait_for(&mut state, at.saturating_duration_since(now));
            }
            None => {
                state.watchdog_idle = true;
                shared.watch.wait(&mut state);
                state.watchdog_idle = false;
            }
        }
    }
}

pub(crate) mod here;

pub use here::HandOver;
pub(crate) use here::on_tick;
pub(crate) use here::stalled_executor;

#[cfg(test)]
mod tests;
