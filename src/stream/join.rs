//! Equi-joins (inner, left, right, full, semi, anti) over arrangements on
//! both sides.
//!
//! Each side's arrangement is a state table keyed by (join key, row)
//! holding the row's multiplicity: the indexed trace of that side's
//! changes, consolidated at each barrier. An epoch's changes join as
//! `Δleft ⋈ right_old + left_new ⋈ Δright`. A left (full) join also emits
//! the NULL-padded row of a left row while its key has no right rows, and
//! retracts or restores it when the key's right side becomes non-empty or
//! empty; a right (full) join the same for right rows. A semi join emits
//! the left row (its multiplicity, not one per match) while its key has
//! right rows, an anti join while it has none (NOT EXISTS: no NULL-aware
//! NOT IN). Rows whose key has a NULL never match.

use std::collections::HashMap;
use std::ops::Bound;

use arrow::array::{ArrayRef, AsArray};

use super::state_table::{Row, StateTable};
use super::{Changes, Inputs, OpStats, Operator, Renderer};
use crate::error::Result;
use crate::exec::expr::Expr;
use crate::exec::plan::{JoinKind, PlanColumn};
use crate::exec::ExecCtx;
use crate::types::{value_at, Value};

pub struct Join {
    left: Box<dyn Operator>,
    right: Box<dyn Operator>,
    kind: JoinKind,
    lkeys: Vec<Expr>,
    rkeys: Vec<Expr>,
    filter: Option<Expr>,
    lwidth: usize,
    rwidth: usize,
    columns: Vec<PlanColumn>,
    larr: StateTable,
    rarr: StateTable,
    stats: OpStats,
}

impl Join {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        left: Box<dyn Operator>,
        right: Box<dyn Operator>,
        kind: JoinKind,
        on: Vec<(Expr, Expr)>,
        filter: Option<Expr>,
        lcols: Vec<PlanColumn>,
        rcols: Vec<PlanColumn>,
        columns: Vec<PlanColumn>,
        r: &mut Renderer,
    ) -> Join {
        let k = on.len();
        let (lw, rw) = (lcols.len(), rcols.len());
        // Cached by join key: a lookup reads the key's rows whole.
        let larr = r.table((0..k + lw).collect(), vec![false; k + lw]).cached_by(k);
        let rarr = r.table((0..k + rw).collect(), vec![false; k + rw]).cached_by(k);
        let (lkeys, rkeys) = on.into_iter().unzip();
        Join {
            left,
            right,
            kind,
            lkeys,
            rkeys,
            filter,
            lwidth: lw,
            rwidth: rw,
            columns,
            larr,
            rarr,
            stats: OpStats { name: "join", ..Default::default() },
        }
    }
}

/// (key, row, diff) of each change; the key is None when it has a NULL.
fn keyed(ch: &Changes, keys: &[Expr], ctx: &ExecCtx) -> Result<Vec<(Option<Row>, Row, i64)>> {
    if ch.is_empty() {
        return Ok(vec![]);
    }
    let k: Vec<ArrayRef> = keys.iter().map(|e| e.eval(&ch.batch, ctx)).collect::<Result<_>>()?;
    let rows = ch.rows();
    Ok(rows
        .into_iter()
        .zip(&ch.diff)
        .enumerate()
        .map(|(i, (row, d))| {
            let key: Row = k.iter().map(|a| value_at(a.as_ref(), i)).collect();
            let key = (!key.iter().any(|v| v.is_null())).then_some(key);
            (key, row, *d)
        })
        .collect())
}

/// The rows of an arrangement under `key`, with their multiplicities.
fn lookup(arr: &StateTable, key: &[Value], width: usize) -> Result<Vec<(Row, i64)>> {
    let k = key.len();
    Ok(arr
        .scan(key, (Bound::Unbounded, Bound::Unbounded), None)?
        .into_iter()
        .map(|r| {
            let n = match r[k + width] {
                Value::Int(n) => n,
                _ => 0,
            };
            (r[k..k + width].to_vec(), n)
        })
        .collect())
}

/// Add `d` to the multiplicity of (key, row).
fn update(arr: &mut StateTable, key: &[Value], row: &[Value], d: i64) -> Result<()> {
    let mut pk = key.to_vec();
    pk.extend_from_slice(row);
    let n = match arr.get_row(&pk)? {
        Some(r) => match r[pk.len()] {
            Value::Int(n) => n,
            _ => 0,
        },
        None => 0,
    } + d;
    if n == 0 {
        arr.delete_row(&pk);
    } else {
        pk.push(Value::Int(n));
        arr.insert_row(pk);
    }
    Ok(())
}

fn joined(l: &[Value], r: &[Value]) -> Row {
    let mut row = l.to_vec();
    row.extend_from_slice(r);
    row
}

/// Changes grouped by key, in first-seen order; rows whose key has a NULL
/// come separately (they never match).
type ByKey = (Vec<(Row, Vec<(Row, i64)>)>, Vec<(Row, i64)>);

fn by_key(rows: Vec<(Option<Row>, Row, i64)>) -> ByKey {
    let mut at: HashMap<Row, usize> = HashMap::new();
    let mut groups: Vec<(Row, Vec<(Row, i64)>)> = Vec::new();
    let mut nulls = Vec::new();
    for (key, row, d) in rows {
        match key {
            None => nulls.push((row, d)),
            Some(key) => {
                let i = *at.entry(key.clone()).or_insert_with(|| {
                    groups.push((key, vec![]));
                    groups.len() - 1
                });
                groups[i].1.push((row, d));
            }
        }
    }
    (groups, nulls)
}

fn total(rows: &[(Row, i64)]) -> i64 {
    rows.iter().map(|(_, n)| n).sum()
}

impl Operator for Join {
    fn step(&mut self, inputs: &Inputs, ctx: &ExecCtx) -> Result<Changes> {
        let dl = self.left.step(inputs, ctx)?;
        let dr = self.right.step(inputs, ctx)?;
        self.stats.rows_in += (dl.len() + dr.len()) as u64;
        let (lpad, rpad) = (vec![Value::Null; self.lwidth], vec![Value::Null; self.rwidth]);
        // (l, NULL) while a key has no right rows; (NULL, r) while it has
        // no left rows; semi / anti: the left row alone while the key has
        // some / no right rows.
        let pad_l = matches!(self.kind, JoinKind::Left | JoinKind::Full);
        let pad_r = matches!(self.kind, JoinKind::Right | JoinKind::Full);
        let (semi, anti) = (self.kind == JoinKind::Semi, self.kind == JoinKind::Anti);
        let pairs = !(semi || anti);
        let mut out: Vec<(Row, i64)> = Vec::new();
        // Δleft against the right side as it was.
        let (groups, nulls) = by_key(keyed(&dl, &self.lkeys, ctx)?);
        for (l, d) in nulls {
            if pad_l {
                out.push((joined(&l, &rpad), d));
            } else if anti {
                out.push((l, d));
            }
        }
        for (key, changes) in groups {
            let rights = lookup(&self.rarr, &key, self.rwidth)?;
            let has_right = total(&rights) != 0;
            let lbefore = if pad_r && has_right { total(&lookup(&self.larr, &key, self.lwidth)?) } else { 0 };
            let mut lafter = lbefore;
            for (l, d) in changes {
                if pairs {
                    for (r, n) in &rights {
                        out.push((joined(&l, r), d * n));
                    }
                }
                if !has_right && pad_l {
                    out.push((joined(&l, &rpad), d));
                }
                if (!has_right && anti) || (has_right && semi) {
                    out.push((l.clone(), d));
                }
                update(&mut self.larr, &key, &l, d)?;
                lafter += d;
            }
            if pad_r && has_right && (lbefore == 0) != (lafter == 0) {
                // The key's left side filled (retract the padded right
                // rows) or emptied (restore them).
                let sign = if lbefore == 0 { -1 } else { 1 };
                for (r, n) in &rights {
                    out.push((joined(&lpad, r), sign * n));
                }
            }
        }
        // Δright against the left side as it is now.
        let (groups, nulls) = by_key(keyed(&dr, &self.rkeys, ctx)?);
        if pad_r {
            out.extend(nulls.into_iter().map(|(r, d)| (joined(&lpad, &r), d)));
        }
        for (key, changes) in groups {
            let lefts = lookup(&self.larr, &key, self.lwidth)?;
            let has_left = total(&lefts) != 0;
            let before = if pad_l || semi || anti { total(&lookup(&self.rarr, &key, self.rwidth)?) } else { 0 };
            let mut after = before;
            for (r, d) in changes {
                if pairs {
                    for (l, n) in &lefts {
                        out.push((joined(l, &r), d * n));
                    }
                }
                if !has_left && pad_r {
                    out.push((joined(&lpad, &r), d));
                }
                update(&mut self.rarr, &key, &r, d)?;
                after += d;
            }
            if (before == 0) != (after == 0) {
                // The key's right side filled (sign -1: retract the padded
                // and anti rows, emit the semi rows) or emptied.
                let sign = if before == 0 { -1 } else { 1 };
                for (l, n) in &lefts {
                    if pad_l {
                        out.push((joined(l, &rpad), sign * n));
                    } else if anti {
                        out.push((l.clone(), sign * n));
                    } else if semi {
                        out.push((l.clone(), -sign * n));
                    }
                }
            }
        }
        let mut ch = Changes::from_rows(&self.columns, out)?;
        if let Some(f) = &self.filter {
            if !ch.is_empty() {
                let m = f.eval(&ch.batch, ctx)?;
                let m = m.as_boolean();
                let m = if arrow::array::Array::null_count(m) > 0 { arrow::compute::prep_null_mask_filter(m) } else { m.clone() };
                ch = ch.filter(&m)?;
            }
        }
        self.stats.rows_out += ch.len() as u64;
        Ok(ch)
    }
    fn tables<'a>(&'a mut self, out: &mut Vec<&'a mut StateTable>) {
        out.push(&mut self.larr);
        out.push(&mut self.rarr);
        self.left.tables(out);
        self.right.tables(out);
    }
    fn stats(&self, out: &mut Vec<OpStats>) {
        out.push(self.stats.with_tables([&self.larr, &self.rarr]));
        self.left.stats(out);
        self.right.stats(out);
    }
}
