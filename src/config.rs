//! Configuration: upstream `OptimizerLiteHitConfig` JSON or single-instance flags →
//! validated [`crate::engine::EngineConfig`]. No clap type reaches past this module.
