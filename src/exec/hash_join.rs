//! `HashJoinExecutor`: builds a hash table on the right input keyed by the
//! arrow row encoding of the join keys, probes with left batches. With no
//! keys it is a nested-loop join. Inner, left, right, full, semi and anti.

use std::collections::HashMap;

use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow::compute::take;
use arrow::datatypes::SchemaRef;
use arrow::row::{RowConverter, SortField};

use super::expr::Expr;
use super::plan::{arrow_schema, JoinKind, PlanColumn};
use super::{BatchExecutor, BatchResult, ExecCtx};
use crate::error::Result;

pub struct HashJoinExecutor {
    left: Box<dyn BatchExecutor>,
    right: Option<Box<dyn BatchExecutor>>,
    kind: JoinKind,
    left_keys: Vec<Expr>,
    right_keys: Vec<Expr>,
    condition: Option<Expr>,
    schema: SchemaRef,
    ctx: ExecCtx,
    build: Option<Build>,
    left_done: bool,
    finished: bool,
}

struct Build {
    batch: RecordBatch,
    /// Row encoder of the join keys, shared by build and every probe.
    keys: RowConverter,
    table: HashMap<Box<[u8]>, Vec<u32>>,
    matched: Vec<bool>,
}

impl HashJoinExecutor {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        left: Box<dyn BatchExecutor>,
        right: Box<dyn BatchExecutor>,
        kind: JoinKind,
        left_keys: Vec<Expr>,
        right_keys: Vec<Expr>,
        condition: Option<Expr>,
        columns: &[PlanColumn],
        ctx: ExecCtx,
    ) -> Self {
        HashJoinExecutor {
            left,
            right: Some(right),
            kind,
            left_keys,
            right_keys,
            condition,
            schema: arrow_schema(columns),
            ctx,
            build: None,
            left_done: false,
            finished: false,
        }
    }

    fn key_converter(&self) -> Result<RowConverter> {
        Ok(RowConverter::new(self.right_keys.iter().map(|e| SortField::new(e.ty().to_arrow())).collect())?)
    }

    fn build_side(&mut self) -> Result<()> {
        let mut right = self.right.take().expect("build once");
        let schema = right.schema();
        let batches = super::drain(&mut right, &self.ctx)?;
        let batch = super::concat(&self.ctx, &schema, &batches)?;
        let mut table: HashMap<Box<[u8]>, Vec<u32>> = HashMap::new();
        let conv = self.key_converter()?;
        if !self.right_keys.is_empty() && batch.num_rows() > 0 {
            let keys: Vec<ArrayRef> = self.right_keys.iter().map(|e| e.eval(&batch, &self.ctx)).collect::<Result<_>>()?;
            let rows = conv.convert_columns(&super::keys::normalize_keys(&keys))?;
            // The hash table: each key twice (rows and map), a row index and
            // the map's own overhead (an estimate, ~48 bytes a row).
            self.ctx.charge(rows.size() * 2 + batch.num_rows() * 48, "a hash join's build side")?;
            for i in 0..batch.num_rows() {
                // NULL keys never match.
                if keys.iter().any(|k| k.is_null(i)) {
                    continue;
                }
                table.entry(rows.row(i).as_ref().into()).or_default().push(i as u32);
            }
        }
        let matched = vec![false; batch.num_rows()];
        self.build = Some(Build { batch, keys: conv, table, matched });
        Ok(())
    }

    /// Joined rows (left index, right index) for one probe batch.
    fn probe(&self, left: &RecordBatch) -> Result<(Vec<u32>, Vec<u32>)> {
        let b = self.build.as_ref().unwrap();
        let (mut li, mut ri) = (Vec::new(), Vec::new());
        // Index pairs are 8 bytes; the joined batch is charged in `combine`.
        if self.left_keys.is_empty() {
            self.ctx.check_alloc(left.num_rows().saturating_mul(b.batch.num_rows()).saturating_mul(8), "a join's row pairs")?;
            for l in 0..left.num_rows() as u32 {
                for r in 0..b.batch.num_rows() as u32 {
                    li.push(l);
                    ri.push(r);
                }
            }
        } else {
            let keys: Vec<ArrayRef> = self.left_keys.iter().map(|e| e.eval(left, &self.ctx)).collect::<Result<_>>()?;
            let rows = b.keys.convert_columns(&super::keys::normalize_keys(&keys))?;
            for l in 0..left.num_rows() {
                if keys.iter().any(|k| k.is_null(l)) {
                    continue;
                }
                if let Some(m) = b.table.get(rows.row(l).as_ref()) {
                    self.ctx.check_alloc((li.len() + m.len()) * 8, "a join's row pairs")?;
                    for &r in m {
                        li.push(l as u32);
                        ri.push(r);
                    }
                }
            }
        }
        Ok((li, ri))
    }

    fn combine(&self, left: &RecordBatch, li: &UInt32Array, right: &RecordBatch, ri: &UInt32Array) -> Result<RecordBatch> {
        // Bytes per joined row, from the inputs' average row sizes.
        let per_row = |b: &RecordBatch| super::memory::batch_bytes(b) / b.num_rows().max(1);
        self.ctx.check_alloc(li.len().saturating_mul(per_row(left) + per_row(right) + 1), "joined rows")?;
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(left.num_columns() + right.num_columns());
        for c in left.columns() {
            cols.push(take(c.as_ref(), li, None)?);
        }
        for c in right.columns() {
            cols.push(take(c.as_ref(), ri, None)?);
        }
        let schema = if matches!(self.kind, JoinKind::Semi | JoinKind::Anti) {
            let mut f: Vec<_> = left.schema().fields().iter().cloned().collect();
            f.extend(right.schema().fields().iter().cloned());
            std::sync::Arc::new(arrow::datatypes::Schema::new(f))
        } else {
            self.schema.clone()
        };
        Ok(RecordBatch::try_new_with_options(schema, cols, &RecordBatchOptions::new().with_row_count(Some(li.len())))?)
    }

    fn join_batch(&mut self, left: RecordBatch) -> Result<RecordBatch> {
        let (li, ri) = self.probe(&left)?;
        let (mut li, mut ri) = (UInt32Array::from(li), UInt32Array::from(ri));
        let right_batch = self.build.as_ref().unwrap().batch.clone();
        let mut joined = self.combine(&left, &li, &right_batch, &ri)?;
        if let Some(cond) = &self.condition {
            if joined.num_rows() > 0 {
                let m = cond.eval(&joined, &self.ctx)?;
                let m = m.as_any().downcast_ref::<BooleanArray>().expect("join condition is boolean");
                let m: BooleanArray = m.iter().map(|v| Some(v == Some(true))).collect();
                joined = arrow::compute::filter_record_batch(&joined, &m)?;
                li = arrow::compute::filter(&li, &m)?.as_any().downcast_ref::<UInt32Array>().unwrap().clone();
                ri = arrow::compute::filter(&ri, &m)?.as_any().downcast_ref::<UInt32Array>().unwrap().clone();
            }
        }
        let mut left_matched = vec![false; left.num_rows()];
        for l in li.values() {
            left_matched[*l as usize] = true;
        }
        if matches!(self.kind, JoinKind::Right | JoinKind::Full) {
            let b = self.build.as_mut().unwrap();
            for r in ri.values() {
                b.matched[*r as usize] = true;
            }
        }
        match self.kind {
            JoinKind::Inner | JoinKind::Right => Ok(joined),
            JoinKind::Semi | JoinKind::Anti => {
                let want = self.kind == JoinKind::Semi;
                let idx: UInt32Array = (0..left.num_rows()).filter(|&i| left_matched[i] == want).map(|i| i as u32).collect();
                let cols: Vec<ArrayRef> =
                    left.columns().iter().map(|c| take(c.as_ref(), &idx, None)).collect::<std::result::Result<_, _>>()?;
                Ok(RecordBatch::try_new_with_options(
                    self.schema.clone(),
                    cols,
                    &RecordBatchOptions::new().with_row_count(Some(idx.len())),
                )?)
            }
            JoinKind::Left | JoinKind::Full => {
                let unmatched: Vec<u32> = (0..left.num_rows()).filter(|&i| !left_matched[i]).map(|i| i as u32).collect();
                if unmatched.is_empty() {
                    return Ok(joined);
                }
                let lidx = UInt32Array::from(unmatched);
                let ridx = UInt32Array::from(vec![None::<u32>; lidx.len()]);
                let extra = self.combine(&left, &lidx, &right_batch, &ridx)?;
                super::concat(&self.ctx, &self.schema, &[joined, extra])
            }
        }
    }

    fn right_unmatched(&mut self) -> Result<RecordBatch> {
        let b = self.build.as_ref().unwrap();
        let ridx: UInt32Array = (0..b.batch.num_rows()).filter(|&i| !b.matched[i]).map(|i| i as u32).collect();
        let left_schema = self.left.schema();
        let n = ridx.len();
        let mut cols: Vec<ArrayRef> = left_schema.fields().iter().map(|f| arrow::array::new_null_array(f.data_type(), n)).collect();
        for c in b.batch.columns() {
            cols.push(take(c.as_ref(), &ridx, None)?);
        }
        Ok(RecordBatch::try_new_with_options(self.schema.clone(), cols, &RecordBatchOptions::new().with_row_count(Some(n)))?)
    }
}

impl BatchExecutor for HashJoinExecutor {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn next_batch(&mut self, max_rows: usize) -> Result<BatchResult> {
        if self.build.is_none() {
            self.build_side()?;
        }
        if self.finished {
            return Ok(BatchResult { batch: super::empty_batch(&self.schema), logical_rows: None, is_drained: true });
        }
        if !self.left_done {
            let r = self.left.next_batch(max_rows)?;
            self.left_done = r.is_drained;
            let left = r.into_dense()?;
            let out = self.join_batch(left)?;
            let drained = self.left_done && !matches!(self.kind, JoinKind::Right | JoinKind::Full);
            self.finished = drained;
            return Ok(BatchResult { batch: out, logical_rows: None, is_drained: drained });
        }
        self.finished = true;
        let out = self.right_unmatched()?;
        Ok(BatchResult { batch: out, logical_rows: None, is_drained: true })
    }
}

#[cfg(test)]
#[path = "hash_join_tests.rs"]
mod tests;
