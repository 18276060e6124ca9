//! Streaming mode (issue 11): flows whose every change drives a dataflow of
//! `(row, diff)` batches, with operator state in state tables committed at
//! epoch barriers (RisingWave's semantics in one process).
//!
//! `state_table` is the persistent-state gateway (seed 003).
//!
//! May import `planner`, `exec`, `storage`, `catalog`, `types`, `error`;
//! never `flow`, `sql` or `server` (flow calls in here).

pub mod state_table;
