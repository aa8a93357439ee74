//! [`InitialMemory`]: what a component costs before its first call, read from its bytes.
//!
//! A component's core modules declare linear memories with a minimum size, and data segments
//! that initialize them. Both are host memory the moment the component is compiled and
//! instantiated: compiling keeps every data segment in the compiled code, and instantiating
//! allocates each memory at its minimum and copies the segments in. A 300 MB data segment
//! took the host to about 900 MB resident before any call, whatever the manifest's
//! `limits.memory` said. So the loader reads these figures with `wasmparser` (the parser
//! wasmtime itself uses) and refuses a component whose initial memory exceeds its plugin's
//! limit **before** compiling it.
//!
//! Counted: every memory a core module defines (imported memories are another module's) at
//! its minimum size, and every data segment, active or passive.

use wasmparser::{Encoding, Parser, Payload};

/// A component's memory before its first call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InitialMemory {
    /// The core modules found (nested at any depth).
    pub modules: usize,
    /// The minimum sizes of the memories they define, summed, in bytes.
    pub memories: u64,
    /// The sizes of their data segments, summed, in bytes.
    pub data: u64,
}

impl InitialMemory {
    /// Reads the figures from a component's (or a core module's) bytes.
    pub fn of(bytes: &[u8]) -> Result<Self, wasmparser::BinaryReaderError> {
        let mut found = Self::default();
        for payload in Parser::new(0).parse_all(bytes) {
            match payload? {
                Payload::Version { encoding: Encoding::Module, .. } => found.modules += 1,
                Payload::MemorySection(memories) => {
                    for memory in memories {
                        let memory = memory?;
                        let page = 1u64 << memory.page_size_log2.unwrap_or(16);
                        found.memories = found.memories.saturating_add(memory.initial.saturating_mul(page));
                    }
                }
                Payload::DataSection(segments) => {
                    for segment in segments {
                        found.data = found.data.saturating_add(segment?.data.len() as u64);
                    }
                }
                _ => {}
            }
        }
        Ok(found)
    }

    /// What the host holds for one instance before its first call, in bytes: the memories
    /// at their minimum size and the data segments kept beside them in the compiled code.
    pub fn total(&self) -> u64 {
        self.memories.saturating_add(self.data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_memory_minimums_and_data_segments_of_nested_core_modules() {
        let bytes = wat::parse_str(
            r#"(component
                 (core module (memory 2) (data (i32.const 0) "hello") (data "passive!"))
                 (component (core module (memory (import "m" "m") 100) (memory 3))))"#,
        )
        .unwrap();
        let found = InitialMemory::of(&bytes).unwrap();
        assert_eq!(found, InitialMemory { modules: 2, memories: 5 * 65536, data: 13 });
        assert_eq!(found.total(), 5 * 65536 + 13);
        assert!(InitialMemory::of(b"\0asm\x0d\0\x01\0garbage").is_err());
    }
}
