//! One region: memtable of write batches with sequences.
//!
//! v0: in memory only; the WAL, flushes and SSTs replace the internals
//! behind the same API.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, UInt64Array};
use arrow::compute::{concat_batches, filter_record_batch, take};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::row::{RowConverter, SortField};

use super::{
    RegionDescriptor, RegionId, ScanRequest, SeqNo, StorageConfig, WriteListener, WriteNotice,
    ROWID_COLUMN,
};
use crate::error::Result;

struct Entry {
    seq: SeqNo,
    delete: bool,
    /// User columns plus `__rowid` last.
    batch: RecordBatch,
}

struct Inner {
    entries: Vec<Entry>,
    last_seq: SeqNo,
    next_rowid: u64,
}

/// A region: the unit of storage, sequencing and (later) distribution.
pub struct Region {
    pub id: RegionId,
    pub desc: RegionDescriptor,
    inner: Mutex<Inner>,
    listeners: Arc<Mutex<Vec<Arc<dyn WriteListener>>>>,
    stored_schema: SchemaRef,
}

impl Region {
    pub(super) fn open(
        id: RegionId,
        desc: RegionDescriptor,
        _dir: &Path,
        _config: StorageConfig,
        listeners: Arc<Mutex<Vec<Arc<dyn WriteListener>>>>,
    ) -> Result<Region> {
        let mut fields: Vec<Field> = desc.schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.push(Field::new(ROWID_COLUMN, DataType::UInt64, false));
        let stored_schema = Arc::new(Schema::new(fields));
        Ok(Region {
            id,
            desc,
            inner: Mutex::new(Inner { entries: Vec::new(), last_seq: 0, next_rowid: 1 }),
            listeners,
            stored_schema,
        })
    }

    /// Latest sequence written.
    pub fn last_seq(&self) -> SeqNo {
        self.inner.lock().unwrap().last_seq
    }

    /// Insert rows (all user columns, table order). Returns the sequence.
    pub fn write(&self, batch: &RecordBatch) -> Result<SeqNo> {
        let n = batch.num_rows();
        let seq;
        {
            let mut inner = self.inner.lock().unwrap();
            let start = inner.next_rowid;
            inner.next_rowid += n as u64;
            let rowids: ArrayRef = Arc::new(UInt64Array::from_iter_values(start..start + n as u64));
            let mut cols = batch.columns().to_vec();
            cols.push(rowids);
            let stored = RecordBatch::try_new(self.stored_schema.clone(), cols)?;
            inner.last_seq += 1;
            seq = inner.last_seq;
            inner.entries.push(Entry { seq, delete: false, batch: stored });
        }
        self.notify(seq, batch, n);
        Ok(seq)
    }

    /// Delete rows as returned by a scan with `with_rowid` (all user columns
    /// plus `__rowid`).
    pub fn delete(&self, rows: &RecordBatch) -> Result<SeqNo> {
        let n = rows.num_rows();
        let seq;
        {
            let mut inner = self.inner.lock().unwrap();
            let stored = RecordBatch::try_new(self.stored_schema.clone(), rows.columns().to_vec())?;
            inner.last_seq += 1;
            seq = inner.last_seq;
            inner.entries.push(Entry { seq, delete: true, batch: stored });
        }
        self.notify(seq, rows, n);
        Ok(seq)
    }

    fn notify(&self, seq: SeqNo, batch: &RecordBatch, rows: usize) {
        let time_range = self.desc.time_index.and_then(|ti| {
            let col = batch.column(ti);
            let col = arrow::compute::cast(col, &DataType::Int64).ok()?;
            let a = col.as_any().downcast_ref::<arrow::array::Int64Array>()?;
            let min = arrow::compute::min(a)?;
            let max = arrow::compute::max(a)?;
            Some((min, max))
        });
        let notice = WriteNotice {
            table_name: self.desc.table_name.clone(),
            region_id: self.id,
            seq_range: (seq, seq),
            time_range,
            rows,
        };
        for l in self.listeners.lock().unwrap().iter() {
            l.on_write(&notice);
        }
    }

    /// The visible rows: newest version of each identity, deletes dropped.
    pub fn scan(&self, req: &ScanRequest) -> Result<Vec<RecordBatch>> {
        let inner = self.inner.lock().unwrap();
        let ncols = self.desc.schema.fields().len();
        let selected: Vec<&Entry> = inner
            .entries
            .iter()
            .filter(|e| req.seq.after.is_none_or(|a| e.seq > a) && req.seq.upto.is_none_or(|u| e.seq <= u))
            .collect();
        if selected.is_empty() {
            return Ok(vec![]);
        }
        let batches: Vec<RecordBatch> = selected.iter().map(|e| e.batch.clone()).collect();
        let all = concat_batches(&self.stored_schema, &batches)?;
        let mut is_delete = Vec::with_capacity(all.num_rows());
        for e in &selected {
            is_delete.extend(std::iter::repeat_n(e.delete, e.batch.num_rows()));
        }
        // Identity: (pk, ts) for last-write-wins tables, else the row id.
        let key_cols: Vec<usize> = if self.desc.last_write_wins() {
            let mut k = self.desc.primary_key.clone();
            k.push(self.desc.time_index.unwrap());
            k
        } else {
            vec![ncols]
        };
        let conv = RowConverter::new(
            key_cols.iter().map(|&c| SortField::new(all.column(c).data_type().clone())).collect(),
        )?;
        let rows = conv.convert_columns(&key_cols.iter().map(|&c| all.column(c).clone()).collect::<Vec<_>>())?;
        let mut latest: HashMap<arrow::row::Row<'_>, usize> = HashMap::with_capacity(all.num_rows());
        for i in 0..all.num_rows() {
            latest.insert(rows.row(i), i);
        }
        let mut keep: Vec<u32> = latest.into_values().filter(|&i| !is_delete[i]).map(|i| i as u32).collect();
        keep.sort_unstable();
        let idx = arrow::array::UInt32Array::from(keep);
        let mut cols: Vec<ArrayRef> = Vec::new();
        let proj: Vec<usize> = req.projection.clone().unwrap_or_else(|| (0..ncols).collect());
        let mut fields = Vec::new();
        for &c in &proj {
            cols.push(take(all.column(c), &idx, None)?);
            fields.push(self.stored_schema.field(c).clone());
        }
        if req.with_rowid {
            cols.push(take(all.column(ncols), &idx, None)?);
            fields.push(self.stored_schema.field(ncols).clone());
        }
        let out = RecordBatch::try_new_with_options(
            Arc::new(Schema::new(fields)),
            cols,
            &arrow::array::RecordBatchOptions::new().with_row_count(Some(idx.len())),
        )?;
        // Time range filter.
        let out = match (req.time_range, self.desc.time_index) {
            (Some((lo, hi)), Some(ti)) if proj.contains(&ti) => {
                let pos = proj.iter().position(|&c| c == ti).unwrap();
                let t = arrow::compute::cast(out.column(pos), &DataType::Int64)?;
                let t = t.as_any().downcast_ref::<arrow::array::Int64Array>().unwrap();
                let mask: BooleanArray = t.iter().map(|v| Some(v.is_some_and(|v| v >= lo && v < hi))).collect();
                filter_record_batch(&out, &mask)?
            }
            _ => out,
        };
        Ok(vec![out])
    }
}
