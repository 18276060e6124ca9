//! The flow side of streaming mode (issue 11): feeds a streaming flow's
//! dataflow (`crate::stream`) with its sources' changes — the change log of
//! stored tables from the positions committed with the state, the rows of
//! `ttl = 'instant'` tables from the write notices — runs one epoch per
//! evaluation, commits the barrier, then applies the epoch's output to the
//! sink (upserts and deletes on the sink's identity).
//!
//! Exactly once: the barrier commits the operators' state, the source
//! positions and the epoch's output (outbox) in one atomic write; the sink
//! write follows. After a crash the dataflow is rendered again from the
//! committed state and the last outbox is applied again (idempotent), so
//! nothing is lost or counted twice.
//!
//! May import `stream`, `planner`, `exec`, `storage`, `catalog`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Weak};

use arrow::array::{ArrayRef, RecordBatch, UInt64Array};
use arrow::row::{RowConverter, SortField};
use parking_lot::Mutex;

use crate::catalog::FlowDef;
use crate::err;
use crate::error::Result;
use crate::storage::{RegionWrites, ScanRequest, TEMP_ROWID_BASE};
use crate::stream::state_table::{Row, SledStateKv, StateCache, StateKv, StateStore};
use crate::stream::{Changes, Dataflow, Inputs};

use super::batching::{holder, table_regions, Compiled, TaskState};
use super::sink;
use super::Env;

/// A streaming flow's running dataflow (None until rendered, and after a
/// failed epoch: it is rendered again from the committed state).
#[derive(Default)]
pub struct StreamTask {
    df: Option<Dataflow>,
    /// The state namespace `df` was rendered under: the flow's source ids
    /// may be refreshed while it runs (TRUNCATE), and a reset must drop the
    /// state it actually used.
    namespace: String,
    /// `[stream]` of the config (set by the flow manager before each run).
    pub tuning: crate::stream::StreamTuning,
    /// When the state tables' sizes were last measured.
    sampled: Option<std::time::Instant>,
    /// When the state of ended windows was last dropped (EXPIRE AFTER).
    expired: Option<std::time::Instant>,
    /// (region, seq) of the writes whose rows wait in `instant_rows`; their
    /// inbox entries go with the barrier of the epoch that consumes them.
    pub instant_seqs: Vec<(u64, u64)>,
    /// The inbox's leftovers (rows logged before a crash) were fed since
    /// the dataflow was rendered.
    recovered: bool,
    /// The flow manager's boot id (set before each run): inbox entries of
    /// another boot are leftovers of an earlier process.
    pub boot: u64,
}

impl StreamTask {
    /// Whether a dataflow runs (the flow is in streaming mode).
    pub fn is_rendered(&self) -> bool {
        self.df.is_some()
    }
}

impl std::fmt::Debug for StreamTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamTask").field("rendered", &self.df.is_some()).finish()
    }
}

/// The state store of a data directory: one sled database under
/// `<data_dir>/regions/stream/`, shared by the flows of one engine, and the
/// state cache in front of it (budget `state_cache_bytes_max`).
fn state_kv(env: &Env, cache_bytes_max: usize) -> Result<(Arc<dyn StateKv>, Arc<StateCache>)> {
    state_kv_at(&env.storage.root().join("stream"), cache_bytes_max)
}

fn state_kv_at(path: &std::path::Path, cache_bytes_max: usize) -> Result<(Arc<dyn StateKv>, Arc<StateCache>)> {
    type Open = HashMap<PathBuf, (Weak<SledStateKv>, Arc<StateCache>)>;
    static OPEN: Mutex<Option<Open>> = Mutex::new(None);
    let mut open = OPEN.lock();
    let m = open.get_or_insert_with(HashMap::new);
    if let Some((kv, cache)) = m.get(path).and_then(|(w, c)| Some((w.upgrade()?, c.clone()))) {
        if cache.stats().budget_bytes != cache_bytes_max as u64 {
            cache.set_budget(cache_bytes_max);
        }
        return Ok((kv, cache));
    }
    let kv = Arc::new(SledStateKv::open(path)?);
    let cache = Arc::new(StateCache::new(cache_bytes_max));
    m.insert(path.to_path_buf(), (Arc::downgrade(&kv), cache.clone()));
    Ok((kv, cache))
}

/// Log the rows of writes to instant sources in the inboxes of the
/// streaming flows that read them, durably, before the writes are
/// acknowledged: (flow, region, seq, rows). The barrier of the epoch that
/// consumes a write deletes its entry, so rows acknowledged before a crash
/// are in the first epoch after it.
pub fn log_instant(
    root: &std::path::Path,
    tuning: &crate::stream::StreamTuning,
    boot: u64,
    entries: &[(&FlowDef, u64, u64, &[RecordBatch])],
) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let (kv, _) = state_kv_at(&root.join("stream"), tuning.state_cache_bytes_max)?;
    let mut batch = Vec::with_capacity(entries.len());
    for (def, region, seq, rows) in entries {
        let mut v = boot.to_le_bytes().to_vec();
        for b in rows.iter() {
            let mut e = Vec::new();
            crate::storage::encode_batch(b, &mut e)?;
            v.extend_from_slice(&(e.len() as u64).to_le_bytes());
            v.extend_from_slice(&e);
        }
        batch.push((StateStore::inbox_key(&namespace(def), *region, *seq), Some(v)));
    }
    kv.apply(batch)
}

/// The boot id of an inbox entry.
fn inbox_boot(v: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(v.get(..8)?.try_into().ok()?))
}

/// The batches of an inbox entry, decoded against the region's schema (a
/// write through a transaction carries the row ids too).
fn decode_inbox(schema: &arrow::datatypes::SchemaRef, v: &[u8]) -> Result<Vec<RecordBatch>> {
    let bad = || err!(Internal, "corrupt streaming inbox entry");
    let mut v = v.get(8..).ok_or_else(bad)?;
    let with_rowid = {
        let mut f: Vec<arrow::datatypes::FieldRef> = schema.fields().iter().cloned().collect();
        f.push(Arc::new(arrow::datatypes::Field::new(crate::storage::ROWID_COLUMN, arrow::datatypes::DataType::UInt64, false)));
        Arc::new(arrow::datatypes::Schema::new(f))
    };
    let mut out = Vec::new();
    while !v.is_empty() {
        let n = u64::from_le_bytes(v.get(..8).ok_or_else(bad)?.try_into().map_err(|_| bad())?) as usize;
        let e = v.get(8..8 + n).ok_or_else(bad)?;
        let ncols = u32::from_le_bytes(e.get(4..8).ok_or_else(bad)?.try_into().map_err(|_| bad())?) as usize;
        let s = if ncols == schema.fields().len() { schema } else { &with_rowid };
        out.push(crate::storage::decode_batch(s, e)?);
        v = &v[8 + n..];
    }
    Ok(out)
}

/// The state namespace of a flow: a new query or new source tables get
/// new state (CREATE OR REPLACE keeps the flow's id).
pub(super) fn namespace(def: &FlowDef) -> String {
    let mut h = crc32fast::Hasher::new();
    h.update(def.query.as_bytes());
    for id in &def.source_ids {
        h.update(&id.to_be_bytes());
    }
    format!("{}:{}:{:08x}", def.id, def.created_ms, h.finalize())
}

/// Drop a flow's state (DROP FLOW): the namespace its running dataflow
/// uses and the one its current definition names (they differ when its
/// sources' ids were refreshed after it rendered).
pub fn drop_state(env: &Env, def: &FlowDef, task: &StreamTask) {
    if let Ok((kv, cache)) = state_kv(env, task.tuning.state_cache_bytes_max) {
        let mut names = vec![namespace(def)];
        if !task.namespace.is_empty() && task.namespace != names[0] {
            names.push(task.namespace.clone());
        }
        for ns in names {
            if let Err(e) = StateStore::destroy(kv.as_ref(), &cache, &ns) {
                tracing::warn!(flow = %def.name, error = %e, "cannot drop the state of a streaming flow");
            }
        }
    }
}

/// One epoch of a streaming flow. Returns the sink rows written. A flow
/// that starts over (a source truncated) renders again and runs its first
/// epoch at once: after ADMIN FLUSH_FLOW the sink holds the query over the
/// sources as they are, not an emptied sink.
pub fn run(env: &Env, def: &FlowDef, st: &mut TaskState, c: &Compiled, now_ms: i64) -> Result<u64> {
    for _ in 0..2 {
        render(env, def, st, c, now_ms)?;
        match epoch(env, def, st, c, now_ms) {
            Ok(Some(rows)) => return Ok(rows),
            Ok(None) => {}
            Err(e) => {
                st.stream.df = None;
                return Err(e);
            }
        }
    }
    // Started over twice: the sources' plan is behind the catalog; the
    // next run plans again.
    Ok(0)
}

/// Render the flow's dataflow unless it runs.
fn render(env: &Env, def: &FlowDef, st: &mut TaskState, c: &Compiled, now_ms: i64) -> Result<()> {
    if st.stream.df.is_none() {
        let (kv, cache) = state_kv(env, st.stream.tuning.state_cache_bytes_max)?;
        let plan = crate::planner::rewrite::optimize(c.logical.clone(), &c.planner.ctx);
        let instant: HashSet<u32> =
            def.sources.iter().filter_map(|(d, t)| c.source(env, d, t)).filter(|t| t.ttl_ms == Some(0)).map(|t| t.id).collect();
        let ns = namespace(def);
        let df = Dataflow::render(kv, cache, &ns, &plan, &|id| instant.contains(&id), &c.planner.ctx)?;
        // The last epoch's sink write again: a crash may have come between
        // its barrier and its sink write (upserts and deletes by identity
        // are idempotent).
        let outbox = df.outbox()?;
        if !outbox.is_empty() {
            apply_sink(env, c, &outbox, now_ms * 1000)?;
        }
        st.stream.df = Some(df);
        st.stream.namespace = ns;
        st.stream.recovered = false;
    }
    Ok(())
}

/// One epoch; None when the flow started over instead (`reset`).
fn epoch(env: &Env, def: &FlowDef, st: &mut TaskState, c: &Compiled, now_ms: i64) -> Result<Option<u64>> {
    let df = st.stream.df.as_mut().expect("rendered");
    let positions = df.positions()?;
    let mut next = BTreeMap::new();
    let mut inputs: Inputs = HashMap::new();
    let mut fed = 0usize;
    let mut instant_ids = Vec::new();
    // After a (re)render: the rows an earlier process logged that no
    // committed epoch consumed (this process's rows arrive in memory).
    let leftovers: Vec<(u64, u64, Vec<u8>)> = if st.stream.recovered {
        vec![]
    } else {
        df.inbox()?.into_iter().filter(|(.., v)| inbox_boot(v) != Some(st.stream.boot)).collect()
    };
    let mut consumed: Vec<(u64, u64)> = Vec::new();
    for (d, t) in &def.sources {
        // The tables the plan reads (`Compiled::source`).
        let Some(src) = c.source(env, d, t) else { continue };
        let mut parts: Vec<Changes> = Vec::new();
        if src.ttl_ms == Some(0) {
            instant_ids.push(src.id);
            for (_, b) in st.instant_rows.iter().filter(|(id, _)| *id == src.id) {
                parts.push(Changes { diff: vec![1; b.num_rows()], batch: b.clone() });
            }
            for (region, seq, v) in leftovers.iter().filter(|(r, ..)| (*r >> 32) as u32 == src.id) {
                let Some(r) = env.storage.region(*region) else { continue };
                for b in decode_inbox(&r.desc.schema, v)? {
                    parts.push(Changes { diff: vec![1; b.num_rows()], batch: b });
                }
                consumed.push((*region, *seq));
            }
        } else {
            for region in table_regions(env, &src)? {
                let upto = region.last_seq();
                match positions.get(&region.id) {
                    Some(&after) if upto <= after => {}
                    Some(&after) => {
                        let b = region.changes(after, upto)?;
                        let n = b.num_columns() - 1;
                        let diff = arrow::array::AsArray::as_primitive::<arrow::datatypes::Int64Type>(b.column(n)).values().to_vec();
                        parts.push(Changes { batch: b.project(&(0..n).collect::<Vec<_>>())?, diff });
                    }
                    None => {
                        // The first epoch: the table as of `upto`.
                        for b in region.scan(&ScanRequest { snapshot: Some(upto), ..Default::default() })? {
                            parts.push(Changes { diff: vec![1; b.num_rows()], batch: b });
                        }
                    }
                }
                next.insert(region.id, upto);
            }
        }
        fed += parts.iter().map(|p| p.len()).sum::<usize>();
        inputs.entry(src.id).or_default().extend(parts);
    }
    if positions.keys().any(|r| !next.contains_key(r)) {
        // A source was truncated (new regions): its rows left without
        // retractions. Start over from the sources as they are.
        reset(env, def, st, c)?;
        return Ok(None);
    }
    if fed == 0 && df.epoch() > 0 && next == positions {
        return Ok(Some(0));
    }
    if df.epoch() == 0 {
        // A fresh state (a new flow, one started over, or one whose
        // source ids changed while it ran) computes the whole query: the
        // sink must hold exactly that, not rows an earlier state left.
        empty_sink(env, c)?;
    }
    // EXPIRE AFTER is the watermark: windows (and joined rows) that ended
    // that long ago take no more rows, and their state goes.
    if let Some(e) = def.expire_after_s {
        df.set_watermark(now_ms.saturating_mul(1000).saturating_sub(e.saturating_mul(1_000_000)));
    }
    let started = std::time::Instant::now();
    let out = df.step(&inputs, &c.planner.ctx)?;
    if def.expire_after_s.is_some()
        && st.stream.expired.is_none_or(|t| t.elapsed().as_millis() as u64 >= st.stream.tuning.barrier_interval_ms.max(EXPIRE_EVERY_MS))
    {
        // A scan of the expiring state tables: at most about once a second.
        let n = df.expire()?;
        st.stream.expired = Some(std::time::Instant::now());
        tracing::debug!(flow = %def.name, rows = n, "streaming state of ended windows dropped");
    }
    let epoch_us = started.elapsed().as_micros() as u64;
    // The inbox entries of every instant row this epoch consumed.
    let taken: Vec<(u64, u64)> =
        st.stream.instant_seqs.iter().copied().filter(|(r, _)| instant_ids.contains(&((*r >> 32) as u32))).collect();
    df.consume_inbox(taken.iter().copied().chain(consumed));
    df.commit(&next, &out)?;
    st.stream.recovered = true;
    st.stream.instant_seqs.retain(|(r, _)| !instant_ids.contains(&((*r >> 32) as u32)));
    // State sizes are a scan of every state table: a small state is
    // measured each epoch, a large one at most every STATE_SAMPLE_MS.
    let small = df.stats().iter().map(|o| o.state_rows).sum::<u64>() < STATE_SAMPLE_ROWS;
    if small || st.stream.sampled.is_none_or(|t| t.elapsed().as_millis() as u64 >= STATE_SAMPLE_MS) {
        df.state_size()?;
        st.stream.sampled = Some(std::time::Instant::now());
    }
    publish(env, def, df, epoch_us);
    if tracing::enabled!(tracing::Level::DEBUG) {
        let (state_rows, state_bytes) = df.stats().iter().fold((0, 0), |a, o| (a.0 + o.state_rows, a.1 + o.state_bytes));
        let cache = df.cache_stats();
        tracing::debug!(flow = %def.name, epoch = df.epoch(), rows_in = fed, rows_out = out.len(), epoch_us = started.elapsed().as_micros() as u64,
            commit_us = df.last_commit_us, state_rows, state_bytes, cache_hits = cache.hits, cache_misses = cache.misses,
            cache_bytes = cache.bytes, "streaming epoch");
    }
    st.instant_rows.retain(|(id, _)| !instant_ids.contains(id));
    if crate::failpoint::fire_once("stream_crash_after_barrier") {
        tracing::error!(flow = %def.name, "failpoint stream_crash_after_barrier");
        std::process::abort();
    }
    let rows = apply_sink(env, c, &out, now_ms * 1000)? as u64;
    for (r, seq) in &next {
        if let Some(region) = env.storage.region(*r) {
            if let Err(e) = region.hold_versions(&holder(&def.name), *seq) {
                tracing::warn!(flow = %def.name, region = r, error = %e, "cannot hold versions for a streaming flow");
            }
        }
    }
    st.progress.regions = next;
    st.progress.backfilling = false;
    st.progress.last_execution_ms = Some(now_ms);
    st.progress.rows_written += rows;
    env.catalog.put_flow_progress(&def.name, &st.progress)?;
    Ok(Some(rows))
}

/// At most how often a streaming flow with EXPIRE AFTER scans its state
/// for ended windows (or every barrier when barriers are further apart).
const EXPIRE_EVERY_MS: u64 = 1000;

/// How often a streaming flow measures its state tables' sizes, and below
/// how many state rows it measures them every epoch (a cheap scan).
const STATE_SAMPLE_MS: u64 = 5000;
const STATE_SAMPLE_ROWS: u64 = 10_000;

/// Publish the dataflow's per-operator counters for
/// `information_schema.flow_operators`.
fn publish(env: &Env, def: &FlowDef, df: &Dataflow, epoch_us: u64) {
    let cache_bytes = df.cache_stats().bytes;
    let rows = df
        .stats()
        .into_iter()
        .map(|o| crate::catalog::stream_stats::FlowOperatorStats {
            operator: o.name.to_string(),
            rows_in: o.rows_in,
            rows_out: o.rows_out,
            state_rows: o.state_rows,
            state_bytes: o.state_bytes,
            cache_hits: o.cache_hits,
            cache_misses: o.cache_misses,
            epoch: df.epoch(),
            epoch_ms: epoch_us as f64 / 1000.0,
            barrier_ms: df.last_commit_us as f64 / 1000.0,
            cache_bytes,
        })
        .collect();
    env.catalog.flow_operators.write().insert(def.name.clone(), rows);
}

/// Start a flow over: drop its state and empty its sink; the caller
/// renders the flow again, whose first epoch reads the sources whole.
fn reset(env: &Env, def: &FlowDef, st: &mut TaskState, c: &Compiled) -> Result<()> {
    tracing::warn!(flow = %def.name, "a source of a streaming flow was truncated; the flow starts over");
    st.stream.df = None;
    let (kv, cache) = state_kv(env, st.stream.tuning.state_cache_bytes_max)?;
    StateStore::destroy(kv.as_ref(), &cache, &std::mem::take(&mut st.stream.namespace))?;
    empty_sink(env, c)
}

fn empty_sink(env: &Env, c: &Compiled) -> Result<()> {
    let regions = table_regions(env, &c.sink)?;
    let schema = regions.first().map(|r| r.desc.schema.clone()).ok_or_else(|| err!(Internal, "sink has no region"))?;
    sink::replace(env.storage, &c.sink, &regions, &RecordBatch::new_empty(schema), None).map(|_| ())
}

/// Identity of sink rows: primary key then time index.
fn identity_cols(sink: &crate::catalog::TableDef) -> Vec<usize> {
    let mut c = sink.primary_key.clone();
    c.extend(sink.time_index);
    c
}

/// Apply an epoch's output to the sink in one atomic commit: rows with a
/// positive diff are upserted; rows with a negative one are deleted by
/// identity unless a new row takes that identity.
fn apply_sink(env: &Env, c: &Compiled, delta: &[(Row, i64)], now_us: i64) -> Result<usize> {
    if delta.is_empty() {
        return Ok(0);
    }
    let regions = table_regions(env, &c.sink)?;
    let schema = regions.first().map(|r| r.desc.schema.clone()).ok_or_else(|| err!(Internal, "sink has no region"))?;
    let to_sink = |rows: Vec<(Row, i64)>| -> Result<RecordBatch> {
        let ch = Changes::from_rows(&c.shape.columns, rows)?;
        sink::sink_batch(&c.sink, schema.clone(), &c.shape.columns, &c.fills, &[ch.batch], now_us)
    };
    let puts = to_sink(delta.iter().filter(|(_, d)| *d > 0).map(|(r, _)| (r.clone(), 1)).collect())?;
    let dels = to_sink(delta.iter().filter(|(_, d)| *d < 0).map(|(r, _)| (r.clone(), 1)).collect())?;
    let id_cols = identity_cols(&c.sink);
    let conv = RowConverter::new(id_cols.iter().map(|&i| SortField::new(schema.field(i).data_type().clone())).collect())?;
    let ids = |b: &RecordBatch| conv.convert_columns(&id_cols.iter().map(|&i| b.column(i).clone()).collect::<Vec<_>>());
    let put_ids = ids(&puts)?;
    let kept: HashSet<&[u8]> = (0..put_ids.num_rows()).map(|i| put_ids.row(i).data()).collect();
    let del_ids = ids(&dels)?;
    let gone = arrow::array::BooleanArray::from_iter((0..del_ids.num_rows()).map(|i| Some(!kept.contains(del_ids.row(i).data()))));
    let dels = arrow::compute::filter_record_batch(&dels, &gone)?;
    let mut parts: Vec<RegionWrites> = vec![RegionWrites::default(); regions.len()];
    let with_rowid = |b: &RecordBatch, first: u64| -> Result<RecordBatch> {
        let n = b.num_rows() as u64;
        let mut cols: Vec<ArrayRef> = b.columns().to_vec();
        cols.push(Arc::new(UInt64Array::from_iter_values(first..first + n)));
        let mut fields: Vec<arrow::datatypes::FieldRef> = b.schema().fields().iter().cloned().collect();
        fields.push(Arc::new(arrow::datatypes::Field::new(crate::storage::ROWID_COLUMN, arrow::datatypes::DataType::UInt64, false)));
        Ok(RecordBatch::try_new(Arc::new(arrow::datatypes::Schema::new(fields)), cols)?)
    };
    if dels.num_rows() > 0 {
        // Tombstones by identity (the sink has a time index: the row id
        // plays no part in it).
        for (r, part) in crate::storage::route_rows(&dels, &c.sink.primary_key, regions.len() as u32)? {
            parts[r as usize].deletes.push(with_rowid(&part, 0)?);
        }
    }
    let mut next = TEMP_ROWID_BASE;
    if puts.num_rows() > 0 {
        for (r, part) in crate::storage::route_rows(&puts, &c.sink.primary_key, regions.len() as u32)? {
            parts[r as usize].puts.push(with_rowid(&part, next)?);
            next += part.num_rows() as u64;
        }
    }
    env.storage.commit(regions.iter().cloned().zip(parts).collect())?;
    Ok(puts.num_rows() + dels.num_rows())
}
