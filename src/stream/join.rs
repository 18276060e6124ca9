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
//! NOT IN). Rows whose key has a NULL never match. A condition beyond the
//! equalities (a residual) filters an inner join's output; an outer, semi
//! or anti join with one recomputes each touched key's output from both
//! arrangements before and after the epoch and emits the difference.
//! When one side is static (a constant relation, fed in the first epoch
//! only: hop()'s window numbers), the other side's rows are not kept: the
//! state stays the static side's size however many rows stream through.

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

/// A join input whose rows all arrive in the dataflow's first epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Left,
    Right,
}

pub struct Join {
    /// The static side, when the join can leave the other side's rows
    /// out of its arrangement (they never meet a later change).
    static_side: Option<Side>,
    /// Each side's time index column: its rows at or before the watermark
    /// are late (dropped) and leave the arrangement.
    times: (Option<usize>, Option<usize>),
    watermark: std::sync::Arc<std::sync::atomic::AtomicI64>,
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
    /// The joined row's columns (left then right): what `filter` reads.
    joined_cols: Vec<PlanColumn>,
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
        static_side: Option<Side>,
        times: (Option<usize>, Option<usize>),
        r: &mut Renderer,
    ) -> Join {
        let k = on.len();
        let (lw, rw) = (lcols.len(), rcols.len());
        // Cached by join key: a lookup reads the key's rows whole.
        // A side's rows expire with the watermark by their time index.
        let expiring = |t: StateTable, time: Option<usize>| match time {
            Some(c) => t.expire_by(k + c, 0),
            None => t,
        };
        let larr = expiring(r.table((0..k + lw).collect(), vec![false; k + lw]).cached_by(k), times.0);
        let rarr = expiring(r.table((0..k + rw).collect(), vec![false; k + rw]).cached_by(k), times.1);
        let (lkeys, rkeys) = on.into_iter().unzip();
        let mut joined_cols = lcols;
        joined_cols.extend(rcols);
        // Which kinds can skip keeping the other side: those that never pad
        // the static side's rows (padding counts the other side's rows).
        let residual = filter.is_some() && kind != JoinKind::Inner;
        let static_side = static_side.filter(|s| {
            !residual
                && match s {
                    Side::Right => matches!(kind, JoinKind::Inner | JoinKind::Left | JoinKind::Semi | JoinKind::Anti),
                    Side::Left => matches!(kind, JoinKind::Inner | JoinKind::Right),
                }
        });
        Join {
            times,
            watermark: r.watermark.clone(),
            static_side,
            joined_cols,
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

/// The changes whose time (column `time`) is after the watermark.
fn drop_late(ch: Changes, time: Option<usize>, wm: i64) -> Result<Changes> {
    let Some(c) = time else { return Ok(ch) };
    if wm == i64::MIN || ch.is_empty() {
        return Ok(ch);
    }
    let col = ch.batch.column(c).clone();
    let keep = arrow::array::BooleanArray::from_iter((0..ch.len()).map(|i| Some(!super::expired(&value_at(col.as_ref(), i), 0, wm))));
    ch.filter(&keep)
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
    arr.add_count(pk, d)
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

impl Join {
    /// The output of one key's rows on both sides under a residual
    /// condition: pairs where it holds; a left (right) row no pair of
    /// which holds, NULL-padded for a left (right) join; for semi / anti,
    /// the left rows with some / no such pair.
    fn key_output(&self, lefts: &[(Row, i64)], rights: &[(Row, i64)], ctx: &ExecCtx) -> Result<Vec<(Row, i64)>> {
        let filter = self.filter.as_ref().expect("a residual condition");
        let pairs: Vec<(Row, i64)> = lefts.iter().flat_map(|(l, nl)| rights.iter().map(move |(r, nr)| (joined(l, r), nl * nr))).collect();
        let holds: Vec<bool> = if pairs.is_empty() {
            vec![]
        } else {
            let ch = Changes::from_rows(&self.joined_cols, pairs.clone())?;
            let m = filter.eval(&ch.batch, ctx)?;
            let m = m.as_boolean();
            (0..m.len()).map(|i| arrow::array::Array::is_valid(m, i) && m.value(i)).collect()
        };
        let nr = rights.len();
        let lmatch: Vec<bool> = (0..lefts.len()).map(|i| (0..nr).any(|j| holds[i * nr + j])).collect();
        let rmatch: Vec<bool> = (0..nr).map(|j| (0..lefts.len()).any(|i| holds[i * nr + j])).collect();
        let (lpad, rpad) = (vec![Value::Null; self.lwidth], vec![Value::Null; self.rwidth]);
        let mut out = Vec::new();
        match self.kind {
            JoinKind::Semi | JoinKind::Anti => {
                let want = self.kind == JoinKind::Semi;
                out.extend(lefts.iter().zip(&lmatch).filter(|(_, m)| **m == want).map(|((l, n), _)| (l.clone(), *n)));
            }
            kind => {
                out.extend(pairs.into_iter().zip(&holds).filter(|(_, h)| **h).map(|(p, _)| p));
                if matches!(kind, JoinKind::Left | JoinKind::Full) {
                    out.extend(lefts.iter().zip(&lmatch).filter(|(_, m)| !**m).map(|((l, n), _)| (joined(l, &rpad), *n)));
                }
                if matches!(kind, JoinKind::Right | JoinKind::Full) {
                    out.extend(rights.iter().zip(&rmatch).filter(|(_, m)| !**m).map(|((r, n), _)| (joined(&lpad, r), *n)));
                }
            }
        }
        Ok(out)
    }

    /// An outer, semi or anti join with a residual condition: each key
    /// the epoch touches is joined whole before and after its changes,
    /// and the difference is the output (the condition decides per pair
    /// whether a row is matched, so padding cannot follow counts alone).
    fn step_residual(&mut self, dl: Changes, dr: Changes, ctx: &ExecCtx) -> Result<Changes> {
        let (lpad, rpad) = (vec![Value::Null; self.lwidth], vec![Value::Null; self.rwidth]);
        let mut out: Vec<(Row, i64)> = Vec::new();
        let (lgroups, lnulls) = by_key(keyed(&dl, &self.lkeys, ctx)?);
        let (rgroups, rnulls) = by_key(keyed(&dr, &self.rkeys, ctx)?);
        for (l, d) in lnulls {
            match self.kind {
                JoinKind::Left | JoinKind::Full => out.push((joined(&l, &rpad), d)),
                JoinKind::Anti => out.push((l, d)),
                _ => {}
            }
        }
        if matches!(self.kind, JoinKind::Right | JoinKind::Full) {
            out.extend(rnulls.into_iter().map(|(r, d)| (joined(&lpad, &r), d)));
        }
        let mut keys: Vec<(Row, Vec<(Row, i64)>, Vec<(Row, i64)>)> = Vec::new();
        let mut at: HashMap<Row, usize> = HashMap::new();
        for (key, ch) in lgroups {
            at.insert(key.clone(), keys.len());
            keys.push((key, ch, vec![]));
        }
        for (key, ch) in rgroups {
            match at.get(&key) {
                Some(&i) => keys[i].2 = ch,
                None => keys.push((key, vec![], ch)),
            }
        }
        for (key, lch, rch) in keys {
            let before = self.key_output(&lookup(&self.larr, &key, self.lwidth)?, &lookup(&self.rarr, &key, self.rwidth)?, ctx)?;
            for (l, d) in lch {
                update(&mut self.larr, &key, &l, d)?;
            }
            for (r, d) in rch {
                update(&mut self.rarr, &key, &r, d)?;
            }
            let after = self.key_output(&lookup(&self.larr, &key, self.lwidth)?, &lookup(&self.rarr, &key, self.rwidth)?, ctx)?;
            out.extend(before.into_iter().map(|(r, d)| (r, -d)));
            out.extend(after);
        }
        let ch = Changes::from_rows(&self.columns, super::consolidate(out))?;
        self.stats.rows_out += ch.len() as u64;
        Ok(ch)
    }
}

impl Join {
    /// Δleft against the right arrangement as it is; `store`: keep the
    /// left rows in the left arrangement.
    fn left_block(&mut self, dl: &Changes, out: &mut Vec<(Row, i64)>, ctx: &ExecCtx, store: bool) -> Result<()> {
        let (lpad, rpad) = (vec![Value::Null; self.lwidth], vec![Value::Null; self.rwidth]);
        // (l, NULL) while a key has no right rows; (NULL, r) while it has
        // no left rows; semi / anti: the left row alone while the key has
        // some / no right rows.
        let pad_l = matches!(self.kind, JoinKind::Left | JoinKind::Full);
        let pad_r = matches!(self.kind, JoinKind::Right | JoinKind::Full);
        let (semi, anti) = (self.kind == JoinKind::Semi, self.kind == JoinKind::Anti);
        let pairs = !(semi || anti);
        // Δleft against the right side as it was.
        let (groups, nulls) = by_key(keyed(dl, &self.lkeys, ctx)?);
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
                if store {
                    update(&mut self.larr, &key, &l, d)?;
                }
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
        Ok(())
    }

    /// Δright against the left arrangement as it is; `store`: keep the
    /// right rows in the right arrangement.
    fn right_block(&mut self, dr: &Changes, out: &mut Vec<(Row, i64)>, ctx: &ExecCtx, store: bool) -> Result<()> {
        let (lpad, rpad) = (vec![Value::Null; self.lwidth], vec![Value::Null; self.rwidth]);
        // (l, NULL) while a key has no right rows; (NULL, r) while it has
        // no left rows; semi / anti: the left row alone while the key has
        // some / no right rows.
        let pad_l = matches!(self.kind, JoinKind::Left | JoinKind::Full);
        let pad_r = matches!(self.kind, JoinKind::Right | JoinKind::Full);
        let (semi, anti) = (self.kind == JoinKind::Semi, self.kind == JoinKind::Anti);
        let pairs = !(semi || anti);
        // Δright against the left side as it is now.
        let (groups, nulls) = by_key(keyed(dr, &self.rkeys, ctx)?);
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
                if store {
                    update(&mut self.rarr, &key, &r, d)?;
                }
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
        Ok(())
    }
}

impl Operator for Join {
    fn step(&mut self, inputs: &Inputs, ctx: &ExecCtx) -> Result<Changes> {
        let wm = self.watermark.load(std::sync::atomic::Ordering::Relaxed);
        let dl = drop_late(self.left.step(inputs, ctx)?, self.times.0, wm)?;
        let dr = drop_late(self.right.step(inputs, ctx)?, self.times.1, wm)?;
        self.stats.rows_in += (dl.len() + dr.len()) as u64;
        if self.filter.is_some() && self.kind != JoinKind::Inner {
            return self.step_residual(dl, dr, ctx);
        }
        let mut out: Vec<(Row, i64)> = Vec::new();
        match self.static_side {
            // A side fed only in the first epoch (VALUES, generate_series:
            // hop()'s window numbers): its changes go first, and the other
            // side's rows are joined with it without being kept.
            Some(Side::Right) => {
                self.right_block(&dr, &mut out, ctx, true)?;
                self.left_block(&dl, &mut out, ctx, false)?;
            }
            Some(Side::Left) => {
                self.left_block(&dl, &mut out, ctx, true)?;
                self.right_block(&dr, &mut out, ctx, false)?;
            }
            None => {
                self.left_block(&dl, &mut out, ctx, true)?;
                self.right_block(&dr, &mut out, ctx, true)?;
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
