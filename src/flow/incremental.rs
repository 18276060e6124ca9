//! Incremental evaluation of windowed aggregate flows (issue 9, R-1.4 –
//! read only the change log since the flow's per-region sequence
//! checkpoint (retractions included), aggregate the delta with the query's
//! own partial aggregates, merge it into partial states stored per
//! (window, group), and rewrite only the touched windows of the sink.
//!
//! Each flow runs a small state machine ([`Mode`]): `FullSnapshot(reason)`
//! recomputes partial states from the source (everything, or just the
//! affected windows), `Incremental` merges deltas, `Disabled(reason)` is
//! for queries that cannot merge (decided by `planner::incremental::
//! delta_plan` from the plan) — those keep batching's window
//! recomputation for good.
//!
//! State store: the catalog's sled tree (`flowstate/<flow>/w<start>` per
//! window and `meta`), because the checkpoint (`FlowProgress`) lives
//! there too: one sled batch commits the new states *and* the checkpoint
//! that covers them, so a delta is never merged twice (replaying a delta
//! into a sum is not idempotent). The sink is written first, in one
//! storage commit; a crash between the sink write and the state commit
//! replays the same delta into the same old state and rewrites the same
//! sink rows.
//!
//! Float sums and averages keep an exact sum (`exec::exact_sum`): the
//! state after any inserts and retractions is the state of the rows left,
//! so merging never drifts. The sink holds that sum rounded once (avg: then
//! divided by the count). "Equal to the query" for floats therefore means:
//! bit-equal whenever the query's own summation is exact (integers below
//! 2^53, values of few significant bits — the property test uses quarter
//! values); otherwise the sink is the correctly rounded sum and the query,
//! which rounds at each addition in scan order, may differ from it by its
//! own rounding error (as two runs of the query in different orders may).
//!
//! May import `planner`, `exec`, `storage`, `catalog`, `types`, `error`
//! (as the rest of `flow`); never `sql` or `server`.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, Int64Array, RecordBatch, UInt64Array};
use arrow::row::{RowConverter, SortField};

use crate::catalog::{FlowDef, FlowStatistics, TableDef};
use crate::err;
use crate::error::{ErrorKind, Result};
use crate::exec::exact_sum::ExactSum;
use crate::exec::plan::{Plan, PlanColumn};
use crate::planner::incremental::{delta_plan, DeltaPlan, Keep};
use crate::planner::logical::LogicalPlan;
use crate::storage::{Region, RegionWrites, ScanRequest, SeqBounds, SeqMode, SeqNo, TEMP_ROWID_BASE};
use crate::types::{value_at, values_to_array, SqlType, Value};

use super::batching::{holder, table_regions, Compiled, TaskState, Trigger};
use super::shape::Refresh;
use super::sink;
use super::window::Window;
use super::Env;

/// More groups of one window than this lost their min / max: the window
/// is recomputed by one query rather than one query per group.
pub const LOST_GROUPS_MAX: usize = 4;

/// More changed rows than this in one evaluation: recompute the affected
/// windows instead (flow option `incremental_backlog_rows`).
pub const BACKLOG_ROWS_DEFAULT: u64 = 1 << 20;

/// Why a flow (or some of its windows) is recomputed from the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fallback {
    /// No checkpoint yet: a new flow backfilling, or state written by an
    /// older definition of the flow.
    MissingWatermark,
    /// Some source region has no checkpoint.
    IncompleteWatermark,
    /// A checkpoint is ahead of its region (the region was recreated).
    StaleWatermark,
    /// The change log since the checkpoint can no longer be read exactly
    /// (WR001 – WR003: versions compacted away, memtable-only fence).
    SnapshotExpired,
    /// The previous evaluation failed; its delta may be half merged.
    Failed,
    /// More changed rows than the backlog bound.
    Backlog,
    /// A changed window has no partial state (flows created with
    /// `backfill = false` never saw its older rows).
    StateMissing,
    /// An integer sum left the range where merging stays exact.
    Overflow,
    /// Rows were written into the sink by others since the flow's own
    /// last write: the windows they touched are replaced from the states
    /// (the whole sink recomputed when the sink's change log since then
    /// cannot be read, or a sink region was recreated).
    SinkWritten,
}

impl Fallback {
    pub fn name(self) -> &'static str {
        match self {
            Fallback::MissingWatermark => "missing_watermark",
            Fallback::IncompleteWatermark => "incomplete_watermark",
            Fallback::StaleWatermark => "stale_watermark",
            Fallback::SnapshotExpired => "snapshot_expired",
            Fallback::Failed => "failed",
            Fallback::Backlog => "backlog",
            Fallback::StateMissing => "state_missing",
            Fallback::Overflow => "overflow",
            Fallback::SinkWritten => "sink_written",
        }
    }
}

/// The per-flow state machine.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    FullSnapshot(Fallback),
    Incremental,
    /// The query cannot merge partial states: for good.
    Disabled(String),
}

/// What an evaluation step reports to the state machine.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A full evaluation succeeded with complete watermarks.
    FullDone,
    /// An incremental evaluation succeeded; the checkpoints advanced.
    IncrementalDone,
    /// Correctness cannot be proven for (part of) the flow.
    Fallback(Fallback),
    /// The evaluation failed.
    Failed,
}

impl Mode {
    pub fn next(&self, ev: &Event) -> Mode {
        match (self, ev) {
            (Mode::Disabled(r), _) => Mode::Disabled(r.clone()),
            (_, Event::FullDone) => Mode::Incremental,
            (Mode::Incremental, Event::IncrementalDone) => Mode::Incremental,
            // An incremental success cannot end a full snapshot.
            (Mode::FullSnapshot(r), Event::IncrementalDone) => Mode::FullSnapshot(*r),
            (_, Event::Fallback(r)) => Mode::FullSnapshot(*r),
            (_, Event::Failed) => Mode::FullSnapshot(Fallback::Failed),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Mode::FullSnapshot(_) => "full_snapshot",
            Mode::Incremental => "incremental",
            Mode::Disabled(_) => "disabled",
        }
    }

    pub fn reason(&self) -> Option<String> {
        match self {
            Mode::FullSnapshot(r) => Some(r.name().to_string()),
            Mode::Incremental => None,
            Mode::Disabled(r) => Some(r.clone()),
        }
    }
}

/// One group's partial state.
#[derive(Debug, Clone, PartialEq)]
struct Group {
    key: Vec<Value>,
    st: Vec<Value>,
}

/// A window's groups by encoded key.
type WindowState = HashMap<Vec<u8>, Group>;

/// Which definition the stored state belongs to, and whether it covers
/// every window with rows (a full snapshot was taken).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Meta {
    flow_id: u32,
    created_ms: i64,
    query: String,
    complete: bool,
    /// The layout of the partial states ([`STATE_FORMAT`]); states of
    /// another layout are dropped.
    #[serde(default)]
    format: u32,
    /// Per sink region, the sequence up to which every change of the sink
    /// is the flow's own write (or was repaired): later ones were made by
    /// others. Held against compaction.
    #[serde(default)]
    sink_seqs: BTreeMap<u64, SeqNo>,
}

/// Version of the partial-state layout: 2 keeps min / max with the count
/// of their extreme, and first / last with their time; 3 keeps float sums
/// as exact sums (`exec::exact_sum`, text form).
const STATE_FORMAT: u32 = 3;

/// The incremental part of a flow's in-memory state.
#[derive(Debug, Default)]
pub struct IncrState {
    pub mode: Option<Mode>,
    meta: Option<Meta>,
    /// Windows loaded from the state store.
    cache: HashMap<i64, WindowState>,
    pub stats: FlowStatistics,
    /// The flow's plans, kept between evaluations.
    plans: Option<Arc<FlowPlans>>,
    /// Every evaluation of this process since the sink was last replaced
    /// from the states succeeded: the sink holds the query's output over
    /// the cached states, so a changed group alone is written. False at
    /// start (a crash may have left a sink write without its state
    /// commit) and after a failure: touched windows are replaced whole.
    sink_synced: bool,
}

/// `WorkTable` ids of the kept physical plans.
const DELTA_ROWS: usize = 0;
const FINALS: usize = 1;

/// The plans an incremental flow keeps between evaluations: the query's
/// logical plan, shape and sink, how it merges, and the physical plans
/// every incremental evaluation runs (the partial aggregation over the
/// delta rows, and the nodes above the aggregation over the merged
/// groups' finals), each over a `WorkTable` filled per evaluation. Valid
/// while the flow's definition and the catalog's schema version (any DDL,
/// privilege or role change moves it) are the ones they were made at.
#[derive(Debug)]
pub struct FlowPlans {
    version: u64,
    def: FlowDef,
    logical: LogicalPlan,
    shape: super::shape::FlowShape,
    sink: TableDef,
    fills: Vec<sink::Fill>,
    dp: DeltaPlan,
    delta: Plan,
    upper: Plan,
}

/// The flow's query as planned at its last evaluation, when nothing it
/// reads changed since (an incremental flow only; others are planned at
/// every evaluation).
pub fn cached<'a>(
    env: &Env<'a>,
    def: &FlowDef,
    st: &mut TaskState,
    settings: &Arc<HashMap<String, String>>,
    now_us: i64,
) -> Option<Compiled<'a>> {
    let p = st.incr.plans.as_ref()?;
    if p.version != env.catalog.schema_version() || p.def != *def {
        st.incr.plans = None;
        return None;
    }
    let ctx = super::batching::ctx(def, settings, now_us);
    let planner = crate::planner::Planner::new(env.catalog, env.storage, &def.database, ctx, Default::default());
    Some(Compiled {
        planner,
        logical: p.logical.clone(),
        shape: p.shape.clone(),
        sink: p.sink.clone(),
        fills: p.fills.clone(),
        version: p.version,
    })
}

fn make_plans(def: &FlowDef, c: &Compiled, dp: DeltaPlan) -> Result<FlowPlans> {
    let delta = c.planner.physical(partial_plan(c, &dp, &Input::Delta, None)?)?;
    let agg = find_aggregate(&c.logical).ok_or_else(|| err!(Internal, "flow query lost its aggregation"))?;
    let mut upper = c.logical.clone();
    replace_aggregate(&mut upper, LogicalPlan::WorkTable { id: FINALS, columns: agg.columns().to_vec() });
    let upper = c.planner.physical(upper)?;
    Ok(FlowPlans {
        version: c.version,
        def: def.clone(),
        logical: c.logical.clone(),
        shape: c.shape.clone(),
        sink: c.sink.clone(),
        fills: c.fills.clone(),
        dp,
        delta,
        upper,
    })
}

// ---------------------------------------------------------------------------
// Encoding of states (values tagged by kind).

fn put_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.push(0),
        Value::Bool(b) => out.extend([1, *b as u8]),
        Value::Int(i) => {
            out.push(2);
            out.extend(i.to_le_bytes())
        }
        Value::Float(f) => {
            out.push(3);
            out.extend(f.to_bits().to_le_bytes())
        }
        Value::Text(s) => {
            out.push(4);
            out.extend((s.len() as u32).to_le_bytes());
            out.extend(s.as_bytes())
        }
        Value::Timestamp(t) => {
            out.push(5);
            out.extend(t.to_le_bytes())
        }
        Value::Date(d) => {
            out.push(6);
            out.extend(d.to_le_bytes())
        }
        Value::Interval(iv) => {
            out.push(7);
            out.extend(iv.months.to_le_bytes());
            out.extend(iv.days.to_le_bytes());
            out.extend(iv.micros.to_le_bytes())
        }
        Value::Time(t) => {
            out.push(8);
            out.extend(t.to_le_bytes())
        }
        Value::TimeTz(t) => {
            out.push(9);
            out.extend(t.to_le_bytes())
        }
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if self.0.len() < n {
            return Err(err!(Corrupt, "flow state entry is truncated"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn value(&mut self) -> Result<Value> {
        Ok(match self.take(1)?[0] {
            0 => Value::Null,
            1 => Value::Bool(self.take(1)?[0] != 0),
            2 => Value::Int(self.i64()?),
            3 => Value::Float(f64::from_bits(self.i64()? as u64)),
            4 => {
                let n = self.u32()? as usize;
                Value::Text(String::from_utf8(self.take(n)?.to_vec()).map_err(|_| err!(Corrupt, "flow state text is not UTF-8"))?)
            }
            5 => Value::Timestamp(self.i64()?),
            6 => Value::Date(self.u32()? as i32),
            7 => {
                let months = self.u32()? as i32;
                let days = self.u32()? as i32;
                Value::Interval(crate::types::Interval { months, days, micros: self.i64()? })
            }
            8 => Value::Time(self.i64()?),
            9 => Value::TimeTz(self.i64()?),
            t => return Err(err!(Corrupt, "flow state has an unknown value tag {t}")),
        })
    }
}

fn key_bytes(key: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in key {
        put_value(&mut out, v);
    }
    out
}

fn encode_window(w: &WindowState) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend((w.len() as u32).to_le_bytes());
    for g in w.values() {
        out.extend((g.key.len() as u32).to_le_bytes());
        out.extend((g.st.len() as u32).to_le_bytes());
        for v in g.key.iter().chain(&g.st) {
            put_value(&mut out, v);
        }
    }
    out
}

fn decode_window(b: &[u8]) -> Result<WindowState> {
    let mut r = Reader(b);
    let n = r.u32()?;
    let mut w = WindowState::new();
    for _ in 0..n {
        let (nk, ns) = (r.u32()? as usize, r.u32()? as usize);
        let key = (0..nk).map(|_| r.value()).collect::<Result<Vec<_>>>()?;
        let st = (0..ns).map(|_| r.value()).collect::<Result<Vec<_>>>()?;
        w.insert(key_bytes(&key), Group { key, st });
    }
    Ok(w)
}

fn window_key(start: i64) -> String {
    format!("w{start}")
}

// ---------------------------------------------------------------------------
// Merging.

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        _ => 0,
    }
}

fn float(v: &Value) -> f64 {
    match v {
        Value::Float(f) => *f,
        Value::Int(i) => *i as f64,
        Value::Text(_) => exact(v).map(|s| s.value()).unwrap_or(f64::NAN),
        _ => 0.0,
    }
}

/// An exact float sum's state (NULL: nothing summed); None when the
/// stored text is not one.
fn exact(v: &Value) -> Option<ExactSum> {
    match v {
        Value::Null => Some(ExactSum::new()),
        Value::Text(t) => ExactSum::decode(t),
        _ => None,
    }
}

/// SQL order of two non-NULL values of one type (NaN above every number,
/// as in PostgreSQL).
fn cmp(a: &Value, b: &Value, ty: SqlType) -> Option<std::cmp::Ordering> {
    use std::cmp::Ordering::*;
    Some(match (a, b) {
        // A numeric is its output text: compared by value (9.5 < 10.5).
        (Value::Text(_), Value::Text(_)) if ty == SqlType::Numeric => a.cmp_as(b, ty),
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => match (x.is_nan(), y.is_nan()) {
            (true, true) => Equal,
            (true, false) => Greater,
            (false, true) => Less,
            _ => x.partial_cmp(y)?,
        },
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Text(x), Value::Text(y)) => x.cmp(y),
        (Value::Timestamp(x), Value::Timestamp(y)) => x.cmp(y),
        (Value::Date(x), Value::Date(y)) => x.cmp(y),
        _ => return None,
    })
}

/// Integer sums stay exact below this (avg divides them as float8, and
/// float8 holds every integer below 2^53).
const EXACT_INT: i64 = 1 << 53;

/// What merging a group's delta needs beyond the merge itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Merge {
    Done,
    /// A retraction removed (or may have removed) the current min / max.
    LostExtreme,
    Overflow,
    /// The state disagrees with the delta (more rows retracted than held).
    Inconsistent,
}

/// Merge `plus` (partial states of inserted rows) and `minus` (of
/// retracted rows) into `cur`. `cur` is left untouched unless `Done`.
fn merge(dp: &DeltaPlan, cur: &mut Vec<Value>, plus: Option<&[Value]>, minus: Option<&[Value]>) -> Merge {
    let r = merge_parts(dp, cur, plus, minus);
    let rows = dp.rows_col();
    let held = int(&cur[rows]);
    if r == Merge::LostExtreme && held > 0 && minus.is_some_and(|m| int(&m[rows]) == held) {
        // Every row the state held was retracted (a group rewritten or
        // deleted whole): the rows left are exactly the inserted ones and
        // the state is theirs — the lost min / max (or first / last) is
        // known without reading the group from the source.
        *cur = match plus {
            Some(p) => p.to_vec(),
            None => {
                let mut z = vec![Value::Null; dp.partial.len()];
                z[rows] = Value::Int(0);
                z
            }
        };
        return Merge::Done;
    }
    r
}

/// A numeric sum's partial state: Some(None) for NULL (no values), None
/// when it is not a numeric.
fn numeric_sum(v: &Value) -> Option<Option<crate::types::numeric::Numeric>> {
    match v {
        Value::Null => Some(None),
        Value::Text(s) => crate::types::numeric::Numeric::parse(s).ok().map(Some),
        _ => None,
    }
}

fn merge_parts(dp: &DeltaPlan, cur: &mut Vec<Value>, plus: Option<&[Value]>, minus: Option<&[Value]>) -> Merge {
    let n = dp.partial.len();
    let null = vec![Value::Null; n];
    let (p, m) = (plus.unwrap_or(&null), minus.unwrap_or(&null));
    let mut out = cur.clone();
    for a in &dp.aggs {
        let f = a.first;
        match a.keep {
            Keep::Count => {
                out[f] = Value::Int(int(&cur[f]) + int(&p[f]) - int(&m[f]));
            }
            Keep::Sum | Keep::Avg => {
                let cnt = int(&cur[f + 1]) + int(&p[f + 1]) - int(&m[f + 1]);
                if cnt < 0 {
                    return Merge::Inconsistent;
                }
                out[f + 1] = Value::Int(cnt);
                out[f] = if a.int_sum {
                    let s = int(&cur[f]).checked_add(int(&p[f])).and_then(|s| s.checked_sub(int(&m[f])));
                    match s {
                        Some(s) if s.abs() < EXACT_INT => Value::Int(s),
                        _ => return Merge::Overflow,
                    }
                } else if a.ty == SqlType::Numeric {
                    // Numeric sums are exact, but a retraction may lower the
                    // display scale of the rows left (1.50 + 2.25 less 2.25
                    // is 1.50 where the direct sum is 1.5): the group is
                    // re-read, as for a lost extreme.
                    if !matches!(m[f], Value::Null) {
                        return Merge::LostExtreme;
                    }
                    match (numeric_sum(&cur[f]), numeric_sum(&p[f])) {
                        (Some(Some(c)), Some(Some(x))) => match c.add(&x) {
                            Ok(s) => Value::Text(s.to_string()),
                            Err(_) => return Merge::Overflow,
                        },
                        (Some(None), Some(x)) => x.map_or(Value::Null, |x| Value::Text(x.to_string())),
                        (Some(c), Some(None)) => c.map_or(Value::Null, |c| Value::Text(c.to_string())),
                        _ => return Merge::Inconsistent,
                    }
                } else {
                    // Exact sums: the state after inserts and retractions
                    // is the state of the rows left, bit for bit.
                    let (Some(mut s), Some(ps), Some(ms)) = (exact(&cur[f]), exact(&p[f]), exact(&m[f])) else {
                        return Merge::Inconsistent;
                    };
                    s.merge(&ps, 1);
                    s.merge(&ms, -1);
                    Value::Text(s.encode())
                };
                if cnt == 0 {
                    out[f] = Value::Null;
                }
            }
            Keep::Min | Keep::Max => {
                // (extreme, rows holding it); inserts first, then retractions.
                let toward = |o: std::cmp::Ordering| if a.keep == Keep::Min { o } else { o.reverse() };
                if !matches!(p[f], Value::Null) {
                    match &out[f] {
                        Value::Null => {
                            out[f] = p[f].clone();
                            out[f + 1] = p[f + 1].clone();
                        }
                        c => match cmp(&p[f], c, a.ty).map(toward) {
                            Some(std::cmp::Ordering::Less) => {
                                out[f] = p[f].clone();
                                out[f + 1] = p[f + 1].clone();
                            }
                            Some(std::cmp::Ordering::Equal) => out[f + 1] = Value::Int(int(&out[f + 1]) + int(&p[f + 1])),
                            Some(std::cmp::Ordering::Greater) => {}
                            None => return Merge::Inconsistent,
                        },
                    }
                }
                if !matches!(m[f], Value::Null) {
                    match &out[f] {
                        Value::Null => return Merge::Inconsistent,
                        c => match cmp(&m[f], c, a.ty).map(toward) {
                            // Every retracted value is beyond the extreme: it stays.
                            Some(std::cmp::Ordering::Greater) => {}
                            // Copies of the extreme retracted: it stays while one is left.
                            Some(std::cmp::Ordering::Equal) => {
                                let left = int(&out[f + 1]) - int(&m[f + 1]);
                                if left < 0 {
                                    return Merge::Inconsistent;
                                }
                                if left == 0 {
                                    return Merge::LostExtreme;
                                }
                                out[f + 1] = Value::Int(left);
                            }
                            Some(std::cmp::Ordering::Less) | None => return Merge::Inconsistent,
                        },
                    }
                }
            }
            Keep::First | Keep::Last => {
                // (x, t) of the least (first) / greatest (last) (t, x).
                let toward = |o: std::cmp::Ordering| if a.keep == Keep::First { o } else { o.reverse() };
                let order = |tx: (&Value, &Value), ty: (&Value, &Value)| -> Option<std::cmp::Ordering> {
                    Some(cmp(tx.0, ty.0, SqlType::Unknown)?.then(cmp(tx.1, ty.1, a.ty)?)).map(toward)
                };
                if !matches!(p[f + 1], Value::Null) {
                    let take = match &out[f + 1] {
                        Value::Null => true,
                        _ => match order((&p[f + 1], &p[f]), (&out[f + 1], &out[f])) {
                            Some(o) => o.is_lt(),
                            None => return Merge::Inconsistent,
                        },
                    };
                    if take {
                        out[f] = p[f].clone();
                        out[f + 1] = p[f + 1].clone();
                    }
                }
                if !matches!(m[f + 1], Value::Null) {
                    match &out[f + 1] {
                        Value::Null => return Merge::Inconsistent,
                        _ => match order((&m[f + 1], &m[f]), (&out[f + 1], &out[f])) {
                            Some(std::cmp::Ordering::Greater) => {}
                            // The row holding it (or one tied with it) was retracted.
                            Some(std::cmp::Ordering::Equal) => return Merge::LostExtreme,
                            Some(std::cmp::Ordering::Less) | None => return Merge::Inconsistent,
                        },
                    }
                }
            }
        }
    }
    let rows = dp.rows_col();
    let r = int(&cur[rows]) + int(&p[rows]) - int(&m[rows]);
    if r < 0 {
        return Merge::Inconsistent;
    }
    out[rows] = Value::Int(r);
    *cur = out;
    Merge::Done
}

/// The aggregate's output values of one group (group keys, then each
/// aggregate's final value).
fn finals(dp: &DeltaPlan, g: &Group) -> Vec<Value> {
    let mut row = g.key.clone();
    for a in &dp.aggs {
        let f = a.first;
        row.push(match a.keep {
            Keep::Count => Value::Int(int(&g.st[f])),
            Keep::Sum => {
                if int(&g.st[f + 1]) == 0 {
                    Value::Null
                } else if a.int_sum || a.ty == SqlType::Numeric {
                    g.st[f].clone()
                } else {
                    Value::Float(float(&g.st[f]))
                }
            }
            Keep::Avg => {
                let n = int(&g.st[f + 1]);
                match (&g.st[f], a.ty) {
                    _ if n == 0 => Value::Null,
                    // avg of integers is numeric: the exact quotient.
                    (Value::Int(s), SqlType::Numeric) => {
                        use crate::types::numeric::Numeric;
                        Numeric::from_i64(*s).div(&Numeric::from_i64(n)).map_or(Value::Null, |q| Value::Text(q.to_string()))
                    }
                    (Value::Text(s), SqlType::Numeric) => {
                        use crate::types::numeric::Numeric;
                        Numeric::parse(s).and_then(|s| s.div(&Numeric::from_i64(n))).map_or(Value::Null, |q| Value::Text(q.to_string()))
                    }
                    (s, _) => Value::Float(float(s) / n as f64),
                }
            }
            Keep::Min | Keep::Max | Keep::First | Keep::Last => g.st[f].clone(),
        });
    }
    row
}

// ---------------------------------------------------------------------------
// Plans.

/// Replace the query's Aggregate node (under Project / Filter / Sort) by `with`.
fn replace_aggregate(plan: &mut LogicalPlan, with: LogicalPlan) {
    match plan {
        LogicalPlan::Aggregate { .. } => *plan = with,
        LogicalPlan::Project { input, .. } | LogicalPlan::Filter { input, .. } | LogicalPlan::Sort { input, .. } => {
            replace_aggregate(input, with)
        }
        _ => {}
    }
}

fn find_aggregate(plan: &LogicalPlan) -> Option<&LogicalPlan> {
    match plan {
        LogicalPlan::Aggregate { .. } => Some(plan),
        LogicalPlan::Project { input, .. } | LogicalPlan::Filter { input, .. } | LogicalPlan::Sort { input, .. } => find_aggregate(input),
        _ => None,
    }
}

/// Where the partial aggregation reads its rows.
enum Input<'a> {
    /// Change-log rows (all table columns): the `WorkTable` DELTA_ROWS.
    Delta,
    /// The source's rows in `[lo, hi)` (all when None) as of the
    /// sequences `upto`.
    Source(Option<(i64, i64)>, &'a BTreeMap<u64, SeqNo>),
}

fn rewrite_scan(plan: &mut LogicalPlan, src: &Input) {
    use crate::exec::expr::{BinOp, Expr};
    match plan {
        LogicalPlan::Scan(s) => match src {
            Input::Delta => {
                let table_cols = s.table_columns();
                let mut p = LogicalPlan::WorkTable { id: DELTA_ROWS, columns: table_cols.clone() };
                // Pushed filters address table columns, as the memory rows do.
                let pred = s.filters.iter().cloned().reduce(|a, b| Expr::Binary {
                    op: BinOp::And,
                    left: Box::new(a),
                    right: Box::new(b),
                    ty: crate::types::SqlType::Bool,
                });
                if let Some(predicate) = pred {
                    p = LogicalPlan::Filter { input: Box::new(p), predicate };
                }
                if let Some(proj) = &s.projection {
                    let exprs = proj.iter().map(|&i| Expr::Column { index: i, ty: table_cols[i].ty }).collect();
                    p = LogicalPlan::Project { input: Box::new(p), exprs, columns: s.columns.clone() };
                }
                *plan = p;
            }
            Input::Source(range, upto) => {
                if let Some((lo, hi)) = range {
                    let (a, b) = s.time_range.unwrap_or((i64::MIN, i64::MAX));
                    s.time_range = Some((a.max(*lo), b.min(*hi)));
                }
                s.regions.1 = s
                    .regions
                    .0
                    .iter()
                    .map(|r| SeqBounds { after: None, upto: Some(upto.get(&r.id).copied().unwrap_or(0)), mode: SeqMode::Exact })
                    .collect();
            }
        },
        LogicalPlan::Filter { input, .. } | LogicalPlan::Project { input, .. } => rewrite_scan(input, src),
        _ => {}
    }
}

/// The query's partial aggregation over `input`. With `group`, only the
/// rows of that group (its non-window keys equal to those values;
/// pushdown turns tag equalities into scan pruning).
fn partial_plan(c: &Compiled, dp: &DeltaPlan, input: &Input, group: Option<&[Value]>) -> Result<LogicalPlan> {
    use crate::exec::expr::{BinOp, Expr};
    let agg = find_aggregate(&c.logical).ok_or_else(|| err!(Internal, "flow query lost its aggregation"))?;
    let LogicalPlan::Aggregate { input: agg_in, group_by, columns, .. } = agg else { unreachable!("find_aggregate") };
    let mut inp = (**agg_in).clone();
    rewrite_scan(&mut inp, input);
    if let Some(key) = group {
        let conds = group_by.iter().zip(key).enumerate().filter(|(j, _)| *j != dp.window_key).map(|(_, (e, v))| match v {
            Value::Null => Expr::IsNull { expr: Box::new(e.clone()), negated: false },
            v => Expr::Binary {
                op: BinOp::Eq,
                left: Box::new(e.clone()),
                right: Box::new(Expr::Literal { value: v.clone(), ty: e.ty() }),
                ty: crate::types::SqlType::Bool,
            },
        });
        let pred =
            conds.reduce(|a, b| Expr::Binary { op: BinOp::And, left: Box::new(a), right: Box::new(b), ty: crate::types::SqlType::Bool });
        if let Some(predicate) = pred {
            inp = LogicalPlan::Filter { input: Box::new(inp), predicate };
        }
    }
    let mut cols: Vec<PlanColumn> = columns[..dp.group_count].to_vec();
    cols.extend(dp.partial.iter().enumerate().map(|(i, a)| PlanColumn::new(format!("__partial{i}"), a.ty)));
    Ok(LogicalPlan::Aggregate { input: Box::new(inp), group_by: group_by.clone(), aggs: dp.partial.clone(), columns: cols })
}

/// Run the query's partial aggregation over the source (see
/// [`partial_plan`]): one group per row.
fn partial(c: &Compiled, dp: &DeltaPlan, input: &Input, group: Option<&[Value]>) -> Result<Vec<Group>> {
    let phys = c.planner.physical(partial_plan(c, dp, input, group)?)?;
    groups_of(dp, &crate::exec::collect(&phys, &c.planner.ctx)?)
}

/// The kept partial aggregation over change-log rows.
fn partial_delta(c: &Compiled, plans: &FlowPlans, rows: RecordBatch) -> Result<Vec<Group>> {
    let phys = plans.delta.with_work_table(DELTA_ROWS, &[rows]);
    groups_of(&plans.dp, &crate::exec::collect(&phys, &c.planner.ctx)?)
}

fn groups_of(dp: &DeltaPlan, batches: &[RecordBatch]) -> Result<Vec<Group>> {
    let mut out = Vec::new();
    for b in batches {
        for i in 0..b.num_rows() {
            let key = (0..dp.group_count).map(|j| value_at(b.column(j).as_ref(), i)).collect();
            let st = (dp.group_count..b.num_columns()).map(|j| value_at(b.column(j).as_ref(), i)).collect();
            out.push(Group { key, st });
        }
    }
    Ok(out)
}

fn window_of(dp: &DeltaPlan, key: &[Value]) -> Result<i64> {
    match key.get(dp.window_key) {
        Some(Value::Timestamp(t)) => Ok(*t),
        other => Err(err!(Internal, "flow window key is not a timestamp: {other:?}")),
    }
}

/// Sorted window starts → `[lo, hi)` ranges of adjacent windows.
fn runs(dp: &DeltaPlan, windows: &BTreeSet<i64>) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = Vec::new();
    for &w in windows {
        let end = dp.window.end(w);
        match out.last_mut() {
            Some((_, hi)) if *hi == w => *hi = end,
            _ => out.push((w, end)),
        }
    }
    out
}

/// Time index values (µs) of a change-log batch.
fn times(b: &RecordBatch, ti: usize) -> Result<Vec<i64>> {
    let ty = arrow::datatypes::DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None);
    let a = arrow::compute::cast(b.column(ti), &ty)?;
    let a = a.as_any().downcast_ref::<arrow::array::TimestampMicrosecondArray>().expect("cast to timestamp µs");
    Ok(a.iter().flatten().collect())
}

/// What an evaluation writes to the sink, in one atomic commit.
#[derive(Default)]
struct SinkWrite<'g> {
    /// Groups of windows replaced whole, and those windows' ranges (None:
    /// the whole sink): the groups' rows are written and every other sink
    /// row in the ranges is deleted.
    whole: Option<(Vec<&'g Group>, Option<Vec<(i64, i64)>>)>,
    /// Groups whose partial state changed, outside those windows: (window,
    /// state before, state after). Their rows are compared with the rows
    /// the state before gave: only rows that differ are written, rows that
    /// vanished (group gone, HAVING) deleted, the rest left alone.
    changed: Vec<(i64, Option<Group>, Option<Group>)>,
}

/// Sink rows an evaluation wrote, deleted, and left alone because the
/// group's output did not change.
#[derive(Debug, Default, Clone)]
struct SinkCounts {
    written: u64,
    deleted: u64,
    unchanged: u64,
    /// Per sink region: its sequence before and after the commit, and
    /// whether the commit wrote to it.
    seqs: Vec<(u64, SeqNo, SeqNo, bool)>,
}

/// The sink rows of `groups`: finals → the query's nodes above its
/// aggregation (projections, HAVING) → the sink's layout.
fn sink_rows(c: &Compiled, plans: &FlowPlans, schema: &arrow::datatypes::SchemaRef, groups: &[&Group], now_us: i64) -> Result<RecordBatch> {
    let agg = find_aggregate(&c.logical).ok_or_else(|| err!(Internal, "flow query lost its aggregation"))?;
    let columns = agg.columns();
    let rows: Vec<Vec<Value>> = groups.iter().map(|g| finals(&plans.dp, g)).collect();
    let arrays = (0..columns.len())
        .map(|j| values_to_array(&rows.iter().map(|r| r[j].clone()).collect::<Vec<_>>(), columns[j].ty))
        .collect::<Result<Vec<ArrayRef>>>()?;
    let batch = RecordBatch::try_new_with_options(
        crate::exec::plan::arrow_schema(columns),
        arrays,
        &arrow::array::RecordBatchOptions::new().with_row_count(Some(rows.len())),
    )?;
    let out = crate::exec::collect(&plans.upper.with_work_table(FINALS, &[batch]), &c.planner.ctx)?;
    sink::sink_batch(&c.sink, schema.clone(), &c.shape.columns, &c.fills, &out, now_us)
}

/// Row encodings of sink rows: their identity (primary key, time index)
/// and every column the evaluation time does not fill (`update_at`),
/// with one converter each, so encodings of two batches compare.
struct SinkKeys {
    id_cols: Vec<usize>,
    cmp_cols: Vec<usize>,
    ids: RowConverter,
    all: RowConverter,
}

impl SinkKeys {
    fn new(c: &Compiled, schema: &arrow::datatypes::SchemaRef) -> Result<SinkKeys> {
        let mut id_cols = c.sink.primary_key.clone();
        id_cols.extend(c.sink.time_index);
        let cmp_cols: Vec<usize> = (0..c.fills.len()).filter(|&j| c.fills[j] != sink::Fill::Now).collect();
        let conv = |cols: &[usize]| RowConverter::new(cols.iter().map(|&j| SortField::new(schema.field(j).data_type().clone())).collect());
        Ok(SinkKeys { ids: conv(&id_cols)?, all: conv(&cmp_cols)?, id_cols, cmp_cols })
    }

    fn encode(&self, b: &RecordBatch) -> Result<(arrow::row::Rows, arrow::row::Rows)> {
        let cols = |cs: &[usize]| cs.iter().map(|&j| b.column(j).clone()).collect::<Vec<_>>();
        Ok((self.ids.convert_columns(&cols(&self.id_cols))?, self.all.convert_columns(&cols(&self.cmp_cols))?))
    }
}

/// Scan the sink in `ranges` (all when None); rows for which `delete`
/// (given their encoded identity and values) says so are deleted (into
/// `parts`). Returns the rows deleted.
fn scan_sink(
    regions: &[Arc<Region>],
    keys: &SinkKeys,
    ranges: Option<&[(i64, i64)]>,
    mut delete: impl FnMut(&[u8], &[u8]) -> bool,
    parts: &mut [RegionWrites],
) -> Result<u64> {
    let scans: Vec<Option<(i64, i64)>> = match ranges {
        Some(rs) => rs.iter().map(|r| Some(*r)).collect(),
        None => vec![None],
    };
    let mut n = 0;
    for (r, region) in regions.iter().enumerate() {
        for range in &scans {
            for b in region.scan(&ScanRequest { time_range: *range, with_rowid: true, ..Default::default() })? {
                if b.num_rows() == 0 {
                    continue;
                }
                let (ids, all) = keys.encode(&b)?;
                let gone = BooleanArray::from_iter((0..b.num_rows()).map(|i| Some(delete(ids.row(i).data(), all.row(i).data()))));
                if gone.true_count() > 0 {
                    n += gone.true_count() as u64;
                    parts[r].deletes.push(arrow::compute::filter_record_batch(&b, &gone)?);
                }
            }
        }
    }
    Ok(n)
}

/// The rows of `new` that differ from the sink row of their identity in
/// `before` (identity → values); counts the others in `unchanged`.
fn differing(keys: &SinkKeys, new: &RecordBatch, before: &HashMap<Vec<u8>, Vec<u8>>, unchanged: &mut u64) -> Result<RecordBatch> {
    let (ids, all) = keys.encode(new)?;
    let write = BooleanArray::from_iter(
        (0..new.num_rows()).map(|i| Some(before.get(ids.row(i).data()).map(|v| v.as_slice()) != Some(all.row(i).data()))),
    );
    *unchanged += (new.num_rows() - write.true_count()) as u64;
    Ok(arrow::compute::filter_record_batch(new, &write)?)
}

/// Write an evaluation's sink changes (see [`SinkWrite`]) in one atomic
/// commit over the sink's regions; nothing when no row changed. A row
/// equal to the sink's row of its identity is not written again.
fn write_sink(env: &Env, c: &Compiled, plans: &FlowPlans, w: SinkWrite, now_us: i64) -> Result<SinkCounts> {
    let regions = table_regions(env, &c.sink)?;
    let schema = regions.first().map(|r| r.desc.schema.clone()).ok_or_else(|| err!(Internal, "sink has no region"))?;
    let keys = SinkKeys::new(c, &schema)?;
    let mut parts: Vec<RegionWrites> = vec![RegionWrites::default(); regions.len()];
    let mut puts: Vec<RecordBatch> = Vec::new();
    let mut counts = SinkCounts::default();
    if let Some((groups, ranges)) = &w.whole {
        // Compared with what the sink holds in those windows.
        let new = sink_rows(c, plans, &schema, groups, now_us)?;
        let (new_ids, _) = keys.encode(&new)?;
        let ids: HashSet<&[u8]> = (0..new_ids.num_rows()).map(|i| new_ids.row(i).data()).collect();
        let mut existing: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
        let delete = |id: &[u8], all: &[u8]| {
            if ids.contains(id) {
                existing.insert(id.to_vec(), all.to_vec());
                false
            } else {
                true
            }
        };
        counts.deleted += scan_sink(&regions, &keys, ranges.as_deref(), delete, &mut parts)?;
        puts.push(differing(&keys, &new, &existing, &mut counts.unchanged)?);
    }
    if !w.changed.is_empty() {
        // Compared with the rows the states before gave: the sink holds
        // them (`IncrState::sink_synced`).
        let old_groups: Vec<&Group> = w.changed.iter().filter_map(|(_, o, _)| o.as_ref()).collect();
        let new_groups: Vec<&Group> = w.changed.iter().filter_map(|(_, _, n)| n.as_ref()).collect();
        let old = sink_rows(c, plans, &schema, &old_groups, now_us)?;
        let new = sink_rows(c, plans, &schema, &new_groups, now_us)?;
        let (old_ids, old_all) = keys.encode(&old)?;
        let before: HashMap<Vec<u8>, Vec<u8>> =
            (0..old.num_rows()).map(|i| (old_ids.row(i).data().to_vec(), old_all.row(i).data().to_vec())).collect();
        let (new_ids, _) = keys.encode(&new)?;
        let now: HashSet<&[u8]> = (0..new.num_rows()).map(|i| new_ids.row(i).data()).collect();
        if before.keys().any(|id| !now.contains(id.as_slice())) {
            // Rows gone (a group without rows left, HAVING): deleted from
            // their windows; the others there stay as they are.
            let windows: BTreeSet<i64> = w.changed.iter().filter(|(_, o, _)| o.is_some()).map(|(w, _, _)| *w).collect();
            let ranges = runs(&plans.dp, &windows);
            let gone: HashSet<&[u8]> = before.keys().map(|k| k.as_slice()).filter(|id| !now.contains(id)).collect();
            counts.deleted += scan_sink(&regions, &keys, Some(&ranges), |id, _| gone.contains(id), &mut parts)?;
        }
        puts.push(differing(&keys, &new, &before, &mut counts.unchanged)?);
    }
    let new = arrow::compute::concat_batches(&schema, &puts)?;
    counts.written = new.num_rows() as u64;
    if new.num_rows() > 0 {
        let mut next = TEMP_ROWID_BASE;
        for (r, part) in crate::storage::route_rows(&new, &c.sink.primary_key, regions.len() as u32)? {
            let n = part.num_rows() as u64;
            let mut cols: Vec<ArrayRef> = part.columns().to_vec();
            cols.push(Arc::new(UInt64Array::from_iter_values(next..next + n)));
            next += n;
            let mut fields: Vec<arrow::datatypes::FieldRef> = part.schema().fields().iter().cloned().collect();
            fields.push(Arc::new(arrow::datatypes::Field::new(crate::storage::ROWID_COLUMN, arrow::datatypes::DataType::UInt64, false)));
            parts[r as usize].puts.push(RecordBatch::try_new(Arc::new(arrow::datatypes::Schema::new(fields)), cols)?);
        }
    }
    if parts.iter().any(|p| !p.is_empty()) {
        let pre: Vec<SeqNo> = regions.iter().map(|r| r.last_seq()).collect();
        let wrote: Vec<bool> = parts.iter().map(|p| !p.is_empty()).collect();
        env.storage.commit(regions.iter().cloned().zip(parts).collect())?;
        counts.seqs = regions.iter().enumerate().map(|(i, r)| (r.id, pre[i], r.last_seq(), wrote[i])).collect();
    }
    Ok(counts)
}

// ---------------------------------------------------------------------------
// Evaluation.

/// Decide once whether the flow merges deltas; the reason when not.
fn decide(def: &FlowDef, c: &Compiled) -> std::result::Result<DeltaPlan, String> {
    let opt = def.options.get("incremental").map(|s| s.as_str());
    if opt == Some("false") {
        return Err("WITH (incremental = false)".into());
    }
    let ok_shape = match &c.shape.refresh {
        Refresh::Windowed { window: Window::Tumble(_), time_output, .. } => {
            c.sink.time_index.is_some_and(|ti| c.fills[ti] == sink::Fill::Output(*time_output))
        }
        _ => false,
    };
    if !ok_shape {
        return Err("the flow is not an aggregation over one time window that is the sink's time index".into());
    }
    let dp = delta_plan(&c.logical)?;
    match &c.shape.refresh {
        Refresh::Windowed { window: Window::Tumble(w), .. } if *w == dp.window => {}
        _ => return Err("the sink's window is not the aggregation's time window".into()),
    }
    Ok(dp)
}

/// Entries of a region's write clock before the flows prune it.
const CLOCK_PRUNE_AT: usize = 64;

/// Forget source writes every flow reading them has reflected.
fn prune_clock(env: &Env, def: &FlowDef, st: &TaskState) {
    for (&region, &seq) in &st.progress.regions {
        if env.catalog.write_clock.len(region) < CLOCK_PRUNE_AT {
            continue;
        }
        let table = (region >> 32) as u32;
        let mut upto = Some(seq);
        for other in env.catalog.flows() {
            if other.name == def.name {
                continue;
            }
            let reads = other.sources.iter().any(|(d, t)| env.catalog.table(d, t).is_some_and(|td| td.id == table));
            if reads {
                let p = env.catalog.flow_progress(&other.name).and_then(|p| p.regions.get(&region).copied()).unwrap_or(0);
                upto = upto.map(|u| u.min(p));
            }
        }
        env.catalog.write_clock.prune(region, upto);
    }
}

fn publish(env: &Env, def: &FlowDef, st: &mut TaskState) {
    prune_clock(env, def, st);
    let s = &mut st.incr.stats;
    if let Some(m) = &st.incr.mode {
        s.mode = m.name().to_string();
        s.reason = m.reason();
    }
    s.state_windows = st.incr.cache.len() as u64;
    env.catalog.flow_stats.write().insert(def.name.clone(), s.clone());
}

/// Evaluate a flow incrementally when it can be; None when it cannot (the
/// caller recomputes its dirty windows, as for every flow before issue 9).
pub fn run(env: &Env, def: &FlowDef, st: &mut TaskState, c: &Compiled, trigger: Trigger, now: i64) -> Result<Option<u64>> {
    if matches!(st.incr.mode, Some(Mode::Disabled(_))) {
        publish(env, def, st);
        return Ok(None);
    }
    let plans = match &st.incr.plans {
        Some(p) if p.version == c.version && p.def == *def => p.clone(),
        _ => match decide(def, c) {
            Ok(dp) => {
                let p = Arc::new(make_plans(def, c, dp)?);
                st.incr.stats.plans_made += 1;
                st.incr.plans = Some(p.clone());
                p
            }
            Err(why) => {
                st.incr.plans = None;
                st.incr.mode = Some(Mode::Disabled(why));
                publish(env, def, st);
                return Ok(None);
            }
        },
    };
    match evaluate(env, def, st, c, &plans, trigger, now) {
        Ok(rows) => {
            st.incr.stats.last_error = None;
            publish(env, def, st);
            Ok(Some(rows))
        }
        Err(e) => {
            // Nothing of this evaluation is durable: drop what was merged in
            // memory; the sink may hold part of it.
            st.incr.cache.clear();
            st.incr.meta = None;
            st.incr.plans = None;
            st.incr.sink_synced = false;
            let m = st.incr.mode.clone().unwrap_or(Mode::Incremental);
            st.incr.mode = Some(m.next(&Event::Failed));
            st.incr.stats.last_error = Some(e.to_string());
            publish(env, def, st);
            Err(e)
        }
    }
}

/// Sink regions whose versions the flow holds (released with the flow).
pub fn held_sink_regions(st: &IncrState) -> Vec<u64> {
    st.meta.as_ref().map(|m| m.sink_seqs.keys().copied().collect()).unwrap_or_default()
}

/// Record a full recomputation done by the batching path (disabled flows).
pub fn note_batching(env: &Env, def: &FlowDef, st: &mut TaskState, rows: u64, windows: u64) {
    if windows > 0 || rows > 0 {
        st.incr.stats.evaluations += 1;
        st.incr.stats.full_evaluations += 1;
        st.incr.stats.fallback_windows += windows;
        st.incr.stats.rows_written += rows;
    }
    publish(env, def, st);
}

/// Window `w`'s partial states in the cache, for a merge: loaded, or empty
/// when the states are complete (a window never seen). Without complete
/// states the window is recomputed (`StateMissing`) and false is returned.
fn open_window(
    env: &Env,
    def: &FlowDef,
    st: &mut TaskState,
    w: i64,
    complete: bool,
    recompute: &mut BTreeMap<i64, Option<Fallback>>,
) -> Result<bool> {
    if !load_window(env, def, st, w)? {
        if !complete {
            recompute.insert(w, Some(Fallback::StateMissing));
            return Ok(false);
        }
        st.incr.cache.insert(w, WindowState::new());
    }
    Ok(true)
}

fn load_window(env: &Env, def: &FlowDef, st: &mut TaskState, w: i64) -> Result<bool> {
    if st.incr.cache.contains_key(&w) {
        return Ok(true);
    }
    match env.catalog.flow_state(&def.name, &window_key(w))? {
        Some(b) => {
            st.incr.cache.insert(w, decode_window(&b)?);
            Ok(true)
        }
        None => Ok(false),
    }
}

fn new_meta(def: &FlowDef) -> Meta {
    Meta {
        flow_id: def.id,
        created_ms: def.created_ms,
        query: def.query.clone(),
        complete: false,
        format: STATE_FORMAT,
        sink_seqs: BTreeMap::new(),
    }
}

/// The stored state's meta: Ok when it belongs to this definition of the
/// flow (and layout of the states), Err when to another (its states are
/// dropped at the next evaluation).
fn stored_meta(env: &Env, def: &FlowDef) -> Result<Option<std::result::Result<Meta, ()>>> {
    let want = new_meta(def);
    let stored: Option<Meta> = env.catalog.flow_state(&def.name, "meta")?.and_then(|b| serde_json::from_slice(&b).ok());
    Ok(stored.map(|m| {
        if m.flow_id == want.flow_id && m.created_ms == want.created_ms && m.query == want.query && m.format == want.format {
            Ok(m)
        } else {
            Err(())
        }
    }))
}

/// At start-up: the flow's stored meta, and the sink versions past which
/// it reads others' writes held again (a compaction before the first
/// evaluation would otherwise lose them and force a whole-sink
/// recompute). Source regions keep their checkpoint's hold.
pub fn restore(env: &Env, def: &FlowDef, progress: &crate::catalog::FlowProgress, incr: &mut IncrState) {
    let m = match stored_meta(env, def) {
        Ok(Some(Ok(m))) => m,
        Ok(_) => return,
        Err(e) => {
            tracing::warn!(flow = %def.name, error = %e, "cannot read the flow's incremental state; it is read at its first evaluation");
            return;
        }
    };
    for (&r, &seq) in &m.sink_seqs {
        if progress.regions.contains_key(&r) {
            continue; // a flow writing into its own source
        }
        if let Some(region) = env.storage.region(r) {
            if let Err(e) = region.hold_versions(&holder(&def.name), seq) {
                tracing::warn!(flow = %def.name, region = r, error = %e, "cannot hold sink versions for a flow");
            }
        }
    }
    incr.meta = Some(m);
}

/// Writes into the flow's sink by others are repaired from its partial
/// states: it evaluates incrementally and records up to where the sink
/// holds its own writes.
pub fn repairs_sink(st: &IncrState) -> bool {
    !matches!(st.mode, Some(Mode::Disabled(_))) && st.meta.as_ref().is_some_and(|m| !m.sink_seqs.is_empty())
}

fn evaluate(env: &Env, def: &FlowDef, st: &mut TaskState, c: &Compiled, plans: &FlowPlans, trigger: Trigger, now: i64) -> Result<u64> {
    let dp = &plans.dp;
    let Refresh::Windowed { source, .. } = &c.shape.refresh else { unreachable!("decide checked the shape") };
    let regions = table_regions(env, source)?;
    let upto: BTreeMap<u64, SeqNo> = regions.iter().map(|r| (r.id, r.last_seq())).collect();
    // The stored state's definition.
    let mut clear = false;
    if st.incr.meta.is_none() {
        st.incr.meta = Some(match stored_meta(env, def)? {
            Some(Ok(m)) => m,
            Some(Err(())) => {
                clear = true;
                st.incr.cache.clear();
                new_meta(def)
            }
            None => new_meta(def),
        });
    }
    let mut mode = st.incr.mode.clone().unwrap_or_else(|| {
        if st.progress.regions.is_empty() {
            Mode::FullSnapshot(Fallback::MissingWatermark)
        } else {
            Mode::Incremental
        }
    });
    // Watermarks. A checkpointed region that is no longer a source region
    // (TRUNCATE, the table created again) left without retractions.
    let mut full: Option<Fallback> = match &mode {
        Mode::FullSnapshot(r) if *r != Fallback::Failed => Some(*r),
        _ => None,
    };
    let gone: Vec<u64> = st.progress.regions.keys().filter(|r| !upto.contains_key(r)).copied().collect();
    if !gone.is_empty() {
        for r in &gone {
            st.progress.regions.remove(r);
            if let Some(region) = env.storage.region(*r) {
                region.release_versions(&holder(&def.name));
            }
        }
        full.get_or_insert(Fallback::StaleWatermark);
    }
    if full.is_none() {
        if regions.iter().any(|r| !st.progress.regions.contains_key(&r.id)) {
            full = Some(if st.progress.regions.is_empty() { Fallback::MissingWatermark } else { Fallback::IncompleteWatermark });
        } else if regions.iter().any(|r| st.progress.regions[&r.id] > upto[&r.id]) {
            full = Some(Fallback::StaleWatermark);
        }
    }
    // Rows others wrote into the sink since the flow's own last write (the
    // sink's change log past the recorded sequences): the windows they
    // touched are replaced from the states. A change log that cannot be
    // read any more, or a sink region not recorded, recomputes the sink.
    let sink_regions = table_regions(env, &c.sink)?;
    let sink_base: BTreeMap<u64, SeqNo> = sink_regions.iter().map(|r| (r.id, r.last_seq())).collect();
    let mut repair: BTreeSet<i64> = BTreeSet::new();
    let recorded = st.incr.meta.as_ref().map(|m| m.sink_seqs.clone()).unwrap_or_default();
    if full.is_none() && !recorded.is_empty() {
        let sti = c.sink.time_index.ok_or_else(|| err!(Internal, "windowed sink has no time index"))?;
        for r in &sink_regions {
            let cur = sink_base[&r.id];
            match recorded.get(&r.id) {
                Some(&seen) if seen == cur => {}
                Some(&seen) if seen < cur => match r.changes(seen, cur) {
                    Ok(b) => repair.extend(times(&b, sti)?.into_iter().map(|t| dp.window.start(t))),
                    Err(e)
                        if matches!(
                            e.kind,
                            ErrorKind::IncrementalQueryStale | ErrorKind::SnapshotFenceStale | ErrorKind::SequenceRangeUnsupported
                        ) =>
                    {
                        full = Some(Fallback::SinkWritten);
                        break;
                    }
                    Err(e) => return Err(e),
                },
                _ => {
                    full = Some(Fallback::SinkWritten);
                    break;
                }
            }
        }
        if full.is_some() {
            repair.clear();
        }
    }
    // The delta.
    let mut deltas: Vec<RecordBatch> = Vec::new();
    let mut delta_rows = 0u64;
    let t_delta = std::time::Instant::now();
    if full.is_none() {
        for r in &regions {
            let (after, u) = (st.progress.regions[&r.id], upto[&r.id]);
            if u <= after {
                continue;
            }
            match r.changes(after, u) {
                Ok(b) => {
                    delta_rows += b.num_rows() as u64;
                    if b.num_rows() > 0 {
                        deltas.push(b);
                    }
                }
                Err(e)
                    if matches!(
                        e.kind,
                        ErrorKind::IncrementalQueryStale | ErrorKind::SnapshotFenceStale | ErrorKind::SequenceRangeUnsupported
                    ) =>
                {
                    tracing::info!(flow = %def.name, region = r.id, error = %e, "flow falls back to a full snapshot");
                    full = Some(Fallback::SnapshotExpired);
                    break;
                }
                Err(e) => return Err(e),
            }
        }
    }
    tracing::debug!(target: "weir::flow::timing", flow = %def.name, ms = t_delta.elapsed().as_secs_f64() * 1e3, rows = delta_rows, "flow change log read");
    let changed = regions.iter().any(|r| st.progress.regions.get(&r.id) != Some(&upto[&r.id])) || !repair.is_empty();
    let lower = def.expire_after_s.map(|e| (now - e * 1000) * 1000);
    let now_us = now * 1000;
    if changed || full.is_some() {
        st.incr.stats.evaluations += 1;
    }
    let stats_rows_before = st.incr.stats.rows_written;
    let mut sink_counts = SinkCounts::default();
    // Fallbacks this evaluation took, counted once it succeeded (a failed
    // one retried is counted once).
    let mut fell_back: BTreeSet<Fallback> = BTreeSet::new();
    let mut touched: BTreeSet<i64> = BTreeSet::new();
    let mut rows = 0u64;
    let mut state_changes: Vec<(String, Option<Vec<u8>>)> = Vec::new();
    if let Some(reason) = full {
        // Everything from the source, as of `upto`.
        mode = mode.next(&Event::Fallback(reason));
        let range = lower.map(|l| (dp.window.start(l), i64::MAX));
        let groups = partial(c, dp, &Input::Source(range, &upto), None)?;
        let mut windows: HashMap<i64, WindowState> = HashMap::new();
        for g in groups {
            let w = window_of(dp, &g.key)?;
            st.incr.stats.rows_read += int(&g.st[dp.rows_col()]) as u64;
            windows.entry(w).or_default().insert(key_bytes(&g.key), g);
        }
        let all: Vec<&Group> = windows.values().flat_map(|w| w.values()).collect();
        let ranges = range.map(|r| vec![r]);
        let n = write_sink(env, c, plans, SinkWrite { whole: Some((all, ranges)), changed: Vec::new() }, now_us)?;
        sink_counts = n.clone();
        rows += n.written;
        clear = true;
        for (w, ws) in &windows {
            state_changes.push((window_key(*w), Some(encode_window(ws))));
        }
        st.incr.stats.full_evaluations += 1;
        fell_back.insert(reason);
        st.incr.stats.fallback_windows += windows.len() as u64;
        touched.extend(windows.keys().copied());
        st.incr.cache = windows;
        if let Some(m) = st.incr.meta.as_mut() {
            m.complete = true;
        }
        if st.progress.backfilling {
            // The backfill was this one snapshot.
            st.progress.backfilling = false;
            st.progress.backfill_total = touched.len() as u64;
            st.progress.backfill_done = touched.len() as u64;
        }
        mode = mode.next(&Event::FullDone);
    } else if changed {
        let complete = st.incr.meta.as_ref().is_some_and(|m| m.complete);
        let ti = source.time_index.ok_or_else(|| err!(Internal, "windowed source has no time index"))?;
        // Windows recomputed from the source, and why.
        let mut recompute: BTreeMap<i64, Option<Fallback>> = BTreeMap::new();
        // Groups merged (or recomputed after losing their extreme): their
        // state before, by (window, key).
        let mut before: HashMap<(i64, Vec<u8>), Option<Group>> = HashMap::new();
        // Groups whose min / max lost its extreme: recomputed one by one.
        let mut lost: BTreeMap<i64, Vec<(Vec<u8>, Vec<Value>)>> = BTreeMap::new();
        let backlog = def.options.get("incremental_backlog_rows").and_then(|v| v.parse::<u64>().ok()).unwrap_or(BACKLOG_ROWS_DEFAULT);
        let wholesale = if mode == Mode::FullSnapshot(Fallback::Failed) {
            Some(Fallback::Failed)
        } else if delta_rows > backlog {
            Some(Fallback::Backlog)
        } else {
            None
        };
        let live = |w: i64| lower.is_none_or(|l| dp.window.end(w) > l);
        if let Some(reason) = wholesale {
            // Counted even when the change log nets to nothing to recompute
            // (an UPDATE's delete and insert are two commits: an evaluation
            // between them sees the row's insert and delete cancel out).
            fell_back.insert(reason);
            mode = mode.next(&Event::Fallback(reason));
            for b in &deltas {
                for t in times(b, ti)? {
                    let w = dp.window.start(t);
                    if live(w) {
                        recompute.insert(w, Some(reason));
                    }
                }
            }
        } else {
            st.incr.stats.rows_read += delta_rows;
            // Split the change log by sign; each side through the query's partial aggregation.
            let mut sides: [Vec<RecordBatch>; 2] = [Vec::new(), Vec::new()];
            for b in &deltas {
                let ncols = b.num_columns() - 1;
                let diff =
                    b.column(ncols).as_any().downcast_ref::<Int64Array>().ok_or_else(|| err!(Internal, "change log diff is not int8"))?;
                let plus = BooleanArray::from_iter(diff.iter().map(|d| Some(d.unwrap_or(0) > 0)));
                let minus = arrow::compute::not(&plus)?;
                let user = b.project(&(0..ncols).collect::<Vec<_>>())?;
                for (i, mask) in [plus, minus].iter().enumerate() {
                    let part = arrow::compute::filter_record_batch(&user, mask)?;
                    if part.num_rows() > 0 {
                        sides[i].push(part);
                    }
                }
            }
            let mut delta: HashMap<Vec<u8>, (Vec<Value>, Option<Vec<Value>>, Option<Vec<Value>>)> = HashMap::new();
            for (i, side) in sides.iter().enumerate() {
                if side.is_empty() {
                    continue;
                }
                let batch = arrow::compute::concat_batches(&side[0].schema(), side)?;
                for g in partial_delta(c, plans, batch)? {
                    let e = delta.entry(key_bytes(&g.key)).or_insert_with(|| (g.key.clone(), None, None));
                    if i == 0 {
                        e.1 = Some(g.st);
                    } else {
                        e.2 = Some(g.st);
                    }
                }
            }
            for (kb, (key, p, m)) in delta {
                let w = window_of(dp, &key)?;
                if !live(w) || recompute.contains_key(&w) {
                    continue;
                }
                if !open_window(env, def, st, w, complete, &mut recompute)? {
                    continue;
                }
                let ws = st.incr.cache.get_mut(&w).expect("loaded");
                let old = ws.get(&kb).cloned();
                let mut cur = match &old {
                    Some(g) => g.st.clone(),
                    None => {
                        let mut z = vec![Value::Null; dp.partial.len()];
                        z[dp.rows_col()] = Value::Int(0);
                        z
                    }
                };
                before.insert((w, kb.clone()), old);
                match merge(dp, &mut cur, p.as_deref(), m.as_deref()) {
                    Merge::Done => {
                        if int(&cur[dp.rows_col()]) == 0 {
                            ws.remove(&kb);
                        } else {
                            ws.insert(kb, Group { key, st: cur });
                        }
                        touched.insert(w);
                    }
                    Merge::LostExtreme => {
                        st.incr.stats.extreme_recomputes += 1;
                        lost.entry(w).or_default().push((kb, key));
                        touched.insert(w);
                    }
                    Merge::Overflow => {
                        recompute.insert(w, Some(Fallback::Overflow));
                    }
                    Merge::Inconsistent => {
                        recompute.insert(w, Some(Fallback::Failed));
                    }
                }
            }
        }
        // Windows whose sink rows others wrote: replaced from their states.
        let mut repaired = 0u64;
        for &w in &repair {
            if !live(w) || recompute.contains_key(&w) {
                continue;
            }
            if !open_window(env, def, st, w, complete, &mut recompute)? {
                continue;
            }
            touched.insert(w);
            repaired += 1;
        }
        if repaired > 0 {
            fell_back.insert(Fallback::SinkWritten);
            st.incr.stats.fallback_windows += repaired;
        }
        // Merged groups make the evaluation incremental; windows only
        // recomputed by fallbacks make it a (partial) full one.
        let merged = !touched.is_empty() || (wholesale.is_none() && recompute.is_empty());
        // Each group that lost its extreme, from the source rows of that
        // group and window (unless its whole window is recomputed anyway).
        for (w, groups) in &lost {
            if recompute.contains_key(w) {
                continue;
            }
            if groups.len() > LOST_GROUPS_MAX {
                // Many groups of one window: one query over the window.
                recompute.insert(*w, None);
                continue;
            }
            let range = (*w, dp.window.end(*w));
            for (kb, key) in groups {
                let fresh = partial(c, dp, &Input::Source(Some(range), &upto), Some(key))?;
                let ws = st.incr.cache.get_mut(w).expect("a merged window is loaded");
                ws.remove(kb);
                for g in fresh {
                    st.incr.stats.rows_read += int(&g.st[dp.rows_col()]) as u64;
                    if key_bytes(&g.key) == *kb {
                        ws.insert(kb.clone(), g);
                    }
                }
            }
        }
        if merged {
            st.incr.stats.incremental_evaluations += 1;
        } else {
            st.incr.stats.full_evaluations += 1;
        }
        // Recompute windows from the source (as of `upto`).
        if !recompute.is_empty() {
            let set: BTreeSet<i64> = recompute.keys().copied().collect();
            for w in &set {
                st.incr.cache.insert(*w, WindowState::new());
            }
            for (lo, hi) in runs(dp, &set) {
                for g in partial(c, dp, &Input::Source(Some((lo, hi)), &upto), None)? {
                    let w = window_of(dp, &g.key)?;
                    st.incr.stats.rows_read += int(&g.st[dp.rows_col()]) as u64;
                    st.incr.cache.entry(w).or_default().insert(key_bytes(&g.key), g);
                }
            }
            for r in recompute.values().flatten() {
                if fell_back.insert(*r) {
                    mode = mode.next(&Event::Fallback(*r));
                }
                st.incr.stats.fallback_windows += 1;
            }
            touched.extend(set);
        }
        if !touched.is_empty() {
            // Windows recomputed from the source are replaced whole (so
            // are all touched windows until this process has written the
            // sink from the states); elsewhere, the groups whose output
            // changed.
            let mut whole_set: BTreeSet<i64> = if st.incr.sink_synced { recompute.keys().copied().collect() } else { touched.clone() };
            whole_set.extend(repair.iter().filter(|w| touched.contains(w)));
            let mut changed_groups = Vec::new();
            for ((w, kb), old) in before {
                if whole_set.contains(&w) {
                    continue;
                }
                let new = st.incr.cache.get(&w).and_then(|ws| ws.get(&kb)).cloned();
                match (&old, &new) {
                    (None, None) => continue,
                    (Some(a), Some(b)) if finals(dp, a) == finals(dp, b) => {
                        sink_counts.unchanged += 1;
                        continue;
                    }
                    _ => changed_groups.push((w, old, new)),
                }
            }
            let whole_groups: Vec<&Group> = whole_set.iter().filter_map(|w| st.incr.cache.get(w)).flat_map(|ws| ws.values()).collect();
            let whole = (!whole_set.is_empty()).then(|| (whole_groups, Some(runs(dp, &whole_set))));
            let t0 = std::time::Instant::now();
            let n = write_sink(env, c, plans, SinkWrite { whole, changed: changed_groups }, now_us)?;
            sink_counts.written += n.written;
            sink_counts.deleted += n.deleted;
            sink_counts.unchanged += n.unchanged;
            sink_counts.seqs = n.seqs;
            rows += n.written;
            tracing::debug!(target: "weir::flow::timing", flow = %def.name, ms = t0.elapsed().as_secs_f64() * 1e3, "flow sink written");
            for w in &touched {
                let ws = &st.incr.cache[w];
                let v = if ws.is_empty() && complete { None } else { Some(encode_window(ws)) };
                state_changes.push((window_key(*w), v));
            }
        }
        mode = if mode == Mode::Incremental { mode.next(&Event::IncrementalDone) } else { mode.next(&Event::FullDone) };
    } else if mode == Mode::FullSnapshot(Fallback::Failed) {
        // The failed evaluation committed nothing and nothing changed since.
        fell_back.insert(Fallback::Failed);
        mode = mode.next(&Event::FullDone);
    }
    // Commit: the checkpoint with the states it covers.
    if changed || full.is_some() || matches!(trigger, Trigger::Tick(_)) {
        st.progress.regions.extend(upto.iter().map(|(r, s)| (*r, *s)));
        if full.is_some() || changed {
            st.progress.last_execution_ms = Some(now);
            st.progress.rows_written += rows;
            st.progress.windows_done += touched.len() as u64;
        }
        if let Trigger::Tick(t) = trigger {
            st.progress.last_tick_ms = Some(t);
        }
        if let Some(m) = st.incr.meta.as_mut() {
            // Every sink change up to where this evaluation looked was seen
            // (the whole sink compared, or repaired); so is its own write
            // when nobody else wrote to that region since.
            let mut seen = sink_base.clone();
            for &(id, pre, post, wrote) in &sink_counts.seqs {
                if sink_base.get(&id) == Some(&pre) && post == pre + if wrote { 2 } else { 0 } {
                    seen.insert(id, post);
                }
            }
            m.sink_seqs = seen;
            state_changes.push(("meta".into(), Some(serde_json::to_vec(m).map_err(|e| err!(Internal, "cannot encode flow state: {e}"))?)));
        }
        let t0 = std::time::Instant::now();
        env.catalog.commit_flow_state(&def.name, Some(&st.progress), clear, state_changes)?;
        if full.is_some() || !touched.is_empty() {
            st.incr.sink_synced = true;
        }
        tracing::debug!(target: "weir::flow::timing", flow = %def.name, ms = t0.elapsed().as_secs_f64() * 1e3, "flow checkpoint committed");
        for r in &regions {
            // Tests: versions the flow's checkpoint needs may be compacted away.
            if crate::failpoint::armed_now("flow_no_version_hold") {
                r.release_versions(&holder(&def.name));
                continue;
            }
            if let Err(e) = r.hold_versions(&holder(&def.name), upto[&r.id]) {
                tracing::warn!(flow = %def.name, region = r.id, error = %e, "cannot hold versions for a flow");
            }
        }
        // The sink's changes since the recorded sequences are read next time.
        for r in &sink_regions {
            let Some(&seen) = st.incr.meta.as_ref().and_then(|m| m.sink_seqs.get(&r.id)) else { continue };
            if upto.contains_key(&r.id) {
                continue; // a flow writing into its own source
            }
            if let Err(e) = r.hold_versions(&holder(&def.name), seen) {
                tracing::warn!(flow = %def.name, region = r.id, error = %e, "cannot hold sink versions for a flow");
            }
        }
    }
    // Windows no longer maintained leave the cache.
    if let Some(l) = lower {
        st.incr.cache.retain(|w, _| dp.window.end(*w) > l);
    }
    st.incr.stats.rows_written = stats_rows_before + rows;
    for r in fell_back {
        *st.incr.stats.fallbacks.entry(r.name().into()).or_default() += 1;
    }
    st.incr.stats.rows_deleted += sink_counts.deleted;
    st.incr.stats.rows_unchanged += sink_counts.unchanged;
    st.incr.mode = Some(mode);
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::analysis::{TimeWindow, WindowKind, WindowWidth};
    use crate::planner::incremental::KeptAgg;
    use crate::types::SqlType;

    const ALL: [Fallback; 9] = [
        Fallback::MissingWatermark,
        Fallback::IncompleteWatermark,
        Fallback::StaleWatermark,
        Fallback::SnapshotExpired,
        Fallback::Failed,
        Fallback::Backlog,
        Fallback::StateMissing,
        Fallback::Overflow,
        Fallback::SinkWritten,
    ];

    #[test]
    fn full_snapshot_success_enters_incremental() {
        for r in ALL {
            assert_eq!(Mode::FullSnapshot(r).next(&Event::FullDone), Mode::Incremental);
        }
        assert_eq!(Mode::Incremental.next(&Event::FullDone), Mode::Incremental);
    }

    #[test]
    fn incremental_success_stays_incremental() {
        assert_eq!(Mode::Incremental.next(&Event::IncrementalDone), Mode::Incremental);
        // An incremental success cannot end a full snapshot.
        assert_eq!(Mode::FullSnapshot(Fallback::Backlog).next(&Event::IncrementalDone), Mode::FullSnapshot(Fallback::Backlog));
    }

    #[test]
    fn every_fallback_reason_leads_to_full_snapshot_with_the_reason() {
        for r in ALL {
            assert_eq!(Mode::Incremental.next(&Event::Fallback(r)), Mode::FullSnapshot(r));
            assert_eq!(Mode::FullSnapshot(Fallback::Failed).next(&Event::Fallback(r)), Mode::FullSnapshot(r));
            assert_eq!(Mode::FullSnapshot(r).reason().as_deref(), Some(r.name()));
        }
    }

    #[test]
    fn failure_falls_back_as_failed() {
        assert_eq!(Mode::Incremental.next(&Event::Failed), Mode::FullSnapshot(Fallback::Failed));
        assert_eq!(Mode::FullSnapshot(Fallback::MissingWatermark).next(&Event::Failed), Mode::FullSnapshot(Fallback::Failed));
    }

    #[test]
    fn disabled_is_for_good() {
        let d = Mode::Disabled("count(DISTINCT …)".into());
        for ev in [Event::FullDone, Event::IncrementalDone, Event::Failed, Event::Fallback(Fallback::Backlog)] {
            assert_eq!(d.next(&ev), d);
        }
        assert_eq!(d.name(), "disabled");
        assert_eq!(d.reason().as_deref(), Some("count(DISTINCT …)"));
    }

    fn plan(keeps: &[(Keep, bool)]) -> DeltaPlan {
        let mut aggs = Vec::new();
        let mut partial = Vec::new();
        for (k, int_sum) in keeps {
            aggs.push(KeptAgg { keep: *k, first: partial.len(), int_sum: *int_sum, ty: SqlType::Int8 });
            for _ in 0..k.width() {
                partial.push(AggCall { func: AggFunc::Sum, args: vec![], distinct: false, filter: None, ty: SqlType::Int8 });
            }
        }
        partial.push(AggCall { func: AggFunc::CountStar, args: vec![], distinct: false, filter: None, ty: SqlType::Int8 });
        let window = TimeWindow { column: 0, width: WindowWidth::Micros(10), origin: 0, kind: WindowKind::DateBin };
        DeltaPlan { group_count: 1, window_key: 0, window, aggs, partial }
    }
    use crate::exec::plan::{AggCall, AggFunc};

    fn i(v: i64) -> Value {
        Value::Int(v)
    }

    #[test]
    fn sums_counts_and_averages_subtract_retractions() {
        let dp = plan(&[(Keep::Count, false), (Keep::Sum, true), (Keep::Avg, true)]);
        // count, (sum, n), (sum, n), rows
        let mut cur = vec![i(3), i(30), i(3), i(30), i(3), i(3)];
        let plus = vec![i(1), i(5), i(1), i(5), i(1), i(1)];
        let minus = vec![i(2), i(25), i(2), i(25), i(2), i(2)];
        assert_eq!(merge(&dp, &mut cur, Some(&plus), Some(&minus)), Merge::Done);
        assert_eq!(cur, vec![i(2), i(10), i(2), i(10), i(2), i(2)]);
        let g = Group { key: vec![Value::Timestamp(0)], st: cur.clone() };
        assert_eq!(finals(&dp, &g)[1..], [i(2), i(10), Value::Float(5.0)]);
        // Every non-NULL value retracted: sum and avg are NULL, count 0.
        let minus = vec![i(2), i(10), i(2), i(10), i(2), i(2)];
        assert_eq!(merge(&dp, &mut cur, None, Some(&minus)), Merge::Done);
        let g = Group { key: vec![Value::Timestamp(0)], st: cur.clone() };
        assert_eq!(finals(&dp, &g)[1..], [i(0), Value::Null, Value::Null]);
        assert_eq!(cur[dp.rows_col()], i(0));
    }

    #[test]
    fn min_max_keep_the_copies_of_their_extreme() {
        let dp = plan(&[(Keep::Min, false), (Keep::Max, false)]);
        // (min, copies), (max, copies), rows
        let before = vec![i(5), i(2), i(50), i(1), i(4)];
        // Retractions strictly inside the range keep both extremes; a new max takes over.
        let mut cur = before.clone();
        assert_eq!(merge(&dp, &mut cur, Some(&[i(7), i(1), i(60), i(1), i(1)]), Some(&[i(6), i(1), i(40), i(1), i(1)])), Merge::Done);
        assert_eq!(cur, vec![i(5), i(2), i(60), i(1), i(4)]);
        // One of two copies of the min retracted: merged, one copy left.
        let mut c1 = before.clone();
        assert_eq!(merge(&dp, &mut c1, None, Some(&[i(5), i(1), i(20), i(1), i(1)])), Merge::Done);
        assert_eq!(c1, vec![i(5), i(1), i(50), i(1), i(3)]);
        // Its last copy (or the max's only one) cannot be merged.
        let mut c2 = before.clone();
        assert_eq!(merge(&dp, &mut c2, None, Some(&[i(5), i(2), i(20), i(1), i(3)])), Merge::LostExtreme);
        assert_eq!(c2, before, "left untouched");
        let mut c3 = before.clone();
        assert_eq!(merge(&dp, &mut c3, None, Some(&[i(9), i(1), i(50), i(1), i(1)])), Merge::LostExtreme);
        // New copies first, then a retraction of one: merged.
        let mut c4 = before.clone();
        assert_eq!(merge(&dp, &mut c4, Some(&[i(9), i(1), i(50), i(3), i(3)]), Some(&[i(9), i(1), i(50), i(1), i(1)])), Merge::Done);
        assert_eq!(c4, vec![i(5), i(2), i(50), i(3), i(6)]);
        // A retraction beyond the extreme: the state disagrees.
        let mut c5 = before.clone();
        assert_eq!(merge(&dp, &mut c5, None, Some(&[i(1), i(1), i(20), i(1), i(1)])), Merge::Inconsistent);
        // Every row retracted (the group rewritten whole): the inserted rows' state, no recompute.
        let mut c6 = before.clone();
        let fresh = [i(8), i(1), i(9), i(2), i(3)];
        assert_eq!(merge(&dp, &mut c6, Some(&fresh), Some(&[i(5), i(2), i(50), i(1), i(4)])), Merge::Done);
        assert_eq!(c6, fresh.to_vec());
        // … or deleted whole: no rows left.
        let mut c7 = before.clone();
        assert_eq!(merge(&dp, &mut c7, None, Some(&[i(5), i(2), i(50), i(1), i(4)])), Merge::Done);
        assert_eq!(c7[dp.rows_col()], i(0));
    }

    #[test]
    fn first_last_keep_their_time() {
        let dp = plan(&[(Keep::First, false), (Keep::Last, false)]);
        let t = Value::Timestamp;
        // (x, t) of first, (x, t) of last, rows
        let mut cur = vec![i(7), t(10), i(8), t(50), i(3)];
        // An earlier and a later row take over.
        assert_eq!(merge(&dp, &mut cur, Some(&[i(1), t(5), i(2), t(60), i(2)]), None), Merge::Done);
        assert_eq!(cur, vec![i(1), t(5), i(2), t(60), i(5)]);
        // A row in between retracted: merged.
        assert_eq!(merge(&dp, &mut cur, None, Some(&[i(4), t(20), i(4), t(20), i(1)])), Merge::Done);
        assert_eq!(cur, vec![i(1), t(5), i(2), t(60), i(4)]);
        // A tie at the first time: the least value is first.
        assert_eq!(merge(&dp, &mut cur, Some(&[i(0), t(5), i(0), t(5), i(1)]), None), Merge::Done);
        assert_eq!(cur, vec![i(0), t(5), i(2), t(60), i(5)]);
        // Retracting the row holding last: recompute.
        let before = cur.clone();
        assert_eq!(merge(&dp, &mut cur, None, Some(&[i(2), t(60), i(2), t(60), i(1)])), Merge::LostExtreme);
        assert_eq!(cur, before);
        let g = Group { key: vec![Value::Timestamp(0)], st: before };
        assert_eq!(finals(&dp, &g)[1..], [i(0), i(2)]);
    }

    #[test]
    fn overflow_and_inconsistency_are_reported() {
        let dp = plan(&[(Keep::Sum, true)]);
        let mut cur = vec![i(EXACT_INT - 1), i(1), i(1)];
        assert_eq!(merge(&dp, &mut cur, Some(&[i(5), i(1), i(1)]), None), Merge::Overflow);
        let mut cur = vec![i(1), i(1), i(1)];
        assert_eq!(merge(&dp, &mut cur, None, Some(&[i(1), i(2), i(2)])), Merge::Inconsistent);
    }

    #[test]
    fn window_states_round_trip() {
        let mut w = WindowState::new();
        for key in [vec![Value::Timestamp(10), Value::Text("a".into())], vec![Value::Timestamp(10), Value::Null]] {
            let st = vec![i(-3), Value::Float(1.5), Value::Bool(true), Value::Date(7), Value::Null];
            w.insert(key_bytes(&key), Group { key, st });
        }
        assert_eq!(decode_window(&encode_window(&w)).unwrap(), w);
        assert!(decode_window(&encode_window(&w)[..5]).is_err(), "truncated is Corrupt, not a panic");
    }

    #[test]
    fn adjacent_windows_make_one_range() {
        let dp = plan(&[]);
        let set: BTreeSet<i64> = [0, 10, 20, 50].into_iter().collect();
        assert_eq!(runs(&dp, &set), vec![(0, 30), (50, 60)]);
    }
}
