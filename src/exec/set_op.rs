//! `SetOpExecutor`: UNION, INTERSECT and EXCEPT, with or without ALL, by
//! row-encoded keys.

use std::collections::HashMap;

use arrow::array::{RecordBatch, RecordBatchOptions, UInt32Array};
use arrow::datatypes::SchemaRef;
use arrow::row::{RowConverter, SortField};

use super::keys::normalize_keys;
use super::plan::{arrow_schema, PlanColumn, SetOpKind};
use super::{BatchExecutor, BatchResult, ExecCtx};
use crate::error::Result;

pub struct SetOpExecutor {
    left: Box<dyn BatchExecutor>,
    right: Box<dyn BatchExecutor>,
    kind: SetOpKind,
    all: bool,
    schema: SchemaRef,
    ctx: ExecCtx,
    output: Option<RecordBatch>,
    pos: usize,
}

impl SetOpExecutor {
    pub fn new(
        left: Box<dyn BatchExecutor>,
        right: Box<dyn BatchExecutor>,
        kind: SetOpKind,
        all: bool,
        columns: &[PlanColumn],
        ctx: ExecCtx,
    ) -> Self {
        SetOpExecutor { left, right, kind, all, schema: arrow_schema(columns), ctx, output: None, pos: 0 }
    }

    fn relabel(&self, b: &RecordBatch) -> Result<RecordBatch> {
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            b.columns().to_vec(),
            &RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
        )?)
    }

    fn compute(&mut self) -> Result<RecordBatch> {
        let l: Vec<RecordBatch> = super::drain(&mut self.left, &self.ctx)?.iter().map(|b| self.relabel(b)).collect::<Result<_>>()?;
        let r: Vec<RecordBatch> = super::drain(&mut self.right, &self.ctx)?.iter().map(|b| self.relabel(b)).collect::<Result<_>>()?;
        let left = super::concat(&self.ctx, &self.schema, &l)?;
        let right = super::concat(&self.ctx, &self.schema, &r)?;
        if self.kind == SetOpKind::Union && self.all {
            return super::concat(&self.ctx, &self.schema, &[left, right]);
        }
        // Row-encoded keys; with no columns (`SELECT UNION SELECT`) every row
        // has the same, empty key (arrow's row format cannot hold zero columns).
        let conv = if self.schema.fields().is_empty() {
            None
        } else {
            Some(RowConverter::new(self.schema.fields().iter().map(|f| SortField::new(f.data_type().clone())).collect())?)
        };
        let keys = |b: &RecordBatch| -> Result<Vec<Vec<u8>>> {
            match &conv {
                None => Ok(vec![Vec::new(); b.num_rows()]),
                Some(conv) => {
                    let rows = conv.convert_columns(&normalize_keys(b.columns()))?;
                    Ok((0..b.num_rows()).map(|i| rows.row(i).as_ref().to_vec()).collect())
                }
            }
        };
        let lkeys = keys(&left)?;
        let rkeys = keys(&right)?;
        // Row encodings, then a hash set or map holding a copy of each key.
        let key_bytes: usize = lkeys.iter().chain(&rkeys).map(|k| k.len()).sum();
        self.ctx.charge(key_bytes * 2 + (left.num_rows() + right.num_rows()) * 48, "a set operation's hash table")?;
        if self.kind == SetOpKind::Union {
            let all = super::concat(&self.ctx, &self.schema, &[left, right])?;
            let mut seen = std::collections::HashSet::new();
            let idx: UInt32Array =
                lkeys.into_iter().chain(rkeys).enumerate().filter(|(_, k)| seen.insert(k.clone())).map(|(i, _)| i as u32).collect();
            return super::take_batch(&all, &idx);
        }
        let mut counts: HashMap<Vec<u8>, usize> = HashMap::new();
        for k in rkeys {
            *counts.entry(k).or_default() += 1;
        }
        let mut emitted: HashMap<Vec<u8>, usize> = HashMap::new();
        let mut idx = Vec::new();
        for (i, k) in lkeys.into_iter().enumerate() {
            let in_right = counts.get(&k).copied().unwrap_or(0);
            let e = emitted.entry(k).or_default();
            let keep = match (self.kind, self.all) {
                (SetOpKind::Intersect, false) => in_right > 0 && *e == 0,
                (SetOpKind::Intersect, true) => *e < in_right,
                (SetOpKind::Except, false) => in_right == 0 && *e == 0,
                (SetOpKind::Except, true) => {
                    // Each right copy cancels one left copy.
                    *e += 1;
                    if *e > in_right {
                        idx.push(i as u32);
                    }
                    continue;
                }
                (SetOpKind::Union, _) => unreachable!(),
            };
            if keep {
                *e += 1;
                idx.push(i as u32);
            }
        }
        super::take_batch(&left, &UInt32Array::from(idx))
    }
}

impl BatchExecutor for SetOpExecutor {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn next_batch(&mut self, max_rows: usize) -> Result<BatchResult> {
        if self.output.is_none() {
            self.output = Some(self.compute()?);
        }
        Ok(super::next_slice(self.output.as_ref().unwrap(), &mut self.pos, max_rows))
    }
}

#[cfg(test)]
#[path = "set_op_tests.rs"]
mod tests;
