//! The executor: pull-based, vectorized operators over arrow batches
//! (TiKV coprocessor style, seed 004).
//!
//! `next_batch(max_rows)` returns a batch, the rows of it still alive and
//! whether the input is drained. A selection narrows the live rows instead
//! of copying columns; the next operator that needs dense columns compacts.
//! May import `storage`, `types`, `error`; never `planner`, `sql`, `server`.

pub mod activity;
pub mod exact_sum;
pub mod expr;
pub mod float_stats;
pub mod functions;
pub mod memory;
pub mod plan;
pub mod user_agg;

mod aggregate;
mod distinct_on;
mod group_keys;
mod hash_agg;
mod hash_join;
mod keys;
mod limit;
#[cfg(test)]
pub(crate) mod mock;
mod narrow;
pub mod numeric;
mod ordered_set;
mod partition;
mod pg_qsort;
mod project_set;
mod projection;
pub mod promql;
mod recursive_union;
mod scan;
mod selection;
mod set_op;
mod sort;
mod values;
mod window;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow::datatypes::SchemaRef;

use crate::bail;
use crate::error::Result;
use crate::types::{value_at, Value};
use plan::Plan;

/// Rows per batch: from MonetDB/X100's vector size, not tuned here.
pub const BATCH_ROWS: usize = 1024;

/// What a statement's execution may consult: time, identity, limits.
#[derive(Debug, Clone)]
pub struct ExecCtx {
    /// `now()` for the whole statement, microseconds since the epoch: the
    /// transaction's start inside a block, as in PostgreSQL.
    pub statement_ts: i64,
    /// `statement_timestamp()`: this statement's own start.
    pub statement_start_ts: i64,
    pub database: String,
    pub user: String,
    pub settings: Arc<HashMap<String, String>>,
    pub deadline: Option<Instant>,
    pub cancel: Arc<AtomicBool>,
    /// This session's backend pid and the process's session registry.
    pub pid: i32,
    pub activity: activity::Activity,
    /// The statement's memory budget, shared by all its operators and
    /// subqueries; it goes away (and so releases everything) with the query.
    pub memory: Arc<memory::MemoryBudget>,
    /// The statement's snapshot and its transaction's own writes; None
    /// reads each region's latest rows.
    pub view: Option<Arc<crate::storage::ReadView>>,
    /// `set_config(name, value, is_local)` calls made while running, for
    /// the session to apply before its next statement.
    pub set_configs: SetConfigs,
    /// `pg_notify(channel, payload)` calls made while running, for the
    /// session to queue in its transaction (delivered at commit).
    pub notifies: Notifies,
    /// What nextval, currval, setval and lastval reach: the session's
    /// sequences (None where there is no session: flows, planning).
    pub sequences: Option<Arc<dyn SequenceAccess>>,
    /// What a call of a PL/pgSQL function reaches: the session's
    /// interpreter (`sql/plpgsql.rs`; None where there is no session).
    pub routines: Option<Arc<dyn RoutineAccess>>,
}

/// Calls of user functions the planner cannot inline (PL/pgSQL): `key`
/// names the function (`database/name/oid`), `args` are one row of
/// arguments with their types; the answer is one value of `ret`.
pub trait RoutineAccess: std::fmt::Debug + Send + Sync {
    fn call(&self, ctx: &ExecCtx, key: &str, args: Vec<(ArrayRef, crate::types::SqlType)>, ret: crate::types::SqlType) -> Result<ArrayRef>;
}

/// The sequence functions' side of a session (`sql/sequence.rs`). A
/// sequence is named by its text (`'s'`, `'"S"'`, `'public.s'`) or OID.
pub trait SequenceAccess: std::fmt::Debug + Send + Sync {
    fn nextval(&self, database: &str, seq: &Value) -> Result<i64>;
    fn currval(&self, database: &str, seq: &Value) -> Result<i64>;
    fn setval(&self, database: &str, seq: &Value, value: i64, is_called: bool) -> Result<i64>;
    fn lastval(&self) -> Result<i64>;
}

/// Settings assigned by `set_config`: (name, value, is_local), in call order.
pub type SetConfigs = Arc<std::sync::Mutex<Vec<(String, String, bool)>>>;

/// Notifications `pg_notify` queued: (channel, payload), in call order.
pub type Notifies = Arc<std::sync::Mutex<Vec<(String, String)>>>;

impl ExecCtx {
    /// Fail with 57014 when the statement ran out of time or was cancelled.
    pub fn check(&self) -> Result<()> {
        if self.cancel.load(Ordering::Relaxed) {
            bail!(QueryCanceled, "canceling statement due to user request");
        }
        if let Some(d) = self.deadline {
            if Instant::now() > d {
                bail!(QueryCanceled, "canceling statement due to statement timeout");
            }
        }
        Ok(())
    }

    /// Charge `bytes` kept until the query ends to its budget (53200 when
    /// they do not fit).
    pub fn charge(&self, bytes: usize, what: &str) -> Result<()> {
        self.memory.charge(bytes, what)
    }

    /// Check that a transient allocation of `bytes` fits in the budget.
    pub fn check_alloc(&self, bytes: usize, what: &str) -> Result<()> {
        self.memory.check_alloc(bytes, what)
    }
}

/// One pull from an executor.
pub struct BatchResult {
    pub batch: RecordBatch,
    /// Indices of the live rows; None = all rows are live.
    pub logical_rows: Option<UInt32Array>,
    pub is_drained: bool,
}

impl BatchResult {
    /// The live rows as a dense batch.
    pub fn into_dense(self) -> Result<RecordBatch> {
        match self.logical_rows {
            None => Ok(self.batch),
            Some(idx) => take_batch(&self.batch, &idx),
        }
    }

    pub fn live_rows(&self) -> usize {
        self.logical_rows.as_ref().map(|l| l.len()).unwrap_or(self.batch.num_rows())
    }
}

/// `take` over every column, keeping the row count for zero-column batches.
pub fn take_batch(batch: &RecordBatch, idx: &UInt32Array) -> Result<RecordBatch> {
    let cols: Vec<ArrayRef> =
        batch.columns().iter().map(|c| arrow::compute::take(c.as_ref(), idx, None)).collect::<std::result::Result<_, _>>()?;
    Ok(RecordBatch::try_new_with_options(batch.schema(), cols, &RecordBatchOptions::new().with_row_count(Some(idx.len())))?)
}

/// A vectorized operator.
pub trait BatchExecutor: Send {
    fn schema(&self) -> SchemaRef;
    fn next_batch(&mut self, max_rows: usize) -> Result<BatchResult>;
}

/// Build the executor tree for a plan.
pub fn build(plan: &Plan, ctx: &ExecCtx) -> Result<Box<dyn BatchExecutor>> {
    Ok(match plan {
        Plan::Scan { regions, request, columns } => Box::new(
            scan::TableScanExecutor::new(regions.0.clone(), regions.1.clone(), request.clone(), columns).with_view(ctx.view.clone()),
        ),
        Plan::Memory { batches, columns } => Box::new(values::MemoryExecutor::new(batches.clone(), columns)),
        Plan::Values { rows, columns } => Box::new(values::ValuesExecutor::new(rows.clone(), columns, ctx.clone())),
        Plan::Series { args, columns } => Box::new(values::SeriesExecutor::new(args.clone(), columns, ctx.clone())),
        Plan::Filter { input, predicate } => {
            Box::new(selection::SelectionExecutor::new(build(input, ctx)?, predicate.clone(), ctx.clone()))
        }
        Plan::Project { input, exprs, columns } => {
            Box::new(projection::ProjectionExecutor::new(build(input, ctx)?, exprs.clone(), columns, ctx.clone()))
        }
        Plan::ProjectSet { input, srfs, columns } => {
            Box::new(project_set::ProjectSetExecutor::new(build(input, ctx)?, srfs.clone(), columns, ctx.clone()))
        }
        Plan::Aggregate { input, group_by, aggs, columns } => match partition::halves(input, ctx) {
            // A large scan read in two parts, one per core.
            Some((first, second)) => Box::new(
                hash_agg::HashAggExecutor::new(build(&first, ctx)?, group_by.clone(), aggs.clone(), columns, ctx.clone())
                    .with_second_half(build(&second, ctx)?),
            ),
            None => Box::new(hash_agg::HashAggExecutor::new(build(input, ctx)?, group_by.clone(), aggs.clone(), columns, ctx.clone())),
        },
        Plan::Distinct { input } => {
            let cols = input.columns().to_vec();
            let group_by = cols.iter().enumerate().map(|(i, c)| expr::Expr::Column { index: i, ty: c.ty }).collect();
            Box::new(hash_agg::HashAggExecutor::new(build(input, ctx)?, group_by, vec![], &cols, ctx.clone()))
        }
        Plan::Window { input, calls, columns } => {
            Box::new(window::WindowExecutor::new(build(input, ctx)?, calls.clone(), columns, ctx.clone()))
        }
        Plan::DistinctOn { input, keys } => Box::new(distinct_on::DistinctOnExecutor::new(build(input, ctx)?, keys.clone(), ctx.clone())),
        Plan::Sort { input, keys, limit } => Box::new(sort::SortExecutor::new(build(input, ctx)?, keys.clone(), *limit, ctx.clone())),
        Plan::Limit { input, limit, offset } => Box::new(limit::LimitExecutor::new(build(input, ctx)?, *limit, *offset)),
        Plan::NarrowedAggregate { input, narrow } => Box::new(narrow::NarrowedAggExecutor::new((**input).clone(), *narrow, ctx.clone())),
        Plan::Prom { input, node, columns } => Box::new(promql::PromExecutor::new(build(input, ctx)?, node.clone(), columns, ctx.clone())),
        Plan::Join { left, right, kind, left_keys, right_keys, condition, columns } => Box::new(hash_join::HashJoinExecutor::new(
            build(left, ctx)?,
            build(right, ctx)?,
            *kind,
            left_keys.clone(),
            right_keys.clone(),
            condition.clone(),
            columns,
            ctx.clone(),
        )),
        Plan::SetOp { left, right, kind, all } => {
            Box::new(set_op::SetOpExecutor::new(build(left, ctx)?, build(right, ctx)?, *kind, *all, plan.columns(), ctx.clone()))
        }
        Plan::RecursiveUnion { anchor, recursive, id, all, columns } => Box::new(recursive_union::RecursiveUnionExecutor::new(
            build(anchor, ctx)?,
            (**recursive).clone(),
            *id,
            *all,
            columns,
            ctx.clone(),
        )?),
        Plan::WorkTable { id, .. } => bail!(Internal, "working table {id} read outside its recursive union"),
    })
}

/// Run a plan to completion.
pub fn collect(plan: &Plan, ctx: &ExecCtx) -> Result<Vec<RecordBatch>> {
    drain(&mut build(plan, ctx)?, ctx)
}

/// Run a plan and return its rows as values (subqueries, DDL helpers).
pub fn collect_rows(plan: &Plan, ctx: &ExecCtx, limit: Option<usize>) -> Result<Vec<Vec<Value>>> {
    let mut exec = build(plan, ctx)?;
    let mut rows = Vec::new();
    loop {
        ctx.check()?;
        let r = exec.next_batch(BATCH_ROWS)?;
        let drained = r.is_drained;
        let b = r.into_dense()?;
        ctx.charge(memory::batch_bytes(&b), "subquery rows")?;
        for i in 0..b.num_rows() {
            rows.push(b.columns().iter().map(|c| value_at(c.as_ref(), i)).collect());
            if limit.is_some_and(|l| rows.len() >= l) {
                return Ok(rows);
            }
        }
        if drained {
            break;
        }
    }
    Ok(rows)
}

/// Pull a child until drained, as dense batches.
pub(crate) fn drain(child: &mut Box<dyn BatchExecutor>, ctx: &ExecCtx) -> Result<Vec<RecordBatch>> {
    let mut out = Vec::new();
    loop {
        ctx.check()?;
        let r = child.next_batch(BATCH_ROWS)?;
        let drained = r.is_drained;
        let b = r.into_dense()?;
        if b.num_rows() > 0 {
            ctx.charge(memory::batch_bytes(&b), "buffered rows")?;
            out.push(b);
        }
        if drained {
            return Ok(out);
        }
    }
}

/// The next slice of a fully computed output (sort, aggregation, set
/// operations), advancing `pos`.
pub(crate) fn next_slice(out: &RecordBatch, pos: &mut usize, max_rows: usize) -> BatchResult {
    let n = out.num_rows();
    let len = max_rows.min(n - *pos);
    let batch = out.slice(*pos, len);
    *pos += len;
    BatchResult { batch, logical_rows: None, is_drained: *pos >= n }
}

/// An empty batch of a schema.
pub(crate) fn empty_batch(schema: &SchemaRef) -> RecordBatch {
    RecordBatch::new_empty(schema.clone())
}

/// The value bytes a string or binary column's rows use: the span of its
/// offsets, not the length of its buffer (a slice of a large array shares
/// the whole buffer).
fn value_bytes(a: &ArrayRef) -> usize {
    let data = a.to_data();
    let Some(offsets) = data.buffers().first() else { return 0 };
    let offsets: &[i32] = offsets.typed_data();
    let first = offsets.get(data.offset()).copied().unwrap_or(0);
    let last = offsets.get(data.offset() + data.len()).copied().unwrap_or(first);
    (last - first).max(0) as usize
}

/// Concatenate batches (zero-column batches keep their row count); the copy
/// is charged to the query's memory budget first.
pub(crate) fn concat(ctx: &ExecCtx, schema: &SchemaRef, batches: &[RecordBatch]) -> Result<RecordBatch> {
    if schema.fields().is_empty() {
        let n = batches.iter().map(|b| b.num_rows()).sum();
        return Ok(RecordBatch::try_new_with_options(schema.clone(), vec![], &RecordBatchOptions::new().with_row_count(Some(n)))?);
    }
    if batches.len() > 1 {
        let bytes: usize = batches.iter().map(memory::batch_bytes).sum();
        ctx.charge(bytes, "concatenated rows")?;
    }
    // arrow's string and binary arrays have 32-bit offsets: a column past
    // 2 GiB would panic in the kernel, so refuse it as PostgreSQL would.
    for (i, f) in schema.fields().iter().enumerate() {
        if matches!(f.data_type(), arrow::datatypes::DataType::Utf8 | arrow::datatypes::DataType::Binary) {
            let len: usize = batches.iter().map(|b| value_bytes(b.column(i))).sum();
            if len > i32::MAX as usize {
                bail!(ProgramLimitExceeded, "requested length too large");
            }
        }
    }
    Ok(arrow::compute::concat_batches(schema, batches)?)
}

#[cfg(test)]
mod concat_tests {
    use std::sync::Arc;

    use arrow::array::{Array, ArrayRef, StringArray};

    use super::value_bytes;

    #[test]
    fn a_slice_counts_only_its_own_string_bytes() {
        let a: ArrayRef = Arc::new(StringArray::from_iter_values((0..10_000).map(|i| format!("host_{i:04}"))));
        assert_eq!(value_bytes(&a), 90_000);
        // 10,000 one-row slices share the 90,000-byte buffer: together they
        // hold 90,000 bytes, not 10,000 × 90,000 (which passed 2 GiB and
        // refused a 1.1 M-row TQL result with 54000).
        let total: usize = (0..a.len()).map(|i| value_bytes(&a.slice(i, 1))).sum();
        assert_eq!(total, 90_000);
        assert_eq!(value_bytes(&a.slice(5, 0)), 0);
    }
}
