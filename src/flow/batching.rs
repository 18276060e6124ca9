//! Evaluation of a flow: collect what changed in its sources since the
//! progress it holds (storage's change log, deletes and overwrites
//! included), turn changed timestamps into dirty windows, recompute the
//! dirty windows in bounded ranges with the window predicate added to the
//! logical plan, and replace those ranges of the sink. Progress (per
//! source-region sequence) is made durable once no dirty window is left.
//!
//! `evaluate_range` is the seam for incremental evaluation (issue 9): today
//! it recomputes a range of windows from the source in full.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use arrow::array::{Array, RecordBatch};

use crate::catalog::{FlowDef, TableDef};
use crate::err;
use crate::error::Result;
use crate::exec::ExecCtx;
use crate::planner::logical::LogicalPlan;
use crate::planner::{Params, Planner};
use crate::storage::{region_id, Region, ScanRequest, SeqNo};

use super::shape::{self, FlowShape, Refresh};
use super::sink::{self, Fill};
use super::Env;

/// What started an evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// An EVAL INTERVAL tick: `now()` is the tick time (ms).
    Tick(i64),
    /// Soon after writes (no EVAL INTERVAL).
    Adaptive,
    /// ADMIN FLUSH_FLOW: everything acknowledged before it.
    Flush,
    /// Someone else wrote into the sink of an incremental EVAL INTERVAL
    /// flow: replace the windows touched from the partial states now, as
    /// of the last tick (`now()` stays the tick's; incremental queries
    /// call no stable function, so reading the sources' newer changes too
    /// computes the same rows). Other flows do nothing.
    Repair,
}

/// The in-memory part of a flow's state; the durable part is
/// `FlowProgress` in the catalog.
#[derive(Debug, Default)]
pub struct TaskState {
    pub progress: crate::catalog::FlowProgress,
    /// Dirty windows, start → end.
    pub dirty: BTreeMap<i64, i64>,
    /// Changes read into `dirty` up to these sequences (not yet durable).
    pub read_upto: BTreeMap<u64, SeqNo>,
    /// A whole-query flow has changes to reflect.
    pub full_dirty: bool,
    pub failures: u32,
    /// Incremental evaluation (issue 9): mode, partial states, statistics.
    pub incr: super::incremental::IncrState,
    /// The last scheduled run stopped after its batches with work left.
    pub more: bool,
    /// Rows written to a `ttl = 'instant'` source, not yet transformed.
    pub instant_rows: Vec<(u32, RecordBatch)>,
    /// Streaming mode (issue 11): the flow's dataflow.
    pub stream: super::streaming::StreamTask,
}

/// Batches (ranges of windows, one query each) a scheduled evaluation runs
/// before it yields to the other flows; the rest runs right after. ADMIN
/// FLUSH_FLOW runs them all.
pub const BATCHES_PER_RUN: usize = 16;

pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

pub fn holder(flow: &str) -> String {
    format!("flow:{flow}")
}

pub(super) fn ctx(def: &FlowDef, settings: &Arc<HashMap<String, String>>, now_us: i64) -> ExecCtx {
    ExecCtx {
        statement_ts: now_us,
        statement_start_ts: now_us,
        database: def.database.clone(),
        user: "flow".into(),
        settings: settings.clone(),
        deadline: None,
        cancel: Arc::new(AtomicBool::new(false)),
        pid: 0,
        activity: Default::default(),
        view: None,
        set_configs: Default::default(),
        sequences: None,
        routines: None,
        notifies: Default::default(),
        // Flow queries have no session: the default per-query budget.
        memory: Arc::new(crate::exec::memory::MemoryBudget::new(crate::exec::memory::QUERY_MEMORY_BYTES_DEFAULT)),
    }
}

pub fn table_regions(env: &Env, t: &TableDef) -> Result<Vec<Arc<Region>>> {
    (0..t.regions.max(1))
        .map(|n| env.storage.region(region_id(t.id, n)).ok_or_else(|| err!(Internal, "region {n} of table {} is not open", t.name)))
        .collect()
}

/// A flow's query planned for one evaluation, with its shape and sink.
pub struct Compiled<'a> {
    pub planner: Planner<'a>,
    pub logical: LogicalPlan,
    pub shape: FlowShape,
    pub sink: TableDef,
    pub fills: Vec<Fill>,
    /// The catalog's schema version the plan was made at.
    pub version: u64,
}

pub fn compile<'a>(env: &Env<'a>, def: &FlowDef, settings: &Arc<HashMap<String, String>>, now_us: i64) -> Result<Compiled<'a>> {
    // Read before planning: a definition changed meanwhile moves it past the plan.
    let version = env.catalog.schema_version();
    let planner = Planner::new(env.catalog, env.storage, &def.database, ctx(def, settings, now_us), Params::default());
    let q = crate::parser::parse_query(&def.query)?;
    let logical = planner.plan_query(&q, None)?;
    let instant = def.sources.iter().any(|(d, t)| env.catalog.table(d, t).is_some_and(|t| t.ttl_ms == Some(0)));
    let shape = shape::analyze(&logical, def.eval_interval_s.is_some(), instant)?;
    let sink = env
        .catalog
        .table(&def.sink_database, &def.sink_table)
        .ok_or_else(|| err!(UndefinedTable, "sink table \"{}\" of flow \"{}\" does not exist", def.sink_table, def.name))?;
    let fills = sink::fill_plan(&shape.columns, &sink)?;
    Ok(Compiled { planner, logical, shape, sink, fills, version })
}

/// The tables a plan scans (the scans of its subqueries' plans aside).
fn scanned<'p>(plan: &'p LogicalPlan, out: &mut Vec<&'p TableDef>) {
    if let LogicalPlan::Scan(s) = plan {
        out.push(&s.table);
    }
    for i in plan.inputs() {
        scanned(i, out);
    }
}

impl Compiled<'_> {
    /// The source table `database.name` as the plan reads it; the
    /// catalog's for a table only a subquery reads. An evaluation takes
    /// its sources' regions from here, never from the catalog again: a
    /// TRUNCATE between planning and reading gives the table new regions,
    /// and a run that recorded progress against the new regions while its
    /// plan read the old rows left those rows in the sink (the flake of
    /// sql-tests/flow/truncate.slt).
    pub fn source(&self, env: &Env, database: &str, name: &str) -> Option<TableDef> {
        let mut tables = Vec::new();
        scanned(&self.logical, &mut tables);
        match tables.into_iter().find(|t| t.database == database && t.name == name) {
            Some(t) => Some(t.clone()),
            None => env.catalog.table(database, name),
        }
    }

    /// Whether the tables the plan scans are still the catalog's (no
    /// TRUNCATE, no table dropped and created again since planning).
    fn current(&self, env: &Env) -> bool {
        let mut tables = Vec::new();
        scanned(&self.logical, &mut tables);
        tables.iter().all(|t| env.catalog.table(&t.database, &t.name).is_some_and(|now| now.id == t.id))
    }
}

/// How many times an evaluation plans again when its sources change while
/// it plans (each TRUNCATE of a source replaces the table's regions).
const REPLANS_MAX: usize = 3;

/// Timestamps (time index, microseconds) of the changes of a region in
/// (after, upto]; from a scan of the whole region when `after` is 0. None
/// when the versions needed are gone: rows deleted then left no trace, so
/// the caller recomputes the whole sink.
fn changed_times(region: &Region, ti: usize, after: SeqNo, upto: SeqNo) -> Result<Option<Vec<i64>>> {
    let batches: Vec<RecordBatch> = if after > 0 {
        match region.changes(after, upto) {
            Ok(b) => vec![b.project(&[ti])?],
            Err(e) => {
                tracing::warn!(region = region.id, error = %e, "flow falls back to recomputing its whole sink");
                return Ok(None);
            }
        }
    } else {
        region.scan(&ScanRequest { projection: Some(vec![ti]), ..Default::default() })?
    };
    let mut out = Vec::new();
    for b in batches {
        let a = arrow::compute::cast(b.column(0), &arrow::datatypes::DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None))?;
        let a = a.as_any().downcast_ref::<arrow::array::TimestampMicrosecondArray>().expect("cast to timestamp µs");
        out.extend(a.iter().flatten());
    }
    Ok(Some(out))
}

/// Run one evaluation. Returns the rows written to the sink.
pub fn run(env: &Env, def: &FlowDef, st: &mut TaskState, trigger: Trigger, settings: &Arc<HashMap<String, String>>) -> Result<u64> {
    let now = match trigger {
        Trigger::Tick(t) => t,
        Trigger::Repair => st.progress.last_tick_ms.unwrap_or_else(now_ms),
        _ => now_ms(),
    };
    if trigger == Trigger::Repair && !super::incremental::repairs_sink(&st.incr) {
        return Ok(0);
    }
    if let Some(t) = super::tql::body(def)? {
        return super::tql::run(env, def, &t, st, trigger, settings);
    }
    // Incremental flows keep their plans while nothing they read changed.
    // A plan made before a TRUNCATE of a source is made again, so a run
    // right after a TRUNCATE reads the new regions.
    let mut replans = 0;
    let c = loop {
        let c = match super::incremental::cached(env, def, st, settings, now * 1000) {
            Some(c) => c,
            None => compile(env, def, settings, now * 1000)?,
        };
        if crate::failpoint::any_hook() {
            crate::failpoint::run_hook(&format!("flow_planned:{}", def.name));
        }
        if c.current(env) || replans == REPLANS_MAX {
            break c;
        }
        replans += 1;
    };
    st.more = false;
    if let Refresh::Stream { .. } = c.shape.refresh {
        return super::streaming::run(env, def, st, &c, now);
    }
    // Incremental evaluation where it is provably exact (issue 9).
    if let Some(rows) = super::incremental::run(env, def, st, &c, trigger, now)? {
        return Ok(rows);
    }
    if trigger == Trigger::Repair {
        return Ok(0);
    }
    let windows_before = st.progress.windows_done;
    // 1. What changed since the progress read so far.
    let mut changed = false;
    let mut added = false;
    let mut regions_now: Vec<(TableDef, Arc<Region>)> = Vec::new();
    for (d, t) in &def.sources {
        let Some(src) = c.source(env, d, t) else { continue };
        for region in table_regions(env, &src)? {
            regions_now.push((src.clone(), region));
        }
    }
    // A region the flow read that is no longer a source region: its table
    // was truncated (or dropped and created again). Its rows left without
    // retractions, so the whole sink is recomputed.
    let gone: Vec<u64> =
        st.progress.regions.keys().chain(st.read_upto.keys()).filter(|r| !regions_now.iter().any(|(_, x)| x.id == **r)).copied().collect();
    if !gone.is_empty() {
        st.full_dirty = true;
        changed = true;
        for r in gone {
            st.progress.regions.remove(&r);
            st.read_upto.remove(&r);
            st.progress.pending_upto.remove(&r);
            if let Some(region) = env.storage.region(r) {
                region.release_versions(&holder(&def.name));
            }
        }
    }
    for (src, region) in &regions_now {
        let after = st.read_upto.get(&region.id).or_else(|| st.progress.regions.get(&region.id)).copied().unwrap_or(0);
        let upto = region.last_seq();
        if upto <= after {
            continue;
        }
        changed = true;
        match &c.shape.refresh {
            Refresh::Windowed { source, window, .. } if source.id == src.id => {
                if !st.full_dirty {
                    let ti = src.time_index.expect("a windowed source has a time index");
                    match changed_times(region, ti, after, upto)? {
                        Some(times) => {
                            let mut ws = Vec::new();
                            for ts in times {
                                window.assign(ts, &mut ws);
                            }
                            added |= !ws.is_empty();
                            for (s, e) in ws {
                                st.dirty.insert(s, e);
                            }
                        }
                        None => st.full_dirty = true,
                    }
                }
            }
            // The rows came with the write notices.
            Refresh::Stream { .. } => {}
            _ => st.full_dirty = true,
        }
        st.read_upto.insert(region.id, upto);
    }
    if st.progress.backfilling && st.progress.backfill_total == 0 {
        st.progress.backfill_total = st.dirty.len().max(usize::from(st.full_dirty)) as u64;
    }
    // 2. Recompute.
    let mut rows = 0u64;
    let mut ran = false;
    match &c.shape.refresh {
        Refresh::Windowed { source, window, time_output }
            if c.sink.time_index.is_some_and(|ti| c.fills[ti] == Fill::Output(*time_output)) =>
        {
            if st.full_dirty {
                rows += evaluate_range(env, &c, source.id, None, now * 1000)? as u64;
                st.progress.windows_done += st.dirty.len().max(1) as u64;
                st.dirty.clear();
                st.full_dirty = false;
                ran = true;
            }
            if let Some(exp) = def.expire_after_s {
                let lower = (now - exp * 1000) * 1000;
                st.dirty.retain(|_, e| *e > lower);
            }
            let windows: Vec<(i64, i64)> = st.dirty.iter().map(|(s, e)| (*s, *e)).collect();
            let ranges = super::window::ranges(&windows, window.merge_gap(), window.max_per_query());
            let many = ranges.len() > 1;
            if many && added {
                // A catch-up in several batches (backfill, a large late
                // write): its windows become durable first, then each
                // batch moves a cursor, so a crash resumes where it stopped.
                env.catalog.put_flow_pending(&def.name, &windows)?;
                st.progress.pending_upto = st.read_upto.clone();
                st.progress.pending_from = i64::MIN;
            }
            let limit = if trigger == Trigger::Flush { usize::MAX } else { BATCHES_PER_RUN };
            for (i, ((lo, hi), n)) in ranges.into_iter().enumerate() {
                if i == limit {
                    st.more = true;
                    break;
                }
                rows += evaluate_range(env, &c, source.id, Some((lo, hi)), now * 1000)? as u64;
                let (clo, chi) = window.covered(lo, hi);
                let done: Vec<i64> = st.dirty.range(clo..chi).map(|(s, _)| *s).collect();
                for s in done {
                    st.dirty.remove(&s);
                }
                st.progress.windows_done += n as u64;
                if st.progress.backfilling {
                    st.progress.backfill_done = (st.progress.backfill_done + n as u64).min(st.progress.backfill_total);
                }
                ran = true;
                if many {
                    // Backfill and large catch-ups show their progress.
                    st.progress.pending_from = st.progress.pending_from.max(chi);
                    st.progress.last_execution_ms = Some(now);
                    env.catalog.put_flow_progress(&def.name, &st.progress)?;
                    if crate::failpoint::fire_once("flow_crash_after_batch") {
                        tracing::error!(flow = %def.name, "failpoint flow_crash_after_batch");
                        std::process::abort();
                    }
                }
            }
        }
        Refresh::Stream { source } => {
            // The source keeps no rows: a TRUNCATE leaves nothing to redo.
            st.full_dirty = false;
            let mine: Vec<RecordBatch> = st.instant_rows.iter().filter(|(t, _)| *t == source.id).map(|(_, b)| b.clone()).collect();
            if !mine.is_empty() {
                rows += evaluate_rows(env, &c, source.id, &mine, now * 1000)? as u64;
                st.instant_rows.clear();
                ran = true;
            }
        }
        _ => {
            if !st.dirty.is_empty() {
                // A sink whose time index is not the window column: whole-query replace.
                st.dirty.clear();
                st.full_dirty = true;
            }
            if st.full_dirty || !matches!(trigger, Trigger::Adaptive) || (changed && def.eval_interval_s.is_none()) {
                rows += evaluate_range(env, &c, u32::MAX, None, now * 1000)? as u64;
                st.full_dirty = false;
                ran = true;
            }
        }
    }
    // 3. Durable progress once nothing read is left undone.
    if ran || !st.read_upto.is_empty() {
        if ran {
            st.progress.last_execution_ms = Some(now);
            st.progress.rows_written += rows;
        }
        if let Trigger::Tick(t) = trigger {
            st.progress.last_tick_ms = Some(t);
        }
        if st.dirty.is_empty() && !st.full_dirty {
            let done = std::mem::take(&mut st.read_upto);
            for (r, seq) in done {
                st.progress.regions.insert(r, seq);
                if let Some(region) = env.storage.region(r) {
                    if let Err(e) = region.hold_versions(&holder(&def.name), seq) {
                        tracing::warn!(flow = %def.name, region = r, error = %e, "cannot hold versions for a flow");
                    }
                }
            }
            if st.progress.backfilling {
                st.progress.backfilling = false;
                st.progress.backfill_done = st.progress.backfill_total;
            }
            if !st.progress.pending_upto.is_empty() {
                st.progress.pending_upto.clear();
                env.catalog.put_flow_pending(&def.name, &[])?;
            }
        }
        st.progress.pending_full = st.full_dirty;
        let t0 = std::time::Instant::now();
        env.catalog.put_flow_progress(&def.name, &st.progress)?;
        tracing::debug!(target: "weir::flow::timing", flow = %def.name, ms = t0.elapsed().as_secs_f64() * 1e3, "flow progress committed");
    }
    super::incremental::note_batching(env, def, st, rows, st.progress.windows_done - windows_before);
    Ok(rows)
}

/// Recompute `range` of the sink (all of it when None) from the source:
/// the window predicate goes on the source scan of the logical plan.
/// Full recomputation of a window set: the seam where incremental
/// evaluation (issue 9) plugs in.
pub fn evaluate_range(env: &Env, c: &Compiled, source_id: u32, range: Option<(i64, i64)>, now_us: i64) -> Result<usize> {
    let mut logical = c.logical.clone();
    if let Some((lo, hi)) = range {
        shape::restrict_time(&mut logical, source_id, lo, hi);
    }
    let t0 = std::time::Instant::now();
    let plan = c.planner.physical(logical)?;
    let batches = crate::exec::collect(&plan, &c.planner.ctx)?;
    let t1 = std::time::Instant::now();
    let regions = table_regions(env, &c.sink)?;
    let schema = regions.first().map(|r| r.desc.schema.clone()).ok_or_else(|| err!(Internal, "sink has no region"))?;
    let new = sink::sink_batch(&c.sink, schema, &c.shape.columns, &c.fills, &batches, now_us)?;
    // Only the windows the range computes from all their rows are replaced
    // (a hop window reaching past the range saw part of its rows).
    let range = range.map(|(lo, hi)| match &c.shape.refresh {
        Refresh::Windowed { window, .. } => window.covered(lo, hi),
        Refresh::Full | Refresh::Stream { .. } => (lo, hi),
    });
    let new = match (range, c.sink.time_index) {
        (Some((lo, hi)), Some(ti)) => sink::rows_in_range(&new, ti, lo, hi)?,
        _ => new,
    };
    let n = sink::replace(env.storage, &c.sink, &regions, &new, range)?;
    tracing::debug!(
        target: "weir::flow::timing",
        query_ms = (t1 - t0).as_secs_f64() * 1e3,
        sink_ms = t1.elapsed().as_secs_f64() * 1e3,
        rows = n,
        "flow range recomputed"
    );
    Ok(n)
}

/// Run the rows written to an instant source through the query and upsert
/// the result into the sink (nothing is replaced: the source keeps no rows
/// to recompute from).
pub fn evaluate_rows(env: &Env, c: &Compiled, source_id: u32, rows: &[RecordBatch], now_us: i64) -> Result<usize> {
    let mut logical = c.logical.clone();
    shape::replace_scan(&mut logical, source_id, rows)?;
    let plan = c.planner.physical(logical)?;
    let batches = crate::exec::collect(&plan, &c.planner.ctx)?;
    let regions = table_regions(env, &c.sink)?;
    let schema = regions.first().map(|r| r.desc.schema.clone()).ok_or_else(|| err!(Internal, "sink has no region"))?;
    let new = sink::sink_batch(&c.sink, schema, &c.shape.columns, &c.fills, &batches, now_us)?;
    // An empty time range: no old row is deleted.
    sink::replace(env.storage, &c.sink, &regions, &new, Some((0, 0)))
}
