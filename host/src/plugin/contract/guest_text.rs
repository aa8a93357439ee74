//! [`GuestText`]: a string a guest hands the host — a log message, a `retry` or `fatal`
//! reason, an `init` refusal — made safe to log and to keep.
//!
//! Such a string is the guest's to choose, so taken as is it could forge whole host log
//! lines (a newline followed by something that looks like the host quarantining another
//! plugin, a carriage return that overwrites the line on a terminal, ANSI escape sequences,
//! Unicode line separators, bidi overrides that reorder what a reader sees), or make the host
//! copy and log megabytes. Every guest string reaches the host as a [`GuestText`], which is:
//!
//! - **on one line**: control characters (C0, DEL, C1), the Unicode line and paragraph
//!   separators and the bidi controls are written as escapes (`\n`, `\r`, `\t`, `\u{1b}`,
//!   `\u{2028}`, `\u{202e}`…), so the text cannot end the host's line or disguise it;
//! - **bounded**: at most [`MAX_GUEST_TEXT`] bytes of (escaped) text are kept; a longer string
//!   is cut on a character boundary and marked `…[truncated: N bytes in all]` with its original
//!   length (in bytes, as the guest encoded it);
//! - **read in place**: as a WIT `string` lifted from a guest's memory ([`GuestText`]
//!   implements wasmtime's `Lift`), only the first [`MAX_GUEST_TEXT`] bytes are read; the rest
//!   is never copied into the host. The bounds, alignment and hostcall fuel of the string are
//!   checked by wasmtime's [`WasmStr`] first. The text is read while it is lifted, before the
//!   guest's post-return function frees it (a `WasmStr` kept past the call would read freed
//!   guest memory).
//!
//! The plugin's name is never part of a guest text: the host logs it in a `plugin` field of
//! its own, written before the guest's text on a text-format line and as its own key in JSON.
//! Backslashes are kept as they are: the guest's own `\n` (two characters) reads like an
//! escaped newline, but stays on the guest's line.

use std::fmt::{self, Write as _};

use wasmtime::component::__internal::wasmtime_environ::component::StringEncoding;
use wasmtime::component::__internal::{CanonicalAbiInfo, InstanceType, InterfaceType, LiftContext};
use wasmtime::component::{ComponentType, Lift, WasmStr};

/// The most bytes of a guest's string the host reads, logs or keeps (the escaped text; the
/// truncation marker comes on top).
pub const MAX_GUEST_TEXT: usize = 4 * 1024;

/// How a length with this bit set is tagged in the `latin1+utf16` encoding: UTF-16.
const UTF16_TAG: usize = 1 << 31;

/// A guest's string, escaped onto one line and bounded (see the module docs).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GuestText {
    text: String,
    original_len: usize,
    truncated: bool,
}

impl GuestText {
    /// The text of a whole string the host already holds.
    pub fn new(raw: &str) -> Self {
        Self::from_head(raw, true, raw.len())
    }

    /// The text of a string of which the host read only `head`: `complete` says whether
    /// `head` is all of it, `original_len` is its full length in bytes.
    fn from_head(head: &str, complete: bool, original_len: usize) -> Self {
        let mut text = String::with_capacity(head.len().min(MAX_GUEST_TEXT));
        let mut cut = !complete;
        let (mut escaped, mut own) = (String::new(), [0; 4]);
        for c in head.chars() {
            escaped.clear();
            let piece: &str = if escape(c, &mut escaped) { &escaped } else { c.encode_utf8(&mut own) };
            if text.len() + piece.len() > MAX_GUEST_TEXT {
                cut = true;
                break;
            }
            text.push_str(piece);
        }
        if cut {
            let _ = write!(text, "…[truncated: {original_len} bytes in all]");
        }
        Self { text, original_len, truncated: cut }
    }

    /// The text as logged: escaped, with the truncation marker if it was cut.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The text as logged, owned.
    pub fn into_string(self) -> String {
        self.text
    }

    /// The length of the guest's string, in bytes as the guest encoded it.
    pub fn original_len(&self) -> usize {
        self.original_len
    }

    /// Whether the guest's string was longer than what is kept.
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }
}

impl fmt::Display for GuestText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl From<&str> for GuestText {
    fn from(raw: &str) -> Self {
        Self::new(raw)
    }
}

impl From<String> for GuestText {
    fn from(raw: String) -> Self {
        Self::new(&raw)
    }
}

impl From<GuestText> for String {
    fn from(text: GuestText) -> Self {
        text.text
    }
}

/// Whether `c` could end, rewrite or disguise a log line: control characters (C0, DEL, C1),
/// the Unicode line and paragraph separators, and the bidi embedding, override, isolate and
/// mark characters.
pub(crate) fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}'
                | '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// Writes the escape of `c` into `out` and returns `true`, or returns `false` if `c` is
/// written as itself.
fn escape(c: char, out: &mut String) -> bool {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if needs_escape(c) => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
        _ => return false,
    }
    true
}

#[allow(unsafe_code, reason = "wasmtime's ComponentType is an unsafe trait: the ABI must be the WIT type's")]
// SAFETY: `Lower` and `ABI` are those of wasmtime's `WasmStr`, and `typecheck` accepts exactly
// what `WasmStr` accepts (a WIT `string`), so the layout wasmtime relies on is a string's.
unsafe impl ComponentType for GuestText {
    type Lower = <WasmStr as ComponentType>::Lower;

    const ABI: CanonicalAbiInfo = <WasmStr as ComponentType>::ABI;

    fn typecheck(ty: &InterfaceType, types: &InstanceType<'_>) -> wasmtime::Result<()> {
        <WasmStr as ComponentType>::typecheck(ty, types)
    }
}

#[allow(unsafe_code, reason = "wasmtime's Lift is an unsafe trait")]
// SAFETY: lifting first runs wasmtime's own lift of a `WasmStr` over the same source (which
// checks the pointer's alignment and bounds and charges hostcall fuel), then reads at most
// `MAX_GUEST_TEXT` bytes (or UTF-16 units) of guest memory through checked slices.
unsafe impl Lift for GuestText {
    fn linear_lift_from_flat(cx: &mut LiftContext<'_>, ty: InterfaceType, src: &Self::Lower) -> wasmtime::Result<Self> {
        <WasmStr as Lift>::linear_lift_from_flat(cx, ty, src)?;
        read(cx, src[0].get_u32(), src[1].get_u32())
    }

    fn linear_lift_from_memory(cx: &mut LiftContext<'_>, ty: InterfaceType, bytes: &[u8]) -> wasmtime::Result<Self> {
        <WasmStr as Lift>::linear_lift_from_memory(cx, ty, bytes)?;
        let word = |at: usize| bytes.get(at..at + 4).and_then(|w| w.try_into().ok()).map(u32::from_le_bytes);
        match (word(0), word(4)) {
            (Some(ptr), Some(len)) => read(cx, ptr, len),
            _ => Err(wasmtime::format_err!("string pointer/length out of bounds")),
        }
    }
}

/// Reads the head of the string at `ptr` (`len` in the guest's encoding's units) from the
/// guest's memory, as wasmtime's lift just validated it.
fn read(cx: &LiftContext<'_>, ptr: u32, len: u32) -> wasmtime::Result<GuestText> {
    let (ptr, len) = (usize::try_from(ptr)?, usize::try_from(len)?);
    let memory = cx.memory();
    let slice = |bytes: usize| {
        ptr.checked_add(bytes)
            .and_then(|end| memory.get(ptr..end))
            .ok_or_else(|| wasmtime::format_err!("string pointer/length out of bounds of memory"))
    };
    let utf16 = |units: usize| -> wasmtime::Result<GuestText> {
        let take = units.min(MAX_GUEST_TEXT);
        let bytes = slice(take * 2)?;
        let head: String = char::decode_utf16(bytes.chunks_exact(2).map(|u| u16::from_le_bytes([u[0], u[1]])))
            .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect();
        Ok(GuestText::from_head(&head, take == units, units.saturating_mul(2)))
    };
    match cx.options().string_encoding {
        StringEncoding::Utf8 => {
            let take = len.min(MAX_GUEST_TEXT);
            let bytes = slice(take)?;
            let head = match std::str::from_utf8(bytes) {
                Ok(head) => head.into(),
                // Cut inside a character: keep the characters before it.
                Err(e) if e.error_len().is_none() => String::from_utf8_lossy(&bytes[..e.valid_up_to()]),
                Err(_) => String::from_utf8_lossy(bytes),
            };
            Ok(GuestText::from_head(&head, take == len, len))
        }
        StringEncoding::Utf16 => utf16(len),
        StringEncoding::CompactUtf16 if len & UTF16_TAG != 0 => utf16(len ^ UTF16_TAG),
        StringEncoding::CompactUtf16 => {
            let take = len.min(MAX_GUEST_TEXT);
            let head: String = slice(take)?.iter().map(|&b| char::from(b)).collect();
            Ok(GuestText::from_head(&head, take == len, len))
        }
    }
}

#[cfg(test)]
#[path = "guest_text_tests.rs"]
mod tests;
