//! A region's change log between two sequences (`Region::changes`), read by
//! flows and incremental evaluation.

use super::read::{RowFilter, Snapshot, TimeSet};
use super::*;
use crate::storage::version::{newest_by, IdMap};
use std::collections::HashMap;

impl Region {
    /// The change log of (after, upto]: every user column plus an Int64
    /// `__diff`, +1 for each row visible at `upto` but not at `after`, -1 for
    /// each row visible at `after` but not at `upto` (replaced or deleted).
    /// Retractions come first.
    pub fn changes(&self, after: SeqNo, upto: SeqNo) -> Result<RecordBatch> {
        let ncols = self.layout.ncols;
        let mut fields: Vec<Field> = self.layout.user.fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.push(Field::new(DIFF_COLUMN, DataType::Int64, false));
        let out_schema = Arc::new(Schema::new(fields));
        let snap = self.snapshot(Some(after), Some(upto), None, true);
        if after < snap.history_seq {
            return Err(self.range_unsupported(after, snap.history_seq));
        }
        let upto = upto.min(snap.last_seq);
        if upto <= after || self.desc.ttl_ms == Some(0) {
            return Ok(RecordBatch::new_empty(out_schema));
        }
        let cols: Vec<usize> = (0..self.layout.full.fields().len()).collect();
        let schema = self.layout.full.clone();
        let f_new = RowFilter { seq_after: Some(after), seq_upto: Some(upto), time: None, ttl_cutoff: None, eq: vec![], times: None };
        let batches: Vec<RecordBatch> = self.read(&snap, &cols, &f_new, true)?.into_iter().flat_map(|s| s.batches).collect();
        if batches.is_empty() {
            return Ok(RecordBatch::new_empty(out_schema));
        }
        // The newest new version of each identity, and the identities
        // indexed for the earlier versions' lookup below (keys encoded and
        // hashed once per side).
        // 64-bit and string identity columns are hashed and compared as
        // they are; other types through their row encoding.
        let new_all = concat_all(&schema, &batches)?;
        let new_seq = new_all.column(self.layout.seq()).as_primitive::<UInt64Type>().values();
        let new_id_cols = self.key_cols(&new_all, &cols);
        let new_direct: Option<Vec<IdCol>> = new_id_cols.iter().map(|a| IdCol::new(a.as_ref())).collect();
        let new_keys;
        let ids = match &new_direct {
            Some(c) => Ids::Direct(newest_by(new_all.num_rows(), |i| IdRow { cols: c, i }, new_seq)),
            None => {
                new_keys = self.keys.encode(&new_id_cols)?;
                Ids::Encoded(IdMap::newest(&new_keys, new_seq))
            }
        };
        let new_mask = ids.mask(new_all.num_rows());
        let new = crate::storage::version::filter(&new_all, new_mask.clone())?;
        // Earlier versions of the touched identities, as of `after`.
        let time = match self.layout.time_index {
            Some(ti) => time_bounds(new.column(ti))?.map(|(lo, hi)| (lo, hi.saturating_add(1))),
            None => None,
        };
        // Earlier versions share the identity, time index included: only
        // rows at the new rows' times are read on (1 % of changes spread
        // over a window no longer encodes and sorts the whole window).
        let mut distinct: Vec<i64> = Vec::new();
        let times = match self.layout.time_index {
            Some(ti) if self.layout.identity.contains(&ti) => {
                let t = time_values(new.column(ti))?;
                let t = t.as_primitive::<arrow::datatypes::Int64Type>();
                let mut set: HashSet<i64, crate::storage::version::FxBuild> =
                    HashSet::with_capacity_and_hasher(t.len(), crate::storage::version::FxBuild::default());
                set.extend(t.iter().flatten());
                distinct = set.iter().copied().collect();
                Some(Arc::new(TimeSet::new(set)))
            }
            _ => None,
        };
        // Last-write-wins regions: SSTs are sorted by identity, so earlier
        // versions there are found by seeking each changed identity, and
        // in the memtable by the changed times through its time index
        // (taken in one critical section with the snapshot's files, so a
        // flush in between cannot move a version out of both).
        let seek = self.layout.time_index.is_some() && self.layout.identity == self.layout.sort;
        let (old_snap, mem_hits) = match (self.layout.time_index, &times) {
            (Some(ti), Some(set)) if seek => {
                let inner = self.inner.lock();
                let mut hits = Vec::new();
                for m in inner.frozen.iter().map(|m| m.as_ref()).chain(std::iter::once(&inner.mem)) {
                    hits.extend(m.rows_at(&self.layout, ti, &distinct, |t| set.contains(t), after)?);
                }
                (Self::snapshot_of(&inner, None, Some(after), time, false), Some(hits))
            }
            _ => (self.snapshot(None, Some(after), time, true), None),
        };
        let mut f_old = RowFilter { seq_after: None, seq_upto: Some(after), time, ttl_cutoff: None, eq: vec![], times };
        // Earlier rows found by seeking come with the changed row they are
        // a version of (`seek_slots`, in new_all's numbering, for the rows
        // after the first `old_batches` rows that are looked up by hash).
        let mut seek_slots: Vec<u32> = Vec::new();
        let old_batches: Vec<RecordBatch> = if seek {
            let mut v: Vec<RecordBatch> = match mem_hits {
                Some(hits) => hits
                    .into_iter()
                    .map(|(b, rows)| arrow::compute::take_record_batch(&b, &arrow::array::UInt32Array::from(rows)))
                    .collect::<std::result::Result<_, _>>()?,
                None => self.read(&old_snap, &cols, &f_old, false)?.into_iter().flat_map(|s| s.batches).collect(),
            };
            let found = self.seek_versions(&old_snap, &new, after, time)?;
            if !found.is_empty() {
                // Row k of `new` is the k-th kept row of new_all.
                let new_pos: Vec<u32> = new_mask.set_indices().map(|i| i as u32).collect();
                for (b, probes) in found {
                    seek_slots.extend(probes.iter().map(|&k| new_pos[k as usize]));
                    v.push(b);
                }
            }
            v
        } else {
            // Probe with the time index and sequence only: new identities (plain
            // inserts) find nothing and no other column is decoded; otherwise
            // the full read keeps only the times found.
            let mut none_before = false;
            if let (Some(ti), Some(_)) = (self.layout.time_index, f_old.times.as_ref()) {
                let mut pc = vec![ti, self.layout.seq()];
                pc.sort_unstable();
                pc.dedup();
                let tpos = pc.iter().position(|&c| c == ti).expect("time index probed");
                let mut found: HashSet<i64, crate::storage::version::FxBuild> = HashSet::default();
                for src in self.read(&old_snap, &pc, &f_old, true)? {
                    for b in src.batches {
                        let t = time_values(b.column(tpos))?;
                        found.extend(t.as_primitive::<arrow::datatypes::Int64Type>().iter().flatten());
                    }
                }
                if found.is_empty() {
                    none_before = true;
                } else {
                    f_old.times = Some(Arc::new(TimeSet::new(found)));
                }
            }
            if none_before {
                Vec::new()
            } else {
                self.read(&old_snap, &cols, &f_old, true)?.into_iter().flat_map(|s| s.batches).collect()
            }
        };
        let old = if old_batches.is_empty() {
            RecordBatch::new_empty(schema.clone())
        } else {
            // The newest earlier version of each changed identity: one
            // lookup per earlier row, the winner kept per identity (the
            // higher sequence; within one, the later row).
            let old_all = concat_all(&schema, &old_batches)?;
            let old_seq = old_all.column(self.layout.seq()).as_primitive::<UInt64Type>().values();
            // The rows before `hashed` are looked up by identity; the
            // seeked ones after it already know their changed row.
            let hashed = old_all.num_rows() - seek_slots.len();
            let old_id_cols = self.key_cols(&old_all.slice(0, hashed), &cols);
            let mut best = vec![u32::MAX; new_all.num_rows()];
            let mut consider = |i: usize, slot: Option<u32>| {
                if let Some(slot) = slot {
                    let b = &mut best[slot as usize];
                    if *b == u32::MAX || old_seq[i] >= old_seq[*b as usize] {
                        *b = i as u32;
                    }
                }
            };
            match &ids {
                Ids::Direct(m) => {
                    // The same schema: the same column types as the new rows'.
                    let c: Vec<IdCol> = old_id_cols
                        .iter()
                        .map(|a| IdCol::new(a.as_ref()))
                        .collect::<Option<_>>()
                        .ok_or_else(|| crate::err!(Internal, "identity column types differ between versions"))?;
                    for i in 0..hashed {
                        consider(i, m.get(&IdRow { cols: &c, i }).copied());
                    }
                }
                Ids::Encoded(m) => {
                    if hashed > 0 {
                        let old_keys = self.keys.encode(&old_id_cols)?;
                        for i in 0..hashed {
                            consider(i, m.get(&old_keys, i));
                        }
                    }
                }
            }
            for (i, &slot) in seek_slots.iter().enumerate() {
                consider(hashed + i, Some(slot));
            }
            let mut keep = vec![false; old_all.num_rows()];
            for &b in &best {
                if b != u32::MAX {
                    keep[b as usize] = true;
                }
            }
            let newest_old = crate::storage::version::filter(&old_all, BooleanBuffer::from(keep))?;
            crate::storage::version::filter(&newest_old, put_mask(newest_old.column(self.layout.op())))?
        };
        let plus = crate::storage::version::filter(&new, put_mask(new.column(self.layout.op())))?;
        let mut parts = Vec::new();
        for (b, diff) in [(old, -1i64), (plus, 1)] {
            if b.num_rows() == 0 {
                continue;
            }
            let mut c: Vec<ArrayRef> = b.columns()[..ncols].to_vec();
            c.push(Arc::new(Int64Array::from_value(diff, b.num_rows())));
            parts.push(RecordBatch::try_new(out_schema.clone(), c)?);
        }
        if parts.is_empty() {
            return Ok(RecordBatch::new_empty(out_schema));
        }
        concat_all(&out_schema, &parts)
    }

    /// Versions at or before `after` of the identities of `probe` (full
    /// schema) in the SSTs of `snap`. An SST is sorted by identity (primary
    /// key, time; last write wins), so each identity is found by binary
    /// search in the row groups whose key range holds it: the work follows
    /// the changed identities, not the SSTs' rows (row groups come from the
    /// decoded-column cache). The search narrows one identity column at a
    /// time and keeps the range of the columns a probe shares with the one
    /// before (probes are sorted: consecutive ones share their tags), so a
    /// probe mostly costs a search of the time index within its series'
    /// rows; 64-bit and string columns without NULLs compare without
    /// dynamic dispatch.
    fn seek_versions(
        &self,
        snap: &Snapshot,
        probe: &RecordBatch,
        after: SeqNo,
        time: Option<(i64, i64)>,
    ) -> Result<Vec<(RecordBatch, Vec<u32>)>> {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let ids = &self.layout.identity;
        let opts = arrow::compute::SortOptions::default();
        // The probes in identity order.
        let order = {
            let cols =
                ids.iter().map(|&c| KeyCol::new(probe.column(c).as_ref(), probe.column(c).as_ref(), opts)).collect::<Result<Vec<_>>>()?;
            let mut order: Vec<u32> = (0..probe.num_rows() as u32).collect();
            order.sort_unstable_by(|&a, &b| cols.iter().map(|c| c.cmp(a as usize, b as usize)).find(|o| *o != Equal).unwrap_or(Equal));
            arrow::array::UInt32Array::from(order)
        };
        let keys: Vec<ArrayRef> =
            ids.iter().map(|&c| arrow::compute::take(probe.column(c).as_ref(), &order, None)).collect::<std::result::Result<_, _>>()?;
        let nprobe = order.len();
        let cols: Vec<usize> = (0..self.layout.full.fields().len()).collect();
        let f = RowFilter { seq_after: None, seq_upto: Some(after), time, ttl_cutoff: None, eq: vec![], times: None };
        let p = self.sst_predicate(&f, &[]);
        // Row groups are read whole (from the decoded-column cache), not
        // sliced to the time range: SSTs sorted by identity have every
        // row group span the file's times, so slicing would only filter
        // each row (or decode pages, uncached) for what the search skips.
        let whole = RowFilter { time: None, ..f.clone() };
        let p_rg = self.sst_predicate(&whole, &[]);
        let mut out = Vec::new();
        for file in snap.files.iter() {
            if file.meta.seq_range.0 > after || !file_may_match(&file.meta, &p) {
                self.counters.ssts_pruned.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            // Rows newer than `after` only in a file flushed since.
            let check_seq = file.meta.seq_range.1 > after;
            // Attribute text stays dictionary-coded until the few matching
            // rows are taken (identity columns are text).
            let Some(mut scan) = self.open_sst(file, &cols, &p_rg, true).map(|s| s.dictionaries_out()) else { continue };
            while let Some(b) = scan.next_batch()? {
                let n = b.num_rows();
                if n == 0 {
                    continue;
                }
                let kc =
                    ids.iter().zip(&keys).map(|(&c, k)| KeyCol::new(b.column(c).as_ref(), k.as_ref(), opts)).collect::<Result<Vec<_>>>()?;
                let levels = kc.len();
                // Row i of the batch against probe j.
                let cmp = |i: usize, j: usize| kc.iter().map(|c| c.cmp(i, j)).find(|o| *o != Equal).unwrap_or(Equal);
                // The probes within the batch's key range.
                let lo = first_false(0, nprobe, |j| cmp(0, j) == Greater);
                let hi = first_false(lo, nprobe, |j| cmp(n - 1, j) != Less);
                let seq = b.column(self.layout.seq()).as_primitive::<UInt64Type>();
                let mut rows: Vec<u32> = Vec::new();
                // The probe (row of `probe`) each of `rows` is a version of.
                let mut of: Vec<u32> = Vec::new();
                // range[k]: the batch rows equal to the last probe on the
                // identity columns before k (range[0]: all of them).
                let mut range: Vec<(usize, usize)> = vec![(0, n); levels + 1];
                let mut prev: Option<usize> = None;
                for j in lo..hi {
                    let from = match prev {
                        Some(q) => match (0..levels).find(|&k| !kc[k].probe_eq(q, j)) {
                            Some(k) => k,
                            None => continue, // the same identity again
                        },
                        None => 0,
                    };
                    prev = Some(j);
                    for k in from..levels {
                        let (a, e) = range[k];
                        let s = kc[k].lower(a, e, j);
                        let t = if k + 1 == levels {
                            // The last column: the versions of one identity, few.
                            let mut t = s;
                            while t < e && kc[k].cmp(t, j) == Equal {
                                t += 1;
                            }
                            t
                        } else {
                            kc[k].upper(s, e, j)
                        };
                        range[k + 1] = (s, t);
                    }
                    let (s, t) = range[levels];
                    for i in s..t {
                        if !check_seq || seq.value(i) <= after {
                            rows.push(i as u32);
                            of.push(order.value(j));
                        }
                    }
                }
                if !rows.is_empty() {
                    let taken = arrow::compute::take_record_batch(&b, &arrow::array::UInt32Array::from(rows))?;
                    out.push((crate::storage::sst::plain_text(taken)?, of));
                }
            }
        }
        Ok(out)
    }
}

/// The changed identities, each mapped to its newest changed row.
enum Ids<'a> {
    Direct(HashMap<IdRow<'a>, u32, crate::storage::version::FxBuild>),
    Encoded(IdMap<'a>),
}

impl Ids<'_> {
    /// Mask of the newest rows among `n`.
    fn mask(&self, n: usize) -> BooleanBuffer {
        match self {
            Ids::Direct(m) => {
                let mut keep = vec![false; n];
                for &b in m.values() {
                    keep[b as usize] = true;
                }
                BooleanBuffer::from(keep)
            }
            Ids::Encoded(m) => m.mask(n),
        }
    }
}

/// An identity column hashed and compared as it is (no row encoding):
/// 64-bit integers / timestamps and strings, NULLs allowed (a NULL equals
/// a NULL, as in the row encoding).
enum IdCol<'a> {
    I64(&'a [i64], Option<&'a arrow::buffer::NullBuffer>),
    Str(&'a arrow::array::StringArray),
}

impl<'a> IdCol<'a> {
    fn new(a: &'a dyn Array) -> Option<IdCol<'a>> {
        if let Some(v) = i64_values(a) {
            return Some(IdCol::I64(v, a.nulls()));
        }
        a.as_string_opt::<i32>().map(IdCol::Str)
    }

    #[inline]
    fn valid(&self, i: usize) -> bool {
        match self {
            IdCol::I64(_, n) => n.is_none_or(|n| n.is_valid(i)),
            IdCol::Str(s) => s.is_valid(i),
        }
    }

    /// Row `i` of this column and row `j` of `o` hold the same value (or both NULL).
    #[inline]
    fn same(&self, i: usize, o: &IdCol, j: usize) -> bool {
        let (a, b) = (self.valid(i), o.valid(j));
        if a != b {
            return false;
        }
        if !a {
            return true;
        }
        match (self, o) {
            (IdCol::I64(x, _), IdCol::I64(y, _)) => x[i] == y[j],
            (IdCol::Str(x), IdCol::Str(y)) => x.value(i).as_bytes() == y.value(j).as_bytes(),
            _ => false,
        }
    }
}

/// Row `i` of some identity columns, as a hash-map key.
#[derive(Clone, Copy)]
struct IdRow<'a> {
    cols: &'a [IdCol<'a>],
    i: usize,
}

impl std::hash::Hash for IdRow<'_> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        for c in self.cols {
            if !c.valid(self.i) {
                h.write_u8(0);
                continue;
            }
            match c {
                IdCol::I64(v, _) => h.write_u64(v[self.i] as u64),
                IdCol::Str(s) => {
                    h.write(s.value(self.i).as_bytes());
                    h.write_u8(0xff);
                }
            }
        }
    }
}

impl PartialEq for IdRow<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.cols.len() == o.cols.len() && self.cols.iter().zip(o.cols).all(|(a, b)| a.same(self.i, b, o.i))
    }
}

impl Eq for IdRow<'_> {}

/// One identity column of a batch (rows `i`) and of the probes (`j`),
/// compared in the SSTs' order. Non-null 64-bit integers and timestamps
/// and non-null strings compare directly; others through arrow's dynamic
/// comparators (NULLs first, as the SSTs are sorted).
enum KeyCol<'a> {
    I64(&'a [i64], &'a [i64]),
    Str(&'a arrow::array::StringArray, &'a arrow::array::StringArray),
    Dyn(arrow::array::DynComparator, arrow::array::DynComparator),
}

impl<'a> KeyCol<'a> {
    fn new(batch: &'a dyn Array, probe: &'a dyn Array, opts: arrow::compute::SortOptions) -> Result<KeyCol<'a>> {
        if batch.data_type() == probe.data_type() && batch.null_count() == 0 && probe.null_count() == 0 {
            if let (Some(b), Some(p)) = (i64_values(batch), i64_values(probe)) {
                return Ok(KeyCol::I64(b, p));
            }
            if let (Some(b), Some(p)) = (batch.as_string_opt::<i32>(), probe.as_string_opt::<i32>()) {
                return Ok(KeyCol::Str(b, p));
            }
        }
        Ok(KeyCol::Dyn(arrow::array::make_comparator(batch, probe, opts)?, arrow::array::make_comparator(probe, probe, opts)?))
    }

    /// Batch row `i` against probe `j`.
    #[inline]
    fn cmp(&self, i: usize, j: usize) -> std::cmp::Ordering {
        match self {
            KeyCol::I64(b, p) => b[i].cmp(&p[j]),
            KeyCol::Str(b, p) => b.value(i).as_bytes().cmp(p.value(j).as_bytes()),
            KeyCol::Dyn(c, _) => c(i, j),
        }
    }

    /// The first of the batch rows [a, e) (sorted) not less than probe `j`.
    fn lower(&self, a: usize, e: usize, j: usize) -> usize {
        match self {
            KeyCol::I64(b, p) => a + b[a..e].partition_point(|&x| x < p[j]),
            KeyCol::Str(b, p) => {
                let v = p.value(j).as_bytes();
                first_false(a, e, |i| b.value(i).as_bytes() < v)
            }
            KeyCol::Dyn(c, _) => first_false(a, e, |i| c(i, j) == std::cmp::Ordering::Less),
        }
    }

    /// The first of the batch rows [a, e) (sorted) greater than probe `j`.
    fn upper(&self, a: usize, e: usize, j: usize) -> usize {
        match self {
            KeyCol::I64(b, p) => a + b[a..e].partition_point(|&x| x <= p[j]),
            KeyCol::Str(b, p) => {
                let v = p.value(j).as_bytes();
                first_false(a, e, |i| b.value(i).as_bytes() <= v)
            }
            KeyCol::Dyn(c, _) => first_false(a, e, |i| c(i, j) != std::cmp::Ordering::Greater),
        }
    }

    /// Probes `j` and `k` hold the same value.
    #[inline]
    fn probe_eq(&self, j: usize, k: usize) -> bool {
        match self {
            KeyCol::I64(_, p) => p[j] == p[k],
            KeyCol::Str(_, p) => p.value(j) == p.value(k),
            KeyCol::Dyn(_, c) => c(j, k) == std::cmp::Ordering::Equal,
        }
    }
}

/// The values of a signed 64-bit column whose order is its integers' (the
/// time index's timestamps, BIGINT).
fn i64_values(a: &dyn Array) -> Option<&[i64]> {
    use arrow::datatypes::{
        Date64Type, Int64Type, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType,
    };
    Some(match a.data_type() {
        DataType::Int64 => a.as_primitive::<Int64Type>().values(),
        DataType::Date64 => a.as_primitive::<Date64Type>().values(),
        DataType::Timestamp(TimeUnit::Second, _) => a.as_primitive::<TimestampSecondType>().values(),
        DataType::Timestamp(TimeUnit::Millisecond, _) => a.as_primitive::<TimestampMillisecondType>().values(),
        DataType::Timestamp(TimeUnit::Microsecond, _) => a.as_primitive::<TimestampMicrosecondType>().values(),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => a.as_primitive::<TimestampNanosecondType>().values(),
        _ => return None,
    })
}

/// The first index in [lo, hi) where `pred` is false (`pred` holds on a
/// prefix of the range), or `hi`.
fn first_false(mut lo: usize, mut hi: usize, pred: impl Fn(usize) -> bool) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}
