//! Flow definitions and their durable progress, stored in the catalog's
//! sled tree beside tables and views (`flow/<name>` and
//! `flowprog/<name>`). The catalog only stores them; the flow engine runs
//! them. Flows are unique per process (GreptimeDB: per catalog).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Catalog;
use crate::err;
use crate::error::Result;

pub(super) const FLOW_PREFIX: &str = "flow/";
pub(super) const PROGRESS_PREFIX: &str = "flowprog/";
/// `flowstate/<flow>/<key>`: a flow's incremental partial states.
pub(super) const STATE_PREFIX: &str = "flowstate/";
/// Dirty windows of a catch-up in progress (start, end as little-endian
/// i64 pairs: a long backfill's list is written once, not as JSON per batch).
pub(super) const PENDING_PREFIX: &str = "flowpend/";

/// A flow as CREATE FLOW defined it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FlowDef {
    pub id: u32,
    pub name: String,
    /// The database the flow was created in (its query's context).
    pub database: String,
    pub sink_database: String,
    pub sink_table: String,
    /// Source tables as (database, table).
    pub sources: Vec<(String, String)>,
    /// The sources' table ids (empty while pending).
    #[serde(default)]
    pub source_ids: Vec<u32>,
    /// The query, in canonical form.
    pub query: String,
    pub expire_after_s: Option<i64>,
    pub eval_interval_s: Option<i64>,
    pub comment: Option<String>,
    /// The user's WITH options (flow_type is not one of them).
    pub options: BTreeMap<String, String>,
    /// "batching" or "streaming".
    pub flow_type: String,
    /// Waiting for a missing source (defer_on_missing_source).
    pub pending: bool,
    pub created_ms: i64,
    pub updated_ms: i64,
}

/// What a flow has made durable: for each source region, the sequence up
/// to which every change is reflected in the sink.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FlowProgress {
    /// Region id → sequence.
    pub regions: BTreeMap<u64, u64>,
    pub last_execution_ms: Option<i64>,
    /// The last EVAL INTERVAL tick run (ms since the epoch).
    pub last_tick_ms: Option<i64>,
    /// Windows written since the flow started (backfill included).
    pub windows_done: u64,
    pub rows_written: u64,
    /// Backfill: windows of the history found at the first evaluation and
    /// windows of them written so far (0 / 0 with `backfill = false`).
    #[serde(default)]
    pub backfill_total: u64,
    #[serde(default)]
    pub backfill_done: u64,
    /// The backfill has not finished.
    #[serde(default)]
    pub backfilling: bool,
    /// A catch-up in several batches: the changes were read up to these
    /// sequences into the dirty windows stored under `flowpend/`; windows
    /// starting before `pending_from` are done. Empty when none is running.
    #[serde(default)]
    pub pending_upto: BTreeMap<u64, u64>,
    #[serde(default)]
    pub pending_from: i64,
    /// The catch-up recomputes the whole sink (a source was truncated).
    #[serde(default)]
    pub pending_full: bool,
}

/// What a running flow's evaluations did (in memory, since the process
/// started): `information_schema.flow_statistics`.
#[derive(Debug, Clone, Default)]
pub struct FlowStatistics {
    /// "incremental", "full_snapshot" or "disabled".
    pub mode: String,
    /// Why the flow is in full-snapshot mode or disabled.
    pub reason: Option<String>,
    pub evaluations: u64,
    pub incremental_evaluations: u64,
    pub full_evaluations: u64,
    /// Fallback reason → count.
    pub fallbacks: BTreeMap<String, u64>,
    /// Windows recomputed from the source by fallbacks.
    pub fallback_windows: u64,
    /// Groups whose min / max lost its extreme to a retraction.
    pub extreme_recomputes: u64,
    pub rows_read: u64,
    /// Sink rows written (changed or new), deleted (gone), and left
    /// alone because their group's output did not change.
    pub rows_written: u64,
    pub rows_deleted: u64,
    pub rows_unchanged: u64,
    /// Times the flow's plans were made (its first evaluation, then after
    /// each change of a definition).
    pub plans_made: u64,
    pub last_error: Option<String>,
    /// When the oldest change not yet reflected was noticed (ms since the
    /// epoch); None when up to date.
    pub dirty_since_ms: Option<i64>,
    /// Windows with partial state.
    pub state_windows: u64,
}

/// Most entries one region's write clock keeps; past it a new write
/// extends the newest entry (the oldest stay exact).
const CLOCK_ENTRIES_MAX: usize = 4096;

/// Wall-clock times of the writes to flow sources that some flow may not
/// reflect yet, per region: (first sequence, last sequence, ms since the
/// epoch) of each write notice, oldest first. A flow's lag is now minus
/// the time of the oldest write past its checkpoint (issue 9: exact lag).
/// In memory: after a restart the writes before it have no time.
#[derive(Debug, Default)]
pub struct WriteClock {
    regions: parking_lot::Mutex<std::collections::HashMap<u64, std::collections::VecDeque<(u64, u64, i64)>>>,
}

impl WriteClock {
    /// Record a write of `seqs` (inclusive) at `ms`; returns the number of
    /// entries the region holds (the caller prunes when it grows).
    pub fn note(&self, region: u64, seqs: (u64, u64), ms: i64) -> usize {
        let mut m = self.regions.lock();
        let q = m.entry(region).or_default();
        let full = q.len() >= CLOCK_ENTRIES_MAX;
        match q.back_mut() {
            // Same millisecond, or full: the newest entry covers it.
            Some(last) if last.2 == ms || full => last.1 = last.1.max(seqs.1),
            _ => q.push_back((seqs.0, seqs.1, ms)),
        }
        q.len()
    }

    /// Forget the writes every reader has reflected (up to `upto`); None:
    /// nobody reads the region any more.
    pub fn prune(&self, region: u64, upto: Option<u64>) {
        let mut m = self.regions.lock();
        match upto {
            None => {
                m.remove(&region);
            }
            Some(u) => {
                if let Some(q) = m.get_mut(&region) {
                    while q.front().is_some_and(|e| e.1 <= u) {
                        q.pop_front();
                    }
                }
            }
        }
    }

    /// Entries held for a region.
    pub fn len(&self, region: u64) -> usize {
        self.regions.lock().get(&region).map_or(0, |q| q.len())
    }

    /// When the oldest write after sequence `after` happened; None when
    /// the clock has no such write (none noticed since the start).
    pub fn oldest_after(&self, region: u64, after: u64) -> Option<i64> {
        self.regions.lock().get(&region)?.iter().find(|e| e.1 > after).map(|e| e.2)
    }
}

impl Catalog {
    pub fn flows(&self) -> Vec<FlowDef> {
        self.tree
            .scan_prefix(FLOW_PREFIX.as_bytes())
            .filter_map(|kv| kv.ok())
            .filter_map(|(_, v)| serde_json::from_slice::<FlowDef>(&v).ok())
            .collect()
    }

    pub fn flow(&self, name: &str) -> Option<FlowDef> {
        let v = self.tree.get(format!("{FLOW_PREFIX}{name}").as_bytes()).ok()??;
        serde_json::from_slice(&v).ok()
    }

    /// Create or replace a flow's definition.
    pub fn put_flow(&self, def: &FlowDef) -> Result<()> {
        let v = serde_json::to_vec(def).map_err(|e| err!(Internal, "cannot encode flow: {e}"))?;
        self.put(format!("{FLOW_PREFIX}{}", def.name), v)
    }

    /// Remove a flow and its progress.
    pub fn drop_flow(&self, name: &str) -> Result<()> {
        self.del(format!("{FLOW_PREFIX}{name}"))?;
        self.flow_stats.write().remove(name);
        self.flow_operators.write().remove(name);
        self.commit_flow_state(name, None, true, Vec::new())?;
        self.del(format!("{PENDING_PREFIX}{name}"))?;
        self.del(format!("{PROGRESS_PREFIX}{name}"))
    }

    /// One entry of a flow's incremental state.
    pub fn flow_state(&self, flow: &str, key: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.tree.get(format!("{STATE_PREFIX}{flow}/{key}").as_bytes())?.map(|v| v.to_vec()))
    }

    /// Commit changes to a flow's incremental state (None deletes; `clear`
    /// first deletes every entry) together with its progress, in one sled
    /// batch, then flush: the checkpoint and the states it covers become
    /// durable together or not at all.
    pub fn commit_flow_state(
        &self,
        flow: &str,
        progress: Option<&FlowProgress>,
        clear: bool,
        changes: Vec<(String, Option<Vec<u8>>)>,
    ) -> Result<()> {
        let mut batch = sled::Batch::default();
        if clear {
            for kv in self.tree.scan_prefix(format!("{STATE_PREFIX}{flow}/").as_bytes()) {
                let (k, _) = kv?;
                batch.remove(k);
            }
        }
        for (k, v) in changes {
            let key = format!("{STATE_PREFIX}{flow}/{k}");
            match v {
                Some(v) => batch.insert(key.as_bytes(), v),
                None => batch.remove(key.as_bytes()),
            }
        }
        if let Some(p) = progress {
            let v = serde_json::to_vec(p).map_err(|e| err!(Internal, "cannot encode flow progress: {e}"))?;
            batch.insert(format!("{PROGRESS_PREFIX}{flow}").as_bytes(), v);
        }
        self.tree.apply_batch(batch)?;
        self.tree.flush()?;
        Ok(())
    }

    /// The dirty windows of a flow's catch-up in progress (see
    /// `FlowProgress::pending_upto`).
    pub fn flow_pending(&self, name: &str) -> Vec<(i64, i64)> {
        let Ok(Some(v)) = self.tree.get(format!("{PENDING_PREFIX}{name}").as_bytes()) else { return vec![] };
        v.chunks_exact(16)
            .map(|c| {
                let (a, b) = c.split_at(8);
                (i64::from_le_bytes(a.try_into().expect("8 bytes")), i64::from_le_bytes(b.try_into().expect("8 bytes")))
            })
            .collect()
    }

    pub fn put_flow_pending(&self, name: &str, windows: &[(i64, i64)]) -> Result<()> {
        let mut v = Vec::with_capacity(windows.len() * 16);
        for (s, e) in windows {
            v.extend_from_slice(&s.to_le_bytes());
            v.extend_from_slice(&e.to_le_bytes());
        }
        self.put(format!("{PENDING_PREFIX}{name}"), v)
    }

    pub fn flow_progress(&self, name: &str) -> Option<FlowProgress> {
        let v = self.tree.get(format!("{PROGRESS_PREFIX}{name}").as_bytes()).ok()??;
        serde_json::from_slice(&v).ok()
    }

    /// Make a flow's progress durable (sled flush).
    pub fn put_flow_progress(&self, name: &str, p: &FlowProgress) -> Result<()> {
        let v = serde_json::to_vec(p).map_err(|e| err!(Internal, "cannot encode flow progress: {e}"))?;
        self.put(format!("{PROGRESS_PREFIX}{name}"), v)
    }

    /// A new flow id (one more than the largest so far).
    pub fn next_flow_id(&self) -> u32 {
        self.flows().iter().map(|f| f.id).max().unwrap_or(1023) + 1
    }
}

impl FlowDef {
    /// SHOW CREATE FLOW's text (GreptimeDB's layout: one clause per line;
    /// OR REPLACE never appears).
    pub fn create_text(&self) -> String {
        let q = |s: &str| s.replace('\'', "''");
        let mut out = format!("CREATE FLOW IF NOT EXISTS {}\nSINK TO {}.{}\n", self.name, self.sink_database, self.sink_table);
        if let Some(e) = self.expire_after_s {
            out.push_str(&format!("EXPIRE AFTER '{e} s'\n"));
        }
        if let Some(e) = self.eval_interval_s {
            out.push_str(&format!("EVAL INTERVAL '{e} s'\n"));
        }
        if let Some(c) = &self.comment {
            out.push_str(&format!("COMMENT '{}'\n", q(c)));
        }
        if !self.options.is_empty() {
            let o: Vec<String> = self.options.iter().map(|(k, v)| format!("{k} = '{}'", q(v))).collect();
            out.push_str(&format!("WITH ({})\n", o.join(", ")));
        }
        out.push_str(&format!("AS {}", self.query));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::WriteClock;

    #[test]
    fn write_clock_answers_the_oldest_unreflected_write() {
        let c = WriteClock::default();
        assert_eq!(c.oldest_after(1, 0), None);
        c.note(1, (1, 3), 1_000);
        c.note(1, (4, 4), 1_000); // same millisecond: one entry
        c.note(1, (5, 9), 2_000);
        assert_eq!(c.len(1), 2);
        assert_eq!(c.oldest_after(1, 0), Some(1_000));
        assert_eq!(c.oldest_after(1, 3), Some(1_000), "seq 4 is unreflected, written at 1,000");
        assert_eq!(c.oldest_after(1, 4), Some(2_000));
        assert_eq!(c.oldest_after(1, 9), None);
        c.prune(1, Some(4));
        assert_eq!(c.len(1), 1);
        assert_eq!(c.oldest_after(1, 0), Some(2_000));
        c.prune(1, None);
        assert_eq!(c.len(1), 0);
    }
}
