//! Seeded synthetic workload generator.
