//! The sanitiser: what a guest's string becomes before the host logs or keeps it.

use proptest::prelude::*;

use super::*;

/// The longest a truncation marker gets (a 20-digit length).
const MARKER_MAX: usize = "…[truncated: 18446744073709551615 bytes in all]".len();

#[test]
fn plain_text_is_kept_as_written() {
    let text = GuestText::new("reconciled shop/web in 3ms: \"ok\" (é, 日本, C:\\tmp)");
    assert_eq!(text.as_str(), "reconciled shop/web in 3ms: \"ok\" (é, 日本, C:\\tmp)");
    assert!(!text.is_truncated());
}

/// Regression: a plugin's message with a newline could forge a whole host log line.
#[test]
fn a_newline_cannot_forge_a_host_line() {
    let forged =
        "ok\n2026-11-23T20:40:00.000000Z ERROR wink::plugin::delivery::runner: plugin quarantined plugin=victim";
    let text = GuestText::new(forged);
    assert!(!text.as_str().contains('\n'), "{text}");
    assert_eq!(
        text.as_str(),
        "ok\\n2026-11-23T20:40:00.000000Z ERROR wink::plugin::delivery::runner: plugin quarantined plugin=victim"
    );
}

#[test]
fn control_separator_and_bidi_characters_are_escaped() {
    let cases = [
        ("a\rb", "a\\rb"),
        ("a\tb", "a\\tb"),
        ("\x1b[2K\x1b[1Gfake", "\\u{1b}[2K\\u{1b}[1Gfake"),
        ("\x1b]0;title\x07", "\\u{1b}]0;title\\u{7}"),
        ("nul\0", "nul\\u{0}"),
        ("del\x7f", "del\\u{7f}"),
        ("c1\u{85}\u{9b}", "c1\\u{85}\\u{9b}"),
        ("ls\u{2028}ps\u{2029}", "ls\\u{2028}ps\\u{2029}"),
        ("rlo\u{202e}lri\u{2067}lrm\u{200e}alm\u{61c}", "rlo\\u{202e}lri\\u{2067}lrm\\u{200e}alm\\u{61c}"),
    ];
    for (raw, escaped) in cases {
        assert_eq!(GuestText::new(raw).as_str(), escaped, "{raw:?}");
    }
}

/// Regression: tens of MB of error text were logged and kept verbatim.
#[test]
fn long_text_is_cut_and_marked_with_its_length() {
    let raw = "x".repeat(10 << 20);
    let text = GuestText::new(&raw);
    assert!(text.is_truncated());
    assert_eq!(text.original_len(), 10 << 20);
    assert!(text.as_str().ends_with("…[truncated: 10485760 bytes in all]"), "{}", &text.as_str()[4000..]);
    assert_eq!(text.as_str().len(), MAX_GUEST_TEXT + "…[truncated: 10485760 bytes in all]".len());
}

#[test]
fn the_bound_applies_to_the_escaped_text_and_cuts_on_a_character() {
    let newlines = GuestText::new(&"\n".repeat(MAX_GUEST_TEXT));
    assert!(newlines.is_truncated());
    assert!(newlines.as_str().len() <= MAX_GUEST_TEXT + MARKER_MAX);
    assert!(newlines.as_str().starts_with("\\n\\n"));
    let accents = GuestText::new(&"é".repeat(MAX_GUEST_TEXT));
    let kept = accents.as_str().split('…').next().unwrap();
    assert_eq!(kept, "é".repeat(MAX_GUEST_TEXT / 2));
    let exact = GuestText::new(&"y".repeat(MAX_GUEST_TEXT));
    assert!(!exact.is_truncated(), "exactly the bound is kept whole");
}

#[test]
fn a_head_known_to_be_partial_is_marked() {
    let text = GuestText::from_head("the first bytes", false, 1 << 30);
    assert_eq!(text.as_str(), "the first bytes…[truncated: 1073741824 bytes in all]");
}

proptest! {
    #[test]
    fn any_text_becomes_one_bounded_line(raw in any::<String>(), repeat in 1usize..400) {
        let raw = raw.repeat(repeat);
        let text = GuestText::new(&raw);
        prop_assert!(!text.as_str().chars().any(needs_escape), "{:?}", text);
        prop_assert!(text.as_str().len() <= MAX_GUEST_TEXT + MARKER_MAX);
        prop_assert_eq!(text.is_truncated(), text.as_str().contains("…[truncated: "));
        if !raw.chars().any(needs_escape) && raw.len() <= MAX_GUEST_TEXT {
            prop_assert_eq!(text.as_str(), raw.as_str());
        }
    }
}
