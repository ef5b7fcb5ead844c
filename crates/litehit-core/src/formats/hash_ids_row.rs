//! The fields of a Mooncake row (`timestamp`, `input_length`,
//! `hash_ids`); Qwen-Bailian rows have them too, plus `chat_id` (`bailian.rs`).

use super::json::field_set;

field_set! {
    pub(super) enum Field {
        Timestamp => b"timestamp",
        InputLength => b"input_length",
        HashIds => b"hash_ids",
    }
}
