//! How often a request's prompt goes on from an earlier request's prompt and output, at block
//! granularity (`--cache-output`'s line in the summary): whether the next turn of a
//! conversation re-sends the output's blocks as the engine cached them.
//!
//! Keys are chained, so a prompt holding an earlier chain's last key begins with every full
//! block of that chain. Request R *continues* an earlier request E (one with at least one
//! output block) when R's prompt holds E's last output key, or holds E's last prompt key
//! before R's own last key (R is longer than E's prompt). R *re-sends E's output* when R's
//! prompt holds E's last output key: every full block of E's prompt and output, token for
//! token. The two counts differ by the next turns whose re-rendered history does not match
//! the output the engine cached.

use std::collections::HashSet;

/// The chains seen so far, and the counts.
#[derive(Debug, Default)]
pub struct Continuations {
    /// The last prompt key of each earlier request with an output block.
    prompt_ends: HashSet<i64>,
    /// The last output key of each earlier request with an output block.
    output_ends: HashSet<i64>,
    /// Requests whose prompt continues an earlier request's prompt and output.
    pub continued: u64,
    /// ... of which the prompt re-sends every full block of that prompt and output.
    pub output_resent: u64,
}

impl Continuations {
    /// Counts the request with `prompt_keys` and `output_keys` (its chain, in order) against
    /// the earlier ones, then remembers it.
    pub fn observe(&mut self, prompt_keys: &[i64], output_keys: &[i64]) {
        let resent = prompt_keys.iter().any(|key| self.output_ends.contains(key));
        let longer = prompt_keys.split_last().map_or(&[][..], |(_, head)| head);
        if resent || longer.iter().any(|key| self.prompt_ends.contains(key)) {
            self.continued += 1;
        }
        if resent {
            self.output_resent += 1;
        }
        if let Some(&last) = output_keys.last() {
            self.output_ends.insert(last);
            if let Some(&last) = prompt_keys.last() {
                self.prompt_ends.insert(last);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_next_turn_continues_and_resends_or_not() {
        let mut seen = Continuations::default();
        // Turn 1: prompt [1, 2], output [3].
        seen.observe(&[1, 2], &[3]);
        // Turn 2 re-sends prompt and output and goes on.
        seen.observe(&[1, 2, 3, 4], &[5]);
        assert_eq!((seen.continued, seen.output_resent), (1, 1));
        // Another turn 2 whose history differs after the prompt (a re-rendered output).
        seen.observe(&[1, 2, 9], &[]);
        assert_eq!((seen.continued, seen.output_resent), (2, 1));
        // A retry of turn 1's prompt is no next turn; nor is an unrelated prompt.
        seen.observe(&[1, 2], &[]);
        seen.observe(&[7, 8], &[]);
        assert_eq!((seen.continued, seen.output_resent), (2, 1));
        // A request without an output block is no earlier turn to continue.
        seen.observe(&[7, 8, 6], &[]);
        assert_eq!((seen.continued, seen.output_resent), (2, 1));
    }
}
