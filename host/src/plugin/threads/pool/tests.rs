//! Tests of the guest pool: slow jobs, waits outside the guest, jobs run on executor threads.

use super::here::HAND_OVER_AFTER;
use super::*;

#[tokio::test]
async fn a_slow_job_leaves_the_pool_and_runs_at_the_lowest_priority() {
    let pool = GuestPool::with_slow_call(1, Duration::from_millis(5));
    let watched = pool.clone();
    let slow = pool.run(move || {
        // Busy, as a guest spinning until its deadline, until the watchdog moves it out.
        let started = Instant::now();
        while watched.slow_calls() == 0 && started.elapsed() < Duration::from_secs(10) {
            std::hint::spin_loop();
        }
        (watched.slow_calls(), lowest_priority())
    });
    let (slow_calls, lowest) = slow.await.unwrap();
    assert_eq!(slow_calls, 1, "the watchdog moved the slow job out of the pool");
    if cfg!(target_os = "linux") {
        assert!(lowest, "the thread of a slow job runs at the lowest priority");
    }
    assert_eq!(pool.busy(), 0);
    assert_eq!(pool.run(|| 7).await.unwrap(), 7, "a fresh thread serves the next job");
}

#[tokio::test]
async fn a_job_waiting_outside_the_guest_hands_its_place_to_a_fresh_thread() {
    let pool = GuestPool::new(1);
    let (release, released) = std::sync::mpsc::channel::<()>();
    let runner = pool.clone();
    let waiting = tokio::spawn(async move { runner.run(move || block_in_place(|| released.recv().is_ok())).await });
    let entered = tokio::time::timeout(Duration::from_secs(10), async {
        while pool.waits() == 0 {
            tokio::task::yield_now().await;
        }
    });
    entered.await.expect("the first job started waiting");
    // The only guest thread is blocked in `block_in_place`: another job still runs.
    let other = tokio::time::timeout(Duration::from_secs(10), pool.run(|| 7)).await;
    assert_eq!(other.expect("a fresh thread took the waiting job's place").unwrap(), 7);
    assert_eq!(pool.waits(), 1);
    assert_eq!(pool.slow_calls(), 0, "waiting is not a slow call");
    release.send(()).unwrap();
    assert!(waiting.await.unwrap().unwrap(), "the waiting job finished on its own thread");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_pools_job_runs_on_the_calling_executor_thread() {
    let pool = GuestPool::new(1);
    let caller = std::thread::current().id();
    let ran_on =
        pool.try_run_here(|| HandOver::IfItStalls, || std::thread::current().id()).ok().expect("run here").unwrap();
    assert_eq!(ran_on, caller);
    assert_eq!(pool.borrowed_runs(), 1);
    assert_eq!(pool.busy(), 0, "its place is given back");
    let panicked = pool.try_run_here(|| HandOver::First, || panic!("boom")).ok().expect("run here");
    assert!(panicked.is_err(), "a panic is an error");
    assert_eq!(pool.busy(), 0);
}

/// A job run on an executor thread that hands the thread's other tasks over first lets them
/// run meanwhile; one that keeps them, short, runs before them and wakes no thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_borrowed_job_hands_the_executor_over_first_or_keeps_it() {
    // How long the job waits for the other task: long enough for a woken thread to take the
    // executor over, and a short job's time when that task cannot run.
    for (hand_over, limit) in
        [(HandOver::First, Duration::from_secs(10)), (HandOver::IfItStalls, Duration::from_micros(200))]
    {
        let pool = GuestPool::new(1);
        let job = tokio::spawn({
            let pool = pool.clone();
            async move {
                let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
                // Queued on the executor's only worker, which then runs the job.
                tokio::spawn({
                    let ran = ran.clone();
                    async move { ran.store(true, std::sync::atomic::Ordering::Relaxed) }
                });
                let job = move || {
                    // Spins (no epoch tick) until the other task ran, or for `limit`.
                    let started = Instant::now();
                    let ran = || ran.load(std::sync::atomic::Ordering::Relaxed);
                    while !ran() && started.elapsed() < limit {
                        std::hint::spin_loop();
                    }
                    ran()
                };
                pool.try_run_here(|| hand_over, job).ok().expect("run here").unwrap()
            }
        });
        let others_ran = job.await.unwrap();
        assert_eq!(others_ran, hand_over == HandOver::First, "{hand_over:?}: the executor's other task ran meanwhile");
        assert_eq!(pool.stalled_hand_overs(), 0, "{hand_over:?}: a short job does not stall");
    }
}

/// The executor's other tasks go on while a job runs on one of its threads, from its start
/// ([`HandOver::First`]) or once past [`HAND_OVER_AFTER`] ([`HandOver::IfItStalls`]); one
/// that stalls there (its guest call's epoch callback still ticking) gives its place in the
/// pool back once past the slow-call threshold.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_borrowed_job_that_stalls_holds_up_neither_the_executor_nor_the_pool() {
    for hand_over in [HandOver::First, HandOver::IfItStalls] {
        let pool = GuestPool::with_slow_call(1, Duration::from_millis(10));
        let progress = Arc::new(std::sync::atomic::AtomicU64::new(0));
        // Runs on the executor's only worker whenever that worker is free.
        let counter = tokio::spawn({
            let progress = progress.clone();
            async move {
                loop {
                    progress.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        });
        let stalled = tokio::spawn({
            let (pool, progress) = (pool.clone(), progress.clone());
            async move {
                let job = move || {
                    let before = progress.load(std::sync::atomic::Ordering::Relaxed);
                    // A guest call stalling for 100 ms, its epoch callback ticking every 5 ms.
                    let started = Instant::now();
                    while started.elapsed() < Duration::from_millis(100) {
                        std::thread::sleep(Duration::from_millis(5));
                        on_tick();
                    }
                    (progress.load(std::sync::atomic::Ordering::Relaxed) - before, stalled_executor())
                };
                pool.try_run_here(|| hand_over, job).ok().expect("run here").unwrap()
            }
        });
        let (advanced, stalled_here) = stalled.await.unwrap();
        assert!(
            advanced >= 3,
            "{hand_over:?}: the executor's other task ran while the call stalled ({advanced} steps)"
        );
        assert_eq!(pool.borrowed_runs(), 1);
        assert_eq!(pool.slow_calls(), 1, "{hand_over:?}: its place in the pool was given back");
        assert_eq!(pool.busy(), 0);
        let kept = hand_over == HandOver::IfItStalls;
        assert_eq!(stalled_here, kept, "{hand_over:?}: the job learns it held the executor up");
        assert_eq!(pool.stalled_hand_overs(), u64::from(kept), "{hand_over:?}");
        counter.abort();
    }
}

/// A job run on an executor thread that waits on a task of that executor (a request to
/// the cluster) lets the thread's tasks run, whether it handed them over first or not: the
/// task runs, the wait ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_borrowed_job_waiting_on_the_executor_lets_it_run() {
    for hand_over in [HandOver::First, HandOver::IfItStalls] {
        let pool = GuestPool::new(1);
        let handle = tokio::runtime::Handle::current();
        let asked = tokio::spawn({
            let pool = pool.clone();
            async move {
                let job = move || {
                    let (tx, rx) = std::sync::mpsc::sync_channel(1);
                    // Spawned from the executor's only worker: queued on that worker.
                    handle.spawn(async move { tx.send(7).unwrap() });
                    block_in_place(|| rx.recv_timeout(Duration::from_secs(20)))
                };
                pool.try_run_here(|| hand_over, job).ok().expect("run here").unwrap()
            }
        });
        assert_eq!(asked.await.unwrap(), Ok(7), "{hand_over:?}: the request ran while the job waited");
        assert_eq!(pool.waits(), 1);
    }
}

/// A job that keeps its executor thread's tasks hands them over while it waits outside the
/// guest; that wait does not count as holding them up: a tick just after it hands nothing
/// over and marks no stall.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_wait_outside_the_guest_is_not_a_stall() {
    let pool = GuestPool::new(1);
    let waited = tokio::spawn({
        let pool = pool.clone();
        async move {
            let job = || {
                block_in_place(|| std::thread::sleep(HAND_OVER_AFTER * 5));
                on_tick();
                stalled_executor()
            };
            pool.try_run_here(|| HandOver::IfItStalls, job).ok().expect("run here").unwrap()
        }
    });
    assert!(!waited.await.unwrap(), "the wait was not the job holding the executor");
    assert_eq!(pool.stalled_hand_overs(), 0);
    assert_eq!(pool.waits(), 1);
}

/// A job runs here while the pool has a place free: a job on one of its two threads leaves
/// one; jobs on both leave none, and the next job queues for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_here_only_while_the_pool_has_a_place_free() {
    // The blocked jobs must keep their places however long the machine takes to start the
    // next one: no slow-call threshold they could pass in this test.
    let pool = GuestPool::with_slow_call(2, Duration::from_secs(3600));
    let block = |pool: &GuestPool| {
        let (release, released) = std::sync::mpsc::channel::<()>();
        let runner = pool.clone();
        (release, tokio::spawn(async move { runner.run(move || released.recv().is_ok()).await }))
    };
    let until_busy = async |pool: &GuestPool, n: usize| {
        let busy = async {
            while pool.busy() < n {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(Duration::from_secs(30), busy).await.expect("the blocked jobs hold their places");
    };
    let (release_first, first) = block(&pool);
    until_busy(&pool, 1).await;
    let ran = pool.try_run_here(|| HandOver::IfItStalls, || 7).ok().expect("a place is free: run here");
    assert_eq!(ran.unwrap(), 7);
    let (release_second, second) = block(&pool);
    until_busy(&pool, 2).await;
    let decided = std::cell::Cell::new(false);
    let hand_over = || {
        decided.set(true);
        HandOver::IfItStalls
    };
    assert!(pool.try_run_here(hand_over, || 7).is_err(), "both threads run a job: this one waits its turn");
    assert!(!decided.get(), "no hand-over is decided for a job that does not run here");
    release_first.send(()).unwrap();
    release_second.send(()).unwrap();
    assert!(first.await.unwrap().unwrap());
    assert!(second.await.unwrap().unwrap());
    assert_eq!(pool.borrowed_runs(), 1);
}

/// On the workers of the runtime `wink` builds (marked, see `executor`), as on any other: a
/// job runs here; a job run here that asks to run another here sends that one to the pool's
/// threads; and the pool's size bounds the jobs run here at once, across threads.
#[test]
fn a_marked_workers_jobs_run_here_one_at_a_time_per_thread_within_the_pools_size() {
    let runtime = crate::plugin::runtime_builder().worker_threads(2).build().expect("a runtime");
    let pool = GuestPool::new(1);
    let (holding, held) = std::sync::mpsc::channel::<()>();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let first = runtime.spawn({
        let pool = pool.clone();
        async move {
            let inner = pool.clone();
            let job = move || {
                let nested_refused = inner.try_run_here(|| HandOver::IfItStalls, || 7).is_err();
                holding.send(()).unwrap();
                released.recv().unwrap();
                (nested_refused, inner.busy())
            };
            pool.try_run_here(|| HandOver::First, job).ok().expect("run here").unwrap()
        }
    });
    held.recv().unwrap();
    let second = runtime.spawn({
        let pool = pool.clone();
        async move { pool.try_run_here(|| HandOver::IfItStalls, || 7).is_err() }
    });
    assert!(runtime.block_on(second).unwrap(), "the pool's one place is taken: this job goes to its thread");
    release.send(()).unwrap();
    let (nested_refused, busy) = runtime.block_on(first).unwrap();
    assert!(nested_refused, "a job run here does not run another inside it");
    assert_eq!(busy, 1, "the job held the pool's place");
    assert_eq!(pool.busy(), 0, "and gave it back");
    assert_eq!(pool.borrowed_runs(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn a_single_threaded_executor_never_runs_guest_jobs() {
    let pool = GuestPool::new(1);
    assert!(pool.try_run_here(|| HandOver::IfItStalls, || 7).is_err(), "its only thread would be blocked");
    assert_eq!(pool.run(|| 7).await.unwrap(), 7);
}

/// Whether this thread runs in `SCHED_IDLE` or at nice 19.
fn lowest_priority() -> bool {
    #[cfg(target_os = "linux")]
    #[allow(unsafe_code, reason = "sched_getscheduler(2) and getpriority(2) of this thread")]
    // SAFETY: both calls only read their integer arguments.
    unsafe {
        libc::sched_getscheduler(0) == libc::SCHED_IDLE || libc::getpriority(libc::PRIO_PROCESS, 0) == 19
    }
    #[cfg(not(target_os = "linux"))]
    false
}
