//! What a thread knows of the tokio runtime it works for, asked by every lone event that may
//! run on its delivering thread ([`GuestPool::try_run_here`](super::pool::GuestPool::try_run_here)).
//!
//! Asking tokio (`Handle::try_current`, then its metrics) clones the runtime's handle twice:
//! two atomic increments and decrements on a count every thread of the runtime shares, per
//! event. A runtime built by [`runtime_builder`], as `wink` builds its own, marks each of its
//! threads once as it starts, and such a thread answers from its mark. Any other thread —
//! one of a runtime built elsewhere (tests, embedders), or one that entered a runtime
//! without working for it — asks tokio as before.

use std::cell::RefCell;

use tokio::runtime::{Handle, RuntimeFlavor, RuntimeMetrics};

thread_local! {
    /// The metrics of the multi-threaded runtime this thread works for, if it was started
    /// by a runtime from [`runtime_builder`].
    static MARK: RefCell<Option<RuntimeMetrics>> = const { RefCell::new(None) };
}

/// A multi-threaded tokio runtime with every driver, whose threads answer `here` from a
/// mark set as each starts. `wink` runs on one.
pub fn runtime_builder() -> tokio::runtime::Builder {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all().on_thread_start(mark_this_thread);
    builder
}

/// Runs on each thread of a runtime from [`runtime_builder`] as it starts (tokio has
/// entered the runtime there by then).
fn mark_this_thread() {
    MARK.with_borrow_mut(|mark| *mark = multi_threaded_runtime());
}

/// The metrics of the runtime this thread is in, if that is a multi-threaded one (asking
/// tokio: two clones of its handle).
fn multi_threaded_runtime() -> Option<RuntimeMetrics> {
    let handle = Handle::try_current().ok()?;
    (handle.runtime_flavor() == RuntimeFlavor::MultiThread).then(|| handle.metrics())
}

/// Where this thread stands, as a job that may run on it sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Here {
    /// No runtime, or a single-threaded one: a job that may not block its executor's other
    /// tasks cannot run here.
    Elsewhere,
    /// A multi-threaded runtime; `global_queue_depth` tasks woken from outside it wait in
    /// its global queue.
    MultiThread { global_queue_depth: usize },
}

/// Where this thread stands (see the module docs for what that costs).
pub(crate) fn here() -> Here {
    let depth = MARK.with_borrow(|mark| mark.as_ref().map(RuntimeMetrics::global_queue_depth));
    match depth.or_else(|| multi_threaded_runtime().as_ref().map(RuntimeMetrics::global_queue_depth)) {
        Some(global_queue_depth) => Here::MultiThread { global_queue_depth },
        None => Here::Elsewhere,
    }
}

/// Whether this thread carries a mark from [`runtime_builder`].
#[cfg(test)]
pub(crate) fn marked() -> bool {
    MARK.with_borrow(Option::is_some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_built_runtimes_threads_answer_from_their_mark_and_others_ask_tokio() {
        let runtime = runtime_builder().worker_threads(1).build().expect("a runtime");
        let on_worker = runtime.block_on(async { tokio::spawn(async { (marked(), here()) }).await.unwrap() });
        assert_eq!(on_worker, (true, Here::MultiThread { global_queue_depth: 0 }));
        let blocking = runtime.block_on(async { tokio::task::spawn_blocking(marked).await.unwrap() });
        assert!(blocking, "the runtime's blocking threads are its own too");
        // The thread that drives `block_on` is in the runtime without working for it.
        let on_caller = runtime.block_on(async { (marked(), here()) });
        assert_eq!(on_caller, (false, Here::MultiThread { global_queue_depth: 0 }));
        assert_eq!(here(), Here::Elsewhere, "outside any runtime");
        let single = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
        assert_eq!(single.block_on(async { here() }), Here::Elsewhere);
    }

    #[test]
    fn the_mark_reads_the_runtimes_global_queue() {
        let runtime = runtime_builder().worker_threads(1).build().expect("a runtime");
        let (started, on_worker) = std::sync::mpsc::channel();
        // Holds the only worker, so that a task spawned from outside waits in the global queue.
        let holder = runtime.spawn(async move {
            started.send(()).unwrap();
            let since = std::time::Instant::now();
            loop {
                let Here::MultiThread { global_queue_depth } = here() else { panic!("on a worker") };
                if global_queue_depth > 0 || since.elapsed() > std::time::Duration::from_secs(10) {
                    break (marked(), global_queue_depth);
                }
                std::thread::yield_now();
            }
        });
        on_worker.recv().unwrap();
        let queued = runtime.spawn(async {});
        let (was_marked, depth) = runtime.block_on(holder).unwrap();
        assert!(was_marked);
        assert_eq!(depth, 1, "the task spawned from outside waits in the global queue");
        runtime.block_on(queued).unwrap();
    }
}
