//! Where a piece may be cut in two without changing its ids: a chat log's next turn re-sends
//! the previous reply after the template's header (`assistant\n` + reply in ChatML, `\n\n` +
//! reply in Llama 3), so the piece between added tokens is header + reply, which the segment
//! cache ([`crate::segments`]) has not seen, while the reply alone it has (`--cache-output`
//! encoded it as the output). The ids of header + reply are the header's ids then the reply's
//! exactly when the tokenizer turns header + reply into the header's words then the reply's
//! words: everything after the pre-tokenizer (the model, the post-processor without special
//! tokens) works word by word.
//!
//! [`CutRule::for_tokenizer`] accepts the tokenizers for which that can be decided by looking
//! near the join, and [`CutRule::cuts`] decides it:
//!
//! * The normalizer is the identity, or NFC. Under NFC both parts must be normalized already
//!   (the quick check says so) and the tail must start with a character of combining class
//!   0: then no composition or reordering reaches across the join, and each part is its own
//!   normal form.
//! * Every pre-tokenizer step works on each region of the step before alone, and the steps
//!   that split are followed: a `Split` on a regular expression (or a string) whose matches
//!   and the text between them are each a region (`Isolated`, `Removed`; inverted or not),
//!   `Whitespace` (such a split on `\w+|[^\w\s]+`), `WhitespaceSplit`; `ByteLevel` without
//!   its expression and prefix space splits nothing. Steps the rule does not follow
//!   (`Digits`, `Punctuation`) may come after the join is a boundary.
//! * A followed expression has no look-behind, anchor or word boundary, and never matches
//!   empty: what it matches from a position then depends on the text from there on only.
//!   Run on header + tail until its first match at or past the join (and on the header
//!   alone, which must match alike), it either ends a region at the join — then the regions
//!   after it are the tail's own, since the search goes on from the join as it starts on the
//!   tail — or leaves the text between two matches across the join: the header's last region
//!   and the tail's first, joined, which the next step must cut in turn. A match across the
//!   join, or no step left, and the piece is encoded whole, as before.
//!
//! The segment cache asks for cuts only when no `normalized` added token stays inside its
//! pieces (under a normalizer other than the identity): the tokenizer splits such a token out
//! before its pre-tokenizer runs, which this rule, reading the piece's text, would not see.
//!
//! Qwen3 (NFC), Llama 3.1 and DeepSeek V3 (three splits: digits, CJK, words) are of these
//! kinds; Gemma 3 (a `Replace` normalizer) is not.

use fancy_regex::{Assertion, Expr, LookAround, Regex};
use serde_json::Value;
use unicode_normalization::IsNormalized;

/// One pre-tokenizer step, as the rule sees it. Every step works on each region of the step
/// before alone.
#[derive(Debug)]
enum Step {
    /// Splits a region into a regular expression's matches and the text between them, each
    /// a region (or dropped).
    Regions(Regex),
    /// Splits nothing (`ByteLevel` without its expression maps bytes to characters).
    Unchanged,
    /// Splits in a way the rule does not follow (`Digits`, `Punctuation`, `ByteLevel` with its
    /// expression): a join must be a boundary before it.
    Opaque,
}

/// Decides whether a piece's ids are its head's then its tail's.
#[derive(Debug)]
pub struct CutRule {
    steps: Vec<Step>,
    /// The normalizer is NFC (else the identity).
    nfc: bool,
}

impl CutRule {
    /// The rule for `tokenizer`, when its normalizer and pre-tokenizer are of the kinds the
    /// module doc lists; `None` otherwise (no piece is then cut).
    pub fn for_tokenizer(tokenizer: &tokenizers::Tokenizer) -> Option<Self> {
        let nfc = match tokenizer.get_normalizer() {
            None => false,
            Some(normalizer) => {
                let value = serde_json::to_value(normalizer).ok()?;
                if is_nfc(&value) {
                    true
                } else if crate::segments::is_identity(&value) {
                    false
                } else {
                    return None;
                }
            }
        };
        let pre_tokenizer = serde_json::to_value(tokenizer.get_pre_tokenizer()?).ok()?;
        let steps = match pre_tokenizer.get("type").and_then(Value::as_str) {
            Some("Sequence") => pre_tokenizer.get("pretokenizers")?.as_array()?.clone(),
            _ => vec![pre_tokenizer],
        };
        let steps = steps.iter().map(step).collect::<Option<Vec<Step>>>()?;
        // Something must split before the model, or every join is inside one word.
        steps
            .iter()
            .any(|step| matches!(step, Step::Regions(_)))
            .then_some(Self { steps, nfc })
    }

    /// Whether the ids of `piece` are the ids of `piece[..at]` then those of `piece[at..]`
    /// (both non-empty; `at` a character boundary).
    pub fn cuts(&self, piece: &str, at: usize) -> bool {
        if at == 0 || at >= piece.len() || !piece.is_char_boundary(at) {
            return false;
        }
        let (head, tail) = piece.split_at(at);
        if self.nfc && !stable_nfc_join(head, tail) {
            return false;
        }
        self.cut_from(0, piece, at)
    }

    /// Whether steps `step..` keep the join at `at` of `region` (a region of the step before)
    /// a boundary, with the head's regions the head's own.
    fn cut_from(&self, step: usize, region: &str, at: usize) -> bool {
        match self.steps.get(step) {
            // A region across the join reaches the model: one word of both parts.
            None | Some(Step::Opaque) => false,
            Some(Step::Unchanged) => self.cut_from(step + 1, region, at),
            Some(Step::Regions(regex)) => match join(regex, region, at) {
                Join::Boundary => true,
                Join::Across(start, end) => {
                    self.cut_from(step + 1, &region[start..end], at - start)
                }
                Join::Broken => false,
            },
        }
    }
}

/// What one step makes of a join.
#[derive(Debug, PartialEq, Eq)]
enum Join {
    /// A region ends at the join, and those before it are the head's own: the regions after
    /// it are the tail's own (the search goes on from the join as it starts on the tail).
    Boundary,
    /// The text between two matches reaches across the join, from `.0` to `.1`: the head's
    /// last region and the tail's first, both of that text, are one region here, which the
    /// next step splits (or not).
    Across(usize, usize),
    /// A match reaches across the join, or the head's matches differ from the head's alone,
    /// or the expression failed or matched the empty text.
    Broken,
}

/// The join at `at` of `text` under `regex`: runs the expression until the first match
/// starting at or past the join (which may be far when matches are rare), and on the head.
fn join(regex: &Regex, text: &str, at: usize) -> Join {
    let Some((before, next_start)) = matches_before(regex, text, at) else {
        return Join::Broken;
    };
    let head = &text[..at];
    match matches_before(regex, head, head.len()) {
        Some((alone, _)) if alone == before => {}
        _ => return Join::Broken,
    }
    let last_end = before.last().map_or(0, |&(_, end)| end);
    if last_end == at || next_start == at {
        Join::Boundary
    } else {
        Join::Across(last_end, next_start)
    }
}

/// The matches of `regex` in `text` that start before `at`, and where the next one starts
/// (the text's end if none); `None` when one of them reaches past `at`, is empty, or the
/// expression fails (its backtracking limit).
fn matches_before(regex: &Regex, text: &str, at: usize) -> Option<(Vec<(usize, usize)>, usize)> {
    let mut before = Vec::new();
    for found in regex.find_iter(text) {
        let found = found.ok()?;
        let (start, end) = (found.start(), found.end());
        if start == end || (start < at && end > at) {
            return None;
        }
        if start >= at {
            return Some((before, start));
        }
        before.push((start, end));
    }
    Some((before, text.len()))
}

/// Under NFC: both parts are their own normal form and the join is a boundary no
/// composition or reordering crosses.
fn stable_nfc_join(head: &str, tail: &str) -> bool {
    tail.chars()
        .next()
        .is_some_and(|first| unicode_normalization::char::canonical_combining_class(first) == 0)
        && unicode_normalization::is_nfc_quick(head.chars()) == IsNormalized::Yes
        && unicode_normalization::is_nfc_quick(tail.chars()) == IsNormalized::Yes
}

/// Whether a normalizer is NFC.
fn is_nfc(value: &Value) -> bool {
    value.get("type").and_then(Value::as_str) == Some("NFC")
}

/// A pre-tokenizer step as the rule sees it; `None` for one that does not work region by
/// region (adds to the text's start) or whose regions are not matches and the text between.
fn step(step: &Value) -> Option<Step> {
    match step.get("type").and_then(Value::as_str)? {
        // Each whitespace character a region (dropped), the runs between regions too.
        "WhitespaceSplit" => Regex::new(r"\s").ok().map(Step::Regions),
        // `Whitespace` keeps the matches of this expression and drops the rest.
        "Whitespace" => Regex::new(r"\w+|[^\w\s]+").ok().map(Step::Regions),
        "Split" => split_step(step),
        "ByteLevel" => match (
            step.get("add_prefix_space").and_then(Value::as_bool),
            step.get("use_regex").and_then(Value::as_bool),
        ) {
            (Some(false), Some(false)) => Some(Step::Unchanged),
            (Some(false), Some(true)) => Some(Step::Opaque),
            _ => None,
        },
        "Digits" | "Punctuation" => Some(Step::Opaque),
        _ => None,
    }
}

/// A `Split` step: its expression (or string), when what it matches from a position depends
/// on the text from there on only and is never empty, and its regions are the matches and
/// the text between them (`Isolated`, `Removed`; inverted or not).
fn split_step(step: &Value) -> Option<Step> {
    let behavior = step.get("behavior").and_then(Value::as_str)?;
    if !matches!(behavior, "Isolated" | "Removed") {
        return Some(Step::Opaque);
    }
    let pattern = step.get("pattern")?;
    let source = match (pattern.get("Regex"), pattern.get("String")) {
        (Some(Value::String(regex)), _) => regex.clone(),
        (_, Some(Value::String(literal))) if !literal.is_empty() => {
            fancy_regex::escape(literal).into_owned()
        }
        _ => return Some(Step::Opaque),
    };
    let Ok(tree) = Expr::parse_tree(&source) else {
        return Some(Step::Opaque);
    };
    // An empty match right after a match is skipped where a search from the text's start
    // would take it: only expressions that never match empty are followed.
    if !looks_right_only(&tree.expr) || min_chars(&tree.expr) == 0 {
        return Some(Step::Opaque);
    }
    Regex::new(&source)
        .ok()
        .map_or(Some(Step::Opaque), |regex| Some(Step::Regions(regex)))
}

/// Whether what `expr` matches from a position depends on the text from there on only: no
/// look-behind, no anchor or word boundary (they look at the character before), nothing tied
/// to the previous match.
fn looks_right_only(expr: &Expr) -> bool {
    match expr {
        Expr::Empty | Expr::Any { .. } | Expr::Literal { .. } | Expr::Backref(_) => true,
        Expr::Delegate { inner, .. } => delegate_looks_right_only(inner),
        Expr::Concat(children) | Expr::Alt(children) => children.iter().all(looks_right_only),
        Expr::Group(child)
        | Expr::AtomicGroup(child)
        | Expr::Repeat { child, .. }
        | Expr::LookAround(child, LookAround::LookAhead | LookAround::LookAheadNeg) => {
            looks_right_only(child)
        }
        Expr::Assertion(
            Assertion::StartText
            | Assertion::EndText
            | Assertion::StartLine { .. }
            | Assertion::EndLine { .. }
            | Assertion::LeftWordBoundary
            | Assertion::RightWordBoundary
            | Assertion::WordBoundary
            | Assertion::NotWordBoundary,
        )
        | Expr::LookAround(..)
        | Expr::KeepOut
        | Expr::ContinueFromPreviousMatchEnd
        | Expr::BackrefExistsCondition(_)
        | Expr::Conditional { .. } => false,
    }
}

/// The fewest characters `expr` matches (0 when unsure).
fn min_chars(expr: &Expr) -> usize {
    match expr {
        Expr::Any { .. } => 1,
        Expr::Literal { val, .. } => val.chars().count(),
        Expr::Delegate { size, .. } => *size,
        Expr::Concat(children) => children.iter().map(min_chars).sum(),
        Expr::Alt(children) => children.iter().map(min_chars).min().unwrap_or(0),
        Expr::Group(child) | Expr::AtomicGroup(child) => min_chars(child),
        Expr::Repeat { child, lo, .. } => lo.saturating_mul(min_chars(child)),
        _ => 0,
    }
}

/// A part handed to the `regex` crate (a class, an escape): no anchor or word boundary
/// outside a class.
fn delegate_looks_right_only(inner: &str) -> bool {
    let mut class_depth = 0_usize;
    let mut chars = inner.chars();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' => match chars.next() {
                Some('b' | 'B' | 'A' | 'z' | 'Z' | 'G' | '<' | '>') if class_depth == 0 => {
                    return false;
                }
                _ => {}
            },
            '[' => class_depth += 1,
            ']' => class_depth = class_depth.saturating_sub(1),
            '^' | '$' if class_depth == 0 => return false,
            _ => {}
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Qwen3's and Llama 3's split expression.
    const WORDS: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

    fn regex(source: &str) -> Regex {
        Regex::new(source).unwrap()
    }

    #[test]
    fn a_join_is_a_boundary_across_or_broken() {
        let words = regex(WORDS);
        // ChatML's header, then a word: `\n` ends a region at the join.
        assert_eq!(join(&words, "assistant\nHello", 10), Join::Boundary);
        // A space before a word goes with the word: a match across the join.
        assert_eq!(join(&words, "user: Hello", 6), Join::Broken);
        // Two newlines are one region: across the join.
        assert_eq!(join(&words, "x\n\nHello", 2), Join::Broken);
        // DeepSeek's first split (digits) leaves the text between digits as one region,
        // which its later splits must cut.
        let digits = regex(r"\p{N}{1,3}");
        assert_eq!(join(&digits, "ab\ncd 7", 3), Join::Across(0, 6));
        assert_eq!(join(&digits, "ab\n12", 3), Join::Boundary);
        // The header's own matches differ from what it matches before the tail (a look-ahead
        // into the tail): broken, though a match ends at the join.
        let ahead = regex(r"a\s(?=b)|a");
        assert_eq!(join(&ahead, "a b", 2), Join::Broken);
    }

    #[test]
    fn only_expressions_that_look_right_and_never_match_empty_are_followed() {
        let split = |pattern: &str| {
            step(
                &serde_json::json!({"type": "Split", "pattern": {"Regex": pattern},
                "behavior": "Isolated", "invert": false}),
            )
        };
        assert!(matches!(split(WORDS), Some(Step::Regions(_))));
        assert!(matches!(split(r"[^$]+\p{N}"), Some(Step::Regions(_))));
        for looks_back in [r"(?<=a)b", r"^a", r"\ba", r"a$", r"\Aa", r"a*", r"(?=a)"] {
            assert!(
                matches!(split(looks_back), Some(Step::Opaque)),
                "{looks_back}"
            );
        }
        let merged = step(
            &serde_json::json!({"type": "Split", "pattern": {"String": " "},
            "behavior": "MergedWithPrevious", "invert": false}),
        );
        assert!(matches!(merged, Some(Step::Opaque)));
        // A prefix space or a metaspace at the text's start: no rule at all.
        let prefix = serde_json::json!({"type": "ByteLevel", "add_prefix_space": true,
            "use_regex": false});
        assert!(step(&prefix).is_none());
        assert!(step(&serde_json::json!({"type": "Metaspace"})).is_none());
    }

    #[test]
    fn under_nfc_the_tail_must_start_a_new_character() {
        assert!(stable_nfc_join("assistant\n", "Hello"));
        assert!(
            !stable_nfc_join("assistant\ne", "\u{301}x"),
            "a combining mark first"
        );
        assert!(
            !stable_nfc_join("assistant\n", "e\u{301}"),
            "a tail not in NFC"
        );
        assert!(stable_nfc_join("model\n", "é 日本"));
    }
}
