//! The shared pool lane on every surface: replay, demo, detection, tiers, the timeline, the TUI and
//! windows.

mod demo;
mod detect;
mod lane;
mod tenants;
mod tenants_mooncake;
mod tiers;
mod timeline;
mod tui;
mod windows;
