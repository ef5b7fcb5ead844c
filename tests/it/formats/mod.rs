//! Trace readers: REFERENCE §5 rules, fuzzing, the checked-in fuzz corpus and the line-length
//! budget.

mod fuzz;
mod fuzz_corpus;
mod line_cap;
mod readers;
