//! `Replayer`: a streaming replay holding the core's state across `feed` calls, for engines
//! that hand rows over in batches (Spark's `applyInArrow`, Ray's `map_batches`). Lanes are
//! independent, so one `Replayer` per instance is exact; it is not picklable: its state is
//! native memory, so each task makes its own.

use std::sync::Mutex;

use litehit_core::engine::{CachePolicies, Engine};
use litehit_core::formats::TraceFormat;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;

use crate::facts::FactsBatch;
use crate::options::{LaneOptions, offline_engine};
use crate::rows::{PolicySinks, RowReplay};

/// Why pickling a `Replayer` is refused.
const NOT_PICKLABLE: &str = "a litehit.Replayer holds a replay's native state and cannot be \
     pickled or sent to another process: create one inside each task (one per instance, or one \
     for the pool lane with every row) and feed it there";

/// The state behind the lock: the engine and the number the next row gets.
struct ReplayerState {
    engine: Engine,
    policies: CachePolicies,
    next_row: u64,
}

/// A replay fed batch by batch.
#[pyclass(frozen, module = "litehit._litehit", name = "Replayer")]
pub struct Replayer {
    /// `None` once finished. Locked by one call at a time; a second thread's call while one
    /// runs is refused rather than waited for (it would hold the GIL while waiting).
    state: Mutex<Option<ReplayerState>>,
}

#[pymethods]
impl Replayer {
    #[new]
    #[pyo3(signature = (options))]
    fn new(options: LaneOptions) -> PyResult<Self> {
        let policies = options.cache_policies()?;
        let engine = offline_engine(options.engine_config(TraceFormat::Standard)?, policies)?;
        Ok(Self {
            state: Mutex::new(Some(ReplayerState {
                engine,
                policies,
                next_row: 1,
            })),
        })
    }

    /// Replays the rows of `batch` (an Arrow stream or batch, or an iterable of dicts) after
    /// every row fed before; the facts of these rows, in input order (with the pool lane's
    /// row after each row's own), per policy by its name (the primary policy's first).
    fn feed(
        &self,
        py: Python<'_>,
        batch: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<(&'static str, FactsBatch)>> {
        let mut guard = self
            .state
            .try_lock()
            .map_err(|_| PyRuntimeError::new_err("this Replayer is being fed by another thread"))?;
        let Some(state) = guard.as_mut() else {
            return Err(PyRuntimeError::new_err(
                "this Replayer is finished: make a new one to replay more rows",
            ));
        };
        let mut sink = PolicySinks::new(state.policies, false);
        RowReplay {
            engine: &mut state.engine,
            next_row: &mut state.next_row,
            sink: &mut sink,
            source_name: "rows",
        }
        .feed(py, batch)?;
        Ok(sink
            .finish_one()
            .into_iter()
            .map(|(policy, batch)| (policy.name(), FactsBatch::new(batch)))
            .collect())
    }

    /// Ends the replay and frees its state; a later `feed` is refused. Rows fed so far.
    fn finish(&self) -> PyResult<u64> {
        let mut guard = self
            .state
            .try_lock()
            .map_err(|_| PyRuntimeError::new_err("this Replayer is being fed by another thread"))?;
        Ok(guard.take().map_or(0, |state| state.next_row - 1))
    }

    /// Rows fed so far.
    #[getter]
    fn rows_fed(&self) -> PyResult<u64> {
        let guard = self
            .state
            .try_lock()
            .map_err(|_| PyRuntimeError::new_err("this Replayer is being fed by another thread"))?;
        Ok(guard.as_ref().map_or(0, |state| state.next_row - 1))
    }

    #[allow(clippy::unused_self, reason = "Python calls it on the instance")]
    fn __reduce__(&self) -> PyResult<()> {
        Err(PyTypeError::new_err(NOT_PICKLABLE))
    }
}
