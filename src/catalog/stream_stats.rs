//! What the operators of running streaming flows did (in memory, since the
//! process started): `information_schema.flow_operators` (issue 11). The
//! flow side publishes a flow's rows after each epoch; the planner reads
//! them. Imports nothing of weir.

/// One operator of a streaming flow's dataflow (pre-order position).
#[derive(Debug, Clone, Default)]
pub struct FlowOperatorStats {
    pub operator: String,
    pub rows_in: u64,
    pub rows_out: u64,
    /// Committed state rows and bytes (sampled at most every few seconds).
    pub state_rows: u64,
    pub state_bytes: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    /// The dataflow's last committed epoch.
    pub epoch: u64,
    /// The last epoch: running the operators, and committing the barrier.
    pub epoch_ms: f64,
    pub barrier_ms: f64,
    /// Bytes the shared state cache holds (all flows).
    pub cache_bytes: u64,
}
