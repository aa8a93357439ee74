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
//! from the same threshold on, soon nine ticks in ten ([`deadline`](super::deadline)). So a
//! stalled plugin costs its neighbours neither a guest thread nor, for long, more than a
//! tenth of a core.
//!
//! **An idle pool's job runs where it is asked for.** Waking a sleeping guest thread, and then
//! the executor thread that awaits the result, costs two thread wake-ups — tens of
//! microseconds on a virtual machine, ten times a plugin's call — which a busy pool amortizes
//! over batches but a lone event pays in full. [`GuestPool::try_run_here`] runs a job on the
//! calling thread instead, when that is a worker of a multi-threaded tokio runtime and no pool
//! thread is busy. What happens to that thread's other tasks meanwhile is the caller's
//! choice ([`HandOver`]):
//! - [`HandOver::First`]: tokio's `block_in_place` hands them to another thread (a
//!   blocking-pool thread, which this one does not wait for) before the job starts, so the
//!   job holds up no task — under load that keeps the executor's other work going while the
//!   call runs, for a thread wake-up per job;
//! - [`HandOver::IfItStalls`], for a job expected to be short on an executor with nothing
//!   else waiting: the job runs at once and wakes no thread; once it has held the thread
//!   [`HAND_OVER_AFTER`] without a break, its next epoch tick ([`on_tick`]) hands the tasks
//!   over, so they wait at most that and a tick. A wait outside the guest
//!   ([`block_in_place`]) hands them over while it lasts, and is no part of that time.
//!   The runtime's global queue holding tasks makes it [`HandOver::First`].
//!
//! Such a job counts against the pool's size; it wakes neither a guest thread nor the
//! watchdog: it watches itself from its guest call's epoch callback ([`on_tick`]) and gives
//! its place back once past the slow-call threshold, but keeps its thread's priority (that
//! thread returns to the executor, whose priority a process cannot raise again once lowered).
//! Callers use it only for plugins whose calls have stayed fast (see `PluginHandler`).

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::informer::crash::panic_message;
#[cfg(target_os = "linux")]
use crate::plugin::runtime::thread_priority::{current_tid, lower_priority};

/// The default slow-call threshold.
pub const DEFAULT_SLOW_CALL: Duration = Duration::from_millis(10);

/// How long a job run on an executor thread with [`HandOver::IfItStalls`] holds the thread's
/// other tasks without a break before its next epoch tick hands them over.
pub const HAND_OVER_AFTER: Duration = Duration::from_millis(1);

/// How long a job that stalls on an executor thread waits, as it hands the thread's tasks
/// over, for another thread to take them (tokio's `block_in_place` takes them back if none
/// did by its return).
const HAND_OVER_WAIT: Duration = Duration::from_millis(1);

/// What a job run on an executor thread ([`GuestPool::try_run_here`]) does with that
/// thread's other tasks (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandOver {
    /// Hands them to another thread before the job starts.
    First,
    /// Keeps them unless the job runs past [`HAND_OVER_AFTER`].
    IfItStalls,
}

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
    /// Runs on the thread that asked for it ([`GuestPool::try_run_here`]), not a pool thread.
    borrowed: bool,
    #[cfg(target_os = "linux")]
    tid: i32,
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
    /// Jobs run on the threads that asked for them, so far.
    borrowed_runs: u64,
    /// Of those, jobs that held their executor thread's other tasks past [`HAND_OVER_AFTER`].
    stalled_hand_overs: u64,
    /// The watchdog sleeps with no deadline (no job was running): a job start must wake it.
    watchdog_idle: bool,
    shutdown: bool,
}

struct Shared {
    size: usize,
    slow_call: Duration,
    state: Mutex<State>,
    /// Wakes idle workers (a job arrived, or shutdown).
    work: Condvar,
    /// Wakes the watchdog (a job started, or shutdown).
    watch: Condvar,
}

/// A job run on the thread that asked for it ([`GuestPool::try_run_here`]).
struct Borrowed {
    shared: Arc<Shared>,
    id: u64,
    started: Instant,
    /// The thread still holds its executor's other tasks ([`HandOver::IfItStalls`], not
    /// handed over yet).
    holds_executor: bool,
    /// Since when it has held them without a break: the job's start, or the end of its last
    /// wait outside the guest (which hands them over meanwhile).
    holding_since: Instant,
    /// It held them past [`HAND_OVER_AFTER`] and handed them over then.
    stalled: bool,
}

thread_local! {
    /// The job [`GuestPool::try_run_here`] runs on this thread, if any.
    static BORROWED: std::cell::RefCell<Option<Borrowed>> = const { std::cell::RefCell::new(None) };
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
pub fn job_started() -> Option<Instant> {
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
pub fn block_in_place<R>(wait: impl FnOnce() -> R) -> R {
    let borrowed = BORROWED.with_borrow(|b| b.as_ref().map(|b| (b.shared.clone(), b.id, b.holds_executor)));
    if let Some((shared, id, holds_executor)) = borrowed {
        let mut state = shared.state.lock();
        if state.retire_borrowed(id) {
            state.left_to_wait += 1;
        }
        drop(state);
        if !holds_executor {
            return wait();
        }
        let waited = tokio::task::block_in_place(wait);
        // The executor's tasks went on meanwhile; holding them starts again from here.
        BORROWED.with_borrow_mut(|b| {
            if let Some(b) = b {
                b.holding_since = Instant::now();
            }
        });
        return waited;
    }
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
        }
    }
    wait()
}

/// Called on every epoch tick of a guest call, on the call's thread. For a job run on an
/// executor thread ([`GuestPool::try_run_here`]): one that still holds the executor's other
/// tasks past [`HAND_OVER_AFTER`] hands them to another thread; one past the slow-call
/// threshold gives its place in the pool back, as the watchdog does for the pool's own
/// threads (it is not woken for such jobs). Does nothing on any other thread, or before.
pub fn on_tick() {
    let due = BORROWED.with_borrow_mut(|borrowed| {
        let b = borrowed.as_mut()?;
        let elapsed = b.started.elapsed();
        let hand_over = b.holds_executor && b.holding_since.elapsed() >= HAND_OVER_AFTER;
        if hand_over {
            b.holds_executor = false;
            b.stalled = true;
        }
        let retire = elapsed >= b.shared.slow_call;
        (hand_over || retire).then(|| (b.shared.clone(), b.id, hand_over, retire))
    });
    let Some((shared, id, hand_over, retire)) = due else { return };
    if retire {
        let mut state = shared.state.lock();
        if state.retire_borrowed(id) {
            state.retired_calls += 1;
        }
    }
    if hand_over {
        shared.state.lock().stalled_hand_overs += 1;
        // tokio's `block_in_place` gives this thread's executor core to a blocking-pool
        // thread; the wait lets that thread take it before `block_in_place` would take it
        // back, so the call goes on here outside the executor.
        tokio::task::block_in_place(|| std::thread::sleep(HAND_OVER_WAIT));
    }
}

/// Whether the job run on this executor thread ([`GuestPool::try_run_here`]) held the
/// executor's other tasks past [`HAND_OVER_AFTER`] (and handed them over then). A job asks
/// it as it ends.
pub fn stalled_executor() -> bool {
    BORROWED.with_borrow(|b| b.as_ref().is_some_and(|b| b.stalled))
}

impl State {
    /// Gives the place of the borrowed job `id` back to the pool; says whether it held one
    /// (it had not given it back already). A borrowed job's place never counted in `active`.
    fn retire_borrowed(&mut self, id: u64) -> bool {
        let Some(me) = self.workers.iter_mut().find(|w| w.id == id && !w.retired) else { return false };
        me.retired = true;
        true
    }
}

impl Shared {
    /// Marks this thread's worker idle (called by a job just before it hands its result
    /// over, so that whoever awaits the result sees the pool's counts up to date).
    fn job_done(&self) {
        let Some(id) = WORKER.with(std::cell::Cell::get) else { return };
        if let Some(me) = self.state.lock().workers.iter_mut().find(|w| w.id == id) {
            me.busy_since = None;
        }
    }
}

/// Shuts the pool down when the last [`GuestPool`] handle is dropped.
struct Owner(Arc<Shared>);

impl Drop for Owner {
    fn drop(&mut self) {
        self.0.state.lock().shutdown = true;
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
        let state = self.shared.state.lock();
        state.workers.iter().filter(|w| !w.retired && w.busy_since.is_some()).count()
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
        self.shared.state.lock().borrowed_runs
    }

    /// Jobs run on an executor thread that held its other tasks past [`HAND_OVER_AFTER`].
    pub fn stalled_hand_overs(&self) -> u64 {
        self.shared.state.lock().stalled_hand_overs
    }

    /// Runs `job` on this thread, as one of the pool's jobs, if this is a worker thread of a
    /// multi-threaded tokio runtime and no job runs or waits in the pool (see the module docs);
    /// otherwise gives `job` back. The executor's other tasks move to another thread first,
    /// or, with [`HandOver::IfItStalls`] and nothing in the runtime's global queue, only if
    /// the job runs past [`HAND_OVER_AFTER`]; `hand_over` is asked only for a job that runs
    /// here.
    pub fn try_run_here<T, F>(
        &self,
        hand_over: impl FnOnce() -> HandOver,
        job: F,
    ) -> Result<Result<T, GuestPoolError>, F>
    where
        F: FnOnce() -> T,
    {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return Err(job) };
        if runtime.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread
            || WORKER.with(std::cell::Cell::get).is_some()
        {
            return Err(job);
        }
        let started = Instant::now();
        let id = {
            let mut state = self.shared.state.lock();
            // A worker that handed its last result over counts as free (`job_done`), even
            // before it is back waiting for the next job.
            let pool_busy = !state.jobs.is_empty()
                || state.workers.iter().any(|w| !w.retired && !w.borrowed && w.busy_since.is_some());
            let borrowed = state.workers.iter().filter(|w| w.borrowed && !w.retired).count();
            if state.shutdown || pool_busy || borrowed >= self.shared.size {
                return Err(job);
            }
            let id = state.next_id;
            state.next_id += 1;
            state.borrowed_runs += 1;
            // The watchdog is not woken: the job watches itself (`on_tick`).
            state.workers.push(Worker {
                id,
                busy_since: Some(started),
                retired: false,
                borrowed: true,
                #[cfg(target_os = "linux")]
                tid: current_tid(),
            });
            id
        };
        // Tasks woken from outside the runtime wait in its global queue: someone is waiting.
        let first = hand_over() == HandOver::First || runtime.metrics().global_queue_depth() > 0;
        let borrowed = Borrowed {
            shared: self.shared.clone(),
            id,
            started,
            holds_executor: !first,
            holding_since: started,
            stalled: false,
        };
        BORROWED.with_borrow_mut(|b| *b = Some(borrowed));
        JOB_STARTED.with(|s| s.set(Some(started)));
        let run = || std::panic::catch_unwind(AssertUnwindSafe(job));
        // First: the executor's other tasks go on on another thread meanwhile (a blocking-pool
        // thread takes this one's core; this thread does not wait for it).
        let result = if first { tokio::task::block_in_place(run) } else { run() };
        BORROWED.with_borrow_mut(|b| *b = None);
        JOB_STARTED.with(|s| s.set(None));
        self.shared.state.lock().workers.retain(|w| w.id != id);
        Ok(result.map_err(|panic| GuestPoolError::Panicked(panic_message(panic.as_ref()))))
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
        borrowed: false,
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
        if me.retired {
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
        let mut returned = 0;
        for worker in state.workers.iter_mut().filter(|w| !w.retired) {
            let Some(since) = worker.busy_since else { continue };
            let due = since + shared.slow_call;
            if due <= now {
                worker.retired = true;
                if worker.borrowed {
                    // An executor thread: its place goes back, its priority stays.
                    returned += 1;
                    continue;
                }
                retired += 1;
                #[cfg(target_os = "linux")]
                lower_priority(worker.tid);
            } else {
                next_check = Some(next_check.map_or(due, |n| n.min(due)));
            }
        }
        state.retired_calls += returned;
        if retired > 0 {
            state.retired_calls += retired;
            state.active -= retired as usize;
            let waiting = state.jobs.len().saturating_sub(state.idle);
            for _ in 0..waiting.min(shared.size.saturating_sub(state.active)) {
                spawn_worker(shared, &mut state);
            }
            continue;
        }
        match next_check {
            Some(at) => {
                shared.watch.wait_until(&mut state, at);
            }
            None => {
                state.watchdog_idle = true;
                shared.watch.wait(&mut state);
                state.watchdog_idle = false;
            }
        }
    }
}

#[cfg(test)]
#[path = "pool_tests.rs"]
mod tests;
