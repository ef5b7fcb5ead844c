//! Which eviction policies a replay computes hit curves for: LRU (`hitcore`), OPT (`opt`,
//! Belady's MIN), or both from one read of the trace.
//!
//! Not [`super::Policy`], which decides what a bad line does.

use std::fmt;
use std::str::FromStr;

/// One eviction policy whose facts the engine can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CachePolicy {
    /// Least recently used: what a serving engine's prefix cache does (`hitcore`).
    Lru,
    /// The optimal offline policy, Belady's MIN (`opt`): the ceiling no eviction policy
    /// passes at the same capacity.
    Opt,
}

impl CachePolicy {
    /// The name users type and read (`lru`, `opt`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Lru => "lru",
            Self::Opt => "opt",
        }
    }
}

impl fmt::Display for CachePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The set of policies a replay computes; never empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CachePolicies {
    lru: bool,
    opt: bool,
}

impl Default for CachePolicies {
    /// LRU alone, what every replay computed before OPT existed.
    fn default() -> Self {
        Self::LRU
    }
}

impl CachePolicies {
    /// LRU alone.
    pub const LRU: Self = Self {
        lru: true,
        opt: false,
    };
    /// OPT alone.
    pub const OPT: Self = Self {
        lru: false,
        opt: true,
    };
    /// Both, from one read of the trace.
    pub const BOTH: Self = Self {
        lru: true,
        opt: true,
    };

    /// Whether `policy` is computed.
    #[must_use]
    pub fn contains(self, policy: CachePolicy) -> bool {
        match policy {
            CachePolicy::Lru => self.lru,
            CachePolicy::Opt => self.opt,
        }
    }

    /// The policy whose facts take the main facts file: LRU when computed, else OPT.
    #[must_use]
    pub fn primary(self) -> CachePolicy {
        if self.lru {
            CachePolicy::Lru
        } else {
            CachePolicy::Opt
        }
    }
}

impl fmt::Display for CachePolicies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match (self.lru, self.opt) {
            (true, true) => "lru,opt",
            (false, true) => "opt",
            _ => "lru",
        })
    }
}

impl FromStr for CachePolicies {
    type Err = String;

    /// `lru`, `opt`, or both separated by a comma (in either order).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut policies = Self {
            lru: false,
            opt: false,
        };
        for name in text.split(',').map(str::trim) {
            let named = match name.to_ascii_lowercase().as_str() {
                "lru" => &mut policies.lru,
                "opt" => &mut policies.opt,
                _ => {
                    return Err(format!(
                        "expected lru, opt or lru,opt, found {name:?} in {text:?}"
                    ));
                }
            };
            if std::mem::replace(named, true) {
                // A typo for the other policy more likely than a wish for one twice.
                return Err(format!("{name:?} is named twice in {text:?}"));
            }
        }
        Ok(policies)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_in_either_order_and_print_back() {
        for (text, policies) in [
            ("lru", CachePolicies::LRU),
            ("opt", CachePolicies::OPT),
            ("lru,opt", CachePolicies::BOTH),
            ("OPT, lru", CachePolicies::BOTH),
        ] {
            assert_eq!(text.parse::<CachePolicies>(), Ok(policies));
        }
        assert_eq!(CachePolicies::BOTH.to_string(), "lru,opt");
        assert!("lfu".parse::<CachePolicies>().is_err());
        assert!("".parse::<CachePolicies>().is_err());
        for twice in ["opt,opt", "lru,LRU", "lru,opt,lru"] {
            let error = twice.parse::<CachePolicies>().unwrap_err();
            assert!(error.contains("named twice"), "{twice}: {error}");
        }
        assert_eq!(CachePolicies::OPT.primary(), CachePolicy::Opt);
    }
}
