//! Top-n per group: `ORDER BY … LIMIT n [OFFSET m]` and
//! `row_number() OVER (PARTITION BY … ORDER BY …) <= n` with retractions.
//!
//! State: one table keyed by (partition key, per ORDER BY key a NULL-order
//! flag and the value — inverted for DESC —, the whole row) holding the
//! row's multiplicity, so a partition's rows lie in the query's order and
//! its top n is the head of its range. A touched partition reads its head
//! (`offset + n` rows, plus one per row this epoch wrote over) before and
//! after the epoch's changes and emits the difference; a retraction of a
//! top row thus reads only the next head row, never the partition whole.
//! Over an append-only input (an instant source) rows pushed out of the
//! top are deleted: the state is the top rows of each partition only.
//! Ties in the ORDER BY keys are broken by the row itself (PostgreSQL
//! leaves their order unspecified). `row_number` is appended as the last
//! column when the plan numbers rows.
//!
//! [`spec`] recognises the plans (a Filter on a row_number column over a
//! Window, possibly through a Project; a Sort with a fetch; a Limit).
//! May import what `stream` imports.

use std::collections::HashMap;
use std::ops::Bound;

use arrow::array::ArrayRef;

use super::state_table::{Row, StateTable};
use super::{consolidate, Changes, Inputs, OpStats, Operator, Renderer};
use crate::error::Result;
use crate::exec::expr::{BinOp, Expr};
use crate::exec::plan::{PlanColumn, SortKey, WindowFunc};
use crate::exec::ExecCtx;
use crate::planner::logical::LogicalPlan;
use crate::types::{value_at, SqlType, Value};

/// A top-n over `input`, as recognised in a plan.
pub struct Spec<'a> {
    pub input: &'a LogicalPlan,
    pub partition: Vec<Expr>,
    pub order: Vec<SortKey>,
    pub offset: usize,
    pub limit: usize,
    /// Append row_number() (the Window's column).
    pub numbered: bool,
    /// Between the top-n and the Filter's position: the Window's Project.
    pub project: Option<(Vec<Expr>, Vec<PlanColumn>)>,
    /// The Filter's other conjuncts, over the Filter's input.
    pub rest: Option<Expr>,
}

/// The bounds `rn <op> lit` of a conjunct on column `rn`: (lower
/// exclusive bound, upper inclusive bound).
fn rn_bound(e: &Expr, rn: usize) -> Option<(Option<i64>, Option<i64>)> {
    let Expr::Binary { op, left, right, .. } = e else { return None };
    let lit = |e: &Expr| match e {
        Expr::Literal { value: Value::Int(n), .. } => Some(*n),
        Expr::Cast { expr, .. } => match expr.as_ref() {
            Expr::Literal { value: Value::Int(n), .. } => Some(*n),
            _ => None,
        },
        _ => None,
    };
    let is_rn = |e: &Expr| match e {
        Expr::Column { index, .. } => *index == rn,
        Expr::Cast { expr, .. } => matches!(expr.as_ref(), Expr::Column { index, .. } if *index == rn),
        _ => false,
    };
    // Normalise to `rn op n`.
    let (op, n) = if is_rn(left) {
        (*op, lit(right)?)
    } else if is_rn(right) {
        let flipped = op.commuted();
        (flipped, lit(left)?)
    } else {
        return None;
    };
    Some(match op {
        BinOp::LtEq => (None, Some(n)),
        BinOp::Lt => (None, Some(n - 1)),
        BinOp::Eq => (Some(n - 1), Some(n)),
        BinOp::Gt => (Some(n), None),
        BinOp::GtEq => (Some(n - 1), None),
        _ => return None,
    })
}

/// The top-n `plan` computes, if it is one.
pub fn spec(plan: &LogicalPlan) -> Option<Spec<'_>> {
    match plan {
        LogicalPlan::Sort { input, keys, fetch: Some(n) } => {
            Some(Spec { input, partition: vec![], order: keys.clone(), offset: 0, limit: *n, numbered: false, project: None, rest: None })
        }
        LogicalPlan::Limit { input, limit, offset } => {
            let (inner, order, fetch) = match input.as_ref() {
                LogicalPlan::Sort { input, keys, fetch } => (input.as_ref(), keys.clone(), *fetch),
                // No ORDER BY: any rows will do; take them in row order.
                other => (
                    other,
                    other
                        .columns()
                        .iter()
                        .enumerate()
                        .map(|(i, c)| SortKey { expr: Expr::Column { index: i, ty: c.ty }, desc: false, nulls_first: false })
                        .collect(),
                    None,
                ),
            };
            let mut n = limit.unwrap_or(usize::MAX);
            if let Some(f) = fetch {
                n = n.min(f.saturating_sub(*offset));
            }
            Some(Spec { input: inner, partition: vec![], order, offset: *offset, limit: n, numbered: false, project: None, rest: None })
        }
        LogicalPlan::Filter { input, predicate } => {
            let (window, project, rn) = match input.as_ref() {
                w @ LogicalPlan::Window { input, .. } => (w, None, input.columns().len()),
                LogicalPlan::Project { input: w, exprs, columns } => {
                    let LogicalPlan::Window { input: wi, .. } = w.as_ref() else { return None };
                    let at = wi.columns().len();
                    let rn = exprs.iter().position(|e| matches!(e, Expr::Column { index, .. } if *index == at))?;
                    (w.as_ref(), Some((exprs.clone(), columns.clone())), rn)
                }
                _ => return None,
            };
            let LogicalPlan::Window { input, calls, .. } = window else { return None };
            let [call] = calls.as_slice() else { return None };
            if call.func != WindowFunc::RowNumber {
                return None;
            }
            let mut parts = Vec::new();
            crate::planner::rewrite::conjuncts(predicate.clone(), &mut parts);
            let (mut lo, mut hi) = (0i64, i64::MAX);
            let mut rest = Vec::new();
            for p in parts {
                match rn_bound(&p, rn) {
                    Some((l, h)) => {
                        lo = lo.max(l.unwrap_or(0));
                        hi = hi.min(h.unwrap_or(i64::MAX));
                    }
                    None => rest.push(p),
                }
            }
            if hi == i64::MAX {
                return None;
            }
            let lo = lo.max(0);
            Some(Spec {
                input,
                partition: call.partition_by.clone(),
                order: call.order_by.clone(),
                offset: lo as usize,
                limit: (hi - lo).max(0) as usize,
                numbered: true,
                project,
                rest: crate::planner::rewrite::and_all(rest),
            })
        }
        _ => None,
    }
}

pub struct TopN {
    input: Box<dyn Operator>,
    partition: Vec<Expr>,
    order: Vec<SortKey>,
    offset: usize,
    limit: usize,
    numbered: bool,
    /// The input never retracts (an instant source): a row pushed out of
    /// the top can never come back, so the state keeps the top rows only.
    append_only: bool,
    width: usize,
    columns: Vec<PlanColumn>,
    state: StateTable,
    stats: OpStats,
}

impl TopN {
    /// A top-n over `input` (rows of `cols`): per partition, the rows in
    /// positions `offset + 1 ..= offset + limit` by `order`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        input: Box<dyn Operator>,
        cols: &[PlanColumn],
        partition: Vec<Expr>,
        order: Vec<SortKey>,
        offset: usize,
        limit: usize,
        numbered: bool,
        append_only: bool,
        r: &mut Renderer,
    ) -> TopN {
        let width = cols.len();
        let (g, k) = (partition.len(), order.len());
        let mut desc = vec![false; g];
        for key in &order {
            desc.extend([false, key.desc]);
        }
        desc.extend(std::iter::repeat_n(false, width));
        let n = desc.len();
        // Read by the head of a partition's range (partitions may be
        // large): not cached.
        let state = r.table((0..n).collect(), desc).uncached();
        let mut columns = cols.to_vec();
        if numbered {
            columns.push(PlanColumn::new("row_number", SqlType::Int8));
        }
        debug_assert_eq!(n, g + 2 * k + width);
        TopN {
            input,
            partition,
            order,
            offset,
            limit,
            numbered,
            append_only,
            width,
            columns,
            state,
            stats: OpStats { name: "top_n", ..Default::default() },
        }
    }

    /// The rows in the top positions of a partition, numbered from 1.
    fn head(&self, key: &[Value]) -> Result<Vec<(Row, i64)>> {
        let want = self.offset.saturating_add(self.limit);
        let at = self.partition.len() + 2 * self.order.len();
        let mut out = Vec::new();
        let mut pos = 0usize;
        for r in self.state.scan(key, (Bound::Unbounded, Bound::Unbounded), Some(want))? {
            let n = match r[at + self.width] {
                Value::Int(n) => n.max(0) as usize,
                _ => 0,
            };
            for _ in 0..n {
                if pos >= want {
                    return Ok(out);
                }
                pos += 1;
                if pos > self.offset {
                    let mut row = r[at..at + self.width].to_vec();
                    if self.numbered {
                        row.push(Value::Int(pos as i64));
                    }
                    out.push((row, 1));
                }
            }
        }
        Ok(out)
    }
}

impl TopN {
    /// Delete a partition's rows past the top positions (append-only
    /// input: the partition held at most that many before this epoch).
    fn trim(&mut self, key: &[Value]) -> Result<()> {
        let want = self.offset.saturating_add(self.limit);
        let at = self.partition.len() + 2 * self.order.len() + self.width;
        let mut pos = 0usize;
        for r in self.state.scan(key, (Bound::Unbounded, Bound::Unbounded), None)? {
            if pos >= want {
                self.state.delete_row(&r);
            }
            pos = pos.saturating_add(match r[at] {
                Value::Int(n) => n.max(0) as usize,
                _ => 0,
            });
        }
        Ok(())
    }
}

impl Operator for TopN {
    fn step(&mut self, inputs: &Inputs, ctx: &ExecCtx) -> Result<Changes> {
        let ch = self.input.step(inputs, ctx)?;
        self.stats.rows_in += ch.len() as u64;
        if ch.is_empty() || self.limit == 0 {
            return Ok(Changes::empty(&self.columns));
        }
        let parts: Vec<ArrayRef> = self.partition.iter().map(|e| e.eval(&ch.batch, ctx)).collect::<Result<_>>()?;
        let keys: Vec<ArrayRef> = self.order.iter().map(|k| k.expr.eval(&ch.batch, ctx)).collect::<Result<_>>()?;
        // Changes by partition, in first-seen order.
        let mut at: HashMap<Row, usize> = HashMap::new();
        let mut groups: Vec<(Row, Vec<(Row, i64)>)> = Vec::new();
        for (i, (row, d)) in ch.rows().into_iter().zip(ch.diff.iter().copied()).enumerate() {
            let part: Row = parts.iter().map(|a| value_at(a.as_ref(), i)).collect();
            let mut pk = part.clone();
            for (a, k) in keys.iter().zip(&self.order) {
                let v = value_at(a.as_ref(), i);
                pk.push(Value::Bool(v.is_null() != k.nulls_first));
                pk.push(v);
            }
            pk.extend(row);
            let j = *at.entry(part.clone()).or_insert_with(|| {
                groups.push((part, vec![]));
                groups.len() - 1
            });
            groups[j].1.push((pk, d));
        }
        let mut out: Vec<(Row, i64)> = Vec::new();
        for (part, changes) in groups {
            let before = self.head(&part)?;
            for (pk, d) in consolidate(changes) {
                self.state.add_count(pk, d)?;
            }
            let after = self.head(&part)?;
            if self.append_only {
                self.trim(&part)?;
            }
            out.extend(before.into_iter().map(|(r, d)| (r, -d)));
            out.extend(after);
        }
        let out = consolidate(out);
        self.stats.rows_out += out.len() as u64;
        Changes::from_rows(&self.columns, out)
    }
    fn tables<'a>(&'a mut self, out: &mut Vec<&'a mut StateTable>) {
        out.push(&mut self.state);
        self.input.tables(out);
    }
    fn stats(&self, out: &mut Vec<OpStats>) {
        out.push(self.stats.with_tables([&self.state]));
        self.input.stats(out);
    }
}
