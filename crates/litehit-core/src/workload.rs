//! A seeded synthetic workload: realistic prefix-tree traffic for the demo, the benchmarks and
//! the property tests.
//!
//! Shape: a few shared system prompts; conversations that each start from a system prompt
//! and grow turn by turn (every turn re-sends the whole history plus fresh blocks, as chat
//! serving does); Zipf-distributed popularity over the live conversations; some requests
//! with no shared prefix at all; request lengths of 1–`max_request_blocks` blocks.
//!
//! Every generated content block gets a fresh id and only ever appears at one place of the
//! prefix tree, so the ids are themselves valid prefix-chained keys, dense in first-appearance
//! order like Mooncake's. [`KeyStyle::Hashed`] chains them with the prefix hash instead, giving
//! the random-looking 64-bit keys real producers emit. Same seed, same trace.

use std::fmt::Write as _;

use crate::preprocess::prefix_hash_next;

/// How generated keys look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyStyle {
    /// Dense ids in first-appearance order (Mooncake style).
    Dense,
    /// Prefix-hash chained 64-bit keys (what KVCM / vLLM-style producers emit).
    #[default]
    Hashed,
}

/// Knobs of the generator. `Default` gives a realistic small chat workload.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadConfig {
    /// Seed of the generator: one seed, one trace, on every machine.
    pub seed: u64,
    /// Instance ids; each conversation is pinned to one.
    pub instance_ids: Vec<String>,
    /// How many distinct system prompts the conversations share: the prefix hits across
    /// conversations come from them.
    pub system_prompt_count: usize,
    /// Length range of a system prompt, in blocks.
    pub system_prompt_blocks: (u32, u32),
    /// Conversations alive at once; a finished one is replaced by a new one.
    pub live_conversations: usize,
    /// Zipf exponent of conversation popularity (higher = more skewed).
    pub zipf_exponent: f64,
    /// Probability that a request starts a new conversation in its slot.
    pub new_conversation_probability: f64,
    /// Probability that a request shares nothing (one-off content, no system prompt).
    pub fresh_request_probability: f64,
    /// Fresh blocks added per turn (range, inclusive).
    pub turn_growth_blocks: (u32, u32),
    /// Longest request in blocks; a conversation that would exceed it ends.
    pub max_request_blocks: u32,
    /// Tokens per block of the generated keys.
    pub block_size_tokens: u64,
    /// Mean gap between requests (exponential inter-arrival times).
    pub mean_interarrival_ns: u64,
    /// How block keys are spelled.
    pub key_style: KeyStyle,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        Self {
            seed: 42,
            instance_ids: vec!["instance-0".into()],
            system_prompt_count: 8,
            system_prompt_blocks: (2, 24),
            live_conversations: 400,
            zipf_exponent: 1.05,
            new_conversation_probability: 0.15,
            fresh_request_probability: 0.05,
            turn_growth_blocks: (1, 24),
            max_request_blocks: 400,
            block_size_tokens: 16,
            mean_interarrival_ns: 2_000_000,
            key_style: KeyStyle::Hashed,
        }
    }
}

/// One generated request, in trace terms.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyntheticRequest {
    /// The instance the request is sent to.
    pub instance_id: String,
    /// The request's time.
    pub timestamp_ns: i64,
    /// Prefix-chained block keys (complete blocks only).
    pub keys: Vec<i64>,
    /// Input tokens: `keys × block size` plus an incomplete tail.
    pub input_token_len: u64,
}

impl SyntheticRequest {
    /// Appends this request as one upstream standard-trace line (with `\n`).
    pub fn to_standard_jsonl(&self, out: &mut String) {
        let _ = write!(
            out,
            r#"{{"type":"get","instance_id":"{}","timestamp_ns":{},"input_len":{},"keys":["#,
            self.instance_id, self.timestamp_ns, self.input_token_len
        ); // writing to a String cannot fail
        self.push_keys_and_close(out);
    }

    /// The keys as a JSON array body, then `]}` and the newline: the end of either line.
    fn push_keys_and_close(&self, out: &mut String) {
        for (index, key) in self.keys.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            let _ = write!(out, "{key}"); // writing to a String cannot fail
        }
        out.push_str("]}\n");
    }

    /// Appends this request as one Mooncake trace line (with `\n`): millisecond timestamp,
    /// `hash_ids` = the keys. Meant for [`KeyStyle::Dense`] keys and 512-token blocks, as in
    /// the published Mooncake traces.
    pub fn to_mooncake_jsonl(&self, out: &mut String) {
        let _ = write!(
            out,
            r#"{{"timestamp":{},"input_length":{},"output_length":0,"hash_ids":["#,
            self.timestamp_ns / 1_000_000,
            self.input_token_len
        ); // writing to a String cannot fail
        self.push_keys_and_close(out);
    }
}

/// SplitMix64's finalizer: a bijection on `u64` that makes any input look random (distinct
/// inputs stay distinct, so mapped ids still satisfy the prefix contract).
#[must_use]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// SplitMix64: tiny, fast and good enough for workload shapes (not for cryptography).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator that yields the same sequence for the same `seed`, so workloads replay alike.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next pseudo-random value of the sequence.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.0)
    }

    /// Uniform in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1_u64 << 53) as f64
    }

    /// Uniform in `low..=high`.
    pub fn range_u32(&mut self, low: u32, high: u32) -> u32 {
        let span = u64::from(high.saturating_sub(low)) + 1;
        #[expect(
            clippy::cast_possible_truncation,
            reason = "below span, which fits u32 + 1"
        )]
        let offset = (self.next_u64() % span) as u32;
        low + offset
    }

    /// Uniform in `0..len` (`len > 0`).
    pub fn index(&mut self, len: usize) -> usize {
        #[expect(clippy::cast_possible_truncation, reason = "below len")]
        let index = (self.next_u64() % len as u64) as usize;
        index
    }
}

#[derive(Debug, Clone)]
struct Conversation {
    /// Content ids of the history so far (system prompt first).
    blocks: Vec<u64>,
    instance: usize,
}

/// The generator: an endless iterator of [`SyntheticRequest`]s.
#[derive(Debug, Clone)]
pub struct Workload {
    config: WorkloadConfig,
    rng: SplitMix64,
    system_prompts: Vec<Vec<u64>>,
    conversations: Vec<Conversation>,
    /// Cumulative Zipf weights over conversation slots.
    popularity_cdf: Vec<f64>,
    next_content_id: u64,
    timestamp_ns: i64,
    content_scratch: Vec<u64>,
}

impl Workload {
    /// The workload `config` describes; the same config always yields the same requests.
    #[must_use]
    pub fn new(config: WorkloadConfig) -> Self {
        let mut rng = SplitMix64::new(config.seed);
        let mut next_content_id = 0;
        let mut fresh = |count: u32| -> Vec<u64> {
            let start = next_content_id;
            next_content_id += u64::from(count);
            (start..next_content_id).collect()
        };
        let system_prompts: Vec<Vec<u64>> = (0..config.system_prompt_count.max(1))
            .map(|_| {
                let (low, high) = config.system_prompt_blocks;
                let length = rng.range_u32(low, high);
                fresh(length)
            })
            .collect();
        let mut cumulative = 0.0;
        let popularity_cdf = (1..=config.live_conversations.max(1))
            .map(|rank| {
                cumulative += 1.0 / (rank as f64).powf(config.zipf_exponent);
                cumulative
            })
            .collect();
        let mut workload = Self {
            rng,
            system_prompts,
            conversations: Vec::new(),
            popularity_cdf,
            next_content_id,
            timestamp_ns: 1_000_000_000,
            content_scratch: Vec::new(),
            config,
        };
        workload.conversations = (0..workload.config.live_conversations.max(1))
            .map(|_| workload.new_conversation())
            .collect();
        workload
    }

    /// The config it was made from, so a caller can describe or reproduce the workload.
    #[must_use]
    pub fn config(&self) -> &WorkloadConfig {
        &self.config
    }

    fn fresh_blocks(&mut self, count: u32, into: &mut Vec<u64>) {
        into.extend(self.next_content_id..self.next_content_id + u64::from(count));
        self.next_content_id += u64::from(count);
    }

    fn new_conversation(&mut self) -> Conversation {
        let prompt = self.rng.index(self.system_prompts.len());
        // Zipf over prompts too: prompt 0 is the most common.
        let prompt = prompt.min(self.rng.index(self.system_prompts.len()));
        Conversation {
            blocks: self.system_prompts[prompt].clone(),
            instance: self.rng.index(self.config.instance_ids.len().max(1)),
        }
    }

    fn pick_conversation(&mut self) -> usize {
        let total = self.popularity_cdf.last().copied().unwrap_or(1.0);
        let target = self.rng.next_f64() * total;
        self.popularity_cdf
            .partition_point(|&c| c <= target)
            .min(self.popularity_cdf.len() - 1)
    }

    /// Generates the next request into `out`, reusing its buffers.
    pub fn fill_next(&mut self, out: &mut SyntheticRequest) {
        let gap = -(1.0 - self.rng.next_f64()).ln() * self.config.mean_interarrival_ns as f64;
        #[expect(
            clippy::cast_possible_truncation,
            reason = "inter-arrival gaps are far below i64::MAX"
        )]
        let gap_ns = gap as i64;
        self.timestamp_ns += gap_ns;
        let (low, high) = self.config.turn_growth_blocks;
        let growth = self.rng.range_u32(low, high);
        let mut content = std::mem::take(&mut self.content_scratch);
        content.clear();
        let instance;
        if self.rng.next_f64() < self.config.fresh_request_probability {
            let length = self
                .rng
                .range_u32(1, self.config.max_request_blocks.clamp(1, 64));
            self.fresh_blocks(length, &mut content);
            instance = self.rng.index(self.config.instance_ids.len().max(1));
        } else {
            let slot = self.pick_conversation();
            let max_blocks = self.config.max_request_blocks.max(1) as usize;
            if self.rng.next_f64() < self.config.new_conversation_probability
                || self.conversations[slot].blocks.len() + growth as usize > max_blocks
            {
                self.conversations[slot] = self.new_conversation();
            }
            let mut blocks = std::mem::take(&mut self.conversations[slot].blocks);
            let room = u32::try_from(max_blocks.saturating_sub(blocks.len())).unwrap_or(u32::MAX);
            self.fresh_blocks(growth.min(room), &mut blocks);
            if blocks.is_empty() {
                self.fresh_blocks(1, &mut blocks);
            }
            content.extend_from_slice(&blocks);
            instance = self.conversations[slot].instance;
            self.conversations[slot].blocks = blocks;
        }
        out.keys.clear();
        match self.config.key_style {
            KeyStyle::Dense => out.keys.extend(
                content
                    .iter()
                    .map(|&id| i64::try_from(id).unwrap_or(i64::MAX)),
            ),
            KeyStyle::Hashed => {
                let mut previous = 0_i64;
                out.keys.extend(content.iter().map(|&id| {
                    previous = prefix_hash_next(previous, i64::try_from(id).unwrap_or(i64::MAX));
                    previous
                }));
            }
        }
        self.content_scratch = content;
        let tail_tokens = self.rng.next_u64() % self.config.block_size_tokens.max(1);
        out.input_token_len = out.keys.len() as u64 * self.config.block_size_tokens + tail_tokens;
        out.timestamp_ns = self.timestamp_ns;
        out.instance_id.clear();
        out.instance_id.push_str(
            self.config
                .instance_ids
                .get(instance)
                .map_or("instance-0", String::as_str),
        );
    }
}

impl Iterator for Workload {
    type Item = SyntheticRequest;

    fn next(&mut self) -> Option<SyntheticRequest> {
        let mut request = SyntheticRequest::default();
        self.fill_next(&mut request);
        Some(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn same_seed_same_trace_and_different_seed_differs() {
        let a: Vec<_> = Workload::new(WorkloadConfig::default()).take(200).collect();
        let b: Vec<_> = Workload::new(WorkloadConfig::default()).take(200).collect();
        let c: Vec<_> = Workload::new(WorkloadConfig {
            seed: 7,
            ..Default::default()
        })
        .take(200)
        .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn keys_satisfy_the_prefix_contract_and_lengths_are_bounded() {
        for key_style in [KeyStyle::Dense, KeyStyle::Hashed] {
            let config = WorkloadConfig {
                key_style,
                instance_ids: vec!["a".into(), "b".into()],
                ..Default::default()
            };
            // Contract: a key always sits at the same depth after the same parent.
            let mut parent_of: HashMap<i64, (usize, Option<i64>)> = HashMap::new();
            let mut previous_timestamp = 0;
            for request in Workload::new(config).take(3000) {
                assert!((1..=400).contains(&request.keys.len()));
                assert!(request.timestamp_ns >= previous_timestamp);
                previous_timestamp = request.timestamp_ns;
                assert_eq!(request.input_token_len / 16, request.keys.len() as u64);
                for (depth, &key) in request.keys.iter().enumerate() {
                    let parent = depth.checked_sub(1).map(|d| request.keys[d]);
                    let seen = *parent_of.entry(key).or_insert((depth, parent));
                    assert_eq!(seen, (depth, parent), "key {key} moved in the tree");
                }
            }
        }
    }

    #[test]
    fn workload_has_reuse_and_fresh_content() {
        let requests: Vec<_> = Workload::new(WorkloadConfig::default())
            .take(2000)
            .collect();
        let total: usize = requests.iter().map(|r| r.keys.len()).sum();
        let unique: std::collections::HashSet<i64> = requests
            .iter()
            .flat_map(|r| r.keys.iter().copied())
            .collect();
        let unique_fraction = unique.len() as f64 / total as f64;
        assert!(
            (0.05..0.8).contains(&unique_fraction),
            "unique fraction {unique_fraction}"
        );
    }

    #[test]
    fn standard_line_shape() {
        let request = SyntheticRequest {
            instance_id: "i".into(),
            timestamp_ns: 5,
            keys: vec![1, -2],
            input_token_len: 40,
        };
        let mut line = String::new();
        request.to_standard_jsonl(&mut line);
        assert_eq!(
            line,
            "{\"type\":\"get\",\"instance_id\":\"i\",\"timestamp_ns\":5,\"input_len\":40,\"keys\":[1,-2]}\n"
        );
    }

    #[test]
    fn mooncake_line_shape() {
        let request = SyntheticRequest {
            instance_id: "i".into(),
            timestamp_ns: 7_900_000,
            keys: vec![0, 3],
            input_token_len: 1100,
        };
        let mut line = String::new();
        request.to_mooncake_jsonl(&mut line);
        assert_eq!(
            line,
            "{\"timestamp\":7,\"input_length\":1100,\"output_length\":0,\"hash_ids\":[0,3]}\n"
        );
    }
}
