//! TDengine's objects beside weir's tables: supertables (a weir table whose
//! primary key is `tbname` plus the tags), their child tables (a name, the
//! supertable and the tag values), snodes and streams with their progress.
//! Stored in the catalog's sled tree under `tdstable/`, `tdchild/`,
//! `tdsnode/`, `tdstream/` and `tdstreamst/`, read from sled when used (as
//! flows are). The catalog stores them; `sql::tdengine` and
//! `flow::tdengine` give them meaning.

use std::collections::BTreeMap;

use serde::{de::DeserializeOwned, Deserialize, Serialize};

use super::Catalog;
use crate::err;
use crate::error::Result;

const STABLE_PREFIX: &str = "tdstable/";
const CHILD_PREFIX: &str = "tdchild/";
const SNODE_PREFIX: &str = "tdsnode/";
const STREAM_PREFIX: &str = "tdstream/";
pub(super) const STREAM_STATE_PREFIX: &str = "tdstreamst/";

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
        self.del(format!("{STREAM_STATE_PREFIX}{database}/{name}"))?;
        self.del(format!("{STREAM_PREFIX}{database}/{name}"))
    }

    pub fn stream_state(&self, database: &str, name: &str) -> StreamState {
        self.td_get(format!("{STREAM_STATE_PREFIX}{database}/{name}")).unwrap_or_default()
    }

    pub fn put_stream_state(&self, database: &str, name: &str, st: &StreamState) -> Result<()> {
        self.td_put(format!("{STREAM_STATE_PREFIX}{database}/{name}"), st)
    }

    /// A new id for streams and recalculation requests.
    pub fn next_td_id(&self) -> Result<u64> {
        Ok(self.db.generate_id()? + 1)
    }
}
