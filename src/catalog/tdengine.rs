//! TDengine's objects beside weir's tables: supertables (a weir table whose
//! primary key is `tbname` plus the tags), their child tables (a name, the
//! supertable and the tag values), snodes and streams with their progress.
//! Stored in the catalog's sled tree under `tdstable/`, `tdchild/`,
//! `tdsnode/`, `tdstream/`, `tdstreamst/` and `tdstreamgr/`, read from sled
//! when used (as flows are). The catalog stores them; `sql::tdengine` and
//! `flow::tdengine` give them meaning.
//!
//! A stream's progress is one header (JSON, `tdstreamst/db/name`: what is
//! not per group) and one compact binary record per group
//! (`tdstreamgr/db/name\0group`: progress, window marks, open windows,
//! output times, subtable, last tick). A write is the keys whose bytes
//! changed, applied as one sled batch ([`StreamStateWrite`]). An
//! evaluation's write is not flushed: its annex (the changes since the last
//! annex, [`StreamStateWrite::annex`]) goes into the WAL record of the
//! evaluation's output, and [`Catalog::apply_stream_annexes`] puts what a
//! crash took from sled back at open. Each write moves `eval_no`, which
//! orders annexes against the stored header.

use std::collections::{BTreeMap, BTreeSet};

use serde::{de::DeserializeOwned, Deserialize, Serialize};

use super::{Catalog, DEFERRED, DEFER_FLUSH};
use crate::err;
use crate::error::Result;

const STABLE_PREFIX: &str = "tdstable/";
const CHILD_PREFIX: &str = "tdchild/";
const SNODE_PREFIX: &str = "tdsnode/";
const STREAM_PREFIX: &str = "tdstream/";
pub(super) const STREAM_STATE_PREFIX: &str = "tdstreamst/";
pub(super) const STREAM_GROUP_PREFIX: &str = "tdstreamgr/";
/// First bytes of a stream state annex (other annexes are not ours).
const ANNEX_MAGIC: &[u8; 5] = b"tdst1";

/// A supertable: the weir table of the same name holds every child's rows.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SuperTableDef {
    pub database: String,
    pub name: String,
    /// The tag columns, in order (the weir table's primary key is `tbname`
    /// then these).
    pub tags: Vec<String>,
    /// The data columns, in order (the first is the timestamp).
    pub columns: Vec<String>,
}

/// A child table of a supertable.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ChildTableDef {
    pub database: String,
    pub name: String,
    pub stable: String,
    /// Tag values as text (None: NULL), in the supertable's tag order.
    pub tags: Vec<Option<String>>,
    pub created_ms: i64,
}

/// An snode (stream node) on a dnode: its id is the dnode's.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SnodeDef {
    pub id: i64,
    pub created_ms: i64,
}

/// A stream as CREATE STREAM defined it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StreamDef {
    pub id: u64,
    pub database: String,
    pub name: String,
    /// The CREATE STREAM statement, canonical.
    pub sql: String,
    /// "Running" or "Stopped" (what STOP / START set); failures are runtime.
    pub status: String,
    /// The snode the stream runs on.
    pub snode: i64,
    pub created_ms: i64,
}

/// One window a stream has computed: its end, row count and a digest of
/// its trigger rows (a change means late data or an update).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct WindowMark {
    pub end: i64,
    pub rows: u64,
    pub digest: u64,
}

/// A RECALCULATE request.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RecalcRequest {
    pub id: u64,
    pub start_us: i64,
    pub end_us: Option<i64>,
    /// "Pending", "Running", "Finished" or "Failed".
    pub status: String,
    pub request_ms: i64,
    pub message: String,
}

/// Where a group of a stream's trigger stands: its first and newest row
/// times as last seen, where window cutting resumes (every window starting
/// before it is closed and marked) and its `_tgrpid`.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct GroupProgress {
    pub id: i64,
    pub first_ts: i64,
    pub max_ts: i64,
    pub resume_us: i64,
    /// The start of the oldest window still recorded when older records
    /// were expired (None: every window is recorded): changes before it
    /// trigger nothing, as with EXPIRED_TIME.
    #[serde(default)]
    pub horizon_us: Option<i64>,
    /// IDLE_TIMEOUT: processing time (ms) new rows of the group were last
    /// seen (0: never), and since when it is idle (an IDLE event fired).
    #[serde(default)]
    pub seen_ms: i64,
    #[serde(default)]
    pub idle_ms: Option<i64>,
}

/// A stream's progress: per group, the windows computed (by start); the
/// last tick of PERIOD / SLIDING triggers; recalculation requests; the
/// trigger regions' sequences read up to and each group's progress (so an
/// evaluation reads only the change log since and the groups it touched).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StreamState {
    /// Trigger region id → sequence the windows reflect.
    #[serde(default)]
    pub seqs: BTreeMap<u64, u64>,
    #[serde(default)]
    pub groups: BTreeMap<String, GroupProgress>,
    /// Open windows per group (window start → processing time of their
    /// last computation: at WINDOW_OPEN, then every MAX_DELAY).
    #[serde(default)]
    pub open: BTreeMap<String, BTreeMap<i64, i64>>,
    pub windows: BTreeMap<String, BTreeMap<i64, WindowMark>>,
    pub last_tick_us: BTreeMap<String, i64>,
    pub recalcs: Vec<RecalcRequest>,
    /// The groups' output subtables (group key → name).
    pub subtables: BTreeMap<String, String>,
    pub rows_written: u64,
    pub windows_done: u64,
    /// Trigger rows the evaluations read (the change log aside).
    #[serde(default)]
    pub trigger_rows_read: u64,
    pub last_error: Option<String>,
    /// Per group, window start → the first-column times of the rows its
    /// computation wrote (so a recomputation, or a window that merged into
    /// another or split, deletes the rows it no longer gives).
    #[serde(default)]
    pub outputs: BTreeMap<String, BTreeMap<i64, Vec<i64>>>,
    /// Evaluations failed in a row, and when the next try is due (ms):
    /// a failed evaluation keeps no progress and is retried with backoff.
    #[serde(default)]
    pub failures: u32,
    #[serde(default)]
    pub retry_at_ms: Option<i64>,
    /// NOTIFY: messages sent (their sequence), events delivered and dropped.
    #[serde(default)]
    pub notify_seq: u64,
    #[serde(default)]
    pub notify_sent: u64,
    #[serde(default)]
    pub notify_dropped: u64,
    /// Progress metrics (ins_streams): rows taken from the trigger table's
    /// change log, when the last evaluation ended, when the last catch-up
    /// that succeeded began (every write before it is processed), and the
    /// evaluations of about the last two minutes (`StreamSample`).
    #[serde(default)]
    pub input_rows: u64,
    #[serde(default)]
    pub last_run_ms: Option<i64>,
    #[serde(default)]
    pub caught_up_ms: Option<i64>,
    #[serde(default)]
    pub samples: Vec<StreamSample>,
    /// Writes of this state so far (each moves it): a WAL annex newer than
    /// the stored header is applied at open, an older one is not.
    #[serde(default)]
    pub eval_no: u64,
}

/// One evaluation, for the 1-minute rates: when it ended (ms), the
/// stream's input and output row totals then, and how long it took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamSample {
    pub at_ms: i64,
    pub input_rows: u64,
    pub output_rows: u64,
    pub took_ms: i64,
}

impl StreamState {
    /// Samples kept: at most this many, none older than two minutes.
    pub const SAMPLES_MAX: usize = 240;

    /// Record an evaluation that ended at `at_ms` after `took_ms`.
    pub fn sample(&mut self, at_ms: i64, took_ms: i64) {
        self.samples.push(StreamSample { at_ms, input_rows: self.input_rows, output_rows: self.rows_written, took_ms });
        let keep_from = at_ms - 120_000;
        self.samples.retain(|s| s.at_ms >= keep_from);
        let n = self.samples.len();
        if n > Self::SAMPLES_MAX {
            self.samples.drain(..n - Self::SAMPLES_MAX);
        }
    }

    /// (input rows/s, output rows/s, mean evaluation time in ms of the
    /// evaluations that wrote rows) over the minute before `now_ms`; None
    /// before any evaluation.
    pub fn rates_1m(&self, now_ms: i64) -> Option<(f64, f64, Option<f64>)> {
        let last = self.samples.last()?;
        let from = now_ms - 60_000;
        // The baseline: the newest sample a minute old, else the oldest.
        let base = self.samples.iter().rev().find(|s| s.at_ms <= from).or(self.samples.first())?;
        let secs = ((now_ms - base.at_ms).max(1) as f64 / 1000.0).min(60.0).max(0.001);
        let input = last.input_rows.saturating_sub(base.input_rows) as f64 / secs;
        let output = last.output_rows.saturating_sub(base.output_rows) as f64 / secs;
        let mut prev = base.output_rows;
        let mut took = Vec::new();
        for s in self.samples.iter().filter(|s| s.at_ms > base.at_ms) {
            if s.output_rows > prev && s.at_ms > from {
                took.push(s.took_ms as f64);
            }
            prev = s.output_rows;
        }
        let latency = (!took.is_empty()).then(|| took.iter().sum::<f64>() / took.len() as f64);
        Some((input, output, latency))
    }
}

/// A write of a stream's state: sled keys and their new bytes (None:
/// removed), only those that changed, and the annex that carries every
/// change since the stream's last annex.
#[derive(Debug, Clone, Default)]
pub struct StreamStateWrite {
    stream: String,
    ops: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// For the output's WAL record (empty until `with_annex`).
    pub annex: Vec<u8>,
}

impl StreamStateWrite {
    /// Keys written (for tests and statistics).
    pub fn keys(&self) -> usize {
        self.ops.len()
    }
}

/// A little-endian reader over a record.
struct Rd<'a>(&'a [u8]);

impl Rd<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if self.0.len() < n {
            return Err(err!(Corrupt, "stream state record is truncated"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    fn i64(&mut self) -> Result<i64> {
        Ok(self.u64()? as i64)
    }
    fn bytes(&mut self) -> Result<Vec<u8>> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

/// 2: the progress has `seen_ms` and `idle_ms` (1 is read too).
const GROUP_RECORD_VERSION: u8 = 2;

impl StreamState {
    /// Every group key that has a per-group entry.
    fn group_keys(&self) -> BTreeSet<&String> {
        let mut k: BTreeSet<&String> = self.groups.keys().collect();
        k.extend(self.open.keys());
        k.extend(self.windows.keys());
        k.extend(self.last_tick_us.keys());
        k.extend(self.subtables.keys());
        k.extend(self.outputs.keys());
        k
    }

    /// A group's record: `version u8 | flags u8 | progress | marks |
    /// open windows | outputs | subtable | last tick`, little-endian,
    /// lists counted by a u32 (flags: progress, horizon, subtable, tick).
    fn encode_group(&self, key: &str) -> Vec<u8> {
        let p = self.groups.get(key);
        let sub = self.subtables.get(key);
        let tick = self.last_tick_us.get(key);
        let marks = self.windows.get(key);
        let open = self.open.get(key);
        let outs = self.outputs.get(key);
        let flags = u8::from(p.is_some())
            | u8::from(p.is_some_and(|p| p.horizon_us.is_some())) << 1
            | u8::from(sub.is_some()) << 2
            | u8::from(tick.is_some()) << 3
            | u8::from(marks.is_some()) << 4
            | u8::from(open.is_some()) << 5
            | u8::from(outs.is_some()) << 6
            | u8::from(p.is_some_and(|p| p.idle_ms.is_some())) << 7;
        let mut o = Vec::with_capacity(64 + marks.map_or(0, |m| m.len() * 32) + outs.map_or(0, |m| m.len() * 20));
        o.push(GROUP_RECORD_VERSION);
        o.push(flags);
        if let Some(p) = p {
            for v in [p.id, p.first_ts, p.max_ts, p.resume_us, p.horizon_us.unwrap_or(0), p.seen_ms, p.idle_ms.unwrap_or(0)] {
                o.extend_from_slice(&v.to_le_bytes());
            }
        }
        let marks = marks.cloned().unwrap_or_default();
        o.extend_from_slice(&(marks.len() as u32).to_le_bytes());
        for (s, m) in &marks {
            o.extend_from_slice(&s.to_le_bytes());
            o.extend_from_slice(&m.end.to_le_bytes());
            o.extend_from_slice(&m.rows.to_le_bytes());
            o.extend_from_slice(&m.digest.to_le_bytes());
        }
        let open = open.cloned().unwrap_or_default();
        o.extend_from_slice(&(open.len() as u32).to_le_bytes());
        for (s, at) in &open {
            o.extend_from_slice(&s.to_le_bytes());
            o.extend_from_slice(&at.to_le_bytes());
        }
        let outs = outs.cloned().unwrap_or_default();
        o.extend_from_slice(&(outs.len() as u32).to_le_bytes());
        for (s, ts) in &outs {
            o.extend_from_slice(&s.to_le_bytes());
            o.extend_from_slice(&(ts.len() as u32).to_le_bytes());
            for t in ts {
                o.extend_from_slice(&t.to_le_bytes());
            }
        }
        put_bytes(&mut o, sub.map_or(&[][..], |s| s.as_bytes()));
        o.extend_from_slice(&tick.copied().unwrap_or(0).to_le_bytes());
        o
    }

    fn decode_group(&mut self, key: &str, rec: &[u8]) -> Result<()> {
        let mut r = Rd(rec);
        let version = r.u8()?;
        if !(1..=GROUP_RECORD_VERSION).contains(&version) {
            return Err(err!(Corrupt, "stream state record of group {key:?} has an unknown version"));
        }
        let flags = r.u8()?;
        if flags & 1 != 0 {
            let (id, first_ts, max_ts, resume_us, horizon) = (r.i64()?, r.i64()?, r.i64()?, r.i64()?, r.i64()?);
            let horizon_us = (flags & 2 != 0).then_some(horizon);
            let (seen_ms, idle) = if version >= 2 { (r.i64()?, r.i64()?) } else { (0, 0) };
            let idle_ms = (flags & 128 != 0).then_some(idle);
            self.groups.insert(key.to_string(), GroupProgress { id, first_ts, max_ts, resume_us, horizon_us, seen_ms, idle_ms });
        }
        let mut marks = BTreeMap::new();
        for _ in 0..r.u32()? {
            let s = r.i64()?;
            marks.insert(s, WindowMark { end: r.i64()?, rows: r.u64()?, digest: r.u64()? });
        }
        if flags & 16 != 0 {
            self.windows.insert(key.to_string(), marks);
        }
        let mut open = BTreeMap::new();
        for _ in 0..r.u32()? {
            let s = r.i64()?;
            open.insert(s, r.i64()?);
        }
        if flags & 32 != 0 {
            self.open.insert(key.to_string(), open);
        }
        let mut outs = BTreeMap::new();
        for _ in 0..r.u32()? {
            let s = r.i64()?;
            let n = r.u32()? as usize;
            let mut ts = Vec::with_capacity(n.min(1 << 16));
            for _ in 0..n {
                ts.push(r.i64()?);
            }
            outs.insert(s, ts);
        }
        if flags & 64 != 0 {
            self.outputs.insert(key.to_string(), outs);
        }
        let sub = r.bytes()?;
        if flags & 4 != 0 {
            let sub = String::from_utf8(sub).map_err(|_| err!(Corrupt, "stream state record of group {key:?} has a bad subtable name"))?;
            self.subtables.insert(key.to_string(), sub);
        }
        let tick = r.i64()?;
        if flags & 8 != 0 {
            self.last_tick_us.insert(key.to_string(), tick);
        }
        Ok(())
    }

    /// The header: everything but the per-group maps.
    fn header(&self) -> StreamState {
        StreamState {
            groups: BTreeMap::new(),
            open: BTreeMap::new(),
            windows: BTreeMap::new(),
            last_tick_us: BTreeMap::new(),
            subtables: BTreeMap::new(),
            outputs: BTreeMap::new(),
            seqs: self.seqs.clone(),
            recalcs: self.recalcs.clone(),
            samples: self.samples.clone(),
            last_error: self.last_error.clone(),
            ..*self
        }
    }
}

fn header_key(database: &str, name: &str) -> String {
    format!("{STREAM_STATE_PREFIX}{database}/{name}")
}

fn group_prefix(database: &str, name: &str) -> String {
    format!("{STREAM_GROUP_PREFIX}{database}/{name}\0")
}

impl Catalog {
    fn td_list<T: DeserializeOwned>(&self, prefix: &str) -> Vec<T> {
        self.tree
            .scan_prefix(prefix.as_bytes())
            .filter_map(|kv| kv.ok())
            .filter_map(|(_, v)| serde_json::from_slice::<T>(&v).ok())
            .collect()
    }

    fn td_get<T: DeserializeOwned>(&self, key: String) -> Option<T> {
        let v = self.tree.get(key.as_bytes()).ok()??;
        serde_json::from_slice(&v).ok()
    }

    fn td_put<T: Serialize>(&self, key: String, v: &T) -> Result<()> {
        let v = serde_json::to_vec(v).map_err(|e| err!(Internal, "cannot encode {key}: {e}"))?;
        self.put(key, v)
    }

    pub fn stables(&self, database: &str) -> Vec<SuperTableDef> {
        self.td_list(&format!("{STABLE_PREFIX}{database}/"))
    }

    pub fn stable(&self, database: &str, name: &str) -> Option<SuperTableDef> {
        self.td_get(format!("{STABLE_PREFIX}{database}/{name}"))
    }

    pub fn put_stable(&self, def: &SuperTableDef) -> Result<()> {
        self.td_put(format!("{STABLE_PREFIX}{}/{}", def.database, def.name), def)
    }

    pub fn drop_stable(&self, database: &str, name: &str) -> Result<()> {
        self.del(format!("{STABLE_PREFIX}{database}/{name}"))
    }

    pub fn child_tables(&self, database: &str) -> Vec<ChildTableDef> {
        self.td_list(&format!("{CHILD_PREFIX}{database}/"))
    }

    pub fn child_table(&self, database: &str, name: &str) -> Option<ChildTableDef> {
        self.td_get(format!("{CHILD_PREFIX}{database}/{name}"))
    }

    pub fn put_child_table(&self, def: &ChildTableDef) -> Result<()> {
        self.td_put(format!("{CHILD_PREFIX}{}/{}", def.database, def.name), def)
    }

    pub fn drop_child_table(&self, database: &str, name: &str) -> Result<()> {
        self.del(format!("{CHILD_PREFIX}{database}/{name}"))
    }

    pub fn snodes(&self) -> Vec<SnodeDef> {
        let mut v: Vec<SnodeDef> = self.td_list(SNODE_PREFIX);
        v.sort_by_key(|s| s.id);
        v
    }

    pub fn put_snode(&self, def: &SnodeDef) -> Result<()> {
        self.td_put(format!("{SNODE_PREFIX}{:020}", def.id), def)
    }

    pub fn drop_snode(&self, id: i64) -> Result<()> {
        self.del(format!("{SNODE_PREFIX}{id:020}"))
    }

    pub fn streams(&self) -> Vec<StreamDef> {
        self.td_list(STREAM_PREFIX)
    }

    pub fn stream(&self, database: &str, name: &str) -> Option<StreamDef> {
        self.td_get(format!("{STREAM_PREFIX}{database}/{name}"))
    }

    pub fn put_stream(&self, def: &StreamDef) -> Result<()> {
        self.td_put(format!("{STREAM_PREFIX}{}/{}", def.database, def.name), def)
    }

    /// Remove a stream and its progress.
    pub fn drop_stream(&self, database: &str, name: &str) -> Result<()> {
        let mut batch = sled::Batch::default();
        for k in self.tree.scan_prefix(group_prefix(database, name).as_bytes()).keys() {
            batch.remove(k?);
        }
        self.tree.apply_batch(batch)?;
        self.unannexed.lock().remove(&header_key(database, name));
        self.del(header_key(database, name))?;
        self.del(format!("{STREAM_PREFIX}{database}/{name}"))
    }

    /// A stream's progress (the default when it has none or it cannot be
    /// read).
    pub fn stream_state(&self, database: &str, name: &str) -> StreamState {
        let mut st: StreamState = self.td_get(header_key(database, name)).unwrap_or_default();
        let prefix = group_prefix(database, name);
        for kv in self.tree.scan_prefix(prefix.as_bytes()) {
            let Ok((k, v)) = kv else { continue };
            let key = String::from_utf8_lossy(&k[prefix.len()..]).into_owned();
            if let Err(e) = st.decode_group(&key, &v) {
                tracing::warn!(stream = %name, error = %e, "stream state record skipped");
            }
        }
        st
    }

    /// Only the header of a stream's progress (the per-group maps empty):
    /// counters, samples, recalculations, errors.
    pub fn stream_state_header(&self, database: &str, name: &str) -> StreamState {
        self.td_get::<StreamState>(header_key(database, name)).map(|s| s.header()).unwrap_or_default()
    }

    /// Write a stream's progress durably (statements: STOP / START,
    /// RECALCULATE requests, a failed evaluation's error).
    pub fn put_stream_state(&self, database: &str, name: &str, st: &StreamState) -> Result<()> {
        let mut st = st.clone();
        let w = self.stage_stream_state(database, name, &mut st)?;
        self.apply_stream_state(w, true)
    }

    /// The keys of `st` whose bytes differ from the stored ones (and the
    /// stored groups `st` has no more); moves `st.eval_no`.
    pub fn stage_stream_state(&self, database: &str, name: &str, st: &mut StreamState) -> Result<StreamStateWrite> {
        st.eval_no += 1;
        let hk = header_key(database, name);
        let header = serde_json::to_vec(&st.header()).map_err(|e| err!(Internal, "cannot encode {hk}: {e}"))?;
        let mut ops = vec![(hk.clone().into_bytes(), Some(header))];
        let prefix = group_prefix(database, name);
        let mut stored: BTreeMap<Vec<u8>, sled::IVec> = BTreeMap::new();
        for kv in self.tree.scan_prefix(prefix.as_bytes()) {
            let (k, v) = kv?;
            stored.insert(k.to_vec(), v);
        }
        for g in st.group_keys() {
            let k = format!("{prefix}{g}").into_bytes();
            let rec = st.encode_group(g);
            if stored.remove(&k).is_none_or(|old| old != rec.as_slice()) {
                ops.push((k, Some(rec)));
            }
        }
        ops.extend(stored.into_keys().map(|k| (k, None)));
        Ok(StreamStateWrite { stream: hk, ops, annex: Vec::new() })
    }

    /// Fill `w.annex` with every change of the stream since its last
    /// annex, `w`'s included: all of its state when that is not known
    /// (since open, or after a durable write nothing followed).
    pub fn with_annex(&self, mut w: StreamStateWrite, stream_id: u64, eval_no: u64) -> StreamStateWrite {
        let un = self.unannexed.lock();
        let mut a = Vec::with_capacity(64);
        a.extend_from_slice(ANNEX_MAGIC);
        a.extend_from_slice(&stream_id.to_le_bytes());
        a.extend_from_slice(&eval_no.to_le_bytes());
        put_bytes(&mut a, w.stream.as_bytes());
        let mut ops: BTreeMap<&[u8], Option<&[u8]>> = BTreeMap::new();
        match un.get(&w.stream) {
            Some(pending) => {
                a.push(0);
                ops.extend(pending.iter().map(|(k, v)| (k.as_slice(), v.as_deref())));
                ops.extend(w.ops.iter().map(|(k, v)| (k.as_slice(), v.as_deref())));
            }
            None => {
                // The whole state: the header and every group record as
                // they will be once `w` is applied.
                a.push(1);
                let prefix = w.stream.replacen(STREAM_STATE_PREFIX, STREAM_GROUP_PREFIX, 1) + "\0";
                let stored: Vec<(sled::IVec, sled::IVec)> = self.tree.scan_prefix(prefix.as_bytes()).filter_map(|kv| kv.ok()).collect();
                let mut all: BTreeMap<Vec<u8>, Option<Vec<u8>>> = stored.into_iter().map(|(k, v)| (k.to_vec(), Some(v.to_vec()))).collect();
                all.extend(w.ops.iter().cloned());
                let bytes = encode_ops(all.iter().filter(|(_, v)| v.is_some()).map(|(k, v)| (k.as_slice(), v.as_deref())));
                a.extend_from_slice(&bytes);
                w.annex = a;
                return w;
            }
        }
        a.extend_from_slice(&encode_ops(ops.into_iter()));
        w.annex = a;
        w
    }

    /// Apply a write as one sled batch: flushed when `durable`; else it
    /// is made durable by its annex (`annexed`: the changes pending an
    /// annex are cleared) or by a later annex that carries it.
    pub fn apply_stream_state(&self, w: StreamStateWrite, durable: bool) -> Result<()> {
        let annexed = !w.annex.is_empty();
        let mut batch = sled::Batch::default();
        for (k, v) in &w.ops {
            match v {
                Some(v) => batch.insert(k.as_slice(), v.as_slice()),
                None => batch.remove(k.as_slice()),
            }
        }
        self.tree.apply_batch(batch)?;
        if durable {
            if DEFER_FLUSH.with(|d| d.get()) == 0 {
                self.tree.flush()?;
            } else {
                DEFERRED.with(|d| d.set(true));
            }
        }
        let mut un = self.unannexed.lock();
        if durable || annexed {
            un.insert(w.stream, BTreeMap::new());
        } else if let Some(p) = un.get_mut(&w.stream) {
            p.extend(w.ops);
        }
        Ok(())
    }

    /// Make every catalog write so far durable (one fsync): stream state
    /// changes pending an annex are durable too.
    pub fn flush(&self) -> Result<()> {
        let mut un = self.unannexed.lock();
        self.tree.flush()?;
        for p in un.values_mut() {
            p.clear();
        }
        Ok(())
    }

    /// Put back the stream states a crash took from sled: `annexes` are
    /// the ones the WAL held (any order); `stream_id` tells a stream's id
    /// by its database and name (None: dropped). An annex is applied when
    /// it is its stream's (same id) and newer than the stored header, in
    /// `eval_no` order; then the catalog is flushed. Returns how many
    /// were applied.
    pub fn apply_stream_annexes(&self, annexes: &[Vec<u8>], stream_id: impl Fn(&str, &str) -> Option<u64>) -> Result<usize> {
        let mut parsed = Vec::new();
        for a in annexes {
            let Some(rest) = a.strip_prefix(ANNEX_MAGIC.as_slice()) else { continue };
            let mut r = Rd(rest);
            let (id, no) = (r.u64()?, r.u64()?);
            let stream = String::from_utf8(r.bytes()?).map_err(|_| err!(Corrupt, "stream state annex names no stream"))?;
            let full = r.u8()? == 1;
            parsed.push((stream, no, id, full, decode_ops(&mut r)?));
        }
        parsed.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        let mut applied = 0;
        for (stream, no, id, full, ops) in parsed {
            let Some((db, name)) = stream.strip_prefix(STREAM_STATE_PREFIX).and_then(|s| s.split_once('/')) else { continue };
            if stream_id(db, name) != Some(id) {
                continue;
            }
            let stored = self.td_get::<StreamState>(stream.clone()).map_or(0, |s| s.eval_no);
            if no <= stored {
                continue;
            }
            let mut batch = sled::Batch::default();
            if full {
                for k in self.tree.scan_prefix(group_prefix(db, name).as_bytes()).keys() {
                    batch.remove(k?);
                }
            }
            for (k, v) in ops {
                match v {
                    Some(v) => batch.insert(k, v),
                    None => batch.remove(k),
                }
            }
            self.tree.apply_batch(batch)?;
            applied += 1;
        }
        self.tree.flush()?;
        Ok(applied)
    }

    /// A new id for streams and recalculation requests.
    pub fn next_td_id(&self) -> Result<u64> {
        Ok(self.db.generate_id()? + 1)
    }
}

fn encode_ops<'a>(ops: impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)>) -> Vec<u8> {
    let ops: Vec<_> = ops.collect();
    let mut o = Vec::with_capacity(16 + ops.iter().map(|(k, v)| k.len() + v.map_or(0, |v| v.len()) + 9).sum::<usize>());
    o.extend_from_slice(&(ops.len() as u32).to_le_bytes());
    for (k, v) in ops {
        put_bytes(&mut o, k);
        match v {
            Some(v) => {
                o.push(1);
                put_bytes(&mut o, v);
            }
            None => o.push(0),
        }
    }
    o
}

#[allow(clippy::type_complexity)]
fn decode_ops(r: &mut Rd) -> Result<Vec<(Vec<u8>, Option<Vec<u8>>)>> {
    let n = r.u32()?;
    let mut out = Vec::with_capacity((n as usize).min(1 << 16));
    for _ in 0..n {
        let k = r.bytes()?;
        let v = if r.u8()? == 1 { Some(r.bytes()?) } else { None };
        out.push((k, v));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> StreamState {
        let mut st = StreamState::default();
        for (i, g) in ["t1", "t2\u{1}\u{0}"].iter().enumerate() {
            let g = g.to_string();
            let i = i as i64;
            st.groups.insert(
                g.clone(),
                GroupProgress {
                    id: i,
                    first_ts: -5,
                    max_ts: 99,
                    resume_us: 40,
                    horizon_us: (i == 1).then_some(7),
                    seen_ms: 5,
                    idle_ms: (i == 0).then_some(9),
                },
            );
            st.windows.insert(
                g.clone(),
                (0..3).map(|w| (w * 10, WindowMark { end: w * 10 + 10, rows: 2, digest: u64::MAX - w as u64 })).collect(),
            );
            st.outputs.insert(g.clone(), [(0, vec![1, 2]), (10, vec![])].into_iter().collect());
            st.subtables.insert(g.clone(), format!("out_{i}"));
        }
        st.open.insert("t1".into(), [(30, 123)].into_iter().collect());
        st.last_tick_us.insert("t3".into(), 77);
        st.seqs.insert(5, 9);
        st.rows_written = 12;
        st
    }

    #[test]
    fn stream_state_round_trips_and_a_write_is_the_groups_that_changed() {
        let dir = tempfile::tempdir().unwrap();
        let cat = Catalog::open(dir.path()).unwrap();
        let mut st = sample();
        cat.put_stream_state("db", "s", &st).unwrap();
        st.eval_no = 1;
        assert_eq!(cat.stream_state("db", "s"), st);
        assert_eq!(cat.stream_state_header("db", "s"), st.header());
        st.windows.get_mut("t1").unwrap().insert(30, WindowMark { end: 40, rows: 1, digest: 3 });
        let w = cat.stage_stream_state("db", "s", &mut st).unwrap();
        assert_eq!(w.keys(), 2, "the header and one group");
        cat.apply_stream_state(w, false).unwrap();
        assert_eq!(cat.stream_state("db", "s"), st);
        // A group gone is a removal.
        st.last_tick_us.remove("t3");
        let w = cat.stage_stream_state("db", "s", &mut st).unwrap();
        assert_eq!(w.keys(), 2);
        cat.apply_stream_state(w, false).unwrap();
        assert_eq!(cat.stream_state("db", "s"), st);
        cat.drop_stream("db", "s").unwrap();
        assert_eq!(cat.stream_state("db", "s"), StreamState::default());
    }

    #[test]
    fn annexes_put_back_the_writes_a_crash_took() {
        let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (live, after_crash) = (Catalog::open(d1.path()).unwrap(), Catalog::open(d2.path()).unwrap());
        // The first annex after open carries everything.
        let mut st = sample();
        let w = live.stage_stream_state("db", "s", &mut st).unwrap();
        let a1 = live.with_annex(w.clone(), 7, st.eval_no).annex;
        live.apply_stream_state(live.with_annex(w, 7, st.eval_no), false).unwrap();
        // A write without an annex, then one whose annex carries both.
        st.rows_written += 1;
        st.subtables.insert("t9".into(), "out_9".into());
        let w = live.stage_stream_state("db", "s", &mut st).unwrap();
        live.apply_stream_state(w, false).unwrap();
        st.windows.get_mut("t2\u{1}\u{0}").unwrap().clear();
        st.groups.remove("t1");
        let w = live.with_annex(live.stage_stream_state("db", "s", &mut st).unwrap(), 7, st.eval_no);
        let a3 = w.annex.clone();
        live.apply_stream_state(w, false).unwrap();
        assert_eq!(live.stream_state("db", "s"), st);
        // The other catalog lost every write: the annexes (in any order)
        // put the state back; other streams' ids, older annexes and
        // foreign bytes are skipped.
        let id = |db: &str, name: &str| (db == "db" && name == "s").then_some(7);
        assert_eq!(after_crash.apply_stream_annexes(&[a3.clone(), b"other".to_vec(), a1.clone()], id).unwrap(), 2);
        assert_eq!(after_crash.stream_state("db", "s"), st);
        assert_eq!(after_crash.apply_stream_annexes(&[a1.clone(), a3.clone()], id).unwrap(), 0);
        assert_eq!(after_crash.stream_state("db", "s"), st);
        let d3 = tempfile::tempdir().unwrap();
        let fresh = Catalog::open(d3.path()).unwrap();
        assert_eq!(fresh.apply_stream_annexes(&[a1, a3], |_, _| Some(8)).unwrap(), 0, "a stream created again under the name");
    }
}
