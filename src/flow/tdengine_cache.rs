//! The trigger rows of a TDengine stream's open windows, kept in memory as
//! the change log brings them (`TriggerCache`), so the evaluation that
//! closes a window neither reads the window's rows from storage to cut it
//! nor again to compute it: `%%trows` is a `Memory` relation over the rows
//! kept (issue 13: every window close read its rows twice).
//!
//! The rows reflect the stream's checkpoint (`StreamState::seqs`): an
//! evaluation whose checkpoint is not the one the cache was left at (a
//! failure, RECALCULATE's first pass, START, a restart) starts empty. Per
//! group the cache holds every trigger row from a time on (the group's
//! resume point when it was last cut); a change that is not rows appended
//! after it (a late row, an update, a delete) drops the group, which is
//! then read from storage at its next close and kept again. Only INTERVAL
//! and SLIDING streams over a supertable without PRE_FILTER use it (their
//! windows need times and digests only); rows are held as the batches they
//! came in (`chunks`), each group indexing its rows there.
//!
//! May import what `flow::tdengine` imports.

use std::collections::{BTreeMap, HashMap, HashSet};

use arrow::array::{Array, ArrayRef, RecordBatch};

use super::tdengine::GroupRows;
use crate::error::Result;
use crate::exec::plan::PlanColumn;

/// Rows kept over all groups before the cache gives up (and starts over
/// at the next closes): a stream whose open windows hold more reads them
/// from storage as before.
pub const CACHE_ROWS_MAX: usize = 4_000_000;

/// One group's rows from `from` on, in time order (`GroupRows::at` set).
struct Kept {
    from: i64,
    rows: GroupRows,
}

/// A stream's trigger rows of open windows (see the module's header).
#[derive(Default)]
pub struct TriggerCache {
    /// What the rows reflect: the trigger table (id, columns) and the
    /// checkpoint they are complete up to.
    at: Option<(u64, String, BTreeMap<u64, u64>)>,
    /// The trigger table's columns (`%%trows`'s), the rows' schema.
    columns: Vec<PlanColumn>,
    chunks: HashMap<u32, RecordBatch>,
    next_chunk: u32,
    groups: HashMap<String, Kept>,
    rows: usize,
}

impl TriggerCache {
    /// Start an evaluation at checkpoint `seqs` over a trigger table with
    /// `columns`: what was kept at another checkpoint or for another table
    /// shape is dropped.
    pub fn begin(&mut self, table_id: u64, columns: &[PlanColumn], seqs: &BTreeMap<u64, u64>) {
        let shape: String = columns.iter().map(|c| format!("{}:{:?};", c.name, c.ty)).collect();
        let same = self.at.as_ref().is_some_and(|(id, s, q)| *id == table_id && *s == shape && q == seqs && !seqs.is_empty());
        if !same || self.rows > CACHE_ROWS_MAX {
            self.clear();
        }
        self.columns = columns.to_vec();
        self.at = Some((table_id, shape, seqs.clone()));
    }

    /// The evaluation ended at checkpoint `seqs` (its changes are in).
    pub fn finish(&mut self, seqs: &BTreeMap<u64, u64>) {
        match &mut self.at {
            Some((_, _, q)) if !seqs.is_empty() => *q = seqs.clone(),
            _ => self.clear(),
        }
        self.collect_garbage();
    }

    pub fn clear(&mut self) {
        self.at = None;
        self.chunks.clear();
        self.groups.clear();
        self.rows = 0;
    }

    /// The trigger table's columns: the rows' (and `%%trows`'s) schema.
    pub fn columns(&self) -> &[PlanColumn] {
        &self.columns
    }

    /// Keep a batch of trigger rows (a change log's or a read's; its
    /// columns found by name and cast to the trigger table's types): its
    /// chunk id and its rows' digests (`tdengine::batch_digests`, over the
    /// columns as `%%trows` has them). None when a column is missing.
    pub fn add_chunk(&mut self, batch: &RecordBatch) -> Result<Option<(u32, Vec<u64>)>> {
        let schema = batch.schema();
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(self.columns.len());
        for c in &self.columns {
            let Ok(i) = schema.index_of(&c.name) else { return Ok(None) };
            let a = batch.column(i);
            let want = c.ty.to_arrow();
            cols.push(if a.data_type() == &want { a.clone() } else { arrow::compute::cast(a.as_ref(), &want)? });
        }
        let mut digests = Vec::new();
        super::tdengine::batch_digests(&cols, batch.num_rows(), &mut digests)?;
        let schema = crate::exec::plan::arrow_schema(&self.columns);
        let chunk = RecordBatch::try_new(schema, cols)?;
        let id = self.next_chunk;
        self.next_chunk = self.next_chunk.wrapping_add(1);
        self.chunks.insert(id, chunk);
        Ok(Some((id, digests)))
    }

    /// Rows appended to a group (times and digests with their place in
    /// the chunks), when nothing was retracted: kept if the group is kept
    /// and none is before its start; else the group is dropped.
    pub fn append(&mut self, key: &str, retracted: bool, rows: &[(i64, u64, (u32, u32))]) {
        let ok = !retracted && self.groups.get(key).is_some_and(|k| rows.iter().all(|r| r.0 >= k.from));
        if !ok {
            self.drop_group(key);
            return;
        }
        let Some(k) = self.groups.get_mut(key) else { return };
        for &(ts, d, at) in rows {
            k.rows.ts.push(ts);
            k.rows.digest.push(d);
            k.rows.at.push(at);
        }
        self.rows += rows.len();
        super::tdengine::sort_group(&mut k.rows);
    }

    pub fn drop_group(&mut self, key: &str) {
        if let Some(k) = self.groups.remove(key) {
            self.rows -= k.rows.ts.len();
        }
    }

    /// A group's rows from `from` on, when it is kept from there or
    /// earlier.
    pub fn rows_from(&self, key: &str, from: i64) -> Option<GroupRows> {
        let k = self.groups.get(key)?;
        if k.from > from {
            return None;
        }
        let lo = k.rows.ts.partition_point(|&t| t < from);
        let r = &k.rows;
        Some(GroupRows {
            values: r.values.clone(),
            ts: r.ts[lo..].to_vec(),
            digest: r.digest[lo..].to_vec(),
            at: r.at[lo..].to_vec(),
            ..Default::default()
        })
    }

    /// Keep a group's rows from `from` on (`g` in time order, every row
    /// placed in a chunk; otherwise the group is dropped).
    pub fn keep(&mut self, key: &str, g: &GroupRows, from: i64) {
        self.drop_group(key);
        if g.at.len() != g.ts.len() {
            return;
        }
        let lo = g.ts.partition_point(|&t| t < from);
        let rows = GroupRows {
            values: g.values.clone(),
            ts: g.ts[lo..].to_vec(),
            digest: g.digest[lo..].to_vec(),
            at: g.at[lo..].to_vec(),
            ..Default::default()
        };
        self.rows += rows.ts.len();
        self.groups.insert(key.to_string(), Kept { from, rows });
    }

    /// Drop the chunks no group's rows are in any more.
    fn collect_garbage(&mut self) {
        let used: HashSet<u32> = self.groups.values().flat_map(|k| k.rows.at.iter().map(|a| a.0)).collect();
        self.chunks.retain(|id, _| used.contains(id));
    }

    /// The rows at `places` as one batch of the trigger table's columns.
    pub fn batch(&self, places: &[(u32, u32)]) -> Result<RecordBatch> {
        let schema = crate::exec::plan::arrow_schema(&self.columns);
        // The chunks used, numbered for `interleave`.
        let mut ids: HashMap<u32, usize> = HashMap::new();
        let mut used: Vec<&RecordBatch> = Vec::new();
        let mut idx: Vec<(usize, usize)> = Vec::with_capacity(places.len());
        for &(c, r) in places {
            let n = match ids.get(&c) {
                Some(&n) => n,
                None => {
                    let chunk = self.chunks.get(&c).ok_or_else(|| crate::err!(Internal, "stream cache lost a chunk of its rows"))?;
                    used.push(chunk);
                    ids.insert(c, used.len() - 1);
                    used.len() - 1
                }
            };
            idx.push((n, r as usize));
        }
        if idx.is_empty() {
            return Ok(RecordBatch::new_empty(schema));
        }
        let mut cols = Vec::with_capacity(self.columns.len());
        for k in 0..self.columns.len() {
            let arrays: Vec<&dyn Array> = used.iter().map(|b| b.column(k).as_ref()).collect();
            cols.push(arrow::compute::interleave(&arrays, &idx)?);
        }
        Ok(RecordBatch::try_new(schema, cols)?)
    }

    /// Rows kept over all groups.
    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::SqlType;
    use arrow::array::{Int64Array, StringArray, TimestampMicrosecondArray};
    use std::sync::Arc;

    fn cols() -> Vec<PlanColumn> {
        vec![PlanColumn::new("ts", SqlType::Timestamp), PlanColumn::new("v", SqlType::Int8), PlanColumn::new("tbname", SqlType::Text)]
    }

    fn chunk(rows: &[(i64, i64, &str)]) -> RecordBatch {
        let schema = crate::exec::plan::arrow_schema(&cols());
        let ts: TimestampMicrosecondArray = rows.iter().map(|r| Some(r.0)).collect();
        let v: Int64Array = rows.iter().map(|r| Some(r.1)).collect();
        let t: StringArray = rows.iter().map(|r| Some(r.2)).collect();
        RecordBatch::try_new(schema, vec![Arc::new(ts), Arc::new(v), Arc::new(t)]).unwrap()
    }

    fn places(rows: usize, id: u32, digests: &[u64], ts: &[i64]) -> Vec<(i64, u64, (u32, u32))> {
        (0..rows).map(|i| (ts[i], digests[i], (id, i as u32))).collect()
    }

    #[test]
    fn kept_rows_are_appended_served_and_dropped_on_late_rows() {
        let mut c = TriggerCache::default();
        let seqs: BTreeMap<u64, u64> = [(1, 10)].into();
        c.begin(7, &cols(), &seqs);
        let (id, d) = c.add_chunk(&chunk(&[(100, 1, "a"), (200, 2, "a")])).unwrap().unwrap();
        // A group that is not kept takes no rows.
        c.append("a", false, &places(2, id, &d, &[100, 200]));
        assert!(c.rows_from("a", 0).is_none());
        let g = GroupRows { ts: vec![100, 200], digest: d.clone(), at: vec![(id, 0), (id, 1)], ..Default::default() };
        c.keep("a", &g, 150);
        assert_eq!(c.len(), 1);
        assert!(c.rows_from("a", 100).is_none(), "not kept from 100");
        let (id2, d2) = c.add_chunk(&chunk(&[(300, 3, "a")])).unwrap().unwrap();
        c.append("a", false, &places(1, id2, &d2, &[300]));
        let r = c.rows_from("a", 150).unwrap();
        assert_eq!(r.ts, vec![200, 300]);
        let b = c.batch(&r.at).unwrap();
        let v = b.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(v.values(), &[2, 3]);
        // The checkpoint moves on: still kept; the first chunk's row 0 is
        // garbage but row 1 is in use.
        let next: BTreeMap<u64, u64> = [(1, 11)].into();
        c.finish(&next);
        c.begin(7, &cols(), &next);
        assert!(c.rows_from("a", 200).is_some());
        // A late row drops the group.
        let (id3, d3) = c.add_chunk(&chunk(&[(120, 4, "a")])).unwrap().unwrap();
        c.append("a", false, &places(1, id3, &d3, &[120]));
        assert!(c.rows_from("a", 150).is_none());
        assert_eq!(c.len(), 0);
        // Another checkpoint than the one left at: everything goes.
        c.keep("a", &g, 150);
        c.begin(7, &cols(), &seqs);
        assert!(c.is_empty());
    }

    #[test]
    fn digests_do_not_depend_on_the_chunk() {
        let mut c = TriggerCache::default();
        c.begin(1, &cols(), &[(1, 1)].into());
        let (_, d1) = c.add_chunk(&chunk(&[(1, 5, "x"), (2, 6, "y")])).unwrap().unwrap();
        let (_, d2) = c.add_chunk(&chunk(&[(2, 6, "y")])).unwrap().unwrap();
        assert_eq!(d1[1], d2[0]);
        assert_ne!(d1[0], d1[1]);
    }
}
