//! Streaming mode (issue 11): flows whose every change drives a dataflow of
//! `(row, diff)` batches, with operator state in state tables committed at
//! epoch barriers (RisingWave's semantics in one process).
//!
//! `render` turns a flow's logical plan (the one the batching path plans)
//! into a tree of [`Operator`]s: `map` (sources, filter, project, union,
//! constants), `hash_agg` (aggregation with retractions), `join` (inner,
//! outer, semi and anti equi-joins over arrangements on both sides),
//! `distinct`, `top_n` (ORDER BY … LIMIT, row_number() per partition
//! bounded by a constant). One
//! [`Dataflow::step`] consumes an epoch's source changes and returns the
//! output changes; [`Dataflow::commit`] is the barrier: every operator's
//! state, the source positions and the epoch's output (the sink outbox)
//! commit in one atomic write of the `state_table` store.
//!
//! May import `planner`, `exec`, `storage`, `catalog`, `types`, `error`;
//! never `flow`, `sql` or `server` (flow calls in here).

pub mod distinct;
pub mod hash_agg;
pub mod join;
pub mod map;
pub mod not_in;
pub mod state_table;
pub mod top_n;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{Field, Schema};

use crate::error::Result;
use crate::exec::plan::{JoinKind, PlanColumn, SetOpKind};
use crate::exec::ExecCtx;
use crate::planner::analysis::PlanNode;
use crate::planner::logical::LogicalPlan;
use crate::types::{value_at, values_to_array, Value};
use crate::{bail, err};

use state_table::{decode_row, encode_row, CacheStats, Row, StateCache, StateKv, StateStore, StateTable};

/// Streaming mode's options (`[stream]` in conf/weir.toml).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(default)]
pub struct StreamTuning {
    /// Milliseconds: a streaming flow closes an epoch (runs its dataflow
    /// over the changes since the last one and commits the barrier) at
    /// most this often while writes arrive; a write's rows reach the sink
    /// within about one interval plus the epoch's own time.
    pub barrier_interval_ms: u64,
    /// Bytes: the cache of committed operator state in front of the state
    /// store, shared by all streaming flows; 0 = no cache.
    pub state_cache_bytes_max: usize,
}

impl Default for StreamTuning {
    fn default() -> Self {
        // 1 s: RisingWave's default barrier interval.
        StreamTuning { barrier_interval_ms: 1000, state_cache_bytes_max: state_table::STATE_CACHE_BYTES_DEFAULT }
    }
}

/// A batch of changes: rows (arrow columns) and the diff of each row
/// (+n inserted n times, -n retracted).
#[derive(Debug, Clone)]
pub struct Changes {
    pub batch: RecordBatch,
    pub diff: Vec<i64>,
}

impl Changes {
    pub fn empty(cols: &[PlanColumn]) -> Changes {
        Changes { batch: RecordBatch::new_empty(schema(cols)), diff: vec![] }
    }

    pub fn len(&self) -> usize {
        self.diff.len()
    }

    pub fn is_empty(&self) -> bool {
        self.diff.is_empty()
    }

    /// The rows as values.
    pub fn rows(&self) -> Vec<Row> {
        let cols = self.batch.columns();
        (0..self.len()).map(|i| cols.iter().map(|c| value_at(c.as_ref(), i)).collect()).collect()
    }

    /// Changes from rows of the given column types.
    pub fn from_rows(cols: &[PlanColumn], rows: Vec<(Row, i64)>) -> Result<Changes> {
        let n = rows.len();
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(cols.len());
        for (j, c) in cols.iter().enumerate() {
            let vals: Vec<Value> = rows.iter().map(|(r, _)| r[j].clone()).collect();
            arrays.push(values_to_array(&vals, c.ty)?);
        }
        let batch = RecordBatch::try_new_with_options(schema(cols), arrays, &RecordBatchOptions::new().with_row_count(Some(n)))?;
        Ok(Changes { batch, diff: rows.into_iter().map(|(_, d)| d).collect() })
    }

    /// The rows where `keep` is true.
    pub fn filter(&self, keep: &arrow::array::BooleanArray) -> Result<Changes> {
        let batch = arrow::compute::filter_record_batch(&self.batch, keep)?;
        let diff = self.diff.iter().enumerate().filter(|(i, _)| keep.is_valid(*i) && keep.value(*i)).map(|(_, d)| *d).collect();
        Ok(Changes { batch, diff })
    }
}

/// A nullable arrow schema for plan columns (positions matter, names not).
pub fn schema(cols: &[PlanColumn]) -> Arc<Schema> {
    Arc::new(Schema::new(cols.iter().enumerate().map(|(i, c)| Field::new(format!("c{i}"), c.ty.to_arrow(), true)).collect::<Vec<_>>()))
}

/// What one epoch feeds in: per source table id, batches of all the
/// table's columns with their diffs.
pub type Inputs = HashMap<u32, Vec<Changes>>;

/// Per-operator counters (observability).
#[derive(Debug, Clone, Default)]
pub struct OpStats {
    pub name: &'static str,
    pub rows_in: u64,
    pub rows_out: u64,
    /// The operator's own state tables: committed rows and bytes as of the
    /// last sample, reads the cache answered and reads that went to the store.
    pub state_rows: u64,
    pub state_bytes: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
}

impl OpStats {
    /// These counters plus the state of `tables` (the operator's own).
    pub fn with_tables<'a>(&self, tables: impl IntoIterator<Item = &'a StateTable>) -> OpStats {
        let mut s = self.clone();
        for t in tables {
            let (r, b) = t.sampled_size();
            let (h, m) = t.cache_counters();
            s.state_rows += r;
            s.state_bytes += b;
            s.cache_hits += h;
            s.cache_misses += m;
        }
        s
    }
}

/// One node of the dataflow.
pub trait Operator: Send {
    /// Consume this epoch's input changes, return the output changes.
    fn step(&mut self, inputs: &Inputs, ctx: &ExecCtx) -> Result<Changes>;
    /// The state tables of this operator and its inputs (for the barrier).
    fn tables<'a>(&'a mut self, out: &mut Vec<&'a mut StateTable>);
    fn stats(&self, out: &mut Vec<OpStats>);
}

/// A rendered flow: its operators and state store.
pub struct Dataflow {
    store: StateStore,
    root: Box<dyn Operator>,
    columns: Vec<PlanColumn>,
    /// State rows written, epochs committed and the last barrier's time.
    pub commits: u64,
    pub last_commit_us: u64,
    watermark: Arc<AtomicI64>,
    /// State rows dropped by [`Dataflow::expire`] so far.
    pub expired_rows: u64,
}

/// Why a plan cannot run in streaming mode, if it cannot.
pub fn unsupported(plan: &LogicalPlan) -> Option<String> {
    let conj = not_in_conjuncts(plan);
    if let Some((x, sub, rest)) = not_in::split(&conj) {
        if x.has_subquery() || rest.iter().any(|e| e.has_subquery()) {
            return Some("subqueries".into());
        }
        return unsupported(sub).or_else(|| plan.inputs().into_iter().find_map(unsupported));
    }
    if plan.own_exprs().iter().any(|e| e.has_subquery()) {
        return Some("subqueries".into());
    }
    if let Some(s) = top_n::spec(plan) {
        return unsupported(s.input);
    }
    let what = match plan {
        LogicalPlan::Join { .. } => None,
        LogicalPlan::SetOp { kind: SetOpKind::Union, .. } => None,
        LogicalPlan::SetOp { .. } => Some("INTERSECT and EXCEPT"),
        LogicalPlan::Window { .. } => Some("window functions other than row_number() bounded by a constant (top-n)"),
        LogicalPlan::ProjectSet { .. } => Some("set-returning functions"),
        LogicalPlan::DistinctOn { .. } => Some("DISTINCT ON"),
        LogicalPlan::RecursiveUnion { .. } => Some("WITH RECURSIVE"),
        LogicalPlan::Aggregate { aggs, .. } => aggs.iter().find_map(|a| hash_agg::unsupported(a)),
        _ => None,
    };
    if let Some(w) = what {
        return Some(w.to_string());
    }
    plan.inputs().into_iter().find_map(unsupported)
}

/// The group key that is a time window over a source's time index, if
/// one is: (its position, the window's width in microseconds).
fn group_window(input: &LogicalPlan, group_by: &[crate::exec::expr::Expr]) -> Option<(usize, i64)> {
    use crate::planner::analysis::{hop_window, source_columns, time_window, WindowWidth};
    let inputs = source_columns(input);
    group_by.iter().enumerate().find_map(|(i, e)| {
        if let Some(w) = time_window(e, &inputs) {
            return match w.width {
                WindowWidth::Micros(us) => Some((i, us)),
                WindowWidth::Months(_) => None,
            };
        }
        hop_window(e, &inputs).map(|h| (i, h.size))
    })
}

/// A column of `plan` holding a source's time index (a timestamp).
fn time_column(plan: &LogicalPlan) -> Option<usize> {
    use crate::planner::analysis::{source_columns, ColumnRole};
    let cols = plan.columns();
    source_columns(plan).iter().enumerate().find_map(|(i, c)| {
        (matches!(c, Some(c) if c.role == ColumnRole::TimeIndex) && cols.get(i).is_some_and(|c| c.ty.is_timestamp())).then_some(i)
    })
}

/// Whether a timestamp (a window's start plus its width) is at or below
/// the watermark: its window has ended.
pub(crate) fn expired(v: &Value, width: i64, watermark: i64) -> bool {
    watermark != i64::MIN && matches!(v, Value::Timestamp(t) if t.saturating_add(width) <= watermark)
}

/// Whether `plan` reads a table (else its rows are constant: the
/// dataflow's first epoch feeds them all).
fn reads_tables(plan: &LogicalPlan) -> bool {
    matches!(plan, LogicalPlan::Scan(_)) || plan.own_exprs().iter().any(|e| e.has_subquery()) || plan.inputs().into_iter().any(reads_tables)
}

/// The conjuncts of a Filter's predicate or a Scan's filters (where an
/// `x NOT IN (q)` may sit).
fn not_in_conjuncts(plan: &LogicalPlan) -> Vec<crate::exec::expr::Expr> {
    let mut conj = Vec::new();
    match plan {
        LogicalPlan::Filter { predicate, .. } => crate::planner::rewrite::conjuncts(predicate.clone(), &mut conj),
        LogicalPlan::Scan(s) => {
            for f in &s.filters {
                crate::planner::rewrite::conjuncts(f.clone(), &mut conj);
            }
        }
        _ => {}
    }
    conj
}

/// Renders plan nodes, numbering state tables in a fixed order (so a
/// restart finds its tables again).
pub struct Renderer<'a> {
    store: &'a StateStore,
    next_table: u32,
    /// Whether a source table only ever gets insertions (`ttl = 'instant'`).
    instant: &'a dyn Fn(u32) -> bool,
    ctx: &'a ExecCtx,
    first_epoch: bool,
    /// The dataflow's watermark (microseconds; i64::MIN: none): state and
    /// input rows of windows that ended at or before it are dropped.
    pub watermark: Arc<AtomicI64>,
}

impl Renderer<'_> {
    pub fn table(&mut self, pk: Vec<usize>, desc: Vec<bool>) -> StateTable {
        self.next_table += 1;
        self.store.table_ordered(self.next_table, pk, desc)
    }

    /// Render `plan`; the flag says its output has no retractions.
    pub fn render(&mut self, plan: &LogicalPlan) -> Result<(Box<dyn Operator>, bool)> {
        if let Some(what) = unsupported(plan) {
            bail!(FeatureNotSupported, "streaming flows do not support {what} yet");
        }
        let conj = not_in_conjuncts(plan);
        if let Some((x, sub, rest)) = not_in::split(&conj) {
            // The rows before the NOT IN: the Filter's input, or the Scan
            // with its other filters and all the table's columns.
            let (left, cols, projection) = match plan {
                LogicalPlan::Filter { input, .. } => (self.render(input)?.0, input.columns().to_vec(), None),
                LogicalPlan::Scan(s) => {
                    let mut whole = s.clone();
                    whole.filters = vec![];
                    whole.projection = None;
                    whole.columns = s.table_columns();
                    let exprs: Option<Vec<crate::exec::expr::Expr>> = s
                        .projection
                        .as_ref()
                        .map(|p| p.iter().map(|&i| crate::exec::expr::Expr::Column { index: i, ty: whole.columns[i].ty }).collect());
                    let cols = whole.columns.clone();
                    (Box::new(map::Source::new(&whole)) as Box<dyn Operator>, cols, exprs)
                }
                _ => unreachable!("not_in_conjuncts reads filters and scans only"),
            };
            let (right, _) = self.render(sub)?;
            let mut op: Box<dyn Operator> = Box::new(not_in::NotIn::new(left, right, x, cols, self));
            if let Some(predicate) = crate::planner::rewrite::and_all(rest) {
                op = Box::new(map::Filter { input: op, predicate, stats: OpStats { name: "filter", ..Default::default() } });
            }
            if let Some(exprs) = projection {
                op = Box::new(map::Project {
                    input: op,
                    exprs,
                    columns: plan.columns().to_vec(),
                    stats: OpStats { name: "project", ..Default::default() },
                });
            }
            return Ok((op, false));
        }
        if let Some(s) = top_n::spec(plan) {
            let (i, append_only) = self.render(s.input)?;
            let mut op: Box<dyn Operator> = Box::new(top_n::TopN::new(
                i,
                s.input.columns(),
                s.partition.clone(),
                s.order.clone(),
                s.offset,
                s.limit,
                s.numbered,
                append_only,
                self,
            ));
            if let Some((exprs, columns)) = s.project {
                op = Box::new(map::Project { input: op, exprs, columns, stats: OpStats { name: "project", ..Default::default() } });
            }
            if let Some(predicate) = s.rest {
                op = Box::new(map::Filter { input: op, predicate, stats: OpStats { name: "filter", ..Default::default() } });
            }
            return Ok((op, false));
        }
        Ok(match plan {
            LogicalPlan::Scan(s) => (Box::new(map::Source::new(s)), (self.instant)(s.table.id)),
            LogicalPlan::Memory { .. } | LogicalPlan::Values { .. } | LogicalPlan::Series { .. } => {
                (Box::new(map::Const::new(plan, self.ctx, self.first_epoch)?), true)
            }
            LogicalPlan::Filter { input, predicate } => {
                let (i, a) = self.render(input)?;
                (
                    Box::new(map::Filter {
                        input: i,
                        predicate: predicate.clone(),
                        stats: OpStats { name: "filter", ..Default::default() },
                    }),
                    a,
                )
            }
            LogicalPlan::Project { input, exprs, columns } => {
                let (i, a) = self.render(input)?;
                (
                    Box::new(map::Project {
                        input: i,
                        exprs: exprs.clone(),
                        columns: columns.clone(),
                        stats: OpStats { name: "project", ..Default::default() },
                    }),
                    a,
                )
            }
            LogicalPlan::Sort { input, .. } => self.render(input)?,
            LogicalPlan::SetOp { left, right, all, .. } => {
                let (l, a) = self.render(left)?;
                let (r, b) = self.render(right)?;
                let u: Box<dyn Operator> = Box::new(map::Union { left: l, right: r, columns: plan.columns().to_vec() });
                if *all {
                    (u, a && b)
                } else {
                    (Box::new(distinct::Distinct::new(u, plan.columns().to_vec(), self)), false)
                }
            }
            LogicalPlan::Distinct { input } => {
                let (i, _) = self.render(input)?;
                (Box::new(distinct::Distinct::new(i, plan.columns().to_vec(), self)), false)
            }
            LogicalPlan::Aggregate { input, group_by, aggs, columns } => {
                let (i, append_only) = self.render(input)?;
                let window = group_window(input, group_by);
                (Box::new(hash_agg::HashAgg::new(i, group_by.clone(), aggs.clone(), columns.clone(), append_only, window, self)), false)
            }
            LogicalPlan::Join { left, right, kind, on, filter, columns } => {
                let (l, a) = self.render(left)?;
                let (r, b) = self.render(right)?;
                let static_side = if !reads_tables(right) {
                    Some(join::Side::Right)
                } else if !reads_tables(left) {
                    Some(join::Side::Left)
                } else {
                    None
                };
                let j = join::Join::new(
                    l,
                    r,
                    *kind,
                    on.clone(),
                    filter.clone(),
                    left.columns().to_vec(),
                    right.columns().to_vec(),
                    columns.clone(),
                    static_side,
                    (time_column(left), time_column(right)),
                    self,
                );
                (Box::new(j), a && b && *kind == JoinKind::Inner)
            }
            other => bail!(FeatureNotSupported, "streaming flows do not support this plan node yet: {:?}", std::mem::discriminant(other)),
        })
    }
}

impl Dataflow {
    /// Render `plan` (optimized) over the state namespace `name` of `kv`.
    pub fn render(
        kv: Arc<dyn StateKv>,
        cache: Arc<StateCache>,
        name: &str,
        plan: &LogicalPlan,
        instant: &dyn Fn(u32) -> bool,
        ctx: &ExecCtx,
    ) -> Result<Dataflow> {
        let store = StateStore::open_cached(kv, cache, name)?;
        let first_epoch = store.epoch() == 0;
        let watermark = Arc::new(AtomicI64::new(i64::MIN));
        let root = {
            let mut r = Renderer { store: &store, next_table: 0, instant, ctx, first_epoch, watermark: watermark.clone() };
            r.render(plan)?.0
        };
        Ok(Dataflow { store, root, columns: plan.columns().to_vec(), commits: 0, last_commit_us: 0, watermark, expired_rows: 0 })
    }

    /// Set the watermark (microseconds): from the next step, input rows
    /// of windows that ended at or before it are late and dropped.
    pub fn set_watermark(&self, us: i64) {
        self.watermark.store(us, Ordering::Relaxed);
    }

    /// Drop the state rows of windows that ended at or before the
    /// watermark (with the next barrier): a scan of every state table
    /// that expires. Returns the rows dropped.
    pub fn expire(&mut self) -> Result<u64> {
        let wm = self.watermark.load(Ordering::Relaxed);
        if wm == i64::MIN {
            return Ok(0);
        }
        let mut tables = Vec::new();
        self.root.tables(&mut tables);
        let mut n = 0;
        for t in tables {
            n += t.expire(wm)?;
        }
        self.expired_rows += n;
        Ok(n)
    }

    /// The last committed epoch (0: none).
    pub fn epoch(&self) -> u64 {
        self.store.epoch()
    }

    pub fn columns(&self) -> &[PlanColumn] {
        &self.columns
    }

    /// Source positions (region id → sequence) as of the last commit.
    pub fn positions(&self) -> Result<BTreeMap<u64, u64>> {
        match self.store.get_meta("positions")? {
            Some(b) => serde_json::from_slice(&b).map_err(|e| err!(Internal, "corrupt streaming source positions: {e}")),
            None => Ok(BTreeMap::new()),
        }
    }

    /// The output of the last committed epoch (what its sink write was).
    pub fn outbox(&self) -> Result<Vec<(Row, i64)>> {
        let Some(b) = self.store.get_meta("outbox")? else { return Ok(vec![]) };
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < b.len() {
            let n = u32::from_be_bytes(b[pos..pos + 4].try_into().map_err(|_| err!(Internal, "corrupt streaming outbox"))?) as usize;
            pos += 4;
            let mut row = decode_row(b.get(pos..pos + n).ok_or_else(|| err!(Internal, "corrupt streaming outbox"))?)?;
            pos += n;
            let Some(Value::Int(d)) = row.pop() else { bail!(Internal, "corrupt streaming outbox") };
            out.push((row, d));
        }
        Ok(out)
    }

    /// Run one epoch: the output changes, consolidated (one entry per
    /// distinct row, zero diffs dropped, in the rows' key order).
    pub fn step(&mut self, inputs: &Inputs, ctx: &ExecCtx) -> Result<Vec<(Row, i64)>> {
        let out = self.root.step(inputs, ctx)?;
        Ok(consolidate(out.rows().into_iter().zip(out.diff)))
    }

    /// The barrier: commit every operator's state, the source positions and
    /// the epoch's output in one atomic write.
    pub fn commit(&mut self, positions: &BTreeMap<u64, u64>, output: &[(Row, i64)]) -> Result<()> {
        let started = std::time::Instant::now();
        let mut outbox = Vec::new();
        for (row, d) in output {
            let mut r = row.clone();
            r.push(Value::Int(*d));
            let e = encode_row(&r);
            outbox.extend_from_slice(&(e.len() as u32).to_be_bytes());
            outbox.extend_from_slice(&e);
        }
        let meta = vec![
            ("positions".to_string(), Some(serde_json::to_vec(positions).map_err(|e| err!(Internal, "{e}"))?)),
            ("outbox".to_string(), Some(outbox)),
        ];
        let mut tables = Vec::new();
        self.root.tables(&mut tables);
        let epoch = self.store.epoch() + 1;
        self.store.commit(epoch, &mut tables, meta)?;
        self.commits += 1;
        self.last_commit_us = started.elapsed().as_micros() as u64;
        Ok(())
    }

    /// Rows of instant sources logged and not yet consumed by a committed
    /// epoch: (region, seq, encoded rows).
    pub fn inbox(&self) -> Result<Vec<(u64, u64, Vec<u8>)>> {
        self.store.inbox()
    }

    /// Delete these inbox entries with the next barrier.
    pub fn consume_inbox(&mut self, entries: impl IntoIterator<Item = (u64, u64)>) {
        self.store.consume_inbox(entries)
    }

    /// The state cache's counters (shared by the flows of a process).
    pub fn cache_stats(&self) -> CacheStats {
        self.store.cache().stats()
    }

    /// Per-operator counters, root first.
    pub fn stats(&self) -> Vec<OpStats> {
        let mut v = Vec::new();
        self.root.stats(&mut v);
        v
    }

    /// Committed state rows and bytes of all operators, measured now (a
    /// scan of every state table; [`Dataflow::stats`] reports these samples).
    pub fn state_size(&mut self) -> Result<(u64, u64)> {
        let mut tables = Vec::new();
        self.root.tables(&mut tables);
        let mut total = (0, 0);
        for t in tables {
            let (r, b) = t.sample_size()?;
            total.0 += r;
            total.1 += b;
        }
        Ok(total)
    }
}

/// Sum the diffs of equal rows; drop rows whose diffs cancel.
pub fn consolidate(rows: impl IntoIterator<Item = (Row, i64)>) -> Vec<(Row, i64)> {
    let mut m: BTreeMap<Vec<u8>, (Row, i64)> = BTreeMap::new();
    for (r, d) in rows {
        let k = encode_row(&r);
        m.entry(k).or_insert_with(|| (r, 0)).1 += d;
    }
    m.into_values().filter(|(_, d)| *d != 0).collect()
}

#[cfg(test)]
#[path = "dataflow_tests.rs"]
mod tests;
