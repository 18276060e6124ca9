//! `DistinctOnExecutor`: keeps the first row of each key, streaming, in
//! input order (after ORDER BY, that is PostgreSQL's DISTINCT ON).

use std::collections::HashSet;

use arrow::array::{ArrayRef, UInt32Array};
use arrow::datatypes::SchemaRef;
use arrow::row::{RowConverter, SortField};

use super::expr::Expr;
use super::{BatchExecutor, BatchResult, ExecCtx};
use crate::error::Result;

pub struct DistinctOnExecutor {
    child: Box<dyn BatchExecutor>,
    keys: Vec<Expr>,
    ctx: ExecCtx,
    seen: HashSet<Box<[u8]>>,
    converter: Option<RowConverter>,
}

impl DistinctOnExecutor {
    pub fn new(child: Box<dyn BatchExecutor>, keys: Vec<Expr>, ctx: ExecCtx) -> Self {
        DistinctOnExecutor { child, keys, ctx, seen: HashSet::new(), converter: None }
    }
}

impl BatchExecutor for DistinctOnExecutor {
    fn schema(&self) -> SchemaRef {
        self.child.schema()
    }

    fn next_batch(&mut self, max_rows: usize) -> Result<BatchResult> {
        let r = self.child.next_batch(max_rows)?;
        let drained = r.is_drained;
        let batch = r.into_dense()?;
        if batch.num_rows() == 0 {
            return Ok(BatchResult { batch, logical_rows: None, is_drained: drained });
        }
        let keys: Vec<ArrayRef> =
            self.keys.iter().map(|e| e.eval(&batch, &self.ctx).map(|k| super::keys::normalize_key(&k))).collect::<Result<_>>()?;
        if self.converter.is_none() {
            self.converter = Some(RowConverter::new(keys.iter().map(|k| SortField::new(k.data_type().clone())).collect())?);
        }
        let rows = self.converter.as_ref().unwrap().convert_columns(&keys)?;
        let mut live = Vec::new();
        for i in 0..batch.num_rows() {
            let k = rows.row(i);
            if !self.seen.contains(k.as_ref()) {
                self.seen.insert(k.as_ref().into());
                live.push(i as u32);
            }
        }
        Ok(BatchResult { batch, logical_rows: Some(UInt32Array::from(live)), is_drained: drained })
    }
}

#[cfg(test)]
#[path = "distinct_on_tests.rs"]
mod tests;
