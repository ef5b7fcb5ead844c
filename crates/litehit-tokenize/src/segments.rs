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

use crate::cut::CutRule;

/// Token ids the cache holds at most (4 bytes each, plus a key and a pointer per piece).
pub const CACHE_TOKEN_IDS: usize = 16 << 20;

/// Longest head a piece is cut after ([`crate::cut`]): a chat template's role header.
pub const MAX_HEAD_BYTES: usize = 64;

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
    /// When a piece not seen before may be served as a head then a tail seen before
    /// ([`crate::cut`]): the next turn's assistant message, after its header.
    cut: Option<CutRule>,
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
            // `normalized` tokens left inside the pieces are split out by the tokenizer before
            // its pre-tokenizer runs, which the cut rule does not see: no cuts then.
            cut: if normalized.is_empty() || normalized_matcher.is_some() {
                CutRule::for_tokenizer(tokenizer)
            } else {
                None
            },
            normalized_matcher,
            cache: Mutex::new(SegmentCache::new(budget)),
        };
        let probed: Vec<&str> = added
            .iter()
            .take(16)
            .chain(normalized.iter().take(16))
            .map(|(content, _)| content.as_str())
            .collect();
        if !splitter.probes_agree(tokenizer, &probed) {
            return None;
        }
        let mut splitter = splitter;
        if !splitter.cut_probes_agree(tokenizer) {
            splitter.cut = None;
        }
        splitter.clear();
        Some(splitter)
    }

    /// Whether header + reply probes encode alike whole and cut (the rule's proof, checked).
    fn cut_probes_agree(&self, tokenizer: &tokenizers::Tokenizer) -> bool {
        let heads = ["assistant\n", "\n\n", "model\n", "user: ", "x\n", "\n"];
        let tails = [
            "Hello world",
            "12345 + 67890 = 80235.",
            "Zürich 日本 😀 ok",
            "It's done.\n\n- one\n- two",
            "```python\ndef f(x):\n    return x  *  2\n```",
            " leading",
            "\n\nthen",
            "x",
        ];
        tails.iter().all(|tail| {
            // The tail first, alone (as an output), then each head + tail (as a next turn).
            self.encode_batch(tokenizer, &[(*tail).to_owned()]).is_ok()
                && heads.iter().all(|head| {
                    let text = format!("{head}{tail}");
                    let whole = tokenizer.encode_fast(text.as_str(), false);
                    let served = self.encode_batch(tokenizer, std::slice::from_ref(&text));
                    matches!((whole, served), (Ok(whole), Ok(served)) if served.len() == 1 && whole.get_ids() == served[0].as_slice())
                })
        })
    }

    /// Empties the cache (after the probes).
    fn clear(&self) {
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let budget = cache.budget;
        *cache = SegmentCache::new(budget);
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
        // Pieces served as a head's ids then a tail's, the tail cached or a piece before
        // in this batch (a conversation's next turn may follow its reply in one batch).
        let mut joined: Vec<(u128, u128, u128)> = Vec::new();
        for piece in split.iter().flatten() {
            if let Piece::Text(key, text) = piece
                && !known.contains_key(key)
            {
                if let Some(ids) = cache.get(*key) {
                    known.insert(*key, ids);
                    continue;
                }
                let tail = self.cut_after_head(text, |tail_key| {
                    known.contains_key(&tail_key) || cache.peek(tail_key).is_some()
                });
                known.insert(*key, Arc::from(&[][..]));
                let Some((head, tail_key)) = tail else {
                    missing.push((*key, text));
                    continue;
                };
                if !known.contains_key(&tail_key)
                    && let Some(ids) = cache.get(tail_key)
                {
                    // Held here: the inserts below may move it out of the cache.
                    known.insert(tail_key, ids);
                }
                let head_key = xxh3_128(head.as_bytes());
                if let std::collections::hash_map::Entry::Vacant(entry) = known.entry(head_key) {
                    if let Some(ids) = cache.get(head_key) {
                        entry.insert(ids);
                    } else {
                        entry.insert(Arc::from(&[][..]));
                        missing.push((head_key, head));
                    }
                }
                joined.push((*key, head_key, tail_key));
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
        // In piece order: a tail joined itself is resolved before the pieces it ends.
        for (key, head_key, tail_key) in joined {
            let ids: Arc<[u32]> = known[&head_key]
                .iter()
                .chain(known[&tail_key].iter())
                .copied()
                .collect();
            known.insert(key, Arc::clone(&ids));
            cache.insert(key, ids);
            cache.joined += 1;
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

    /// A head of `piece` (up to [`MAX_HEAD_BYTES`], ending in whitespace, as a chat
    /// template's role header does) and the key of its tail, when `has` the tail's ids and
    /// the piece's ids are the head's then the tail's ([`CutRule::cuts`]).
    fn cut_after_head<'a>(
        &self,
        piece: &'a str,
        has: impl Fn(u128) -> bool,
    ) -> Option<(&'a str, u128)> {
        let rule = self.cut.as_ref()?;
        piece
            .char_indices()
            .take_while(|(at, _)| *at < MAX_HEAD_BYTES)
            .filter(|(_, ch)| ch.is_whitespace())
            .map(|(at, ch)| at + ch.len_utf8())
            .filter(|&at| at < piece.len())
            .find_map(|at| {
                let (head, tail) = piece.split_at(at);
                let tail_key = xxh3_128(tail.as_bytes());
                (has(tail_key) && rule.cuts(piece, at)).then_some((head, tail_key))
            })
    }

    /// Pieces served as a head then a cached tail so far ([`crate::cut`]).
    pub fn joined(&self) -> u64 {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .joined
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
pub(crate) fn is_identity(value: &Value) -> bool {
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
    /// Pieces served as a head then a cached tail.
    joined: u64,
}

impl SegmentCache {
    fn new(budget: usize) -> Self {
        Self {
            young: HashMap::new(),
            old: HashMap::new(),
            young_ids: 0,
            old_ids: 0,
            budget,
            joined: 0,
        }
    }

    /// The ids of `key`, where they are (a tail looked up, not used yet).
    fn peek(&self, key: u128) -> Option<Arc<[u32]>> {
        self.young.get(&key).or_else(|| self.old.get(&key)).cloned()
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
        // Merges across what a wrong split would separate (`Ġ` is a space, `Ċ` a newline):
        // a space and the word after it, newlines and spaces, digits, letters.
        let merges = [
            ("h", "e"),
            ("l", "l"),
            ("he", "ll"),
            ("Ġ", "w"),
            ("o", "r"),
            ("Ġ", "a"),
            ("Ġa", "b"),
            ("a", "b"),
            ("ab", "c"),
            ("Ċ", "Ċ"),
            ("Ċ", "Ġ"),
            ("Ġ", "Ġ"),
            ("1", "2"),
            ("12", "3"),
            ("x", "Ċ"),
        ];
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

    /// Qwen's and Llama 3's pre-tokenizer: their split expression, then the byte-level map.
    const QWEN_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

    /// [`byte_level_bpe`] pre-tokenized as Qwen3 is (with `normalizer`: Qwen3's is NFC,
    /// Llama 3.1's none), or DeepSeek V3 (digits, then CJK, then words, as three splits).
    fn split_then_byte_level(normalizer: Value, deepseek: bool) -> tokenizers::Tokenizer {
        byte_level_bpe(|json| {
            json["normalizer"] = normalizer;
            let byte_level = serde_json::json!({"type": "ByteLevel", "add_prefix_space": false,
                "trim_offsets": false, "use_regex": false});
            let split = |regex: &str| {
                serde_json::json!({"type": "Split", "pattern": {"Regex": regex},
                    "behavior": "Isolated", "invert": false})
            };
            let steps = if deepseek {
                vec![
                    split(r"\p{N}{1,3}"),
                    split("[\u{4e00}-\u{9fa5}\u{3040}-\u{309f}\u{30a0}-\u{30ff}]+"),
                    split(QWEN_SPLIT),
                    byte_level,
                ]
            } else {
                vec![split(QWEN_SPLIT), byte_level]
            };
            json["pre_tokenizer"] = serde_json::json!({"type": "Sequence", "pretokenizers": steps});
        })
    }

    /// [`word_level`] without its normalizer, pre-tokenized by `pre_tokenizer` (the bench's
    /// `WhitespaceSplit`, or `Whitespace`).
    fn word_level_with(pre_tokenizer: &str) -> tokenizers::Tokenizer {
        let mut json: Value =
            serde_json::from_str(&word_level().to_string(false).unwrap()).unwrap();
        json["normalizer"] = Value::Null;
        json["pre_tokenizer"] = serde_json::json!({"type": pre_tokenizer});
        json.to_string().parse().unwrap()
    }

    /// The tokenizers whose pieces may be cut after a header.
    fn cut_tokenizers() -> Vec<tokenizers::Tokenizer> {
        vec![
            split_then_byte_level(serde_json::json!({"type": "NFC"}), false),
            split_then_byte_level(Value::Null, false),
            split_then_byte_level(
                serde_json::json!({"type": "Sequence", "normalizers": []}),
                true,
            ),
            word_level_with("WhitespaceSplit"),
            word_level_with("Whitespace"),
        ]
    }

    /// Chat templates' role headers, and heads that end mid-word or mid-whitespace.
    const HEADS: [&str; 11] = [
        "assistant\n",
        "\n\n",
        "model\n",
        "user: ",
        "x\n ",
        " \n",
        "12 ",
        "日本\n",
        "a\u{301}\n",
        "ab ",
        "x\n",
    ];

    /// Replies: words, digits, whitespace runs, CJK, combining marks (first too), emoji.
    fn tails() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let part = prop_oneof![
            "[a-zA-Z0-9 ,.'!?]{1,10}",
            "[abc123x \n]{1,6}",
            prop::sample::select(
                [
                    "\n", "\n\n", "  ", "\t", "e\u{301}", "\u{301}", "é", "日本", "😀", " world",
                    "It's", "```", "- one\n", "123456",
                ]
                .map(str::to_owned)
                .to_vec()
            ),
        ];
        prop::collection::vec(part, 1..10).prop_map(|parts| parts.concat())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// A reply encoded alone (an output), then re-sent after a header (the next turn's
        /// piece): served as the header's ids then the reply's where the rule allows, and
        /// always equal to the tokenizer's own ids of the whole.
        #[test]
        fn a_header_then_a_cached_reply_encodes_exactly_as_the_whole(
            tail in tails(),
            head in proptest::sample::select(HEADS.to_vec()),
        ) {
            for tokenizer in cut_tokenizers() {
                let splitter = SegmentSplitter::for_tokenizer(&tokenizer).expect("cached");
                proptest::prop_assert!(splitter.cut.is_some());
                splitter.encode_batch(&tokenizer, std::slice::from_ref(&tail)).unwrap();
                let text = format!("{head}{tail}");
                let served = splitter.encode_batch(&tokenizer, std::slice::from_ref(&text)).unwrap();
                let whole = tokenizer.encode_fast(text.as_str(), false).unwrap();
                proptest::prop_assert_eq!(whole.get_ids(), served[0].as_slice(), "{:?}", text);
                // Both in one batch, on a cold cache: the tail is a piece before it.
                let cold = SegmentSplitter::for_tokenizer(&tokenizer).expect("cached");
                let batch = [tail.clone(), text.clone()];
                let served = cold.encode_batch(&tokenizer, &batch).unwrap();
                proptest::prop_assert_eq!(whole.get_ids(), served[1].as_slice(), "{:?}", text);
            }
        }
    }

    /// Encodes `tail` alone (an output), then `head` + `tail` (its next turn), whose ids must
    /// be the tokenizer's own.
    fn assert_next_turn_exact(
        splitter: &SegmentSplitter,
        tokenizer: &tokenizers::Tokenizer,
        head: &str,
        tail: &str,
    ) {
        splitter
            .encode_batch(tokenizer, &[tail.to_owned()])
            .unwrap();
        let text = format!("{head}{tail}");
        let served = splitter
            .encode_batch(tokenizer, std::slice::from_ref(&text))
            .unwrap();
        let whole = tokenizer.encode_fast(text.as_str(), false).unwrap();
        assert_eq!(whole.get_ids(), served[0].as_slice(), "{text:?}");
    }

    #[test]
    fn a_role_header_then_a_reply_is_served_from_the_reply() {
        for tokenizer in cut_tokenizers() {
            let splitter = SegmentSplitter::for_tokenizer(&tokenizer).expect("cached");
            let reply = "Hello world, it's 12345.\n\n- one";
            assert_next_turn_exact(&splitter, &tokenizer, "assistant\n", reply);
            assert_eq!(splitter.joined(), 1, "the next turn was encoded whole");
            let next_turn = format!("assistant\n{reply}");
            // The reply and its next turn in one batch (a conversation's lines close together),
            // and a turn after that re-sending the next turn's piece as its own tail.
            let splitter = SegmentSplitter::for_tokenizer(&tokenizer).expect("cached");
            let third = format!("model\n{next_turn}");
            let batch = [reply.to_owned(), next_turn.clone(), third];
            let served = splitter.encode_batch(&tokenizer, &batch).unwrap();
            assert_eq!(splitter.joined(), 2, "{batch:?}");
            for (text, ids) in batch.iter().zip(&served) {
                let whole = tokenizer.encode_fast(text.as_str(), false).unwrap();
                assert_eq!(whole.get_ids(), ids.as_slice(), "{text:?}");
            }
        }
    }

    /// Found by fuzzing: under NFC a `normalized` added token stays inside its piece, and
    /// the tokenizer pre-tokenizes from the token's end, where `\s*[\r\n]+` takes `"\n \n"`
    /// across the join; the rule, reading the token's text too, saw `>\n` end there.
    #[test]
    fn no_cut_with_normalized_added_tokens_inside_the_pieces() {
        let tokenizer = byte_level_bpe(|json| {
            json["normalizer"] = serde_json::json!({"type": "NFC"});
            json["added_tokens"][2]["normalized"] = true.into();
            json["pre_tokenizer"] = serde_json::json!({"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": QWEN_SPLIT}, "behavior": "Isolated",
                 "invert": false},
                {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false,
                 "use_regex": false}]});
        });
        let splitter = SegmentSplitter::for_tokenizer(&tokenizer).expect("cached");
        assert!(splitter.cut.is_none());
        for (head, tail) in [("<think>\n", " \nabc"), ("<think>\r\n", " \nabc")] {
            assert_next_turn_exact(&splitter, &tokenizer, head, tail);
        }
    }

    #[test]
    fn no_cut_where_the_join_is_not_a_boundary() {
        let nfc = split_then_byte_level(serde_json::json!({"type": "NFC"}), false);
        let splitter = SegmentSplitter::for_tokenizer(&nfc).expect("cached");
        // A combining mark first could compose with the header's last character under NFC:
        // the rule never cuts before one.
        for (head, reply) in [("model\ne", "\u{301}x"), ("assistant\n", "\u{301}x")] {
            assert_next_turn_exact(&splitter, &nfc, head, reply);
        }
        assert_eq!(
            splitter.joined(),
            0,
            "a combining mark first is never cut under NFC"
        );
        // Tokenizers whose first step adds to the text's start, or whose normalizer the rule
        // cannot see across, cut nothing.
        for (name, tokenizer) in [
            ("byte-level with its own expression", byte_level_bpe(|_| {})),
            ("a lowercasing normalizer", word_level()),
        ] {
            let splitter = SegmentSplitter::for_tokenizer(&tokenizer).expect("cached");
            assert!(splitter.cut.is_none(), "{name}");
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
