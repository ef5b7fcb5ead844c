//! LiteHit: exact LRU prefix-cache hit rates at any capacity from one pass over a block trace.
//!
//! Data flows one way (see `docs/ARCHITECTURE.md`):
//! `formats` → `preprocess` → `hitcore` → `facts` → `projector` → `output`.
//! `engine` runs that chain for the offline replay and the live monitor alike; `commands`,
//! `live` and `tui` are shells over it.
//!
//! The core in five lines — the design document's example (block 4 tokens, 1024 B/block):
//!
//! ```
//! use litehit::hitcore::LiteHit;
//! use litehit::projector::{project_bytes, project_infinite};
//!
//! let (a, b, c, d, e) = (1, 2, 3, 4, 5);
//! let mut core = LiteHit::new(); // no capacity anywhere in the core
//! let facts: Vec<_> = [[a, b, c].as_slice(), &[a, b, d], &[a, b, c], &[a, e], &[a, e]]
//!     .iter()
//!     .map(|keys| core.process_request(keys, 0))
//!     .collect();
//! assert_eq!(facts[2].to_pairs(), [[1, 2], [4, 1]]); // D jumped the queue before C
//! // Any capacity afterwards, through the one projector:
//! let hits_at = |bytes| facts.iter().map(|f| project_bytes(f, bytes, 1024)).sum::<u64>();
//! assert_eq!((hits_at(2048), hits_at(3072)), (7, 7));
//! assert_eq!(facts.iter().map(project_infinite).sum::<u64>(), 8); // 32 of 54 tokens
//! ```
#![warn(clippy::unwrap_used)]

pub mod cli;
pub mod commands;
pub mod config;
pub mod engine;
pub mod facts;
pub mod formats;
pub mod hitcore;
pub mod live;
pub mod output;
pub mod preprocess;
pub mod projector;
pub mod tui;
pub mod units;
pub mod workload;
