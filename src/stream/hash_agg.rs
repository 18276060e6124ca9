//! Hash aggregation with retractions.
//!
//! Value state: one row per group in a state table keyed by the group key:
//! the group's row count, then per aggregate call its slots (count: the
//! count; sum / avg: non-NULL count and sum; min / max: non-NULL count, or
//! the extreme itself when the input is append-only). Min / max over an
//! input with retractions keep extreme state: a state table per call keyed
//! by (group key, value) — descending for max — holding each value's
//! multiplicity, so the extreme is the head of the group's range and a
//! retraction of it reads only the next head. A DISTINCT call keeps each
//! (group, value)'s multiplicity and sees a value only as it first appears
//! in its group and as its last copy goes. Each touched group emits the
//! retraction of its old output row and its new row.

use std::collections::HashMap;
use std::ops::Bound;

use arrow::array::{Array, ArrayRef, AsArray};

use super::state_table::{Row, StateTable};
use super::{Changes, Inputs, OpStats, Operator, Renderer};
use crate::error::Result;
use crate::exec::expr::Expr;
use crate::exec::plan::{AggCall, AggFunc, PlanColumn};
use crate::exec::ExecCtx;
use crate::types::{value_at, SqlType, Value};
use crate::{bail, err};

/// Why a call cannot be maintained incrementally, if it cannot.
pub fn unsupported(a: &AggCall) -> Option<&'static str> {
    if a.func != AggFunc::CountStar && a.args.first().is_some_and(|x| x.ty() == SqlType::Numeric) {
        return Some("aggregates over numeric");
    }
    match a.func {
        AggFunc::CountStar | AggFunc::Count | AggFunc::Sum | AggFunc::Avg | AggFunc::Min | AggFunc::Max => None,
        _ => Some("aggregates other than count, sum, avg, min and max"),
    }
}

pub struct HashAgg {
    input: Box<dyn Operator>,
    group_by: Vec<Expr>,
    aggs: Vec<AggCall>,
    columns: Vec<PlanColumn>,
    append_only: bool,
    values: StateTable,
    /// Per call: the extreme state (min / max over retractions).
    extremes: Vec<Option<StateTable>>,
    /// Per DISTINCT call: each (group, value)'s multiplicity; the call sees
    /// a value when it first appears in its group and its retraction when
    /// the last copy goes.
    distincts: Vec<Option<StateTable>>,
    /// Per call: its first slot in a value-state row (after keys and count).
    slots: Vec<usize>,
    /// The group key that is a time window (position, width): rows of a
    /// window that ended at or before the watermark are late and dropped.
    window: Option<(usize, i64)>,
    watermark: std::sync::Arc<std::sync::atomic::AtomicI64>,
    stats: OpStats,
}

fn slot_count(f: AggFunc) -> usize {
    match f {
        AggFunc::Sum | AggFunc::Avg => 2,
        _ => 1,
    }
}

impl HashAgg {
    pub fn new(
        input: Box<dyn Operator>,
        group_by: Vec<Expr>,
        aggs: Vec<AggCall>,
        columns: Vec<PlanColumn>,
        append_only: bool,
        window: Option<(usize, i64)>,
        r: &mut Renderer,
    ) -> HashAgg {
        let g = group_by.len();
        // A window group expires (all its tables' rows) once it has ended.
        let expiring = |t: StateTable| match window {
            Some((at, width)) => t.expire_by(at, width),
            None => t,
        };
        let values = expiring(r.table((0..g).collect(), vec![false; g]));
        let extremes = aggs
            .iter()
            .map(|a| {
                (!append_only && matches!(a.func, AggFunc::Min | AggFunc::Max)).then(|| {
                    let mut desc = vec![false; g + 1];
                    desc[g] = a.func == AggFunc::Max;
                    expiring(r.table((0..=g).collect(), desc).uncached())
                })
            })
            .collect();
        let distincts = aggs.iter().map(|a| a.distinct.then(|| expiring(r.table((0..=g).collect(), vec![false; g + 1])))).collect();
        let mut slots = Vec::new();
        let mut at = g + 1;
        for a in &aggs {
            slots.push(at);
            at += slot_count(a.func);
        }
        HashAgg {
            input,
            group_by,
            aggs,
            columns,
            append_only,
            values,
            extremes,
            distincts,
            slots,
            window,
            watermark: r.watermark.clone(),
            stats: OpStats { name: "hash_agg", ..Default::default() },
        }
    }

    fn empty_state(&self, key: &[Value]) -> Row {
        let mut row = key.to_vec();
        row.push(Value::Int(0));
        for a in &self.aggs {
            match a.func {
                AggFunc::Sum | AggFunc::Avg => row.extend([Value::Int(0), Value::Null]),
                AggFunc::Min | AggFunc::Max if self.append_only => row.push(Value::Null),
                _ => row.push(Value::Int(0)),
            }
        }
        row
    }

    /// The output row of a group's state (extremes read from their tables).
    fn output(&self, state: &Row) -> Result<Row> {
        let g = self.group_by.len();
        let mut out = state[..g].to_vec();
        for (j, a) in self.aggs.iter().enumerate() {
            let s = self.slots[j];
            let v = match a.func {
                AggFunc::CountStar | AggFunc::Count => state[s].clone(),
                AggFunc::Sum => {
                    if state[s] == Value::Int(0) {
                        Value::Null
                    } else {
                        state[s + 1].clone()
                    }
                }
                AggFunc::Avg => match (&state[s], &state[s + 1]) {
                    (Value::Int(n), Value::Float(x)) if *n != 0 => Value::Float(x / *n as f64),
                    // avg of integers is numeric: the exact quotient.
                    (Value::Int(n), Value::Int(x)) if *n != 0 => {
                        use crate::types::numeric::Numeric;
                        Value::Text(Numeric::from_i64(*x).div(&Numeric::from_i64(*n))?.to_string())
                    }
                    _ => Value::Null,
                },
                AggFunc::Min | AggFunc::Max => match &self.extremes[j] {
                    None => state[s].clone(),
                    Some(t) => {
                        if state[s] == Value::Int(0) {
                            Value::Null
                        } else {
                            let head = t.scan(&state[..g], (Bound::Unbounded, Bound::Unbounded), Some(1))?;
                            head.first().map(|r| r[g].clone()).unwrap_or(Value::Null)
                        }
                    }
                },
                _ => bail!(Internal, "aggregate {:?} in a streaming flow", a.func),
            };
            out.push(v);
        }
        Ok(out)
    }
}

fn add_int(a: &Value, b: i64) -> Result<Value> {
    match a {
        Value::Int(x) => x.checked_add(b).map(Value::Int).ok_or_else(|| err!(NumericOutOfRange, "bigint out of range")),
        Value::Null => Ok(Value::Int(b)),
        _ => bail!(Internal, "streaming aggregate state is not an integer"),
    }
}

/// sum += v * d (integers exact, else float).
fn add_sum(sum: &Value, v: &Value, d: i64, float: bool) -> Result<Value> {
    if float {
        let x = match v {
            Value::Int(i) => *i as f64,
            Value::Float(f) => *f,
            _ => bail!(Internal, "sum over a non-number"),
        };
        let s = match sum {
            Value::Float(s) => *s,
            _ => 0.0,
        };
        return Ok(Value::Float(s + x * d as f64));
    }
    let Value::Int(i) = v else { bail!(Internal, "integer sum over a non-integer") };
    let prod = i.checked_mul(d).ok_or_else(|| err!(NumericOutOfRange, "bigint out of range"))?;
    add_int(sum, prod)
}

impl Operator for HashAgg {
    fn step(&mut self, inputs: &Inputs, ctx: &ExecCtx) -> Result<Changes> {
        let ch = self.input.step(inputs, ctx)?;
        self.stats.rows_in += ch.len() as u64;
        let g = self.group_by.len();
        // Touched groups in first-touch order: key → (old output, state).
        let mut index: HashMap<Row, usize> = HashMap::new();
        let mut touched: Vec<(Option<Row>, Row)> = Vec::new();
        if g == 0 {
            // A global aggregate always has its one row.
            let old = self.values.get_row(&[])?;
            let o = old.as_ref().map(|s| self.output(s)).transpose()?;
            let state = old.unwrap_or_else(|| self.empty_state(&[]));
            index.insert(vec![], 0);
            touched.push((o, state));
        }
        if !ch.is_empty() {
            let keys: Vec<ArrayRef> = self.group_by.iter().map(|e| e.eval(&ch.batch, ctx)).collect::<Result<_>>()?;
            let mut args: Vec<Option<ArrayRef>> = Vec::new();
            let mut filters: Vec<Option<arrow::array::BooleanArray>> = Vec::new();
            for a in &self.aggs {
                args.push(a.args.first().map(|e| e.eval(&ch.batch, ctx)).transpose()?);
                filters.push(a.filter.as_ref().map(|f| f.eval(&ch.batch, ctx).map(|m| m.as_boolean().clone())).transpose()?);
            }
            let wm = self.watermark.load(std::sync::atomic::Ordering::Relaxed);
            for (i, &d) in ch.diff.iter().enumerate() {
                let key: Row = keys.iter().map(|k| value_at(k.as_ref(), i)).collect();
                if let Some((at, width)) = self.window {
                    if super::expired(&key[at], width, wm) {
                        continue;
                    }
                }
                let at = match index.get(&key) {
                    Some(&at) => at,
                    None => {
                        let old = self.values.get_row(&key)?;
                        let o = old.as_ref().map(|s| self.output(s)).transpose()?;
                        let state = old.unwrap_or_else(|| self.empty_state(&key));
                        touched.push((o, state));
                        index.insert(key.clone(), touched.len() - 1);
                        touched.len() - 1
                    }
                };
                let state = &mut touched[at].1;
                state[g] = add_int(&state[g], d)?;
                for (j, a) in self.aggs.iter().enumerate() {
                    if let Some(f) = &filters[j] {
                        if !(f.is_valid(i) && f.value(i)) {
                            continue;
                        }
                    }
                    let s = self.slots[j];
                    if a.func == AggFunc::CountStar {
                        state[s] = add_int(&state[s], d)?;
                        continue;
                    }
                    let v = value_at(args[j].as_ref().expect("an aggregate argument").as_ref(), i);
                    if v.is_null() {
                        continue;
                    }
                    let d = match &mut self.distincts[j] {
                        None => d,
                        Some(t) => {
                            let mut pk = key.clone();
                            pk.push(v.clone());
                            let before = match t.get_row(&pk)? {
                                Some(r) => match r[g + 1] {
                                    Value::Int(n) => n,
                                    _ => 0,
                                },
                                None => 0,
                            };
                            let after = before + d;
                            if after == 0 {
                                t.delete_row(&pk);
                            } else {
                                pk.push(Value::Int(after));
                                t.insert_row(pk);
                            }
                            match (before > 0, after > 0) {
                                (false, true) => 1,
                                (true, false) => -1,
                                _ => continue,
                            }
                        }
                    };
                    match a.func {
                        AggFunc::Count => state[s] = add_int(&state[s], d)?,
                        AggFunc::Sum | AggFunc::Avg => {
                            state[s] = add_int(&state[s], d)?;
                            // Integers sum exactly (sum(int8) and avg(int) are numeric).
                            let float = a.args.first().is_none_or(|x| !x.ty().is_integer());
                            state[s + 1] = add_sum(&state[s + 1], &v, d, float)?;
                        }
                        AggFunc::Min | AggFunc::Max => match &mut self.extremes[j] {
                            None => {
                                if d < 0 {
                                    bail!(Internal, "a retraction reached the append-only min/max state");
                                }
                                let better = match &state[s] {
                                    Value::Null => true,
                                    cur => {
                                        let c = v.total_cmp(cur);
                                        if a.func == AggFunc::Min {
                                            c.is_lt()
                                        } else {
                                            c.is_gt()
                                        }
                                    }
                                };
                                if better {
                                    state[s] = v;
                                }
                            }
                            Some(t) => {
                                state[s] = add_int(&state[s], d)?;
                                let mut pk = key.clone();
                                pk.push(v);
                                let n = match t.get_row(&pk)? {
                                    Some(r) => match r[g + 1] {
                                        Value::Int(n) => n,
                                        _ => 0,
                                    },
                                    None => 0,
                                } + d;
                                if n == 0 {
                                    t.delete_row(&pk);
                                } else {
                                    pk.push(Value::Int(n));
                                    t.insert_row(pk);
                                }
                            }
                        },
                        _ => {}
                    }
                }
            }
        }
        let mut out: Vec<(Row, i64)> = Vec::new();
        for (old, state) in touched {
            let gone = g > 0 && state[g] == Value::Int(0);
            let new = if gone {
                self.values.delete_row(&state);
                None
            } else {
                let o = self.output(&state)?;
                self.values.insert_row(state);
                Some(o)
            };
            if old != new {
                out.extend(old.map(|r| (r, -1)));
                out.extend(new.map(|r| (r, 1)));
            }
        }
        self.stats.rows_out += out.len() as u64;
        Changes::from_rows(&self.columns, out)
    }
    fn tables<'a>(&'a mut self, out: &mut Vec<&'a mut StateTable>) {
        out.push(&mut self.values);
        for t in self.extremes.iter_mut().chain(self.distincts.iter_mut()).flatten() {
            out.push(t);
        }
        self.input.tables(out);
    }
    fn stats(&self, out: &mut Vec<OpStats>) {
        out.push(self.stats.with_tables(std::iter::once(&self.values).chain(self.extremes.iter().chain(self.distincts.iter()).flatten())));
        self.input.stats(out);
    }
}
