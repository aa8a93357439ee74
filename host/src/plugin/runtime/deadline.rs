//! [`CallDeadline`]: how long one guest call may run, and how a call that stalls is paused.
//!
//! Every call gets `callTimeout` of real time, less nothing for the time it spends waiting on
//! the cluster (a `cluster` request gives its wait back, see
//! [`HasImports::waited`](crate::plugin::imports::HasImports::waited)). The store's epoch deadline is always one
//! tick ahead and the store's epoch callback ([`CallDeadline::on_tick`]) decides, on every
//! tick a call is still running, what happens next:
//!
//! - past the timeout, the call traps with [`wasmtime::Trap::Interrupt`] (at most one tick
//!   late);
//! - past [`THROTTLE_AFTER`] (the pool's slow-call threshold: plugin calls take
//!   microseconds), an event call is **paused** more and more: for every tick it runs, its
//!   thread sleeps one tick per [`PAUSE_RAMP`] it has run past the threshold, up to
//!   [`MAX_PAUSE_TICKS`]. A guest spinning until its deadline soon holds a tenth of a core
//!   instead of a whole one, and the events of every other plugin stop queueing behind it for
//!   a CPU (on a small machine a spinner at the lowest priority still costs its neighbours'
//!   tail latency). A call that is merely slow is paused less: one that needs a quarter of a
//!   second takes a little over twice as long. The pauses count towards the timeout: a
//!   stalled call ends when it would have ended, having burned less.
//! - `init` is never paused: it runs once, and an interpreter's start-up (Python,
//!   JavaScript) may legitimately take tens of milliseconds.
//!
//! The tick also serves the host's bookkeeping of calls that run long, so that a short call
//! pays for none of it: from a call's first tick on, the CPU time its thread uses is
//! measured ([`cpu::sample`]), and a call run on an executor thread gives its place in
//! the guest pool back once it is past the slow-call threshold ([`pool::on_tick`]).

use std::time::Duration;

use quanta::Instant;

use crate::plugin::runtime::engine::PluginEngine;
use crate::plugin::threads::cpu::{self, ThreadCpu};
use crate::plugin::threads::pool::{self, DEFAULT_SLOW_CALL};

/// How long an event call runs at full speed before it is paused between ticks.
pub(crate) const THROTTLE_AFTER: Duration = DEFAULT_SLOW_CALL;

/// How much longer past [`THROTTLE_AFTER`] a call must run for each further tick of pause.
pub(crate) const PAUSE_RAMP: Duration = Duration::from_millis(100);

/// The most ticks a paused call sleeps for every tick it runs.
pub(crate) const MAX_PAUSE_TICKS: u32 = 9;

/// A call's deadline: the call's timeout, less the time the guest ran (or was paused), not
/// counting the time it waited on the cluster.
#[derive(Debug)]
pub struct CallDeadline {
    engine: PluginEngine,
    timeout: Duration,
    started: Instant,
    waited: Duration,
    throttled: bool,
    paused: u32,
    /// The thread's CPU clock at the call's first tick.
    first_tick: Option<ThreadCpu>,
}

impl CallDeadline {
    /// The deadline of calls that may run `timeout`; its clock starts now, unpaused (for the
    /// instantiation that precedes `init`).
    pub fn new(engine: PluginEngine, timeout: Duration) -> Self {
        Self {
            engine,
            timeout,
            started: Instant::now(),
            waited: Duration::ZERO,
            throttled: false,
            paused: 0,
            first_tick: None,
        }
    }

    /// Starts a call's clock from `started`, a reading the caller just took; `throttled`:
    /// whether the call is paused once it runs long (event calls), or not (`init`).
    pub fn begin(&mut self, throttled: bool, started: Instant) {
        self.started = started;
        self.waited = Duration::ZERO;
        self.throttled = throttled;
        self.paused = 0;
        self.first_tick = None;
    }

    /// Ends a call's clock: the CPU time it used from its first tick on, if it saw one, is
    /// added to its thread's samples ([`cpu::sample`]).
    pub fn end(&mut self) {
        if let Some(cpu) = self.first_tick.take().and_then(ThreadCpu::elapsed) {
            cpu::sample(cpu);
        }
    }

    /// Gives back `waited`, time the call spent outside the guest.
    pub fn after_wait(&mut self, waited: Duration) {
        self.waited += waited;
    }

    /// How many times the call in progress (or the last one) was paused.
    pub fn pauses(&self) -> u32 {
        self.paused
    }

    /// The store's epoch callback: interrupts a call past its timeout, pauses an event call
    /// past [`THROTTLE_AFTER`], and otherwise lets it run one more tick.
    pub fn on_tick(&mut self) -> wasmtime::Result<wasmtime::UpdateDeadline> {
        if self.first_tick.is_none() {
            self.first_tick = Some(ThreadCpu::now());
        }
        pool::on_tick();
        let ran = self.started.elapsed().saturating_sub(self.waited);
        let Some(left) = self.timeout.checked_sub(ran).filter(|left| !left.is_zero()) else {
            return Err(wasmtime::Trap::Interrupt.into());
        };
        let past = ran.saturating_sub(THROTTLE_AFTER);
        let ticks = u32::try_from(past.as_nanos() / PAUSE_RAMP.as_nanos()).unwrap_or(u32::MAX).min(MAX_PAUSE_TICKS);
        if self.throttled && ticks > 0 {
            self.paused += 1;
            std::thread::sleep((self.engine.epoch_tick() * ticks).min(left));
        }
        Ok(wasmtime::UpdateDeadline::Continue(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::runtime::engine::EngineConfig;

    fn deadline(tick: Duration, timeout: Duration) -> CallDeadline {
        let config = EngineConfig { pool: None, epoch_tick: tick, ..EngineConfig::default() };
        CallDeadline::new(PluginEngine::new(config).unwrap(), timeout)
    }

    fn interrupted(deadline: &mut CallDeadline) -> bool {
        deadline.on_tick().err().and_then(|e| e.downcast_ref::<wasmtime::Trap>().copied())
            == Some(wasmtime::Trap::Interrupt)
    }

    fn running_for(deadline: &mut CallDeadline, throttled: bool, ran: Duration) {
        deadline.begin(throttled, Instant::now() - ran);
    }

    #[test]
    fn an_event_call_is_paused_more_the_longer_it_runs_and_init_is_not() {
        let mut deadline = deadline(Duration::from_millis(1), Duration::from_secs(60));
        running_for(&mut deadline, true, THROTTLE_AFTER + PAUSE_RAMP / 2);
        assert!(matches!(deadline.on_tick(), Ok(wasmtime::UpdateDeadline::Continue(1))));
        assert_eq!(deadline.pauses(), 0, "a call just past the threshold runs on");
        running_for(&mut deadline, true, THROTTLE_AFTER + PAUSE_RAMP * 3);
        let started = Instant::now();
        assert!(matches!(deadline.on_tick(), Ok(wasmtime::UpdateDeadline::Continue(1))));
        assert_eq!(deadline.pauses(), 1);
        let slept = started.elapsed();
        assert!(slept >= Duration::from_millis(3), "three ticks of pause: {slept:?}");
        running_for(&mut deadline, true, Duration::from_secs(30));
        let started = Instant::now();
        assert!(deadline.on_tick().is_ok());
        let slept = started.elapsed();
        assert!(slept >= Duration::from_millis(MAX_PAUSE_TICKS.into()), "at most nine ticks: {slept:?}");
        running_for(&mut deadline, false, Duration::from_secs(30));
        assert!(deadline.on_tick().is_ok());
        assert_eq!(deadline.pauses(), 0, "init is never paused");
    }

    /// A call's CPU time is measured only from its first tick on: a call that ends before one
    /// reads no CPU clock at all.
    #[test]
    fn cpu_time_is_sampled_from_a_calls_first_tick() {
        let mut deadline = deadline(Duration::from_millis(1), Duration::from_secs(60));
        cpu::begin_sampling();
        deadline.begin(true, Instant::now());
        deadline.end();
        assert_eq!(cpu::take_samples(), None, "no tick: nothing measured");
        deadline.begin(true, Instant::now());
        assert!(deadline.on_tick().is_ok());
        // 5 ms of CPU (however long on the clock), then a sleep.
        let (spun, began) = (ThreadCpu::now(), std::time::Instant::now());
        while spun.elapsed().is_some_and(|cpu| cpu < Duration::from_millis(5)) {
            assert!(began.elapsed() < Duration::from_secs(10));
        }
        std::thread::sleep(Duration::from_millis(20));
        deadline.end();
        let cpu = cpu::take_samples();
        if cfg!(target_os = "linux") {
            let cpu = cpu.expect("measured from the first tick");
            assert!(cpu >= Duration::from_millis(5), "the spin counts: {cpu:?}");
            assert!(cpu < Duration::from_millis(20), "the sleep does not: {cpu:?}");
        }
    }

    #[test]
    fn a_call_past_its_timeout_is_interrupted_but_not_for_time_spent_waiting() {
        let mut deadline = deadline(Duration::from_millis(1), Duration::from_millis(100));
        running_for(&mut deadline, false, Duration::from_millis(150));
        assert!(interrupted(&mut deadline));
        running_for(&mut deadline, false, Duration::from_millis(150));
        deadline.after_wait(Duration::from_millis(100));
        assert!(deadline.on_tick().is_ok(), "the wait was given back");
    }

    #[test]
    fn a_pause_never_outlasts_the_timeout() {
        // Nine ticks of a second each would sleep 9 s; 20 ms are left.
        let mut deadline = deadline(Duration::from_secs(1), Duration::from_secs(1));
        running_for(&mut deadline, true, Duration::from_millis(980));
        let started = Instant::now();
        assert!(deadline.on_tick().is_ok());
        assert!(started.elapsed() < Duration::from_millis(500), "{:?}", started.elapsed());
        assert_eq!(deadline.pauses(), 1);
        assert!(interrupted(&mut deadline), "the next tick ends the call");
    }
}
