//! Configuration: upstream config files, the defaults file, the one grammar and slot policy at
//! every entry point, and the KV-size warning.

mod defaults_file;
mod defaults_tiers;
mod grammar_entry_points;
mod kv_size_warning;
mod model_geometry;
mod slot_policy;
mod upstream;
