//! Row versions: the hidden columns, row identity, dedup and version pruning.
//!
//! Owns the "full" schema every memtable chunk and SST uses (user columns,
//! then `__rowid`, `__seq`, `__op`) and the kernels that pick the newest
//! version of each identity or discard versions nobody can read any more.
//! Imports only `crate::error` and arrow.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch, RecordBatchOptions, UInt32Array, UInt64Array};
use arrow::buffer::BooleanBuffer;
use arrow::compute::{concat, filter_record_batch, lexsort_to_indices, take_record_batch, SortColumn, SortOptions};
use arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef, UInt64Type, UInt8Type};
use arrow::row::{RowConverter, Rows, SortField};

use super::{RegionDescriptor, SeqNo, ROWID_COLUMN};
use crate::error::Result;

pub const SEQ_COLUMN: &str = "__seq";
pub const OP_COLUMN: &str = "__op";
pub const OP_PUT: u8 = 0;
pub const OP_DELETE: u8 = 1;

/// A small multiplicative hasher for identity keys (FxHash's constant);
/// SipHash costs more than the rest of a dedup.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl FxHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().unwrap()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b));
        }
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    /// The product's high bits mix every input bit; its low ones only the
    /// inputs' low bits, which keys often share (timestamps in whole
    /// milliseconds or seconds): rotated down, as hash tables index by the
    /// low bits (a set of such timestamps probed long chains before).
    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }
}

pub type FxBuild = BuildHasherDefault<FxHasher>;

/// Column positions of a region's full schema.
#[derive(Debug)]
pub struct Layout {
    pub user: SchemaRef,
    /// User columns plus `__rowid`.
    pub stored: SchemaRef,
    /// Stored columns plus `__seq` and `__op`.
    pub full: SchemaRef,
    pub ncols: usize,
    pub time_index: Option<usize>,
    pub primary_key: Vec<usize>,
    /// Identity columns (full-schema indices): (pk, time) or the row id.
    pub identity: Vec<usize>,
    /// SST order before `__seq` descending: pk, time, then the row id when
    /// it is the identity (so versions of one identity are adjacent).
    pub sort: Vec<usize>,
}

impl Layout {
    pub fn new(desc: &RegionDescriptor) -> Layout {
        let ncols = desc.schema.fields().len();
        let mut fields: Vec<Field> = desc.schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.push(Field::new(ROWID_COLUMN, DataType::UInt64, false));
        let stored = Arc::new(Schema::new(fields.clone()));
        fields.push(Field::new(SEQ_COLUMN, DataType::UInt64, false));
        fields.push(Field::new(OP_COLUMN, DataType::UInt8, false));
        let full = Arc::new(Schema::new(fields));
        let identity = if desc.last_write_wins() {
            let mut k = desc.primary_key.clone();
            k.push(desc.time_index.unwrap());
            k
        } else {
            vec![ncols]
        };
        let mut sort = desc.primary_key.clone();
        sort.extend(desc.time_index);
        if !desc.last_write_wins() {
            sort.push(ncols);
        }
        Layout {
            user: desc.schema.clone(),
            stored,
            full,
            ncols,
            time_index: desc.time_index,
            primary_key: desc.primary_key.clone(),
            identity,
            sort,
        }
    }
    pub fn rowid(&self) -> usize {
        self.ncols
    }
    pub fn seq(&self) -> usize {
        self.ncols + 1
    }
    pub fn op(&self) -> usize {
        self.ncols + 2
    }
    /// Schema of a subset of full-schema columns.
    pub fn project(&self, cols: &[usize]) -> SchemaRef {
        Arc::new(self.full.project(cols).expect("columns in range"))
    }
}

/// Full-schema batch from stored columns and one sequence / op.
pub fn with_version(layout: &Layout, stored_cols: Vec<ArrayRef>, seq: SeqNo, op: u8) -> Result<RecordBatch> {
    let n = stored_cols.first().map_or(0, |c| c.len());
    let mut cols = stored_cols;
    cols.push(Arc::new(UInt64Array::from_value(seq, n)));
    cols.push(Arc::new(arrow::array::UInt8Array::from_value(op, n)));
    Ok(RecordBatch::try_new_with_options(layout.full.clone(), cols, &RecordBatchOptions::new().with_row_count(Some(n)))?)
}

/// Concatenate batches of one schema column by column.
pub fn concat_all(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<RecordBatch> {
    if batches.len() == 1 {
        return Ok(batches[0].clone());
    }
    let n: usize = batches.iter().map(|b| b.num_rows()).sum();
    let mut cols = Vec::with_capacity(schema.fields().len());
    for i in 0..schema.fields().len() {
        let parts: Vec<&dyn Array> = batches.iter().map(|b| b.column(i).as_ref()).collect();
        cols.push(if parts.is_empty() { arrow::array::new_empty_array(schema.field(i).data_type()) } else { concat(&parts)? });
    }
    Ok(RecordBatch::try_new_with_options(schema.clone(), cols, &RecordBatchOptions::new().with_row_count(Some(n)))?)
}

/// Time values as i64 (timestamps are reinterpreted, not converted).
pub fn time_values(col: &ArrayRef) -> Result<ArrayRef> {
    Ok(arrow::compute::cast(col, &DataType::Int64)?)
}

/// Min and max of a time column, ignoring nulls.
pub fn time_bounds(col: &ArrayRef) -> Result<Option<(i64, i64)>> {
    let t = time_values(col)?;
    let t = t.as_primitive::<Int64Type>();
    Ok(arrow::compute::min(t).zip(arrow::compute::max(t)))
}

/// Identity keys of some rows: either the row id or arrow rows of the key
/// columns (one converter, so keys of different batches compare).
pub enum Keys {
    RowId(UInt64Array),
    Rows(Rows),
}

pub struct KeyEncoder {
    conv: Option<RowConverter>,
}

impl KeyEncoder {
    pub fn new(layout: &Layout) -> Result<KeyEncoder> {
        if layout.identity == [layout.rowid()] {
            return Ok(KeyEncoder { conv: None });
        }
        let fields = layout.identity.iter().map(|&c| SortField::new(layout.full.field(c).data_type().clone())).collect();
        Ok(KeyEncoder { conv: Some(RowConverter::new(fields)?) })
    }
    /// `key_cols` are the identity columns of the batch, in identity order.
    pub fn encode(&self, key_cols: &[ArrayRef]) -> Result<Keys> {
        Ok(match &self.conv {
            None => Keys::RowId(key_cols[0].as_primitive::<UInt64Type>().clone()),
            Some(c) => Keys::Rows(c.convert_columns(key_cols)?),
        })
    }
}

impl Keys {
    pub fn same(&self, i: usize, j: usize) -> bool {
        match self {
            Keys::RowId(a) => a.value(i) == a.value(j),
            Keys::Rows(r) => r.row(i) == r.row(j),
        }
    }
}

/// The identities of some rows (their encoded keys), each mapped to its
/// newest row: the highest sequence, within one sequence the later row
/// (as in one write batch). Built once, it also finds other rows' versions
/// of these identities.
pub enum IdMap<'a> {
    RowId(HashMap<u64, u32, FxBuild>),
    Rows(HashMap<&'a [u8], u32, FxBuild>),
}

impl<'a> IdMap<'a> {
    pub fn newest(keys: &'a Keys, seq: &[u64]) -> IdMap<'a> {
        match keys {
            Keys::RowId(ids) => IdMap::RowId(newest_by(ids.len(), |i| ids.value(i), seq)),
            Keys::Rows(rows) => IdMap::Rows(newest_by(rows.num_rows(), |i| rows.row(i).data(), seq)),
        }
    }

    /// The newest row of the identity of row `i` of `keys` (encoded by the
    /// same encoder), if it is one of these.
    #[inline]
    pub fn get(&self, keys: &Keys, i: usize) -> Option<u32> {
        match (self, keys) {
            (IdMap::RowId(m), Keys::RowId(k)) => m.get(&k.value(i)).copied(),
            (IdMap::Rows(m), Keys::Rows(k)) => m.get(k.row(i).data()).copied(),
            _ => unreachable!("one key encoder"),
        }
    }

    /// Mask of the newest rows among `n`.
    pub fn mask(&self, n: usize) -> BooleanBuffer {
        let mut keep = vec![false; n];
        let winners: Box<dyn Iterator<Item = &u32>> = match self {
            IdMap::RowId(m) => Box::new(m.values()),
            IdMap::Rows(m) => Box::new(m.values()),
        };
        for &b in winners {
            keep[b as usize] = true;
        }
        BooleanBuffer::from(keep)
    }
}

/// Mask of rows whose op is a put.
pub fn put_mask(op: &ArrayRef) -> BooleanBuffer {
    let op = op.as_primitive::<UInt8Type>();
    BooleanBuffer::collect_bool(op.len(), |i| op.value(i) == OP_PUT)
}

pub fn filter(batch: &RecordBatch, mask: BooleanBuffer) -> Result<RecordBatch> {
    if mask.count_set_bits() == batch.num_rows() {
        return Ok(batch.clone());
    }
    Ok(filter_record_batch(batch, &BooleanArray::new(mask, None))?)
}

/// Sort a full-schema batch into SST order: sort columns ascending, then
/// `__seq` descending, then the later row first.
pub fn sort_versions(layout: &Layout, batch: &RecordBatch) -> Result<RecordBatch> {
    let mut cols: Vec<SortColumn> =
        layout.sort.iter().map(|&c| SortColumn { values: batch.column(c).clone(), options: Some(SortOptions::default()) }).collect();
    let desc = Some(SortOptions { descending: true, nulls_first: false });
    cols.push(SortColumn { values: batch.column(layout.seq()).clone(), options: desc });
    cols.push(SortColumn { values: Arc::new(UInt32Array::from_iter_values(0..batch.num_rows() as u32)), options: desc });
    let idx = version_order(&cols)?;
    Ok(take_record_batch(batch, &idx)?)
}

/// The permutation `lexsort_to_indices` gives for SST order's sort columns
/// (`cols`: the key columns ascending, nulls first, then `__seq` and the row
/// position, both descending). Text keys and null-free 64-bit integer keys
/// (the usual series tags and time index) take a faster way to the same
/// order: each text column becomes the rank of its value among the column's
/// distinct values (a hash lookup per row; the few distinct values sorted
/// once), and rows sort on plain integer tuples. On a bulk load's files the
/// string comparisons of the general sort were most of the sort's time.
/// Any other key type, or more than three key columns, sorts as before.
fn version_order(cols: &[SortColumn]) -> Result<UInt32Array> {
    const MAX_KEYS: usize = 3;
    let nkeys = cols.len() - 2;
    let n = cols[0].values.len();
    let fast_key = |c: &SortColumn| match c.values.data_type() {
        DataType::Utf8 => true,
        DataType::Int64 | DataType::Timestamp(..) => c.values.null_count() == 0,
        _ => false,
    };
    let seq = cols[nkeys].values.as_primitive_opt::<UInt64Type>();
    let (Some(seq), true) = (seq, nkeys <= MAX_KEYS && n <= u32::MAX as usize && cols[..nkeys].iter().all(fast_key)) else {
        return Ok(lexsort_to_indices(cols, None)?);
    };
    if seq.null_count() > 0 {
        return Ok(lexsort_to_indices(cols, None)?);
    }
    // Per row: the keys (order-preserving u64s), then !seq and !position,
    // so ascending tuple order is the wanted order.
    let mut rows: Vec<([u64; MAX_KEYS], u64, u32)> = (0..n).map(|i| ([0; MAX_KEYS], !seq.value(i), !(i as u32))).collect();
    for (k, c) in cols[..nkeys].iter().enumerate() {
        let a = &c.values;
        match a.data_type() {
            DataType::Utf8 => {
                let s = a.as_string::<i32>();
                let mut ids: HashMap<&[u8], u32, BuildHasherDefault<FxHasher>> = HashMap::default();
                let mut distinct: Vec<&[u8]> = Vec::new();
                let mut code = vec![0u32; n];
                for (i, c) in code.iter_mut().enumerate() {
                    if s.is_null(i) {
                        continue;
                    }
                    let v = s.value(i).as_bytes();
                    *c = *ids.entry(v).or_insert_with(|| {
                        distinct.push(v);
                        distinct.len() as u32
                    });
                }
                // Codes in first-seen order; ranks in byte order (as arrow
                // compares strings). Null stays 0: first.
                let mut by_value: Vec<u32> = (1..=distinct.len() as u32).collect();
                by_value.sort_unstable_by(|&x, &y| distinct[x as usize - 1].cmp(distinct[y as usize - 1]));
                let mut rank = vec![0u64; distinct.len() + 1];
                for (r, &code) in by_value.iter().enumerate() {
                    rank[code as usize] = r as u64 + 1;
                }
                for (row, &c) in rows.iter_mut().zip(&code) {
                    row.0[k] = rank[c as usize];
                }
            }
            _ => {
                use arrow::datatypes::{TimeUnit as U, *};
                let v: &[i64] = match a.data_type() {
                    DataType::Timestamp(U::Second, _) => a.as_primitive::<TimestampSecondType>().values(),
                    DataType::Timestamp(U::Millisecond, _) => a.as_primitive::<TimestampMillisecondType>().values(),
                    DataType::Timestamp(U::Microsecond, _) => a.as_primitive::<TimestampMicrosecondType>().values(),
                    DataType::Timestamp(U::Nanosecond, _) => a.as_primitive::<TimestampNanosecondType>().values(),
                    _ => a.as_primitive::<Int64Type>().values(),
                };
                for (row, &x) in rows.iter_mut().zip(v) {
                    row.0[k] = (x as u64) ^ (1 << 63);
                }
            }
        }
    }
    // A text first key has dense ranks: rows go to their rank's group in
    // one counting pass, and only each group (one series: a few rows, often
    // already in time order) is sorted.
    if nkeys > 0 && cols[0].values.data_type() == &DataType::Utf8 {
        let groups = rows.iter().map(|r| r.0[0]).max().unwrap_or(0) as usize + 1;
        let mut start = vec![0usize; groups + 1];
        for r in &rows {
            start[r.0[0] as usize + 1] += 1;
        }
        for g in 0..groups {
            start[g + 1] += start[g];
        }
        let mut at = start.clone();
        let mut grouped = vec![([0u64; MAX_KEYS], 0u64, 0u32); n];
        for r in &rows {
            let g = r.0[0] as usize;
            grouped[at[g]] = *r;
            at[g] += 1;
        }
        for g in 0..groups {
            grouped[start[g]..start[g + 1]].sort_unstable();
        }
        rows = grouped;
    } else {
        rows.sort_unstable();
    }
    Ok(UInt32Array::from_iter_values(rows.iter().map(|r| !r.2)))
}

/// [`sort_versions`] of the concatenation of `batches`, without
/// materializing it: only the sort columns are concatenated, the rest is
/// gathered straight from the inputs.
pub fn sort_batches(layout: &Layout, batches: &[RecordBatch]) -> Result<RecordBatch> {
    if batches.len() == 1 {
        return sort_versions(layout, &batches[0]);
    }
    let cat = |c: usize| -> Result<ArrayRef> {
        let parts: Vec<&dyn Array> = batches.iter().map(|b| b.column(c).as_ref()).collect();
        Ok(concat(&parts)?)
    };
    let n: usize = batches.iter().map(|b| b.num_rows()).sum();
    let mut cols: Vec<SortColumn> = Vec::with_capacity(layout.sort.len() + 2);
    for &c in &layout.sort {
        cols.push(SortColumn { values: cat(c)?, options: Some(SortOptions::default()) });
    }
    let desc = Some(SortOptions { descending: true, nulls_first: false });
    cols.push(SortColumn { values: cat(layout.seq())?, options: desc });
    cols.push(SortColumn { values: Arc::new(UInt32Array::from_iter_values(0..n as u32)), options: desc });
    let idx = version_order(&cols)?;
    drop(cols);
    let mut starts = Vec::with_capacity(batches.len());
    let mut acc = 0usize;
    for b in batches {
        starts.push(acc);
        acc += b.num_rows();
    }
    let pairs: Vec<(usize, usize)> = idx
        .values()
        .iter()
        .map(|&i| {
            let i = i as usize;
            let b = starts.partition_point(|&s| s <= i) - 1;
            (b, i - starts[b])
        })
        .collect();
    drop(idx);
    let gather = |c: usize| -> Result<ArrayRef> {
        let parts: Vec<&dyn Array> = batches.iter().map(|b| b.column(c).as_ref()).collect();
        Ok(arrow::compute::interleave(&parts, &pairs)?)
    };
    let columns: Vec<usize> = (0..layout.full.fields().len()).collect();
    let out = if n >= PARALLEL_ROWS { on_two_threads(columns, gather)? } else { columns.into_iter().map(gather).collect::<Result<_>>()? };
    Ok(RecordBatch::try_new_with_options(layout.full.clone(), out, &RecordBatchOptions::new().with_row_count(Some(n)))?)
}

/// Files of at least this many rows gather ([`sort_batches`]) and encode
/// (`sst::write_sst`) their columns on two threads.
pub const PARALLEL_ROWS: usize = 16 * 1024;

/// `f` of each item, in item order, computed on this thread and one more
/// (alternate items each; results in item order). For a file's columns:
/// gathering and encoding them are most of the cost of a flush, a
/// compaction or a bulk load's staged file, and a load's stage thread is
/// its bottleneck while the session thread parsing for it waits at times.
pub fn on_two_threads<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> Result<R> + Sync) -> Result<Vec<R>> {
    let n = items.len();
    let (mut mine, mut theirs) = (Vec::with_capacity(n / 2 + 1), Vec::with_capacity(n / 2));
    for (i, t) in items.into_iter().enumerate() {
        if i % 2 == 0 {
            mine.push(t);
        } else {
            theirs.push(t);
        }
    }
    let f = &f;
    let (a, b) = std::thread::scope(|s| -> Result<(Vec<R>, Vec<R>)> {
        let helper = std::thread::Builder::new()
            .name("weir-sst-columns".into())
            .spawn_scoped(s, move || theirs.into_iter().map(f).collect::<Result<Vec<R>>>())
            .map_err(|e| crate::err!(Internal, "cannot start a thread to write a file's columns: {e}"))?;
        let a = mine.into_iter().map(f).collect::<Result<Vec<R>>>();
        let b = helper.join().map_err(|_| crate::err!(Internal, "writing a file's columns panicked"))?;
        Ok((a?, b?))
    })?;
    let (mut a, mut b) = (a.into_iter(), b.into_iter());
    Ok((0..n).filter_map(|i| if i % 2 == 0 { a.next() } else { b.next() }).collect())
}

/// What [`prune_versions`] kept.
pub struct Pruned {
    pub batch: RecordBatch,
    /// Highest sequence of a version that made a discarded one unreadable.
    pub history_seq: SeqNo,
    /// No two kept rows share an identity.
    pub distinct: bool,
}

/// Discard versions of a sorted full-schema batch that no snapshot at or
/// above `horizon` can see: of each identity keep every version newer than
/// the horizon and the newest one at or below it (a tombstone there goes
/// too when `drop_tombstones`). Rows older than `ttl_cutoff` go as well.
pub fn prune_versions(
    layout: &Layout,
    keys: &KeyEncoder,
    batch: &RecordBatch,
    horizon: SeqNo,
    drop_tombstones: bool,
    ttl_cutoff: Option<i64>,
) -> Result<Pruned> {
    let n = batch.num_rows();
    let key_cols: Vec<ArrayRef> = layout.identity.iter().map(|&c| batch.column(c).clone()).collect();
    let k = keys.encode(&key_cols)?;
    let seq = batch.column(layout.seq()).as_primitive::<UInt64Type>().clone();
    let op = batch.column(layout.op()).as_primitive::<UInt8Type>().clone();
    let ts = match (ttl_cutoff, layout.time_index) {
        (Some(_), Some(ti)) => Some(time_values(batch.column(ti))?),
        _ => None,
    };
    let ts = ts.as_ref().map(|t| t.as_primitive::<Int64Type>());
    let mut keep = vec![false; n];
    let mut history = 0;
    let mut distinct = true;
    let (mut based, mut base_seq, mut kept_in_group) = (false, 0, 0usize);
    let mut prev_seq = None;
    for i in 0..n {
        if i == 0 || !k.same(i, i - 1) {
            based = false;
            kept_in_group = 0;
            prev_seq = None;
        }
        // One write batch repeating an identity: the later row (sorted
        // first) wins and no snapshot ever saw the earlier one.
        let s = seq.value(i);
        if prev_seq == Some(s) {
            continue;
        }
        prev_seq = Some(s);
        if let (Some(cut), Some(t)) = (ttl_cutoff, ts) {
            if t.is_valid(i) && t.value(i) < cut {
                continue;
            }
        }
        if s > horizon {
            keep[i] = true;
        } else if !based {
            based = true;
            base_seq = s;
            if drop_tombstones && op.value(i) == OP_DELETE {
                history = history.max(s);
            } else {
                keep[i] = true;
            }
        } else {
            history = history.max(base_seq);
        }
        if keep[i] {
            kept_in_group += 1;
            if kept_in_group > 1 {
                distinct = false;
            }
        }
    }
    let batch = filter(batch, BooleanBuffer::from(keep))?;
    Ok(Pruned { batch, history_seq: history, distinct })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray, TimestampMicrosecondArray};
    use arrow::datatypes::TimeUnit;

    fn desc(append: bool) -> RegionDescriptor {
        RegionDescriptor {
            table_name: "t".into(),
            schema: Arc::new(Schema::new(vec![
                Field::new("host", DataType::Utf8, true),
                Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), false),
                Field::new("v", DataType::Int64, true),
            ])),
            primary_key: vec![0],
            time_index: Some(1),
            append_mode: append,
            ttl_ms: None,
        }
    }

    /// A seeded xorshift: `rnd(m)` is in 0..m.
    fn xorshift() -> impl FnMut(u64) -> u64 {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        move |m| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        }
    }

    /// Gathered on two threads (a file of PARALLEL_ROWS rows or more), the
    /// sorted rows are those of sorting the concatenation.
    #[test]
    fn sort_batches_on_two_threads_is_sort_versions() {
        let layout = Layout::new(&desc(false));
        let mut rnd = xorshift();
        let k = PARALLEL_ROWS / 2 + 100;
        let mut batches = Vec::new();
        for b in 0..3u64 {
            let cols: Vec<ArrayRef> = vec![
                Arc::new(StringArray::from_iter((0..k).map(|_| (rnd(20) > 0).then(|| format!("h{}", rnd(50)))))),
                Arc::new(TimestampMicrosecondArray::from_iter_values((0..k).map(|_| rnd(100) as i64))),
                Arc::new(Int64Array::from_iter_values((0..k).map(|_| rnd(1000) as i64))),
                Arc::new(UInt64Array::from_iter_values((0..k as u64).map(|i| b * k as u64 + i))),
            ];
            batches.push(with_version(&layout, cols, 1 + rnd(3), OP_PUT).unwrap());
        }
        let sorted = sort_batches(&layout, &batches).unwrap();
        let expected = sort_versions(&layout, &concat_all(&layout.full, &batches).unwrap()).unwrap();
        assert_eq!(sorted, expected);
    }

    /// Results come back in item order, from both threads; an error of
    /// either is the answer.
    #[test]
    fn on_two_threads_keeps_order_and_errors() {
        for n in [0usize, 1, 2, 7] {
            let out = on_two_threads((0..n).collect(), |i| Ok(i * 10)).unwrap();
            assert_eq!(out, (0..n).map(|i| i * 10).collect::<Vec<_>>());
        }
        for bad in [0usize, 3] {
            let r = on_two_threads((0..6).collect(), |i| if i == bad { crate::bail!(Internal, "item {i}") } else { Ok(i) });
            assert!(r.unwrap_err().to_string().contains(&format!("item {bad}")));
        }
    }

    /// The faster order of text and integer keys is lexsort's, nulls,
    /// ties, repeated sequences, sliced arrays and other key types included.
    #[test]
    fn version_order_is_lexsorts() {
        let mut rnd = xorshift();
        let asc = Some(SortOptions::default());
        let desc = Some(SortOptions { descending: true, nulls_first: false });
        for round in 0..40 {
            let n = 1 + rnd(300) as usize;
            let hosts: Vec<Option<String>> = (0..n + 5).map(|_| (rnd(10) > 0).then(|| format!("h{}", rnd(25)))).collect();
            let host: ArrayRef = Arc::new(StringArray::from(hosts).slice(5, n));
            let ts: ArrayRef = Arc::new(TimestampMicrosecondArray::from_iter_values((0..n).map(|_| rnd(7) as i64 - 3)));
            let i64s: ArrayRef = Arc::new(Int64Array::from_iter_values((0..n).map(|_| (rnd(5) as i64 - 2) * (i64::MAX / 3))));
            let f64s: ArrayRef = Arc::new(arrow::array::Float64Array::from_iter_values((0..n).map(|_| rnd(4) as f64)));
            let seq: ArrayRef = Arc::new(UInt64Array::from_iter_values((0..n).map(|_| rnd(4))));
            let pos: ArrayRef = Arc::new(UInt32Array::from_iter_values(0..n as u32));
            let keys: Vec<Vec<ArrayRef>> = vec![
                vec![host.clone(), ts.clone()],
                vec![host.clone()],
                vec![ts.clone(), host.clone(), i64s.clone()],
                vec![],
                vec![host.clone(), f64s.clone()],
                vec![host.clone(), host.clone(), ts.clone(), i64s.clone()],
            ];
            for k in keys {
                let mut cols: Vec<SortColumn> = k.into_iter().map(|values| SortColumn { values, options: asc }).collect();
                cols.push(SortColumn { values: seq.clone(), options: desc });
                cols.push(SortColumn { values: pos.clone(), options: desc });
                assert_eq!(version_order(&cols).unwrap(), lexsort_to_indices(&cols, None).unwrap(), "round {round}");
            }
        }
    }

    fn rows(layout: &Layout, data: &[(&str, i64, i64, u64, u8)]) -> RecordBatch {
        let cols: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(data.iter().map(|r| r.0))),
            Arc::new(TimestampMicrosecondArray::from_iter_values(data.iter().map(|r| r.1))),
            Arc::new(Int64Array::from_iter_values(data.iter().map(|r| r.2))),
            Arc::new(UInt64Array::from_iter_values(data.iter().enumerate().map(|(i, _)| i as u64))),
            Arc::new(UInt64Array::from_iter_values(data.iter().map(|r| r.3))),
            Arc::new(arrow::array::UInt8Array::from_iter_values(data.iter().map(|r| r.4))),
        ];
        RecordBatch::try_new(layout.full.clone(), cols).unwrap()
    }

    #[test]
    fn newest_and_prune() {
        let l = Layout::new(&desc(false));
        let enc = KeyEncoder::new(&l).unwrap();
        let b = rows(&l, &[("a", 1, 10, 1, 0), ("a", 1, 11, 3, 0), ("b", 1, 5, 2, 0), ("a", 1, 12, 5, 1), ("b", 2, 7, 4, 0)]);
        let k = enc.encode(&l.identity.iter().map(|&c| b.column(c).clone()).collect::<Vec<_>>()).unwrap();
        let m = IdMap::newest(&k, b.column(l.seq()).as_primitive::<UInt64Type>().values()).mask(b.num_rows());
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![false, false, true, true, true]);

        let sorted = sort_versions(&l, &b).unwrap();
        let seqs = |b: &RecordBatch| b.column(l.seq()).as_primitive::<UInt64Type>().values().to_vec();
        assert_eq!(seqs(&sorted), vec![5, 3, 1, 2, 4]);
        // Horizon 3: keep seq 5 (above), 3 (newest at or below), drop 1.
        let p = prune_versions(&l, &enc, &sorted, 3, false, None).unwrap();
        assert_eq!(seqs(&p.batch), vec![5, 3, 2, 4]);
        assert_eq!(p.history_seq, 3);
        assert!(!p.distinct);
        // Horizon max with tombstone dropping: "a" vanishes entirely.
        let p = prune_versions(&l, &enc, &sorted, u64::MAX, true, None).unwrap();
        assert_eq!(seqs(&p.batch), vec![2, 4]);
        assert_eq!(p.history_seq, 5);
        assert!(p.distinct);
        // TTL cutoff drops ts < 2.
        let p = prune_versions(&l, &enc, &sorted, u64::MAX, false, Some(2)).unwrap();
        assert_eq!(seqs(&p.batch), vec![4]);
    }

    #[test]
    fn fx_hasher_spreads() {
        let mut a = FxHasher::default();
        a.write(b"hello world!");
        let mut b = FxHasher::default();
        b.write(b"hello world?");
        assert_ne!(a.finish(), b.finish());
    }
}

/// Each key's newest row among `n`: the highest sequence, within one the
/// later row (the change log's dedup uses it too).
pub(crate) fn newest_by<K: std::hash::Hash + Eq>(n: usize, key: impl Fn(usize) -> K, seq: &[u64]) -> HashMap<K, u32, FxBuild> {
    let mut best = HashMap::with_capacity_and_hasher(n, FxBuild::default());
    for i in 0..n {
        best.entry(key(i))
            .and_modify(|b: &mut u32| {
                if seq[i] >= seq[*b as usize] {
                    *b = i as u32
                }
            })
            .or_insert(i as u32);
    }
    best
}
