//! The fields Mooncake and Qwen-Bailian rows share (`timestamp`, `input_length`,
//! `hash_ids`): one field set for both readers; they differ in units and key semantics.

use super::json::FieldSet;

#[derive(Debug, Clone, Copy)]
pub(super) enum Field {
    Timestamp,
    InputLength,
    HashIds,
}

impl FieldSet for Field {
    fn classify(key: &[u8]) -> Option<Self> {
        match key {
            b"timestamp" => Some(Self::Timestamp),
            b"input_length" => Some(Self::InputLength),
            b"hash_ids" => Some(Self::HashIds),
            _ => None,
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    fn name(self) -> &'static str {
        match self {
            Self::Timestamp => "timestamp",
            Self::InputLength => "input_length",
            Self::HashIds => "hash_ids",
        }
    }
}
