//! Tests of the sandbox with real components built from WAT: outcomes, deadlines, the
//! memory cap, and re-instantiation after a trap.

use std::time::Instant;

use super::*;
use crate::informer::HandlerError;
use crate::plugin::contract::guest_text::MAX_GUEST_TEXT;
use crate::plugin::test_guests::{Behaviour, FORGED, Guest, HUGE, MESSAGE, engine, pod, sandbox_of, sandbox_with};

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

/// CPU time of the calling thread so far (`/proc/thread-self/stat`: user + system ticks).
#[cfg(target_os = "linux")]
fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

#[cfg(target_os = "linux")]
#[test]
fn a_stalled_call_is_paused_until_its_deadline_and_burns_a_fraction_of_a_core() {
    let sandbox = sandbox_with(&engine(), Guest::on_add(Behaviour::Loop), 4 << 20, Duration::from_secs(2));
    let mut instance = sandbox.instantiate().unwrap();
    let (started, cpu) = (Instant::now(), thread_cpu());
    assert_eq!(instance.on_add(&pod("a"), false), CallOutcome::Trap(TrapKind::Interrupt));
    let (wall, cpu) = (started.elapsed(), thread_cpu() - cpu);
    assert!(wall >= Duration::from_secs(2), "the pauses count towards the deadline, not past it: {wall:?}");
    assert!(wall < Duration::from_secs(5), "interrupted late: {wall:?}");
    assert!(instance.pauses() > 10, "paused {} times", instance.pauses());
    assert!(cpu < wall / 3, "a stalled call spun for {cpu:?} of {wall:?}");
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

/// Regression: `retry`, `fatal` and `init` reasons were kept whole, however large.
#[test]
fn huge_reasons_are_read_bounded_and_marked() {
    let guest = Guest { on_add: Behaviour::RetryHuge, on_update: Behaviour::FatalHuge, ..Guest::default() };
    let sandbox = sandbox_with(&engine(), guest, 160 << 20, Duration::from_secs(5));
    let mut instance = sandbox.instantiate().unwrap();
    let marker = format!("…[truncated: {HUGE} bytes in all]");
    let bounded = |reason: &str| {
        assert!(reason.starts_with(&format!("{MESSAGE}\\u{{0}}")), "{}", &reason[..64]);
        assert!(reason.ends_with(&marker), "{}", &reason[reason.len() - 64..]);
        assert!(reason.len() <= MAX_GUEST_TEXT + marker.len(), "{}", reason.len());
    };
    match instance.on_add(&pod("a"), false) {
        CallOutcome::HandlerError(HandlerError::Retry(reason)) => bounded(&reason),
        other => panic!("{other:?}"),
    }
    match instance.on_update(&pod("a"), &pod("a")) {
        CallOutcome::HandlerError(HandlerError::Fatal(reason)) => bounded(&reason),
        other => panic!("{other:?}"),
    }
    let rejecting = sandbox_with(
        &engine(),
        Guest { init: Behaviour::RejectHuge, ..Guest::default() },
        80 << 20,
        Duration::from_secs(5),
    );
    match rejecting.instantiate().unwrap_err() {
        CallOutcome::InitRejected(reason) => {
            assert_eq!(reason.original_len(), HUGE);
            bounded(reason.as_str());
        }
        other => panic!("{other:?}"),
    }
}

use crate::logging::Captured;

/// Runs `f` with a text-format subscriber and returns the lines it wrote.
fn log_lines(f: impl FnOnce()) -> Vec<String> {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::INFO)
        .finish();
    tracing::subscriber::with_default(subscriber, f);
    let text = String::from_utf8(captured.0.lock().clone()).unwrap();
    text.lines().map(str::to_owned).collect()
}

/// Regression: a log message with a newline, a carriage return or an ANSI escape forged
/// host log lines.
#[test]
fn a_guest_log_record_is_one_line_after_the_plugin_field() {
    let sandbox = sandbox(Guest::on_add(Behaviour::LogForged));
    let mut instance = sandbox.instantiate().unwrap();
    let lines = log_lines(|| assert_eq!(instance.on_add(&pod("a"), false), CallOutcome::Ok));
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(lines[0].contains("wink::plugin::guest: plugin=\"test-guest\" ok\\nforged\\r\\u{1b}[2K"), "{}", lines[0]);
    assert!(!lines[0].contains(['\r', '\x1b']), "{:?}", lines[0]);
    assert!(FORGED.contains(['\n', '\r', '\x1b']));
}

/// Regression: a log message was copied whole out of the guest before being cut.
#[test]
fn a_huge_log_message_is_bounded() {
    let sandbox = sandbox_with(&engine(), Guest::on_add(Behaviour::LogHuge), 80 << 20, Duration::from_secs(5));
    let mut instance = sandbox.instantiate().unwrap();
    let lines = log_lines(|| assert_eq!(instance.on_add(&pod("a"), false), CallOutcome::Ok));
    assert_eq!(lines.len(), 1);
    assert!(lines[0].len() < MAX_GUEST_TEXT + 200, "{}", lines[0].len());
    assert!(lines[0].ends_with(&format!("…[truncated: {HUGE} bytes in all]")), "{}", &lines[0][lines[0].len() - 80..]);
}

/// Strings lifted from UTF-16 and latin1+UTF-16 guests are read bounded too.
#[test]
fn every_canonical_string_encoding_is_read_bounded() {
    use wit_component::StringEncoding;
    let guest = Guest { init: Behaviour::Reject, on_add: Behaviour::RetryHuge, ..Guest::default() };
    let reason = |encoding| {
        let sandbox = sandbox_of(&engine(), &guest.component_encoded(encoding), 80 << 20, Duration::from_secs(5));
        let refused = match sandbox.instantiate().unwrap_err() {
            CallOutcome::InitRejected(reason) => reason,
            other => panic!("{other:?}"),
        };
        let ok = sandbox_of(
            &engine(),
            &Guest::on_add(Behaviour::RetryHuge).component_encoded(encoding),
            80 << 20,
            Duration::from_secs(5),
        );
        match ok.instantiate().unwrap().on_add(&pod("a"), false) {
            CallOutcome::HandlerError(HandlerError::Retry(huge)) => (refused, huge),
            other => panic!("{other:?}"),
        }
    };
    // UTF-16: MESSAGE's 15 code units are its bytes in pairs, then NULs.
    let (small, huge) = reason(StringEncoding::UTF16);
    let mut bytes = MESSAGE.as_bytes().to_vec();
    bytes.resize(30, 0);
    let units: Vec<u16> = bytes.chunks(2).map(|p| u16::from_le_bytes([p[0], p[1]])).collect();
    assert_eq!(small.as_str(), GuestText::new(&String::from_utf16_lossy(&units)).as_str());
    assert_eq!(small.original_len(), 30, "the length as the guest encoded it");
    assert!(huge.ends_with(&format!("…[truncated: {} bytes in all]", HUGE * 2)), "{}", &huge[huge.len() - 60..]);
    assert!(huge.len() <= MAX_GUEST_TEXT + 60);
    // latin1+utf16 without the UTF-16 tag: latin1, one byte per character.
    let (small, huge) = reason(StringEncoding::CompactUTF16);
    assert_eq!(small.as_str(), MESSAGE);
    assert!(huge.starts_with(&format!("{MESSAGE}\\u{{0}}")), "{}", &huge[..40]);
    assert!(huge.ends_with(&format!("…[truncated: {HUGE} bytes in all]")), "{}", &huge[huge.len() - 60..]);
}
