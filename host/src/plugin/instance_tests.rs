//! Tests of the sandbox with real components built from WAT: outcomes, deadlines, the
//! memory cap, and re-instantiation after a trap.

use std::time::Instant;

use super::*;
use crate::plugin::test_guests::{Behaviour, Guest, MESSAGE, engine, pod, sandbox_with};

fn sandbox(guest: Guest) -> Sandbox {
    sandbox_with(&engine(), guest, 4 << 20, Duration::from_millis(100))
}

#[test]
fn every_export_returns_ok() {
    let sandbox = sandbox(Guest::default());
    let mut instance = sandbox.instantiate().unwrap();
    let (a, b) = (pod("a"), pod("b"));
    assert_eq!(instance.on_add(&a, true), CallOutcome::Ok);
    assert_eq!(instance.on_update(&a, &b), CallOutcome::Ok);
    assert_eq!(instance.on_delete(&b, false), CallOutcome::Ok);
    assert_eq!(instance.deliver(&Notification::Add { obj: a, initial: false }), CallOutcome::Ok);
    assert_eq!(instance.calls(), 5, "init and four handler calls");
    assert!(!instance.is_poisoned());
}

#[test]
fn guest_errors_are_not_traps() {
    let sandbox = sandbox(Guest { on_add: Behaviour::Retry, on_update: Behaviour::Fatal, ..Guest::default() });
    let mut instance = sandbox.instantiate().unwrap();
    assert_eq!(instance.on_add(&pod("a"), false), CallOutcome::HandlerError(HandlerError::Retry(MESSAGE.into())));
    assert_eq!(
        instance.on_update(&pod("a"), &pod("a")),
        CallOutcome::HandlerError(HandlerError::Fatal(MESSAGE.into()))
    );
    assert!(!instance.is_poisoned());
    assert_eq!(instance.on_delete(&pod("a"), true), CallOutcome::Ok);
}

#[test]
fn init_can_refuse_to_start() {
    let sandbox = sandbox(Guest { init: Behaviour::Reject, ..Guest::default() });
    assert_eq!(sandbox.instantiate().unwrap_err(), CallOutcome::InitRejected(MESSAGE.into()));
}

#[test]
fn infinite_loop_hits_the_deadline_and_a_new_instance_works() {
    let sandbox = sandbox(Guest::on_add(Behaviour::Loop));
    let mut instance = sandbox.instantiate().unwrap();
    let started = Instant::now();
    assert_eq!(instance.on_add(&pod("a"), false), CallOutcome::Trap(TrapKind::Interrupt));
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(100), "interrupted early: {elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "interrupted late: {elapsed:?}");
    assert!(instance.is_poisoned());
    assert!(matches!(instance.on_update(&pod("a"), &pod("a")), CallOutcome::Trap(TrapKind::Other(_))));
    // Discard it and start again from the same InstancePre.
    drop(instance);
    let mut fresh = sandbox.instantiate().unwrap();
    assert_eq!(fresh.on_update(&pod("a"), &pod("a")), CallOutcome::Ok);
}

#[test]
fn memory_growth_past_the_cap_is_out_of_memory() {
    let sandbox = sandbox_with(&engine(), Guest::on_add(Behaviour::Grow), 2 << 20, Duration::from_secs(5));
    let mut instance = sandbox.instantiate().unwrap();
    assert_eq!(instance.on_add(&pod("a"), false), CallOutcome::Trap(TrapKind::OutOfMemory));
    assert!(instance.peak_memory() <= 2 << 20, "{}", instance.peak_memory());
    let mut fresh = sandbox.instantiate().unwrap();
    assert_eq!(fresh.on_delete(&pod("a"), false), CallOutcome::Ok);
}

#[test]
fn a_cap_below_the_initial_memory_fails_instantiation_as_out_of_memory() {
    let sandbox = sandbox_with(&engine(), Guest::default(), 32 << 10, Duration::from_secs(1));
    assert_eq!(sandbox.instantiate().unwrap_err(), CallOutcome::Trap(TrapKind::OutOfMemory));
}

#[test]
fn other_traps_are_described() {
    let sandbox = sandbox(Guest { on_add: Behaviour::Unreachable, on_update: Behaviour::Recurse, ..Guest::default() });
    let mut instance = sandbox.instantiate().unwrap();
    match instance.on_add(&pod("a"), false) {
        CallOutcome::Trap(TrapKind::Other(what)) => assert!(what.contains("unreachable"), "{what}"),
        other => panic!("{other:?}"),
    }
    let mut instance = sandbox.instantiate().unwrap();
    assert_eq!(instance.on_update(&pod("a"), &pod("a")), CallOutcome::Trap(TrapKind::StackOverflow));
}

#[test]
fn a_looping_init_is_interrupted() {
    let sandbox = sandbox(Guest { init: Behaviour::Loop, ..Guest::default() });
    assert_eq!(sandbox.instantiate().unwrap_err(), CallOutcome::Trap(TrapKind::Interrupt));
}

#[test]
fn guests_can_log() {
    let sandbox = sandbox(Guest { init: Behaviour::Log, on_add: Behaviour::Log, ..Guest::default() });
    let mut instance = sandbox.instantiate().unwrap();
    assert_eq!(instance.on_add(&pod("a"), false), CallOutcome::Ok);
}
