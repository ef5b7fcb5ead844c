//! The upstream `litehit_facts.csv` format (REFERENCE §7): writer and reader.
