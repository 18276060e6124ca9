//! `x NOT IN (subquery)` (uncorrelated) as a NULL-aware anti join.
//!
//! A left row passes while the subquery is empty, or while its `x` is not
//! NULL, no subquery row equals it and no subquery row is NULL (SQL's
//! three-valued NOT IN: a NULL anywhere makes it unknown, which a filter
//! drops). State: the left rows keyed by (x, row) with multiplicities,
//! the subquery's values with multiplicities, and one row of totals (all
//! values, NULL values). An epoch re-decides the keys it touches; when the
//! subquery turns empty, non-empty, NULL-holding or not, every left key is
//! re-decided (a scan of the left state).
//!
//! [`split`] finds the conjunct in a filter. May import what `stream` imports.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

use arrow::array::ArrayRef;

use super::state_table::{encode_row, Row, StateTable};
use super::{consolidate, Changes, Inputs, OpStats, Operator, Renderer};
use crate::error::Result;
use crate::exec::expr::{Expr, SubqueryKind};
use crate::exec::plan::PlanColumn;
use crate::exec::ExecCtx;
use crate::planner::logical::{logical_subplan, LogicalPlan};
use crate::types::{value_at, Value};

/// A conjunct `x NOT IN (q)` with `q` uncorrelated among `conj`: (x, q,
/// the other conjuncts).
pub fn split(conj: &[Expr]) -> Option<(Expr, &LogicalPlan, Vec<Expr>)> {
    let at = conj.iter().position(|c| {
        matches!(c, Expr::Subquery { kind: SubqueryKind::In { negated: true, .. }, correlated: false, plan, .. }
            if logical_subplan(plan).is_some_and(|p| p.columns().len() == 1))
    })?;
    let Expr::Subquery { kind: SubqueryKind::In { expr, .. }, plan, .. } = &conj[at] else { return None };
    let rest = conj.iter().enumerate().filter(|(i, _)| *i != at).map(|(_, c)| c.clone()).collect();
    Some(((**expr).clone(), logical_subplan(plan)?, rest))
}

pub struct NotIn {
    left: Box<dyn Operator>,
    right: Box<dyn Operator>,
    probe: Expr,
    width: usize,
    columns: Vec<PlanColumn>,
    /// (x, row) → multiplicity.
    lefts: StateTable,
    /// value → multiplicity.
    values: StateTable,
    /// [0, all values, NULL values].
    totals: StateTable,
    stats: OpStats,
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// The subquery is empty: every row passes.
    Empty,
    /// It holds a NULL: no row passes.
    Blocked,
    /// Rows whose x is not NULL and not among the values pass.
    Normal,
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(n) => *n,
        _ => 0,
    }
}

impl NotIn {
    pub fn new(left: Box<dyn Operator>, right: Box<dyn Operator>, probe: Expr, columns: Vec<PlanColumn>, r: &mut Renderer) -> NotIn {
        let w = columns.len();
        let lefts = r.table((0..=w).collect(), vec![false; w + 1]).cached_by(1);
        let values = r.table(vec![0], vec![false]);
        let totals = r.table(vec![0], vec![false]);
        NotIn { left, right, probe, width: w, columns, lefts, values, totals, stats: OpStats { name: "not_in", ..Default::default() } }
    }

    fn totals(&self) -> Result<(i64, i64)> {
        Ok(match self.totals.get_row(&[Value::Int(0)])? {
            Some(r) => (int(&r[1]), int(&r[2])),
            None => (0, 0),
        })
    }

    fn count(&self, v: &Value) -> Result<i64> {
        Ok(self.values.get_row(std::slice::from_ref(v))?.map(|r| int(&r[1])).unwrap_or(0))
    }

    fn rows(&self, x: &Value) -> Result<Vec<(Row, i64)>> {
        Ok(self
            .lefts
            .scan(std::slice::from_ref(x), (Bound::Unbounded, Bound::Unbounded), None)?
            .into_iter()
            .map(|r| (r[1..=self.width].to_vec(), int(&r[self.width + 1])))
            .collect())
    }
}

fn mode((all, nulls): (i64, i64)) -> Mode {
    if all == 0 {
        Mode::Empty
    } else if nulls > 0 {
        Mode::Blocked
    } else {
        Mode::Normal
    }
}

fn passes(m: Mode, x: &Value, count: i64) -> bool {
    match m {
        Mode::Empty => true,
        Mode::Blocked => false,
        Mode::Normal => !x.is_null() && count == 0,
    }
}

impl Operator for NotIn {
    fn step(&mut self, inputs: &Inputs, ctx: &ExecCtx) -> Result<Changes> {
        let dl = self.left.step(inputs, ctx)?;
        let dr = self.right.step(inputs, ctx)?;
        self.stats.rows_in += (dl.len() + dr.len()) as u64;
        // The changes by value / by x (encoded, so NULL is a key too).
        let mut dvals: BTreeMap<Vec<u8>, (Value, i64)> = BTreeMap::new();
        let rcol = dr.batch.columns().first().cloned();
        for (i, d) in dr.diff.iter().enumerate() {
            let v = value_at(rcol.as_ref().expect("one column").as_ref(), i);
            dvals.entry(encode_row(std::slice::from_ref(&v))).or_insert((v, 0)).1 += d;
        }
        let mut dlefts: BTreeMap<Vec<u8>, (Value, Vec<(Row, i64)>)> = BTreeMap::new();
        if !dl.is_empty() {
            let xs: ArrayRef = self.probe.eval(&dl.batch, ctx)?;
            for (i, (row, d)) in dl.rows().into_iter().zip(dl.diff.iter().copied()).enumerate() {
                let x = value_at(xs.as_ref(), i);
                dlefts.entry(encode_row(std::slice::from_ref(&x))).or_insert_with(|| (x, vec![])).1.push((row, d));
            }
        }
        if dvals.is_empty() && dlefts.is_empty() {
            return Ok(Changes::empty(&self.columns));
        }
        let before = self.totals()?;
        let mut after = before;
        for (v, d) in dvals.values() {
            after.0 += d;
            if v.is_null() {
                after.1 += d;
            }
        }
        let (mb, ma) = (mode(before), mode(after));
        // The keys to re-decide.
        let mut keys: HashMap<Vec<u8>, Value> = HashMap::new();
        for (k, (x, _)) in &dlefts {
            keys.insert(k.clone(), x.clone());
        }
        if mb != ma {
            for r in self.lefts.scan(&[], (Bound::Unbounded, Bound::Unbounded), None)? {
                keys.insert(encode_row(&r[..1]), r[0].clone());
            }
        } else if ma == Mode::Normal {
            for (k, (v, _)) in &dvals {
                keys.insert(k.clone(), v.clone());
            }
        }
        let mut old: Vec<(Value, i64, Vec<(Row, i64)>)> = Vec::with_capacity(keys.len());
        for x in keys.values() {
            old.push((x.clone(), self.count(x)?, self.rows(x)?));
        }
        for (v, d) in dvals.into_values() {
            let n = self.count(&v)? + d;
            if n == 0 {
                self.values.delete_row(&[v]);
            } else {
                self.values.insert_row(vec![v, Value::Int(n)]);
            }
        }
        for (x, changes) in dlefts.into_values() {
            for (row, d) in consolidate(changes) {
                let mut pk = vec![x.clone()];
                pk.extend(row);
                let n = self.lefts.get_row(&pk)?.map(|r| int(&r[self.width + 1])).unwrap_or(0) + d;
                if n == 0 {
                    self.lefts.delete_row(&pk);
                } else {
                    pk.push(Value::Int(n));
                    self.lefts.insert_row(pk);
                }
            }
        }
        if after != before {
            self.totals.insert_row(vec![Value::Int(0), Value::Int(after.0), Value::Int(after.1)]);
        }
        let mut out: Vec<(Row, i64)> = Vec::new();
        for (x, cb, rows) in old {
            if passes(mb, &x, cb) {
                out.extend(rows.into_iter().map(|(r, n)| (r, -n)));
            }
            if passes(ma, &x, self.count(&x)?) {
                out.extend(self.rows(&x)?);
            }
        }
        let out = consolidate(out);
        self.stats.rows_out += out.len() as u64;
        Changes::from_rows(&self.columns, out)
    }
    fn tables<'a>(&'a mut self, out: &mut Vec<&'a mut StateTable>) {
        out.push(&mut self.lefts);
        out.push(&mut self.values);
        out.push(&mut self.totals);
        self.left.tables(out);
        self.right.tables(out);
    }
    fn stats(&self, out: &mut Vec<OpStats>) {
        out.push(self.stats.with_tables([&self.lefts, &self.values, &self.totals]));
        self.left.stats(out);
        self.right.stats(out);
    }
}
