//! K-way merge of a group of sources that may share identities (the
//! memtable and SSTs whose time ranges overlap, or every source of a table
//! without last-write-wins time grouping).
//!
//! Each SST is read a row group at a time (already sorted by its sort key,
//! then `__seq` descending); the memtable snapshot, in memory anyway, is
//! sorted once. The sources are merged row by row on arrow rows of (sort
//! key, `__seq` descending): the first row of each identity is its newest
//! version, later ones are skipped, tombstones drop out. Sequence bounds,
//! the time range, TTL and tag filters are applied to each batch before it
//! enters the merge, as the whole-group read did. Memory: the memtable plus
//! one row group per SST, not the group's rows.
//!
//! Imports what the region module does.

use arrow::array::UInt32Array;
use arrow::compute::{interleave_record_batch, lexsort_to_indices, take_record_batch, SortColumn, SortOptions};
use arrow::row::{RowConverter, Rows, SortField};

use super::read::{RowFilter, Snapshot};
use super::*;
use crate::storage::sst::SstScan;

/// Rows per merged output batch.
const MERGE_BATCH_ROWS: usize = 8192;

/// Bytes the row format gives a non-null `__seq` (one null byte, eight
/// value bytes): an identity is a key's rows without its last ones.
const SEQ_ROW_BYTES: usize = 9;

enum Input {
    /// The sorted memtable rows, until taken.
    Mem(Option<RecordBatch>),
    Sst(SstScan),
}

struct Cursor {
    input: Input,
    batch: Option<RecordBatch>,
    keys: Option<Rows>,
    pos: usize,
    /// The input has no more batches.
    done: bool,
}

impl Cursor {
    fn live(&self) -> bool {
        self.keys.as_ref().is_some_and(|k| self.pos < k.num_rows())
    }
}

/// A merge in progress (see the module comment).
pub(in crate::storage) struct MergeRead {
    cursors: Vec<Cursor>,
    conv: RowConverter,
    /// Positions in the read columns of the sort key and `__seq`.
    key_pos: Vec<usize>,
    opos: usize,
    schema: arrow::datatypes::SchemaRef,
    filter: RowFilter,
    cols: Vec<usize>,
    out_cols: Vec<usize>,
    last_id: Vec<u8>,
    has_last: bool,
    picks: Vec<(usize, usize)>,
    /// Live cursors, a min-heap on their current key (see `next_merged`).
    heap: Vec<usize>,
    /// Cursors whose batch is used up and that are not known to be done.
    reload: Vec<usize>,
    /// Most rows held in the cursors' batches at once.
    pub(in crate::storage) peak_rows: usize,
}

impl Region {
    /// Plan the merge of `mem` (when the group has the memtable) and
    /// `files`; nothing is read yet except the memtable's rows.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn open_merge(
        &self,
        snap: &Snapshot,
        with_mem: bool,
        files: Vec<Arc<SstFile>>,
        cols: &[usize],
        schema: &arrow::datatypes::SchemaRef,
        filter: &RowFilter,
        opos: usize,
        out_cols: &[usize],
        fill: bool,
    ) -> Result<MergeRead> {
        // The caller reads the sort columns; a missing one is a bug, answered
        // as an internal error rather than a panic.
        let pos = |c: usize| cols.iter().position(|&x| x == c).ok_or_else(|| crate::err!(Internal, "merge: sort column {c} is not read"));
        let mut key_pos: Vec<usize> = self.layout.sort.iter().map(|&c| pos(c)).collect::<Result<_>>()?;
        key_pos.push(pos(self.layout.seq())?);
        let mut fields: Vec<SortField> =
            self.layout.sort.iter().map(|&c| SortField::new(self.layout.full.field(c).data_type().clone())).collect();
        fields.push(SortField::new_with_options(DataType::UInt64, SortOptions { descending: true, nulls_first: false }));
        let conv = RowConverter::new(fields)?;
        let mut cursors = Vec::new();
        if with_mem {
            let unbounded = RowFilter { seq_after: None, seq_upto: None, ..filter.clone() };
            let mut parts = Vec::new();
            for (i, (b, _)) in snap.mem.iter().enumerate() {
                let b = b.project(cols)?;
                let f = if i >= snap.overlay_from { &unbounded } else { filter };
                let b = match self.row_mask(&b, cols, f)? {
                    Some(m) => arrow::compute::filter_record_batch(&b, &m)?,
                    None => b,
                };
                if b.num_rows() > 0 {
                    parts.push(b);
                }
            }
            if !parts.is_empty() {
                let all = concat_all(schema, &parts)?;
                drop(parts);
                // Sort key, then newest first; within one sequence the later
                // row first (as the SSTs are written).
                let mut sc: Vec<SortColumn> = key_pos[..key_pos.len() - 1]
                    .iter()
                    .map(|&p| SortColumn { values: all.column(p).clone(), options: Some(SortOptions::default()) })
                    .collect();
                let desc = Some(SortOptions { descending: true, nulls_first: false });
                sc.push(SortColumn { values: all.column(*key_pos.last().unwrap()).clone(), options: desc });
                sc.push(SortColumn { values: Arc::new(UInt32Array::from_iter_values(0..all.num_rows() as u32)), options: desc });
                let idx = lexsort_to_indices(&sc, None)?;
                drop(sc);
                let sorted = take_record_batch(&all, &idx)?;
                cursors.push(Cursor { input: Input::Mem(Some(sorted)), batch: None, keys: None, pos: 0, done: false });
            }
        }
        let eq = super::read::prune_eq(filter);
        let p = self.sst_predicate(filter, &eq);
        for f in files {
            let Some(scan) = self.open_sst(&f, cols, &p, fill) else { continue };
            cursors.push(Cursor { input: Input::Sst(scan), batch: None, keys: None, pos: 0, done: false });
        }
        let ncursors = cursors.len();
        Ok(MergeRead {
            cursors,
            conv,
            key_pos,
            opos,
            schema: schema.clone(),
            filter: filter.clone(),
            cols: cols.to_vec(),
            out_cols: out_cols.to_vec(),
            last_id: Vec::new(),
            has_last: false,
            picks: Vec::new(),
            heap: Vec::new(),
            // Loaded lowest index first.
            reload: (0..ncursors).rev().collect(),
            peak_rows: 0,
        })
    }

    /// Give cursor `i` its next non-empty batch, or mark it done.
    fn merge_load(&self, m: &mut MergeRead, i: usize) -> Result<()> {
        let next = match &mut m.cursors[i].input {
            Input::Mem(b) => b.take(),
            Input::Sst(scan) => {
                let mut out = None;
                while let Some(b) = scan.next_batch()? {
                    let b = match self.row_mask(&b, &m.cols, &m.filter)? {
                        Some(mask) => arrow::compute::filter_record_batch(&b, &mask)?,
                        None => b,
                    };
                    if b.num_rows() > 0 {
                        out = Some(b.with_schema(m.schema.clone())?);
                        break;
                    }
                }
                out
            }
        };
        let c = &mut m.cursors[i];
        match next {
            Some(b) => {
                let kc: Vec<ArrayRef> = m.key_pos.iter().map(|&p| b.column(p).clone()).collect();
                c.keys = Some(m.conv.convert_columns(&kc)?);
                c.batch = Some(b);
                c.pos = 0;
            }
            None => {
                c.done = true;
                c.keys = None;
                c.batch = None;
            }
        }
        let held: usize = m.cursors.iter().filter_map(|c| c.batch.as_ref()).map(|b| b.num_rows()).sum();
        m.peak_rows = m.peak_rows.max(held);
        Ok(())
    }

    /// The next batch of visible, projected rows of the merge.
    ///
    /// The live cursors sit in a binary min-heap on their current key
    /// (ties to the lower cursor index, so equal keys come out in source
    /// order): a row costs O(log k) comparisons for k sources instead of a
    /// scan of every cursor. An exhausted cursor leaves the heap and waits
    /// in `reload` for its next batch, which is loaded only after the picks
    /// that may point into its old batch are emitted.
    pub(super) fn next_merged(&self, m: &mut MergeRead) -> Result<Option<RecordBatch>> {
        loop {
            while let Some(&i) = m.reload.last() {
                // The picks may point into the batch about to be replaced.
                if !m.picks.is_empty() {
                    return self.merge_emit(m).map(Some);
                }
                m.reload.pop();
                self.merge_load(m, i)?;
                if m.cursors[i].live() {
                    m.heap.push(i);
                    let at = m.heap.len() - 1;
                    heap_up(&m.cursors, &mut m.heap, at);
                }
            }
            let Some(&b) = m.heap.first() else {
                return if m.picks.is_empty() { Ok(None) } else { self.merge_emit(m).map(Some) };
            };
            let c = &mut m.cursors[b];
            let row = c.pos;
            c.pos += 1;
            let live = c.live();
            let done = c.done;
            let keys = c.keys.as_ref().unwrap();
            let key = keys.row(row);
            let id = &key.data()[..key.data().len() - SEQ_ROW_BYTES];
            let older = m.has_last && m.last_id == id;
            if !older {
                m.last_id.clear();
                m.last_id.extend_from_slice(id);
                m.has_last = true;
            }
            let op = c.batch.as_ref().unwrap().column(m.opos).as_primitive::<arrow::datatypes::UInt8Type>().value(row);
            if live {
                heap_down(&m.cursors, &mut m.heap, 0);
            } else {
                let last = m.heap.pop().expect("b is in the heap");
                if !m.heap.is_empty() {
                    m.heap[0] = last;
                    heap_down(&m.cursors, &mut m.heap, 0);
                }
                if !done {
                    m.reload.push(b);
                }
            }
            if older {
                continue; // an older version
            }
            if op == OP_PUT {
                m.picks.push((b, row));
                if m.picks.len() >= MERGE_BATCH_ROWS {
                    return self.merge_emit(m).map(Some);
                }
            }
        }
    }

    fn merge_emit(&self, m: &mut MergeRead) -> Result<RecordBatch> {
        let empty = RecordBatch::new_empty(m.schema.clone());
        let batches: Vec<&RecordBatch> = m.cursors.iter().map(|c| c.batch.as_ref().unwrap_or(&empty)).collect();
        let out = interleave_record_batch(&batches, &m.picks)?;
        m.picks.clear();
        Ok(out.project(&m.out_cols)?)
    }
}

/// Cursor `a` comes before cursor `b`: a smaller current key, or the same
/// key and a lower index.
fn before(cursors: &[Cursor], a: usize, b: usize) -> bool {
    let (ca, cb) = (&cursors[a], &cursors[b]);
    let (ka, kb) = (ca.keys.as_ref().unwrap().row(ca.pos), cb.keys.as_ref().unwrap().row(cb.pos));
    match ka.cmp(&kb) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => a < b,
    }
}

fn heap_up(cursors: &[Cursor], heap: &mut [usize], mut at: usize) {
    while at > 0 {
        let parent = (at - 1) / 2;
        if !before(cursors, heap[at], heap[parent]) {
            break;
        }
        heap.swap(at, parent);
        at = parent;
    }
}

fn heap_down(cursors: &[Cursor], heap: &mut [usize], mut at: usize) {
    loop {
        let (l, r) = (2 * at + 1, 2 * at + 2);
        let mut min = at;
        if l < heap.len() && before(cursors, heap[l], heap[min]) {
            min = l;
        }
        if r < heap.len() && before(cursors, heap[r], heap[min]) {
            min = r;
        }
        if min == at {
            return;
        }
        heap.swap(at, min);
        at = min;
    }
}
