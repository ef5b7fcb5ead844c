//! Routing: which lanes a row goes to (by instance id, override, or fanout), creating lanes on
//! the fly when no config file fixed them.

use std::collections::{HashMap, HashSet};

use crate::engine::shard::Shard;
use crate::engine::{EngineConfig, LaneSet, LaneSpec, Routing};

/// Why a row could not be routed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// A config file fixes the lanes, so a row from any other instance is a mistake to report.
    #[error("unknown instance[{instance_id}] (configured: {configured})")]
    UnknownInstance {
        /// The row's instance.
        instance_id: String,
        /// The instances the config sets, listed so the user sees the choice.
        configured: String,
    },
    /// Several lanes and a row without instance: picking one silently would skew its facts.
    #[error(
        "row has no instance id and {lane_count} instances are configured: set \
         override_instance_id (or --instance) to pick one, or fanout_all_instances to replay every row on all"
    )]
    AmbiguousInstance {
        /// How many lanes are configured.
        lane_count: usize,
    },
    /// An instance named like the shared pool: its rows and the pool's would share one name.
    #[error(
        "instance[{instance_id}] has the shared pool's name: name the pool otherwise, with \
         --pool=NAME (or the config's pool_instance_id)"
    )]
    PoolNameTaken {
        /// The instance whose name is the pool's.
        instance_id: String,
    },
}

/// Maps instance ids to lane indexes and adds lanes on the fly.
#[derive(Debug, Clone)]
pub(crate) struct Router {
    routing: Routing,
    lane_by_instance: HashMap<String, usize>,
    /// `Some` when lanes are created per instance seen.
    on_the_fly_template: Option<LaneSpec>,
    lane_count: usize,
    /// `replay --shard`: only lanes of instances in this shard get rows.
    shard: Option<Shard>,
    /// Per lane: whether its instance is in `shard` (all true without one).
    lane_in_shard: Vec<bool>,
    /// Instance ids seen outside `shard` that got no lane (on-the-fly lanes only): a
    /// shard that replays nothing can then say of how many instances it got none.
    unlaned_outside_shard: HashSet<String>,
    /// The shared pool lane: its name (no row may carry it) and index (fanout skips it; the
    /// engine adds it to every row's targets itself).
    pool: Option<(String, usize)>,
}

/// What the engine must do for a row.
pub(crate) enum Route {
    /// Existing lanes, whose indexes were written to the caller's `targets`.
    Existing,
    /// A new lane must be created for this instance id first (on-the-fly lanes only).
    NewLane(LaneSpec),
}

impl Router {
    pub(crate) fn new(config: &EngineConfig) -> Self {
        let (specs, on_the_fly_template) = match &config.lanes {
            LaneSet::Configured(specs) => (specs.as_slice(), None),
            LaneSet::OnTheFly(template) => (&[][..], Some(template.clone())),
        };
        // The shared pool lane, if any, is lane 0: the instances' lanes follow it.
        let offset = usize::from(config.pool.is_some());
        Self {
            routing: config.routing.clone(),
            lane_by_instance: specs
                .iter()
                .enumerate()
                .map(|(index, spec)| (spec.instance_id.clone(), offset + index))
                .collect(),
            on_the_fly_template,
            lane_count: offset + specs.len(),
            shard: None,
            lane_in_shard: vec![true; offset + specs.len()],
            unlaned_outside_shard: HashSet::new(),
            pool: config.pool.clone().map(|name| (name, 0)),
        }
    }

    /// Routes rows only to lanes whose instance id is in `shard`; the others get none.
    pub(crate) fn set_shard(&mut self, shard: Shard) {
        self.shard = Some(shard);
        for (instance_id, &index) in &self.lane_by_instance {
            self.lane_in_shard[index] = shard.contains(instance_id);
        }
    }

    /// Records a lane the engine just created for `instance_id`.
    pub(crate) fn add_lane(&mut self, instance_id: &str) -> usize {
        let index = self.lane_count;
        self.lane_by_instance.insert(instance_id.to_owned(), index);
        self.lane_count += 1;
        self.lane_in_shard
            .push(self.shard.is_none_or(|shard| shard.contains(instance_id)));
        index
    }

    /// Instances outside the shard: configured lanes not in it, and on-the-fly instance
    /// ids seen that are not (0 without a shard).
    pub(crate) fn instances_outside_shard(&self) -> usize {
        let configured = self.lane_in_shard.iter().filter(|&&inside| !inside).count();
        configured + self.unlaned_outside_shard.len()
    }

    /// Resolves the lanes for a row with the given instance id into `targets` (none when
    /// every lane it would go to is outside the shard).
    pub(crate) fn route(
        &mut self,
        instance_id: Option<&str>,
        targets: &mut Vec<usize>,
    ) -> Result<Route, RouteError> {
        let route = self.route_all(instance_id, targets)?;
        let Some(shard) = self.shard else {
            return Ok(route);
        };
        Ok(match route {
            Route::Existing => {
                targets.retain(|&index| self.lane_in_shard[index]);
                Route::Existing
            }
            Route::NewLane(spec) if shard.contains(&spec.instance_id) => Route::NewLane(spec),
            Route::NewLane(spec) => {
                if !self.unlaned_outside_shard.contains(&spec.instance_id) {
                    self.unlaned_outside_shard.insert(spec.instance_id);
                }
                targets.clear();
                Route::Existing
            }
        })
    }

    fn route_all(
        &self,
        instance_id: Option<&str>,
        targets: &mut Vec<usize>,
    ) -> Result<Route, RouteError> {
        targets.clear();
        match &self.routing {
            Routing::Fanout => targets.extend(self.first_instance_lane()..self.lane_count),
            Routing::Override(id) => return self.lane_or_new(id, targets),
            Routing::ByInstance => match (instance_id, &self.on_the_fly_template) {
                (Some(id), _) => return self.lane_or_new(id, targets),
                (None, Some(template)) => {
                    return self.lane_or_new(&template.instance_id.clone(), targets);
                }
                (None, None) if self.instance_lane_count() == 1 => {
                    targets.push(self.first_instance_lane());
                }
                (None, None) => {
                    return Err(RouteError::AmbiguousInstance {
                        lane_count: self.instance_lane_count(),
                    });
                }
            },
        }
        Ok(Route::Existing)
    }

    /// The index of the first instance lane (1 after the pool lane, else 0).
    fn first_instance_lane(&self) -> usize {
        usize::from(self.pool.is_some())
    }

    /// Lanes of instances (the pool lane is none).
    fn instance_lane_count(&self) -> usize {
        self.lane_count - self.first_instance_lane()
    }

    fn lane_or_new(
        &self,
        instance_id: &str,
        targets: &mut Vec<usize>,
    ) -> Result<Route, RouteError> {
        if self
            .pool
            .as_ref()
            .is_some_and(|(name, _)| name == instance_id)
        {
            return Err(RouteError::PoolNameTaken {
                instance_id: instance_id.to_owned(),
            });
        }
        if let Some(&index) = self.lane_by_instance.get(instance_id) {
            targets.push(index);
            return Ok(Route::Existing);
        }
        if let Some(template) = &self.on_the_fly_template {
            return Ok(Route::NewLane(LaneSpec {
                instance_id: instance_id.to_owned(),
                ..template.clone()
            }));
        }
        let mut configured: Vec<&str> = self.lane_by_instance.keys().map(String::as_str).collect();
        configured.sort_unstable();
        Err(RouteError::UnknownInstance {
            instance_id: instance_id.to_owned(),
            configured: configured.join(", "),
        })
    }
}
