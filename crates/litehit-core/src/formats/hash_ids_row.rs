//! The fields Mooncake and Qwen-Bailian rows share (`timestamp`, `input_length`,
//! `hash_ids`): one field set for both readers; they differ in units and key semantics.

use super::json::field_set;

field_set! {
    pub(super) enum Field {
        Timestamp => b"timestamp",
        InputLength => b"input_length",
        HashIds => b"hash_ids",
    }
}
