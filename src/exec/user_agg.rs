//! User-defined aggregates (`CREATE AGGREGATE`): their transition, inverse
//! and final functions bound to expressions, folded a row at a time the way
//! PostgreSQL's nodeAgg.c and nodeWindowAgg.c call them (strictness, the
//! first input as the initial state, moving aggregation in window frames).
//!
//! The planner binds a call's support functions into a [`UserAgg`] and
//! registers it here; plans carry its number (`AggFunc::User`), so aggregate
//! calls stay small, `Copy` and structurally comparable. The registry holds
//! one entry per distinct bound definition (equal definitions share one), so
//! it grows with the aggregates users define, not with the queries run.
//!
//! Imports `types`, `error` and exec's expressions only.

use std::sync::{Arc, Mutex, OnceLock};

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{Field, Schema};

use super::expr::Expr;
use super::ExecCtx;
use crate::error::Result;
use crate::types::{value_at, values_to_array, SqlType, Value};
use crate::{bail, err};

/// One set of transition functions: SFUNC / STYPE / INITCOND / FINALFUNC,
/// or their moving-aggregate counterparts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Transition {
    /// state, args… → state, over columns 0 (the state) and 1.. (the
    /// arguments) of a one-row batch.
    pub sfunc: Expr,
    pub strict: bool,
    pub stype: SqlType,
    /// INITCOND as a value of `stype`; Null: no initial state.
    pub init: Value,
    /// state → result, over column 0; its STRICT flag.
    pub finalfunc: Option<(Expr, bool)>,
}

/// The moving-aggregate support: MSFUNC … and MINVFUNC, which takes a row
/// back out of the state.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Moving {
    pub forward: Transition,
    pub inverse: Expr,
    pub inverse_strict: bool,
}

/// A user aggregate bound for one call's argument types.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UserAgg {
    pub name: String,
    /// The argument types (a window call's arguments may be followed by
    /// its FILTER condition).
    pub arg_types: Vec<SqlType>,
    pub plain: Transition,
    /// Set when a window call may run in moving-aggregate mode (MINVFUNC
    /// given, the frame head can move, no volatile argument or filter).
    pub moving: Option<Moving>,
    pub ty: SqlType,
}

fn registry() -> &'static Mutex<Vec<Arc<UserAgg>>> {
    static R: OnceLock<Mutex<Vec<Arc<UserAgg>>>> = OnceLock::new();
    R.get_or_init(|| Mutex::new(Vec::new()))
}

/// The number of a bound aggregate (an equal one registered before keeps
/// its number).
pub fn register(agg: UserAgg) -> u32 {
    let mut r = registry().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(i) = r.iter().position(|a| **a == agg) {
        return i as u32;
    }
    r.push(Arc::new(agg));
    (r.len() - 1) as u32
}

/// A registered aggregate.
pub fn get(id: u32) -> Result<Arc<UserAgg>> {
    let r = registry().lock().unwrap_or_else(|p| p.into_inner());
    r.get(id as usize).cloned().ok_or_else(|| err!(Internal, "unknown user aggregate {id}"))
}

/// A registered aggregate's name (EXPLAIN, error messages).
pub fn name(id: u32) -> String {
    get(id).map(|a| a.name.clone()).unwrap_or_else(|_| format!("aggregate#{id}"))
}

/// One transition state: PostgreSQL's transValue, and transValueCount
/// (rows folded in; moving aggregation must not invert the last one).
#[derive(Debug, Clone)]
pub struct State {
    pub value: Value,
    pub count: usize,
}

impl Transition {
    pub fn start(&self) -> State {
        State { value: self.init.clone(), count: 0 }
    }

    /// Fold one row's arguments in (advance_transition_function).
    pub fn advance(&self, st: &mut State, args: &[Value], arg_types: &[SqlType], ctx: &ExecCtx) -> Result<()> {
        if self.strict {
            if args.iter().any(Value::is_null) {
                return Ok(());
            }
            if st.count == 0 && st.value.is_null() {
                // No initial state: the first input is the state.
                let first = args.first().cloned().unwrap_or(Value::Null);
                st.value = cast_value(first, arg_types.first().copied().unwrap_or(self.stype), self.stype)?;
                st.count = 1;
                return Ok(());
            }
            if st.value.is_null() {
                // A strict function that returned NULL: NULL to the end.
                return Ok(());
            }
        }
        st.value = call(&self.sfunc, self.stype, &st.value, args, arg_types, ctx)?;
        st.count += 1;
        Ok(())
    }

    /// The aggregate's value for a state (finalize_aggregate).
    pub fn finish(&self, st: &State, ctx: &ExecCtx) -> Result<Value> {
        match &self.finalfunc {
            None => Ok(st.value.clone()),
            Some((_, true)) if st.value.is_null() => Ok(Value::Null),
            Some((f, _)) => call(f, self.stype, &st.value, &[], &[], ctx),
        }
    }
}

/// `value` of type `from` as a value of type `to`.
fn cast_value(value: Value, from: SqlType, to: SqlType) -> Result<Value> {
    if from == to || value.is_null() {
        return Ok(value);
    }
    let a = values_to_array(&[value], from)?;
    Ok(value_at(super::expr::cast_array(&a, from, to)?.as_ref(), 0))
}

/// Evaluate a support function over (state, args…) as a one-row batch.
fn call(f: &Expr, stype: SqlType, state: &Value, args: &[Value], arg_types: &[SqlType], ctx: &ExecCtx) -> Result<Value> {
    let mut fields = Vec::with_capacity(args.len() + 1);
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(args.len() + 1);
    fields.push(Field::new("state", stype.to_arrow(), true));
    cols.push(values_to_array(std::slice::from_ref(state), stype)?);
    for (k, (a, t)) in args.iter().zip(arg_types).enumerate() {
        fields.push(Field::new(format!("arg{k}"), t.to_arrow(), true));
        cols.push(values_to_array(std::slice::from_ref(a), *t)?);
    }
    let batch = RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), cols, &RecordBatchOptions::new().with_row_count(Some(1)))?;
    let out = f.eval(&batch, ctx)?;
    Ok(value_at(out.as_ref(), 0))
}

impl UserAgg {
    /// The aggregate over rows of arguments, in order (a group's rows).
    pub fn fold(&self, rows: &[Vec<Value>], ctx: &ExecCtx) -> Result<Value> {
        let t = &self.plain;
        let mut st = t.start();
        for (i, r) in rows.iter().enumerate() {
            if i % 1024 == 1023 {
                ctx.check()?;
            }
            t.advance(&mut st, r, &self.arg_types, ctx)?;
        }
        t.finish(&st, ctx)
    }
}

/// How a window call's frame may move, for nodeWindowAgg.c's shortcuts.
#[derive(Debug, Clone, Copy)]
pub struct FrameShape {
    /// The frame ends at the current row (and its peers) or the partition's end.
    pub end_current_or_unbounded: bool,
    /// An EXCLUDE clause other than NO OTHERS.
    pub exclusion: bool,
}

/// Per-aggregate window state (WindowStatePerAggData).
struct WinAgg<'a> {
    t: &'a Transition,
    inverse: Option<(&'a Expr, bool)>,
    st: State,
    result: Value,
}

/// The aggregate over each row's frame of one partition, as
/// eval_windowaggregates computes it: rows enter the state as the frame's
/// tail advances; rows leaving at the head are taken out with the inverse
/// transition (moving mode) or the state restarts from the new head.
/// `args(p)`: the arguments of the partition's p-th row, and whether its
/// FILTER passes; `frame(k)`: the frame of the k-th row as up to three runs
/// of positions (EXCLUDE cuts one out).
pub fn window_values(
    agg: &UserAgg,
    m: usize,
    args: &dyn Fn(usize) -> (Vec<Value>, bool),
    frame: &dyn Fn(usize) -> [(usize, usize); 3],
    shape: FrameShape,
    ctx: &ExecCtx,
) -> Result<Vec<Value>> {
    let (t, inverse) = match &agg.moving {
        Some(mv) => (&mv.forward, Some((&mv.inverse, mv.inverse_strict))),
        None => (&agg.plain, None),
    };
    let mut a = WinAgg { t, inverse, st: t.start(), result: Value::Null };
    let mut out = Vec::with_capacity(m);
    let (mut base, mut upto) = (0usize, 0usize);
    for k in 0..m {
        ctx.check()?;
        let parts = frame(k);
        let head = parts.iter().find(|(s, e)| s < e).map_or(parts[0].0, |p| p.0);
        let tail = parts.iter().map(|p| p.1).max().unwrap_or(0);
        let in_frame = |p: usize| parts.iter().any(|&(s, e)| s <= p && p < e);
        if head < base {
            bail!(Internal, "window frame head moved backward");
        }
        // The frame is the previous row's: its saved result.
        if k > 0 && base == head && shape.end_current_or_unbounded && !shape.exclusion && base <= k && upto > k {
            out.push(a.result.clone());
            continue;
        }
        let mut restart = k == 0 || (base != head && a.inverse.is_none()) || shape.exclusion || upto <= head;
        // Take the rows that left the frame out of the state.
        while !restart && base < head {
            let (row, pass) = args(base);
            if pass && !a.inverse_row(&row, &agg.arg_types, ctx)? {
                restart = true;
            }
            base += 1;
        }
        base = head;
        if restart {
            a.st = a.t.start();
            upto = head;
        }
        // Fold in the rows up to the frame's end.
        while upto < tail.min(m) {
            if in_frame(upto) {
                let (row, pass) = args(upto);
                if pass {
                    a.forward_row(&row, &agg.arg_types, ctx)?;
                }
            }
            upto += 1;
        }
        a.result = a.t.finish(&a.st, ctx)?;
        out.push(a.result.clone());
    }
    Ok(out)
}

impl WinAgg<'_> {
    /// advance_windowaggregate.
    fn forward_row(&mut self, row: &[Value], arg_types: &[SqlType], ctx: &ExecCtx) -> Result<()> {
        let before = self.st.count;
        self.t.advance(&mut self.st, row, arg_types, ctx)?;
        if self.inverse.is_some() && self.st.count > before && self.st.value.is_null() {
            bail!(NullValueNotAllowed, "moving-aggregate transition function must not return null");
        }
        Ok(())
    }

    /// advance_windowaggregate_base: false when the inverse function gave
    /// NULL (it cannot take the row out: the aggregate restarts).
    fn inverse_row(&mut self, row: &[Value], arg_types: &[SqlType], ctx: &ExecCtx) -> Result<bool> {
        let Some((inv, strict)) = self.inverse else { return Ok(false) };
        if strict && row.iter().any(Value::is_null) {
            return Ok(true);
        }
        if self.st.count == 0 {
            // Nothing folded in (a strict function skipped every row so far).
            return Ok(true);
        }
        if self.st.value.is_null() {
            bail!(Internal, "aggregate transition value is NULL before inverse transition");
        }
        if self.st.count == 1 {
            // The last row out: the initial state, not an inverted one.
            self.st = self.t.start();
            return Ok(true);
        }
        let v = call(inv, self.t.stype, &self.st.value, row, arg_types, ctx)?;
        if v.is_null() {
            return Ok(false);
        }
        self.st.value = v;
        self.st.count -= 1;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::expr::BinOp;

    fn col(i: usize, ty: SqlType) -> Expr {
        Expr::Column { index: i, ty }
    }

    /// sum as state + x (strict, no initial state: the first input is the state).
    fn sum_agg(moving: bool) -> UserAgg {
        let add = Expr::Binary {
            op: BinOp::Add,
            left: Box::new(col(0, SqlType::Int8)),
            right: Box::new(col(1, SqlType::Int8)),
            ty: SqlType::Int8,
        };
        let sub = Expr::Binary {
            op: BinOp::Sub,
            left: Box::new(col(0, SqlType::Int8)),
            right: Box::new(col(1, SqlType::Int8)),
            ty: SqlType::Int8,
        };
        let plain = Transition { sfunc: add, strict: true, stype: SqlType::Int8, init: Value::Null, finalfunc: None };
        UserAgg {
            name: "s".into(),
            arg_types: vec![SqlType::Int8],
            moving: moving.then(|| Moving { forward: plain.clone(), inverse: sub, inverse_strict: true }),
            plain,
            ty: SqlType::Int8,
        }
    }

    #[test]
    fn a_strict_transition_starts_from_the_first_input_and_skips_nulls() {
        let ctx = crate::exec::mock::ctx();
        let a = sum_agg(false);
        let rows = vec![vec![Value::Null], vec![Value::Int(2)], vec![Value::Null], vec![Value::Int(5)]];
        assert_eq!(a.fold(&rows, &ctx).unwrap(), Value::Int(7));
        assert_eq!(a.fold(&[], &ctx).unwrap(), Value::Null);
    }

    #[test]
    fn moving_frames_give_the_same_sums_with_and_without_the_inverse() {
        let ctx = crate::exec::mock::ctx();
        let vals = [Some(1), None, Some(3), Some(4), None, Some(6)];
        let args = |p: usize| (vec![vals[p].map_or(Value::Null, Value::Int)], true);
        // ROWS BETWEEN 1 PRECEDING AND CURRENT ROW.
        let frame = |k: usize| [(k.saturating_sub(1), k + 1), (k + 1, k + 1), (k + 1, k + 1)];
        let shape = FrameShape { end_current_or_unbounded: true, exclusion: false };
        let want: Vec<Value> = [1, 1, 3, 7, 4, 6].iter().map(|&x| Value::Int(x)).collect();
        for moving in [false, true] {
            let got = window_values(&sum_agg(moving), vals.len(), &args, &frame, shape, &ctx).unwrap();
            assert_eq!(got, want, "moving {moving}");
        }
    }

    #[test]
    fn equal_definitions_share_a_number() {
        let a = register(sum_agg(true));
        let b = register(sum_agg(true));
        let c = register(sum_agg(false));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(name(a), "s");
    }
}
