//! `watch --engine-metrics`: the scraper thread (every endpoint, once per interval, each
//! result an [`IngestEvent::EngineScrape`]) and, on the ingest thread, each endpoint's
//! counters beside LiteHit's at the same moment, so the last window between two scrapes
//! compares the engine's hit rate with LiteHit's (at the `engine` slot, else ∞). A failed
//! scrape is counted and shown, never a stop.

use std::sync::mpsc::Sender;
use std::time::Duration;

use litehit_core::engine::Lane;

use crate::IngestEvent;
use crate::engine_metrics::{EngineCounters, EngineEndpoint};
use crate::snapshot::{EngineMetricsView, EngineWindow, Slot, slot_blocks};

/// Starts the scraper thread; it ends when the ingest thread is gone (its channel closed).
pub(super) fn spawn_scraper(
    endpoints: Vec<EngineEndpoint>,
    interval: Duration,
    events: Sender<IngestEvent>,
) -> std::io::Result<()> {
    let timeout = interval.clamp(Duration::from_millis(200), Duration::from_secs(5));
    std::thread::Builder::new()
        .name("litehit-engine-metrics".to_owned())
        .spawn(move || {
            loop {
                for (index, endpoint) in endpoints.iter().enumerate() {
                    let result = endpoint.scrape(timeout);
                    if events
                        .send(IngestEvent::EngineScrape { index, result })
                        .is_err()
                    {
                        return;
                    }
                }
                std::thread::sleep(interval);
            }
        })
        .map(drop)
}

/// LiteHit's cumulative tokens at a scrape: input tokens and hit tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct LiteHitMark {
    input_tokens: u64,
    hit_tokens: u64,
}

/// One endpoint's state on the ingest thread.
#[derive(Debug, Clone)]
pub(super) struct EndpointState {
    endpoint: EngineEndpoint,
    scrapes: u64,
    failed_scrapes: u64,
    last_error: Option<String>,
    last: Option<(EngineCounters, LiteHitMark)>,
    window: Option<EngineWindow>,
}

impl EndpointState {
    pub(super) fn new(endpoint: EngineEndpoint) -> Self {
        Self {
            endpoint,
            scrapes: 0,
            failed_scrapes: 0,
            last_error: None,
            last: None,
            window: None,
        }
    }

    /// Records one scrape's result, with LiteHit's lanes as they are now.
    pub(super) fn record(
        &mut self,
        result: Result<EngineCounters, String>,
        lanes: &[Lane],
        slots: &[Slot],
        assumed_block_bytes: Option<u64>,
    ) {
        let counters = match result {
            Ok(counters) => counters,
            Err(error) => {
                self.failed_scrapes += 1;
                self.last_error = Some(error);
                return;
            }
        };
        self.scrapes += 1;
        self.last_error = None;
        let mark = self.litehit_mark(lanes, slots, assumed_block_bytes);
        if let Some((previous, previous_mark)) = self.last
            && counters.query_tokens >= previous.query_tokens
        {
            self.window = Some(EngineWindow {
                engine_query_tokens: counters.query_tokens - previous.query_tokens,
                engine_hit_tokens: counters.hit_tokens.saturating_sub(previous.hit_tokens),
                litehit_input_tokens: mark.input_tokens.saturating_sub(previous_mark.input_tokens),
                litehit_hit_tokens: mark.hit_tokens.saturating_sub(previous_mark.hit_tokens),
            });
        }
        // A counter that went back (the engine restarted) starts the windows over.
        self.last = Some((counters, mark));
    }

    /// The lanes this endpoint compares with: its instance, else every instance.
    fn litehit_mark(
        &self,
        lanes: &[Lane],
        slots: &[Slot],
        assumed_block_bytes: Option<u64>,
    ) -> LiteHitMark {
        let engine_slot = slots.first().filter(|slot| slot.is_engine());
        lanes
            .iter()
            .filter(|lane| match &self.endpoint.instance_id {
                Some(id) => lane.spec().instance_id == *id,
                None => !lane.is_pool(),
            })
            .fold(LiteHitMark::default(), |mark, lane| {
                let block_bytes = super::timeline::block_bytes_of(lane, assumed_block_bytes);
                let hit_blocks = match (engine_slot, lane.accumulator()) {
                    (Some(slot), Some(accumulator)) => slot_blocks(slot.capacity, block_bytes, 1)
                        .map_or_else(
                            || lane.infinite_hit_blocks(),
                            |blocks| accumulator.hit_blocks_at(blocks),
                        ),
                    _ => lane.infinite_hit_blocks(),
                };
                LiteHitMark {
                    input_tokens: mark.input_tokens.wrapping_add(lane.input_tokens()),
                    hit_tokens: mark
                        .hit_tokens
                        .wrapping_add(hit_blocks.saturating_mul(lane.spec().block_size_tokens)),
                }
            })
    }

    /// The engine's pool (`num_gpu_blocks`, `block_size`), once a scrape said it.
    pub(super) fn pool(&self) -> Option<(u64, u64)> {
        self.last.and_then(|(counters, _)| counters.pool)
    }

    /// As the snapshot shows it.
    pub(super) fn view(&self, compared_at_engine_slot: bool) -> EngineMetricsView {
        EngineMetricsView {
            label: self.endpoint.label().to_owned(),
            url: self.endpoint.url.clone(),
            instance_id: self.endpoint.instance_id.clone(),
            scrapes: self.scrapes,
            failed_scrapes: self.failed_scrapes,
            last_error: self.last_error.clone(),
            query_tokens: self.last.map(|(counters, _)| counters.query_tokens),
            hit_tokens: self.last.map(|(counters, _)| counters.hit_tokens),
            pool: self.pool(),
            window: self.window,
            compared_at_engine_slot,
        }
    }
}
