//! The guest pool's Linux thread bits (the module is Linux-only): a thread's kernel id, and
//! moving a thread to the lowest CPU priority (a retired guest thread whose call stalls, see
//! [`pool`](super::pool)).

/// This thread's id, asked of the kernel once per thread (a system call is a sizeable part
/// of a lone call run on the delivering thread).
pub(super) fn current_tid() -> i32 {
    thread_local! {
        static TID: i32 = {
            #[allow(unsafe_code, reason = "gettid(2) has no preconditions")]
            // SAFETY: gettid takes no arguments and cannot fail.
            unsafe {
                libc::gettid()
            }
        };
    }
    TID.with(|tid| *tid)
}

/// Gives a thread the lowest CPU priority: the `SCHED_IDLE` class, whose threads run only
/// on an otherwise idle core and are preempted as soon as a normal thread wakes (a nice
/// value alone still lets a spinning thread delay its neighbours' wake-ups by a scheduler
/// slice), or nice 19 where `SCHED_IDLE` is refused. Lowering needs no privilege; the thread
/// ends after its job, so nothing has to raise it again.
pub(super) fn lower_priority(tid: i32) {
    if tid <= 0 {
        return;
    }
    let param = libc::sched_param { sched_priority: 0 };
    #[allow(unsafe_code, reason = "sched_setscheduler(2) and setpriority(2) on a thread of this process")]
    // SAFETY: both calls only read their arguments (`param` lives across the call); a thread
    // id that no longer exists makes them fail with ESRCH, which is ignored.
    unsafe {
        if libc::sched_setscheduler(tid, libc::SCHED_IDLE, &param) != 0 {
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19);
        }
    }
}
