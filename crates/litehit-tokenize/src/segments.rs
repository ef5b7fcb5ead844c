//! Exact caching of re-sent history: a chat log re-sends each conversation's history with
//! every turn, so most of a prompt's text was tokenized before.
//!
//! A Hugging Face tokenizer first splits its input on the added tokens (ChatML's
//! `<|im_start|>`, `<|im_end|>`, Llama's headers), leftmost-longest on the raw text, then
//! normalizes, pre-tokenizes and encodes each piece between two of them on its own. So the
//! ids of a prompt are the concatenation of its pieces' ids, and a piece seen before (the same
//! text, keyed by its 128-bit xxh3) need not be encoded again. That holds when nothing
//! crosses pieces, which [`SegmentSplitter::for_tokenizer`] checks, returning `None` (no
//! caching) otherwise:
//!
//! * no truncation or padding, and special tokens are split (not `encode_special_tokens`);
//! * no added token is `lstrip`, `rstrip` or `single_word` (those look past the token);
//! * an added token that is `normalized` matches the normalized text of the pieces between
//!   the others, in a second pass (Hugging Face's `AddedVocabulary::extract_and_normalize`).
//!   When the normalizer is the identity (none, or an empty `Sequence`: DeepSeek V3's 15
//!   `normalized` tokens, `<｜User｜>` and `<｜Assistant｜>` among them), that second pass is
//!   on the raw text too and is done here; otherwise those tokens stay inside the pieces,
//!   which are then longer but still exact (the tokenizer splits them itself);
//! * no Metaspace pre-tokenizer with `prepend_scheme: first` (it prepends to the piece at the
//!   start of the whole text only), and no BPE dropout (random);
//! * probe texts (each added token between words, whitespace and non-ASCII text) encode to
//!   the same ids both ways.
//!
//! Only prompts encoded without special tokens are cached (chat prompts: the template writes
//! them); the post-processor then adds nothing. The cache keeps at most [`CACHE_TOKEN_IDS`]
//! ids in two generations (a piece used again moves to the young one; when the young one
//! holds half the budget, the old one is dropped): the least recently used pieces go first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use serde_json::Value;
use xxhash_rust::xxh3::xxh3_128;

/// Token ids the cache holds at most (4 bytes each, plus a key and a pointer per piece).
pub const CACHE_TOKEN_IDS: usize = 16 << 20;

/// Splits texts at the added tokens and caches the ids of the pieces between them.
pub struct SegmentSplitter {
    /// The added tokens matched on the raw text (not `normalized`).
    matcher: AhoCorasick,
    /// The id of each pattern of `matcher`.
    ids: Vec<u32>,
    /// The `normalized` added tokens, matched between the others' matches, when the
    /// normalizer is the identity (so their normalized text is their raw text).
    normalized_matcher: Option<AhoCorasick>,
    /// The id of each pattern of `normalized_matcher`.
    normalized_ids: Vec<u32>,
    cache: Mutex<SegmentCache>,
}

impl std::fmt::Debug for SegmentSplitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentSplitter")
            .field("added_tokens", &self.ids.len())
            .finish_non_exhaustive()
    }
}

/// One piece of a split text.
enum Piece<'a> {
    Added(u32),
    Text(u128, &'a str),
}

impl SegmentSplitter {
    /// The splitter of `tokenizer` when caching its pieces is exact (see the module doc).
    pub fn for_tokenizer(tokenizer: &tokenizers::Tokenizer) -> Option<Self> {
        Self::for_tokenizer_with_budget(tokenizer, CACHE_TOKEN_IDS)
    }

    /// [`Self::for_tokenizer`] with a cache of at most `budget` ids.
    pub fn for_tokenizer_with_budget(
        tokenizer: &tokenizers::Tokenizer,
        budget: usize,
    ) -> Option<Self> {
        if tokenizer.get_truncation().is_some()
            || tokenizer.get_padding().is_some()
            || tokenizer.get_encode_special_tokens()
        {
            return None;
        }
        let pre_tokenizer = serde_json::to_value(tokenizer.get_pre_tokenizer()).ok()?;
        let model = serde_json::to_value(tokenizer.get_model()).ok()?;
        if has_first_only_prepend(&pre_tokenizer)
            || model
                .get("dropout")
                .is_some_and(|dropout| !dropout.is_null())
        {
            return None;
        }
        let mut added: Vec<(String, u32)> = Vec::new();
        let mut normalized: Vec<(String, u32)> = Vec::new();
        for (id, token) in tokenizer.get_added_tokens_decoder() {
            if token.lstrip || token.rstrip || token.single_word {
                return None;
            }
            if token.content.is_empty() {
                continue;
            }
            if token.normalized {
                normalized.push((token.content.clone(), id));
            } else {
                added.push((token.content.clone(), id));
            }
        }
        added.sort_unstable();
        normalized.sort_unstable();
        let identity_normalizer = tokenizer.get_normalizer().is_none_or(|normalizer| {
            serde_json::to_value(normalizer).is_ok_and(|value| is_identity(&value))
        });
        let leftmost_longest = |tokens: &[(String, u32)]| {
            AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostLongest)
                .build(tokens.iter().map(|(content, _)| content))
                .ok()
        };
        let normalized_matcher = if identity_normalizer && !normalized.is_empty() {
            Some(leftmost_longest(&normalized)?)
        } else {
            None
        };
        let splitter = Self {
            matcher: leftmost_longest(&added)?,
            ids: added.iter().map(|(_, id)| *id).collect(),
            normalized_ids: normalized.iter().map(|(_, id)| *id).collect(),
            normalized_matcher,
            cache: Mutex::new(SegmentCache::new(budget)),
        };
        let probed: Vec<&str> = added
            .iter()
            .take(16)
            .chain(normalized.iter().take(16))
            .map(|(content, _)| content.as_str())
            .collect();
        splitter
            .probes_agree(tokenizer, &probed)
            .then_some(splitter)
    }

    /// Whether the probe texts encode alike with and without splitting.
    fn probes_agree(&self, tokenizer: &tokenizers::Tokenizer, added: &[&str]) -> bool {
        let fillers = [
            "Hello world",
            " leading",
            "\n\n  two\tlines  \n",
            "Zürich 日本 😀",
            "",
        ];
        let mut probes: Vec<String> = fillers.iter().map(|text| (*text).to_owned()).collect();
        for (at, content) in added.iter().enumerate() {
            let before = fillers[at % fillers.len()];
            let after = fillers[(at + 1) % fillers.len()];
            probes.push(format!("{before}{content}{after}{content}{content} x"));
        }
        probes.iter().all(|probe| {
            let whole = tokenizer.encode_fast(probe.as_str(), false);
            let split = self.encode_batch(tokenizer, std::slice::from_ref(probe));
            matches!((whole, split), (Ok(whole), Ok(split)) if split.len() == 1 && whole.get_ids() == split[0].as_slice())
        })
    }

    /// The pieces of `text`: added tokens and the (non-empty) texts between them. As the
    /// tokenizer does: the raw-text tokens first, then the `normalized` ones between them.
    fn split<'a>(&self, text: &'a str) -> Vec<Piece<'a>> {
        let mut pieces = Vec::new();
        let mut at = 0;
        for found in self.matcher.find_iter(text) {
            self.split_normalized(&text[at..found.start()], &mut pieces);
            pieces.push(Piece::Added(self.ids[found.pattern().as_usize()]));
            at = found.end();
        }
        self.split_normalized(&text[at..], &mut pieces);
        pieces
    }

    /// The pieces of `text` (between two raw-text tokens) at the `normalized` tokens.
    fn split_normalized<'a>(&self, text: &'a str, pieces: &mut Vec<Piece<'a>>) {
        let mut at = 0;
        if let Some(matcher) = &self.normalized_matcher {
            for found in matcher.find_iter(text) {
                push_text(&text[at..found.start()], pieces);
                pieces.push(Piece::Added(
                    self.normalized_ids[found.pattern().as_usize()],
                ));
                at = found.end();
            }
        }
        push_text(&text[at..], pieces);
    }

    /// The ids of each text without special tokens: the pieces not in the cache are encoded
    /// (once each, as one batch on the tokenizer's thread pool), the rest come from it.
    pub fn encode_batch(
        &self,
        tokenizer: &tokenizers::Tokenizer,
        texts: &[String],
    ) -> tokenizers::Result<Vec<Vec<u32>>> {
        let split: Vec<Vec<Piece<'_>>> = texts.iter().map(|text| self.split(text)).collect();
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Every piece's ids, held here: a lookup may move others out of the cache.
        let mut known: HashMap<u128, Arc<[u32]>> = HashMap::new();
        let mut missing: Vec<(u128, &str)> = Vec::new();
        for piece in split.iter().flatten() {
            if let Piece::Text(key, text) = piece
                && !known.contains_key(key)
            {
                if let Some(ids) = cache.get(*key) {
                    known.insert(*key, ids);
                } else {
                    known.insert(*key, Arc::from(&[][..]));
                    missing.push((*key, text));
                }
            }
        }
        if !missing.is_empty() {
            let inputs: Vec<&str> = missing.iter().map(|(_, text)| *text).collect();
            let encodings = tokenizer.encode_batch_fast(inputs, false)?;
            for ((key, _), encoding) in missing.iter().zip(encodings) {
                let ids: Arc<[u32]> = Arc::from(encoding.get_ids());
                known.insert(*key, Arc::clone(&ids));
                cache.insert(*key, ids);
            }
        }
        let mut out = Vec::with_capacity(split.len());
        for pieces in &split {
            let mut ids = Vec::new();
            for piece in pieces {
                match piece {
                    Piece::Added(id) => ids.push(*id),
                    Piece::Text(key, _) => ids.extend_from_slice(&known[key]),
                }
            }
            out.push(ids);
        }
        Ok(out)
    }

    /// Pieces and token ids the cache holds now.
    pub fn cached(&self) -> (usize, usize) {
        let cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (
            cache.young.len() + cache.old.len(),
            cache.young_ids + cache.old_ids,
        )
    }
}

/// `text` as a piece, unless empty.
fn push_text<'a>(text: &'a str, pieces: &mut Vec<Piece<'a>>) {
    if !text.is_empty() {
        pieces.push(Piece::Text(xxh3_128(text.as_bytes()), text));
    }
}

/// Whether a normalizer leaves every text as it is: an empty `Sequence` (of such).
fn is_identity(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => {
            map.get("type").and_then(Value::as_str) == Some("Sequence")
                && map
                    .get("normalizers")
                    .and_then(Value::as_array)
                    .is_some_and(|inner| inner.iter().all(is_identity))
        }
        _ => false,
    }
}

/// Whether a pre-tokenizer (or a sequence of them) prepends to the text's first piece only.
fn has_first_only_prepend(value: &Value) -> bool {
    match value {
        Value::Object(map) => {
            (map.get("type").and_then(Value::as_str) == Some("Metaspace")
                && map
                    .get("prepend_scheme")
                    .and_then(Value::as_str)
                    .is_some_and(|scheme| scheme.eq_ignore_ascii_case("first")))
                || map.values().any(has_first_only_prepend)
        }
        Value::Array(items) => items.iter().any(has_first_only_prepend),
        _ => false,
    }
}

/// Piece ids by key in two generations, at most `budget` ids in all.
struct SegmentCache {
    young: HashMap<u128, Arc<[u32]>>,
    old: HashMap<u128, Arc<[u32]>>,
    young_ids: usize,
    old_ids: usize,
    budget: usize,
}

impl SegmentCache {
    fn new(budget: usize) -> Self {
        Self {
            young: HashMap::new(),
            old: HashMap::new(),
            young_ids: 0,
            old_ids: 0,
            budget,
        }
    }

    #[cfg(test)]
    fn contains(&self, key: u128) -> bool {
        self.young.contains_key(&key) || self.old.contains_key(&key)
    }

    /// The ids of `key`, now among the young.
    fn get(&mut self, key: u128) -> Option<Arc<[u32]>> {
        if let Some(ids) = self.young.get(&key) {
            return Some(Arc::clone(ids));
        }
        let ids = self.old.remove(&key)?;
        self.old_ids -= ids.len();
        self.insert(key, Arc::clone(&ids));
        Some(ids)
    }

    fn insert(&mut self, key: u128, ids: Arc<[u32]>) {
        // A piece larger than a generation is not kept (it would evict everything).
        let len = ids.len().max(1);
        if len > self.budget / 2 {
            return;
        }
        if self.young_ids + len > self.budget / 2 {
            self.old = std::mem::take(&mut self.young);
            self.old_ids = self.young_ids;
            self.young_ids = 0;
        }
        if self.young.insert(key, ids).is_none() {
            self.young_ids += len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_stays_within_its_budget_and_keeps_what_is_used() {
        let mut cache = SegmentCache::new(8);
        for key in 0..100_u128 {
            cache.insert(key, Arc::from(&[1_u32, 2][..]));
            // Key 0 is used all along: it is never evicted.
            assert!(cache.get(0).is_some(), "at {key}");
            assert!(cache.young_ids + cache.old_ids <= 8);
        }
        assert!(cache.get(1).is_none(), "an old piece unused since is gone");
        cache.insert(1000, Arc::from(&[0_u32; 5][..]));
        assert!(
            !cache.contains(1000),
            "a piece larger than a generation is not kept"
        );
    }

    /// GPT-2's byte → character map (the alphabet of a byte-level BPE).
    fn byte_chars() -> Vec<char> {
        let mut next = 256_u32;
        (0..=255_u32)
            .map(|byte| {
                if (33..=126).contains(&byte) || (161..=172).contains(&byte) || byte >= 174 {
                    char::from_u32(byte).unwrap()
                } else {
                    next += 1;
                    char::from_u32(next - 1).unwrap()
                }
            })
            .collect()
    }

    const ADDED: [(&str, bool); 4] = [
        ("<|im_start|>", true),
        ("<|im_end|>", true),
        ("<think>", false),
        ("<|im_start|>x", false),
    ];

    /// A byte-level BPE (a few merges), an NFC normalizer, ChatML specials and a non-special
    /// added token (one a prefix of another, for leftmost-longest); `extra` changes it.
    fn byte_level_bpe(extra: impl FnOnce(&mut Value)) -> tokenizers::Tokenizer {
        let mut vocab = serde_json::Map::new();
        for (id, ch) in byte_chars().into_iter().enumerate() {
            vocab.insert(ch.to_string(), serde_json::json!(id));
        }
        let merges = [("h", "e"), ("l", "l"), ("he", "ll"), ("Ġ", "w"), ("o", "r")];
        for (left, right) in merges {
            let id = vocab.len();
            vocab.insert(format!("{left}{right}"), serde_json::json!(id));
        }
        let first_added = vocab.len();
        let added: Vec<Value> = ADDED
            .iter()
            .enumerate()
            .map(|(at, (content, special))| {
                serde_json::json!({"id": first_added + at, "content": content,
                    "single_word": false, "lstrip": false, "rstrip": false,
                    "normalized": false, "special": special})
            })
            .collect();
        let mut json = serde_json::json!({
            "version": "1.0", "truncation": null, "padding": null, "added_tokens": added,
            "normalizer": {"type": "NFC"},
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false,
                              "trim_offsets": true, "use_regex": true},
            "post_processor": {"type": "ByteLevel", "add_prefix_space": false,
                               "trim_offsets": false, "use_regex": true},
            "decoder": null,
            "model": {"type": "BPE", "dropout": null, "unk_token": null,
                      "continuing_subword_prefix": null, "end_of_word_suffix": null,
                      "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                      "vocab": vocab,
                      "merges": merges.iter().map(|(l, r)| [l, r]).collect::<Vec<_>>()}
        });
        extra(&mut json);
        json.to_string().parse().unwrap()
    }

    fn word_level() -> tokenizers::Tokenizer {
        let mut vocab = serde_json::Map::new();
        for (id, word) in [
            "<unk>",
            "<|im_start|>",
            "<|im_end|>",
            "user",
            "hello",
            "world",
        ]
        .iter()
        .enumerate()
        {
            vocab.insert((*word).to_owned(), serde_json::json!(id));
        }
        let added: Vec<Value> = ["<|im_start|>", "<|im_end|>"]
            .iter()
            .enumerate()
            .map(|(at, content)| {
                serde_json::json!({"id": at + 1, "content": content, "single_word": false,
                    "lstrip": false, "rstrip": false, "normalized": false, "special": true})
            })
            .collect();
        serde_json::json!({
            "version": "1.0", "truncation": null, "padding": null, "added_tokens": added,
            "normalizer": {"type": "Lowercase"}, "pre_tokenizer": {"type": "WhitespaceSplit"},
            "post_processor": null, "decoder": null,
            "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}
        })
        .to_string()
        .parse()
        .unwrap()
    }

    /// [`byte_level_bpe`] whose non-special added tokens are `normalized` (as DeepSeek V3's
    /// `<｜User｜>`), with `normalizer`; `<|im_start|>x` (normalized) starts with
    /// `<|im_start|>` (not), so a one-pass split would differ from the tokenizer's two.
    fn normalized_added(normalizer: Value) -> tokenizers::Tokenizer {
        byte_level_bpe(|json| {
            json["normalizer"] = normalizer;
            json["added_tokens"][2]["normalized"] = true.into();
            json["added_tokens"][3]["normalized"] = true.into();
        })
    }

    /// <https://github.com/litehit/litehit/issues/26>: DeepSeek V3's `normalized` added
    /// tokens turned the cache off; with an identity normalizer they are split on, with
    /// another one they stay inside the pieces.
    #[test]
    fn normalized_added_tokens_keep_the_cache() {
        let identity = SegmentSplitter::for_tokenizer(&normalized_added(
            serde_json::json!({"type": "Sequence", "normalizers": []}),
        ))
        .expect("cached with an identity normalizer");
        assert!(identity.normalized_matcher.is_some());
        let pieces = identity.split("a<think>b<|im_start|>xc");
        assert_eq!(pieces.len(), 5, "a, <think>, b, <|im_start|>, xc");
        let nfc =
            SegmentSplitter::for_tokenizer(&normalized_added(serde_json::json!({"type": "NFC"})))
                .expect("cached with NFC too, the normalized tokens inside the pieces");
        assert!(nfc.normalized_matcher.is_none());
        assert_eq!(nfc.split("a<think>b<|im_start|>xc").len(), 3);
    }

    /// Texts of added tokens, words, whitespace and non-ASCII (NFC-composable) pieces.
    fn texts() -> impl proptest::strategy::Strategy<Value = Vec<String>> {
        use proptest::prelude::*;
        let piece = prop_oneof![
            prop::sample::select(
                ADDED
                    .iter()
                    .map(|(content, _)| (*content).to_owned())
                    .collect::<Vec<_>>()
            ),
            "[a-zA-Z ]{0,12}",
            prop::sample::select(
                [
                    "\n", "  ", "\t", "e\u{301}", "é", "日本", "😀", " world", "Hello", "<|im_",
                    "|>"
                ]
                .map(str::to_owned)
                .to_vec()
            ),
        ];
        prop::collection::vec(
            prop::collection::vec(piece, 0..12).prop_map(|pieces| pieces.concat()),
            1..6,
        )
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

        /// Cached encoding equals the tokenizer's own, batch after batch (so with hits, and
        /// with evictions: the budget is small).
        #[test]
        fn cached_pieces_encode_exactly_as_the_whole_text(batches in proptest::collection::vec(texts(), 1..4)) {
            for tokenizer in [
                byte_level_bpe(|_| {}),
                word_level(),
                normalized_added(serde_json::json!(null)),
                normalized_added(serde_json::json!({"type": "Sequence", "normalizers": []})),
                normalized_added(serde_json::json!({"type": "NFC"})),
            ] {
                let splitter = SegmentSplitter::for_tokenizer_with_budget(&tokenizer, 64)
                    .expect("exact for this tokenizer");
                for batch in &batches {
                    let cached = splitter.encode_batch(&tokenizer, batch).unwrap();
                    for (text, ids) in batch.iter().zip(&cached) {
                        let whole = tokenizer.encode_fast(text.as_str(), false).unwrap();
                        proptest::prop_assert_eq!(whole.get_ids(), ids.as_slice(), "{:?}", text);
                    }
                }
            }
        }
    }

    #[test]
    fn no_caching_where_a_piece_depends_on_more_than_its_text() {
        let metaspace_first = byte_level_bpe(|json| {
            json["pre_tokenizer"] = serde_json::json!({"type": "Metaspace", "replacement": "▁",
                "prepend_scheme": "first", "split": true});
        });
        assert!(SegmentSplitter::for_tokenizer(&metaspace_first).is_none());
        let lstrip = byte_level_bpe(|json| json["added_tokens"][0]["lstrip"] = true.into());
        assert!(SegmentSplitter::for_tokenizer(&lstrip).is_none());
        let truncated = byte_level_bpe(|json| {
            json["truncation"] = serde_json::json!({"direction": "Right", "max_length": 8,
                "strategy": "LongestFirst", "stride": 0});
        });
        assert!(SegmentSplitter::for_tokenizer(&truncated).is_none());
        assert!(SegmentSplitter::for_tokenizer(&byte_level_bpe(|_| {})).is_some());
    }

    #[test]
    fn metaspace_prepending_to_the_first_piece_only_is_found_in_a_sequence() {
        let sequence = serde_json::json!({"type": "Sequence", "pretokenizers": [
            {"type": "Split"},
            {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": true}
        ]});
        assert!(has_first_only_prepend(&sequence));
        let always = serde_json::json!({"type": "Metaspace", "prepend_scheme": "always"});
        assert!(!has_first_only_prepend(&always));
    }
}
