//! What came of one call into a plugin: success, the guest's own error, or a trap.
//!
//! As in wasmtime, a **guest error** (a WIT `result` the plugin returned: `retry`, `fatal`, or
//! an `init` refusal) is kept apart from a **trap** (the sandbox stopped the guest: deadline,
//! memory cap, `unreachable`, stack overflow…). They get different metrics and policies: a
//! guest error leaves the instance usable, a trap discards it.
//!
//! Traps are told apart by downcasting the error wasmtime returns — to [`wasmtime::Trap`] and
//! to [`MemoryCapExceeded`] (what the store's limiter fails with) — never by matching message
//! text.
//!
//! Every text in an outcome that a guest could have chosen is a [`GuestText`] (one line,
//! bounded): an `init` refusal, a handler's reason, and the description of a trap (wasmtime's
//! backtrace names the guest's own functions).

use std::fmt;

use crate::informer::HandlerError;
use crate::plugin::contract::guest_text::GuestText;

/// A guest tried to grow its linear memory past its cap (or the growth itself failed).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("out of memory: growing linear memory to {desired} bytes exceeds the limit of {limit} bytes")]
pub(crate) struct MemoryCapExceeded {
    /// The total linear memory the store would have reached, in bytes (0 when the host
    /// could not provide memory below the limit).
    pub desired: usize,
    /// The cap in force, in bytes.
    pub limit: usize,
}

/// Why the sandbox stopped a guest (or could not start one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrapKind {
    /// The call ran past its deadline (`limits.callTimeout`) and was interrupted.
    Interrupt,
    /// The guest tried to grow its memory past `limits.memory`.
    OutOfMemory,
    /// The guest exhausted its call stack.
    StackOverflow,
    /// Any other trap (`unreachable`, out-of-bounds access, a guest panic…), described.
    Other(String),
    /// The host could not create an instance for a reason that is not the guest's doing.
    /// Not counted towards quarantine.
    Instantiation(String),
    /// Every place of the instance pool is taken by other plugins' instances. Not the guest's
    /// doing either: the runner first recycles the least recently used idle instance and
    /// tries once more (see `delivery::runner::recycle`).
    PoolFull(String),
    /// The instances alive hold the whole plugin memory budget (plugins started on their
    /// first event reserve it per instance). As [`TrapKind::PoolFull`]: the runner recycles
    /// least recently used idle instances until this one fits.
    BudgetFull(String),
}

impl TrapKind {
    /// A short, stable label for metrics and logs: `interrupt`, `out_of_memory`,
    /// `stack_overflow`, `other`, `instantiation`.
    pub fn label(&self) -> &'static str {
        match self {
            TrapKind::Interrupt => "interrupt",
            TrapKind::OutOfMemory => "out_of_memory",
            TrapKind::StackOverflow => "stack_overflow",
            TrapKind::Other(_) => "other",
            TrapKind::Instantiation(_) | TrapKind::PoolFull(_) | TrapKind::BudgetFull(_) => "instantiation",
        }
    }

    /// Whether an instantiation failed for want of room another plugin's idle instance
    /// holds (a place in the pool, memory in the budget): recycling one may make it.
    pub fn wants_room(&self) -> bool {
        matches!(self, TrapKind::PoolFull(_) | TrapKind::BudgetFull(_))
    }

    /// Classifies the error of a failed call (or of a start function run while
    /// instantiating).
    pub fn of_call(error: &wasmtime::Error) -> Self {
        Self::classify(error).unwrap_or_else(|| TrapKind::Other(describe(error)))
    }

    /// Classifies the error of a failed instantiation: a trap when the guest caused it (its
    /// start code trapped, its initial memory is over the cap), else [`TrapKind::Instantiation`].
    pub fn of_instantiation(error: &wasmtime::Error) -> Self {
        Self::classify(error).unwrap_or_else(|| {
            if let Some(full) = error.downcast_ref::<wasmtime::PoolConcurrencyLimitError>() {
                // Every place of a kind is held by running plugins: the pool's size, not the
                // plugin, is at fault.
                return TrapKind::PoolFull(full.to_string());
            }
            TrapKind::Instantiation(describe(error))
        })
    }

    fn classify(error: &wasmtime::Error) -> Option<Self> {
        if error.is::<MemoryCapExceeded>() {
            return Some(TrapKind::OutOfMemory);
        }
        let trap = error.downcast_ref::<wasmtime::Trap>()?;
        Some(match trap {
            wasmtime::Trap::Interrupt => TrapKind::Interrupt,
            wasmtime::Trap::StackOverflow => TrapKind::StackOverflow,
            other => TrapKind::Other(other.to_string()),
        })
    }
}

/// An error and its causes, on one bounded line: a trap's backtrace lists the guest's own
/// function names, which are the guest's to choose.
fn describe(error: &wasmtime::Error) -> String {
    GuestText::new(&format!("{error:#}")).into_string()
}

impl fmt::Display for TrapKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrapKind::Interrupt => f.write_str("deadline exceeded (interrupted)"),
            TrapKind::OutOfMemory => f.write_str("out of memory (memory limit exceeded)"),
            TrapKind::StackOverflow => f.write_str("stack overflow"),
            TrapKind::Other(what) => write!(f, "trap: {what}"),
            TrapKind::Instantiation(what) => write!(f, "cannot instantiate: {what}"),
            TrapKind::PoolFull(what) => write!(f, "cannot instantiate: the instance pool is full ({what})"),
            TrapKind::BudgetFull(what) => write!(f, "cannot instantiate: {what}"),
        }
    }
}

/// The outcome of one call into a plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallOutcome {
    /// The handler returned `ok` (0.2.0: `ok(await-change)`).
    Ok,
    /// The handler returned `ok(requeue-after(delay))`: call it again for this object then.
    Requeue(std::time::Duration),
    /// The handler returned its own error (`retry` or `fatal`); the instance stays usable.
    HandlerError(HandlerError),
    /// `init` returned an error: the plugin refuses to start with this configuration. The
    /// instance is discarded.
    InitRejected(GuestText),
    /// The sandbox stopped the guest; the instance is discarded.
    Trap(TrapKind),
}

impl CallOutcome {
    /// Whether the instance that produced this outcome must be discarded.
    pub fn discards_instance(&self) -> bool {
        matches!(self, CallOutcome::Trap(_) | CallOutcome::InitRejected(_))
    }
}

impl std::error::Error for CallOutcome {}

impl fmt::Display for CallOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallOutcome::Ok => f.write_str("ok"),
            CallOutcome::Requeue(delay) => write!(f, "ok, requeue after {}", humantime::format_duration(*delay)),
            CallOutcome::HandlerError(e) => write!(f, "handler error: {e}"),
            CallOutcome::InitRejected(why) => write!(f, "init rejected: {why}"),
            CallOutcome::Trap(kind) => write!(f, "{kind}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_by_type_not_text() {
        assert_eq!(TrapKind::of_call(&wasmtime::Trap::Interrupt.into()), TrapKind::Interrupt);
        assert_eq!(TrapKind::of_call(&wasmtime::Trap::StackOverflow.into()), TrapKind::StackOverflow);
        let unreachable: wasmtime::Error = wasmtime::Trap::UnreachableCodeReached.into();
        assert!(matches!(TrapKind::of_call(&unreachable), TrapKind::Other(_)));
        let oom: wasmtime::Error = MemoryCapExceeded { desired: 2, limit: 1 }.into();
        assert_eq!(TrapKind::of_call(&oom.context("while running")), TrapKind::OutOfMemory);
        // A message that merely says "interrupt" or "out of memory" is not one.
        let text = wasmtime::Error::msg("interrupt: out of memory");
        assert!(matches!(TrapKind::of_call(&text), TrapKind::Other(_)));
        assert!(matches!(TrapKind::of_instantiation(&text), TrapKind::Instantiation(_)));
        assert_eq!(TrapKind::of_instantiation(&wasmtime::Trap::Interrupt.into()), TrapKind::Interrupt);
    }

    #[test]
    fn outcomes_that_discard_the_instance() {
        assert!(CallOutcome::Trap(TrapKind::Interrupt).discards_instance());
        assert!(CallOutcome::InitRejected("no".into()).discards_instance());
        assert!(!CallOutcome::HandlerError(HandlerError::Retry("later".into())).discards_instance());
        assert!(!CallOutcome::Ok.discards_instance());
        assert_eq!(TrapKind::OutOfMemory.label(), "out_of_memory");
    }
}
