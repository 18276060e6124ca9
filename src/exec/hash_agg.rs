//! `HashAggExecutor`: GROUP BY via arrow's row format as the hash key;
//! with no GROUP BY it is the simple aggregation (one output row always).

use std::collections::HashMap;

use arrow::array::{ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions};
use arrow::datatypes::SchemaRef;
use arrow::row::{OwnedRow, RowConverter, SortField};

use super::aggregate::Accumulator;
use super::expr::{cast_array, Expr};
use super::plan::{arrow_schema, AggCall, PlanColumn};
use super::{BatchExecutor, BatchResult, ExecCtx};
use crate::error::Result;

pub struct HashAggExecutor {
    child: Box<dyn BatchExecutor>,
    group_by: Vec<Expr>,
    aggs: Vec<AggCall>,
    columns: Vec<PlanColumn>,
    schema: SchemaRef,
    ctx: ExecCtx,
    output: Option<RecordBatch>,
    pos: usize,
}

impl HashAggExecutor {
    pub fn new(child: Box<dyn BatchExecutor>, group_by: Vec<Expr>, aggs: Vec<AggCall>, columns: &[PlanColumn], ctx: ExecCtx) -> Self {
        HashAggExecutor { child, group_by, aggs, columns: columns.to_vec(), schema: arrow_schema(columns), ctx, output: None, pos: 0 }
    }

    fn aggregate(&mut self) -> Result<RecordBatch> {
        let mut accs: Vec<Accumulator> = self.aggs.iter().map(Accumulator::new).collect();
        let key_types: Vec<_> = self.group_by.iter().map(|e| e.ty().to_arrow()).collect();
        let converter = RowConverter::new(key_types.iter().map(|t| SortField::new(t.clone())).collect())?;
        let mut groups: HashMap<Box<[u8]>, usize> = HashMap::new();
        let mut group_rows: Vec<OwnedRow> = Vec::new();
        let simple = self.group_by.is_empty();
        if simple {
            for a in accs.iter_mut() {
                a.resize(1);
            }
        }
        let mut group_idx: Vec<usize> = Vec::new();
        loop {
            self.ctx.check()?;
            let r = self.child.next_batch(super::BATCH_ROWS)?;
            let drained = r.is_drained;
            let batch = r.into_dense()?;
            let n = batch.num_rows();
            if n > 0 {
                group_idx.clear();
                if simple {
                    group_idx.resize(n, 0);
                } else {
                    let keys: Vec<ArrayRef> = self
                        .group_by
                        .iter()
                        .zip(&key_types)
                        .map(|(e, t)| {
                            let a = e.eval(&batch, &self.ctx)?;
                            if a.data_type() != t {
                                cast_array(&a, crate::types::SqlType::from_arrow(a.data_type()), e.ty())
                            } else {
                                Ok(a)
                            }
                        })
                        .collect::<Result<_>>()?;
                    let rows = converter.convert_columns(&super::keys::normalize_keys(&keys))?;
                    let mut new_bytes = 0;
                    for i in 0..n {
                        let row = rows.row(i);
                        // Look up before inserting: no key allocation for known groups.
                        let g = match groups.get(row.as_ref()) {
                            Some(&g) => g,
                            None => {
                                // The key twice (map and rows), the map's
                                // overhead and a state slot per aggregate.
                                let bytes = row.as_ref().len() * 2 + 64 + 32 * accs.len();
                                new_bytes += bytes;
                                if new_bytes >= 1 << 20 {
                                    self.ctx.charge(std::mem::take(&mut new_bytes), "hash aggregation groups")?;
                                }
                                let g = group_rows.len();
                                groups.insert(row.as_ref().into(), g);
                                group_rows.push(row.owned());
                                g
                            }
                        };
                        group_idx.push(g);
                    }
                    self.ctx.charge(new_bytes, "hash aggregation groups")?;
                    for a in accs.iter_mut() {
                        a.resize(group_rows.len());
                    }
                }
                for a in accs.iter_mut() {
                    let args: Vec<ArrayRef> = a.call.args.iter().map(|e| e.eval(&batch, &self.ctx)).collect::<Result<_>>()?;
                    if a.call.func == super::plan::AggFunc::StringAgg {
                        // string_agg keeps every value it folds in.
                        self.ctx.charge(args.iter().map(|x| super::memory::array_bytes(x.as_ref())).sum(), "string_agg")?;
                    }
                    let filter = a.call.filter.as_ref().map(|f| f.eval(&batch, &self.ctx)).transpose()?;
                    let filter = filter.as_ref().map(|f| f.as_any().downcast_ref::<BooleanArray>().expect("filter is boolean"));
                    if simple {
                        a.update_single(&args, filter, n)?;
                    } else {
                        a.update(&group_idx, &args, filter)?;
                    }
                }
            }
            if drained {
                break;
            }
        }
        let ngroups = if simple { 1 } else { group_rows.len() };
        let mut cols: Vec<ArrayRef> = if simple { vec![] } else { converter.convert_rows(group_rows.iter().map(|r| r.row()))? };
        for a in &accs {
            cols.push(a.finish()?);
        }
        // Coerce to declared output types (e.g. sum over int4 is int8).
        let cols: Vec<ArrayRef> = cols
            .into_iter()
            .zip(&self.columns)
            .map(|(c, pc)| {
                if c.data_type() != &pc.ty.to_arrow() {
                    cast_array(&c, crate::types::SqlType::from_arrow(c.data_type()), pc.ty)
                } else {
                    Ok(c)
                }
            })
            .collect::<Result<_>>()?;
        Ok(RecordBatch::try_new_with_options(self.schema.clone(), cols, &RecordBatchOptions::new().with_row_count(Some(ngroups)))?)
    }
}

impl BatchExecutor for HashAggExecutor {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn next_batch(&mut self, max_rows: usize) -> Result<BatchResult> {
        if self.output.is_none() {
            self.output = Some(self.aggregate()?);
        }
        Ok(super::next_slice(self.output.as_ref().unwrap(), &mut self.pos, max_rows))
    }
}

#[cfg(test)]
#[path = "hash_agg_tests.rs"]
mod tests;
