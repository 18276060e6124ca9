//! `WindowExecutor`: window functions over the whole input. Rows are
//! ordered by (partition keys, order keys) with arrow's lexsort; each call
//! walks the ordered rows once (moving frames look back at most n rows).

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::compute::{lexsort_to_indices, SortColumn, SortOptions};
use arrow::datatypes::SchemaRef;
use arrow::row::{RowConverter, SortField};

use super::plan::{arrow_schema, AggFunc, PlanColumn, WindowCall, WindowFrame, WindowFunc};
use super::{BatchExecutor, BatchResult, ExecCtx};
use crate::err;
use crate::error::Result;
use crate::types::{value_at, values_to_array, Value};

pub struct WindowExecutor {
    child: Box<dyn BatchExecutor>,
    calls: Vec<WindowCall>,
    schema: SchemaRef,
    ctx: ExecCtx,
    output: Option<RecordBatch>,
    pos: usize,
}

impl WindowExecutor {
    pub fn new(child: Box<dyn BatchExecutor>, calls: Vec<WindowCall>, columns: &[PlanColumn], ctx: ExecCtx) -> Self {
        WindowExecutor { child, calls, schema: arrow_schema(columns), ctx, output: None, pos: 0 }
    }

    fn compute(&mut self) -> Result<RecordBatch> {
        let in_schema = self.child.schema();
        let batches = super::drain(&mut self.child, &self.ctx)?;
        let input = super::concat(&self.ctx, &in_schema, &batches)?;
        let mut cols: Vec<ArrayRef> = input.columns().to_vec();
        for call in &self.calls {
            cols.push(self.eval_call(call, &input)?);
        }
        Ok(RecordBatch::try_new_with_options(self.schema.clone(), cols, &RecordBatchOptions::new().with_row_count(Some(input.num_rows())))?)
    }

    fn eval_call(&self, call: &WindowCall, input: &RecordBatch) -> Result<ArrayRef> {
        let n = input.num_rows();
        if n == 0 {
            return Ok(arrow::array::new_empty_array(&call.ty.to_arrow()));
        }
        // The sort order, a boxed value per row and the output column.
        self.ctx.charge(n * (8 + 2 * std::mem::size_of::<Value>()), "a window partition")?;
        let part: Vec<ArrayRef> =
            call.partition_by.iter().map(|e| e.eval(input, &self.ctx).map(|a| super::keys::normalize_key(&a))).collect::<Result<_>>()?;
        let ord: Vec<ArrayRef> =
            call.order_by.iter().map(|k| k.expr.eval(input, &self.ctx).map(|a| super::keys::normalize_key(&a))).collect::<Result<_>>()?;
        let mut sort_cols: Vec<SortColumn> =
            part.iter().map(|a| SortColumn { values: a.clone(), options: Some(SortOptions::default()) }).collect();
        for (k, a) in call.order_by.iter().zip(&ord) {
            sort_cols.push(SortColumn { values: a.clone(), options: Some(SortOptions { descending: k.desc, nulls_first: k.nulls_first }) });
        }
        let order: Vec<usize> = if sort_cols.is_empty() {
            (0..n).collect()
        } else {
            lexsort_to_indices(&sort_cols, None)?.values().iter().map(|&i| i as usize).collect()
        };
        let part_rows = encode(&part)?;
        let ord_rows = encode(&ord)?;
        let same_part = |a: usize, b: usize| part_rows.as_ref().is_none_or(|r| r.row(a) == r.row(b));
        let peers = |a: usize, b: usize| ord_rows.as_ref().is_none_or(|r| r.row(a) == r.row(b));
        let args: Vec<ArrayRef> = call.args.iter().map(|e| e.eval(input, &self.ctx)).collect::<Result<_>>()?;
        let arg = |i: usize, k: usize| -> Value { args.get(k).map(|a| value_at(a.as_ref(), i)).unwrap_or(Value::Null) };
        let mut out = vec![Value::Null; n];
        // Partition boundaries in the sorted order.
        let mut start = 0;
        while start < n {
            let mut end = start + 1;
            while end < n && same_part(order[start], order[end]) {
                end += 1;
            }
            let rows = &order[start..end];
            self.ctx.check()?;
            match call.func {
                WindowFunc::RowNumber => {
                    for (k, &r) in rows.iter().enumerate() {
                        out[r] = Value::Int(k as i64 + 1);
                    }
                }
                WindowFunc::Rank | WindowFunc::DenseRank => {
                    let (mut rank, mut dense) = (1i64, 1i64);
                    for k in 0..rows.len() {
                        if k > 0 && !peers(rows[k - 1], rows[k]) {
                            rank = k as i64 + 1;
                            dense += 1;
                        }
                        out[rows[k]] = Value::Int(if call.func == WindowFunc::Rank { rank } else { dense });
                    }
                }
                WindowFunc::Lag | WindowFunc::Lead => {
                    for (k, &r) in rows.iter().enumerate() {
                        let off = match arg(r, 1) {
                            Value::Int(o) => o,
                            Value::Null if args.len() > 1 => {
                                out[r] = Value::Null;
                                continue;
                            }
                            _ => 1,
                        };
                        let j = if call.func == WindowFunc::Lag { k as i64 - off } else { k as i64 + off };
                        out[r] = if j >= 0 && (j as usize) < rows.len() { arg(rows[j as usize], 0) } else { arg(r, 2) };
                    }
                }
                WindowFunc::FirstValue => {
                    for &r in rows {
                        out[r] = arg(rows[0], 0);
                    }
                }
                WindowFunc::LastValue => {
                    // Default frame: through the last peer of the current row.
                    let mut k = 0;
                    while k < rows.len() {
                        let mut e = k + 1;
                        while e < rows.len() && peers(rows[k], rows[e]) {
                            e += 1;
                        }
                        let last = if call.order_by.is_empty() { arg(rows[rows.len() - 1], 0) } else { arg(rows[e - 1], 0) };
                        for &r in &rows[k..e] {
                            out[r] = last.clone();
                        }
                        k = e;
                    }
                }
                WindowFunc::Agg(f) => {
                    let vals: Vec<Value> = rows.iter().map(|&r| if f == AggFunc::CountStar { Value::Int(1) } else { arg(r, 0) }).collect();
                    match call.frame {
                        WindowFrame::Default if call.order_by.is_empty() => {
                            let v = fold(f, &vals)?;
                            for &r in rows {
                                out[r] = v.clone();
                            }
                        }
                        WindowFrame::Default => {
                            // Running value through each peer group.
                            let mut k = 0;
                            while k < rows.len() {
                                let mut e = k + 1;
                                while e < rows.len() && peers(rows[k], rows[e]) {
                                    e += 1;
                                }
                                // Each peer group folds the prefix again
                                // (quadratic): honour timeouts and cancels.
                                self.ctx.check()?;
                                let v = fold(f, &vals[..e])?;
                                for &r in &rows[k..e] {
                                    out[r] = v.clone();
                                }
                                k = e;
                            }
                        }
                        WindowFrame::RowsPreceding(p) => {
                            for k in 0..rows.len() {
                                self.ctx.check()?;
                                let from = p.map(|p| k.saturating_sub(p)).unwrap_or(0);
                                out[rows[k]] = fold(f, &vals[from..=k])?;
                            }
                        }
                    }
                }
            }
            start = end;
        }
        values_to_array(&out, call.ty)
    }
}

fn encode(cols: &[ArrayRef]) -> Result<Option<arrow::row::Rows>> {
    if cols.is_empty() {
        return Ok(None);
    }
    let conv = RowConverter::new(cols.iter().map(|c| SortField::new(c.data_type().clone())).collect())?;
    Ok(Some(conv.convert_columns(cols)?))
}

/// One aggregate over a frame's values (NULLs ignored, as aggregates do).
fn fold(f: AggFunc, vals: &[Value]) -> Result<Value> {
    let live = vals.iter().filter(|v| !v.is_null());
    Ok(match f {
        AggFunc::CountStar | AggFunc::Count => Value::Int(live.count() as i64),
        AggFunc::Sum => {
            let mut int: Option<i64> = None;
            let mut flt: Option<f64> = None;
            for v in live {
                match v {
                    Value::Int(i) => {
                        int = Some(int.unwrap_or(0).checked_add(*i).ok_or_else(|| err!(NumericOutOfRange, "bigint out of range"))?)
                    }
                    Value::Float(x) => flt = Some(flt.unwrap_or(0.0) + x),
                    _ => {}
                }
            }
            match (int, flt) {
                (Some(i), None) => Value::Int(i),
                (None, Some(x)) => Value::Float(x),
                (Some(i), Some(x)) => Value::Float(i as f64 + x),
                (None, None) => Value::Null,
            }
        }
        AggFunc::Avg => {
            let (mut s, mut c) = (0.0, 0);
            for v in live {
                match v {
                    Value::Int(i) => s += *i as f64,
                    Value::Float(x) => s += x,
                    _ => {}
                }
                c += 1;
            }
            if c == 0 {
                Value::Null
            } else {
                Value::Float(s / c as f64)
            }
        }
        AggFunc::Min | AggFunc::Max => {
            let mut best: Option<&Value> = None;
            for v in live {
                let better = match best {
                    None => true,
                    Some(b) => {
                        let o = v.total_cmp(b);
                        if f == AggFunc::Min {
                            o.is_lt()
                        } else {
                            o.is_gt()
                        }
                    }
                };
                if better {
                    best = Some(v);
                }
            }
            best.cloned().unwrap_or(Value::Null)
        }
        other => return Err(err!(FeatureNotSupported, "{other:?} is not supported as a window function")),
    })
}

impl BatchExecutor for WindowExecutor {
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
#[path = "window_tests.rs"]
mod tests;
