//! A region's change log between two sequences (`Region::changes`), read by
//! flows and incremental evaluation.

use super::read::{RowFilter, TimeSet};
use super::*;

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
        let new = self.newest(&concat_all(&schema, &batches)?, &cols)?;
        // Earlier versions of the touched identities, as of `after`.
        let time = match self.layout.time_index {
            Some(ti) => time_bounds(new.column(ti))?.map(|(lo, hi)| (lo, hi.saturating_add(1))),
            None => None,
        };
        // Earlier versions share the identity, time index included: only
        // rows at the new rows' times are read on (1 % of changes spread
        // over a window no longer encodes and sorts the whole window).
        let times = match self.layout.time_index {
            Some(ti) if self.layout.identity.contains(&ti) => {
                let t = time_values(new.column(ti))?;
                let t = t.as_primitive::<arrow::datatypes::Int64Type>();
                Some(Arc::new(TimeSet::new(t.iter().flatten().collect::<HashSet<i64, crate::storage::version::FxBuild>>())))
            }
            _ => None,
        };
        let old_snap = self.snapshot(None, Some(after), time, true);
        let mut f_old = RowFilter { seq_after: None, seq_upto: Some(after), time, ttl_cutoff: None, eq: vec![], times };
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
        let old_batches: Vec<RecordBatch> =
            if none_before { Vec::new() } else { self.read(&old_snap, &cols, &f_old, true)?.into_iter().flat_map(|s| s.batches).collect() };
        let new_keys = self.keys.encode(&self.key_cols(&new, &cols))?;
        let old = if old_batches.is_empty() {
            RecordBatch::new_empty(schema.clone())
        } else {
            let old_all = concat_all(&schema, &old_batches)?;
            let old_keys = self.keys.encode(&self.key_cols(&old_all, &cols))?;
            let touched = match (&new_keys, &old_keys) {
                (Keys::RowId(n), Keys::RowId(o)) => {
                    let set: HashSet<u64, crate::storage::version::FxBuild> = n.values().iter().copied().collect();
                    BooleanBuffer::collect_bool(o.len(), |i| set.contains(&o.value(i)))
                }
                (Keys::Rows(n), Keys::Rows(o)) => {
                    let set: HashSet<&[u8], crate::storage::version::FxBuild> = (0..n.num_rows()).map(|i| n.row(i).data()).collect();
                    BooleanBuffer::collect_bool(o.num_rows(), |i| set.contains(o.row(i).data()))
                }
                _ => unreachable!("one key encoder"),
            };
            let old_touched = crate::storage::version::filter(&old_all, touched)?;
            let newest_old = self.newest(&old_touched, &cols)?;
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
}
