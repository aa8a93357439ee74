//! [`Doorbell`]: how a listener's producers wake its one task — a flag and a waker, no lock.
//!
//! A listener's task is woken for every event that finds it idle, so the wake-up is on the
//! path of every lone delivery. tokio's `Notify` serves any number of waiters through a
//! locked list: two lock round trips per wake-up (the waiter registering, the notifier
//! taking it) and a third as the waiter's future is dropped. A listener has one waiter, its
//! own task, which a flag and an [`AtomicWaker`] serve with a few atomic operations.

use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use futures::task::AtomicWaker;

/// Wakes one task (the listener's) when rung; rings made while it is busy are kept (one).
#[derive(Debug, Default)]
pub(crate) struct Doorbell {
    rung: AtomicBool,
    waker: AtomicWaker,
}

impl Doorbell {
    /// Rings: the waiting task is woken, or finds the ring on its next poll.
    pub(crate) fn ring(&self) {
        self.rung.store(true, Ordering::Release);
        self.waker.wake();
    }

    /// Ready (taking the ring) if it was rung since the ring was last taken; otherwise
    /// registers `cx`'s waker for the next ring. Only one task may poll a doorbell.
    pub(crate) fn poll_rung(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.rung.swap(false, Ordering::Acquire) {
            return Poll::Ready(());
        }
        self.waker.register(cx.waker());
        // A ring between the check above and the registration woke no one: look again.
        if self.rung.swap(false, Ordering::Acquire) { Poll::Ready(()) } else { Poll::Pending }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_ring_before_the_wait_is_kept_and_taken_once() {
        let bell = Doorbell::default();
        bell.ring();
        bell.ring();
        std::future::poll_fn(|cx| bell.poll_rung(cx)).await;
        let again = futures::poll!(std::future::poll_fn(|cx| bell.poll_rung(cx)));
        assert!(again.is_pending(), "two rings while busy are one");
    }

    #[tokio::test]
    async fn a_ring_wakes_the_waiting_task() {
        let bell = Arc::new(Doorbell::default());
        let waiter = tokio::spawn({
            let bell = bell.clone();
            async move { std::future::poll_fn(|cx| bell.poll_rung(cx)).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "nothing rang yet");
        bell.ring();
        tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("the ring woke the waiter")
            .expect("the waiter ran");
    }
}
