//! Aggregate function states, one slot per group: update over a batch,
//! then finalize. The same states can serve partial aggregation later.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::*;
use arrow::datatypes::*;

use super::expr::cast_array;
use super::float_stats;
use super::plan::{AggCall, AggFunc, RegrFunc};
use crate::err;
use crate::error::Result;
use crate::types::interval::Interval;
use crate::types::numeric::Numeric;
use crate::types::{value_at, values_to_array, SqlType, Value};

enum State {
    Count(Vec<i64>),
    SumInt(Vec<Option<i64>>),
    SumFloat(Vec<Option<f64>>),
    Avg(Vec<(f64, i64)>),
    /// min/max over floats, PostgreSQL's order (NaN above all numbers).
    MinMaxF64 {
        vals: Vec<Option<f64>>,
        is_min: bool,
    },
    /// min/max over integers, timestamps and dates, as i64.
    MinMaxI64 {
        vals: Vec<Option<i64>>,
        is_min: bool,
    },
    /// min/max over anything else, through `Value`s.
    MinMax {
        vals: Vec<Value>,
        is_min: bool,
    },
    Bool {
        vals: Vec<Option<bool>>,
        and: bool,
    },
    StringAgg(Vec<Option<String>>),
    /// array_agg, and string_agg with ORDER BY: each group's rows in input
    /// order; `finish` sorts them by their keys (stably) and joins them.
    Collect(Vec<Vec<Collected>>),
    /// PostgreSQL's float8_accum state (N, Sx, Sxx): Youngs-Cramer.
    Var(Vec<[f64; 3]>),
    /// PostgreSQL's float8_regr_accum state (N, Sx, Sxx, Sy, Syy, Sxy).
    Regr(Vec<[f64; 6]>),
    /// sum / avg of intervals: the sum and the count.
    IntervalSum(Vec<(Interval, i64)>),
    /// An ordered-set aggregate: each group's direct arguments (from its
    /// first row) and its rows' ORDER BY keys, sorted by `finish`.
    Ordered {
        direct: Vec<Option<Vec<Value>>>,
        rows: Vec<Vec<Vec<Value>>>,
    },
    /// first / last: the (time, value) pair least (first) or greatest
    /// (last) in (time, value) order.
    FirstLast {
        vals: Vec<Option<(i64, Value)>>,
        last: bool,
    },
    /// The extreme and how many rows hold it (output: the count).
    ExtremeCount {
        vals: Vec<Value>,
        counts: Vec<i64>,
        is_min: bool,
    },
    /// The exact sum of float8 values (incremental flows' state).
    SumExact(Vec<super::exact_sum::ExactSum>),
    /// sum / avg of integers returning numeric (sum(int8), avg(int)):
    /// the exact sum and the count.
    SumI128(Vec<(i128, i64)>),
    /// sum / avg / min / max over numeric: the sum (or extreme) and the
    /// count.
    Num(Vec<(Option<Numeric>, i64)>),
    /// variance / stddev returning numeric (over integers or numerics):
    /// N, sum(x), sum(x²).
    NumVar(Vec<(i64, Numeric, Numeric)>),
    /// A user-defined aggregate: each group's rows of arguments, in input
    /// order, folded through its transition function by `finish_in`.
    User(Vec<Vec<Vec<Value>>>),
}

/// One row kept by `State::Collect`.
struct Collected {
    /// The ORDER BY key values (DISTINCT without ORDER BY: the value).
    keys: Vec<Value>,
    /// The element's text (None: NULL).
    val: Option<String>,
    /// string_agg's delimiter of this row.
    sep: Option<String>,
}

pub struct Accumulator {
    pub call: AggCall,
    state: State,
    /// DISTINCT: (group, row-encoded value) pairs already folded in.
    seen: std::collections::HashMap<usize, HashSet<Box<[u8]>>>,
    distinct_rows: Option<arrow::row::RowConverter>,
}

impl Accumulator {
    pub fn new(call: &AggCall) -> Accumulator {
        let input_ty = call.args.first().map(|a| a.ty()).unwrap_or(SqlType::Int8);
        let state = match call.func {
            AggFunc::CountStar | AggFunc::Count => State::Count(vec![]),
            AggFunc::Sum | AggFunc::Avg if call.ty == SqlType::Numeric && input_ty.is_integer() => State::SumI128(vec![]),
            AggFunc::Sum | AggFunc::Avg | AggFunc::Min | AggFunc::Max if call.ty == SqlType::Numeric => State::Num(vec![]),
            AggFunc::Sum | AggFunc::Avg if call.ty == SqlType::Interval => State::IntervalSum(vec![]),
            AggFunc::StddevSamp | AggFunc::StddevPop | AggFunc::VarSamp | AggFunc::VarPop if call.ty == SqlType::Numeric => {
                State::NumVar(vec![])
            }
            AggFunc::Sum if input_ty.is_integer() => State::SumInt(vec![]),
            AggFunc::Sum => State::SumFloat(vec![]),
            AggFunc::Avg => State::Avg(vec![]),
            AggFunc::Min | AggFunc::Max => {
                let is_min = call.func == AggFunc::Min;
                match input_ty {
                    SqlType::Float8 | SqlType::Float4 => State::MinMaxF64 { vals: vec![], is_min },
                    SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Timestamp | SqlType::TimestampTz | SqlType::Date => {
                        State::MinMaxI64 { vals: vec![], is_min }
                    }
                    _ => State::MinMax { vals: vec![], is_min },
                }
            }
            AggFunc::BoolAnd => State::Bool { vals: vec![], and: true },
            AggFunc::BoolOr => State::Bool { vals: vec![], and: false },
            AggFunc::StringAgg if call.order_keys().is_empty() => State::StringAgg(vec![]),
            AggFunc::StringAgg | AggFunc::ArrayAgg => State::Collect(vec![]),
            AggFunc::StddevSamp | AggFunc::StddevPop | AggFunc::VarSamp | AggFunc::VarPop => State::Var(vec![]),
            AggFunc::First | AggFunc::Last => State::FirstLast { vals: vec![], last: call.func == AggFunc::Last },
            AggFunc::MinCount | AggFunc::MaxCount => {
                State::ExtremeCount { vals: vec![], counts: vec![], is_min: call.func == AggFunc::MinCount }
            }
            AggFunc::SumExact => State::SumExact(vec![]),
            AggFunc::User(_) => State::User(vec![]),
            AggFunc::Regr(_) => State::Regr(vec![]),
            AggFunc::OrderedSet(_) => State::Ordered { direct: vec![], rows: vec![] },
        };
        Accumulator { call: call.clone(), state, seen: Default::default(), distinct_rows: None }
    }

    pub fn resize(&mut self, groups: usize) {
        match &mut self.state {
            State::Count(v) => v.resize(groups, 0),
            State::SumInt(v) => v.resize(groups, None),
            State::SumFloat(v) => v.resize(groups, None),
            State::Avg(v) => v.resize(groups, (0.0, 0)),
            State::MinMaxF64 { vals, .. } => vals.resize(groups, None),
            State::MinMaxI64 { vals, .. } => vals.resize(groups, None),
            State::MinMax { vals, .. } => vals.resize(groups, Value::Null),
            State::Bool { vals, .. } => vals.resize(groups, None),
            State::StringAgg(v) => v.resize(groups, None),
            State::Collect(v) => v.resize_with(groups, Vec::new),
            State::Var(v) => v.resize(groups, [0.0; 3]),
            State::Regr(v) => v.resize(groups, [0.0; 6]),
            State::IntervalSum(v) => v.resize(groups, (Interval::ZERO, 0)),
            State::Ordered { direct, rows } => {
                direct.resize(groups, None);
                rows.resize_with(groups, Vec::new);
            }
            State::FirstLast { vals, .. } => vals.resize(groups, None),
            State::ExtremeCount { vals, counts, .. } => {
                vals.resize(groups, Value::Null);
                counts.resize(groups, 0);
            }
            State::SumExact(v) => v.resize(groups, Default::default()),
            State::SumI128(v) => v.resize(groups, (0, 0)),
            State::Num(v) => v.resize(groups, (None, 0)),
            State::NumVar(v) => v.resize(groups, (0, Numeric::zero(), Numeric::zero())),
            State::User(v) => v.resize_with(groups, Vec::new),
        }
    }

    /// Fold a whole batch into group 0 (aggregation without GROUP BY) with
    /// arrow's aggregate kernels; falls back to `update` where there is none.
    pub fn update_single(&mut self, args: &[ArrayRef], filter: Option<&BooleanArray>, n: usize) -> Result<()> {
        if self.call.distinct || filter.is_some() {
            return self.update(&vec![0; n], args, filter);
        }
        match (&mut self.state, self.call.func) {
            (State::Count(v), AggFunc::CountStar) => v[0] += n as i64,
            (State::Count(v), _) => v[0] += (args[0].len() - args[0].null_count()) as i64,
            (State::SumFloat(v), _) => {
                let c = cast_array(&args[0], self.call.args[0].ty(), SqlType::Float8)?;
                if let Some(x) = arrow::compute::sum(c.as_primitive::<Float64Type>()) {
                    v[0] = Some(v[0].unwrap_or(0.0) + x);
                }
            }
            (State::Avg(v), _) => {
                let c = cast_array(&args[0], self.call.args[0].ty(), SqlType::Float8)?;
                let c = c.as_primitive::<Float64Type>();
                if let Some(x) = arrow::compute::sum(c) {
                    v[0].0 += x;
                    v[0].1 += (c.len() - c.null_count()) as i64;
                }
            }
            (State::SumInt(v), _) => {
                let c = cast_array(&args[0], self.call.args[0].ty(), SqlType::Int8)?;
                if let Some(x) = arrow::compute::sum_checked(c.as_primitive::<Int64Type>())
                    .map_err(|_| err!(NumericOutOfRange, "bigint out of range"))?
                {
                    v[0] = Some(v[0].unwrap_or(0).checked_add(x).ok_or_else(|| err!(NumericOutOfRange, "bigint out of range"))?);
                }
            }
            _ => return self.update(&vec![0; n], args, filter),
        }
        Ok(())
    }

    /// Fold a batch given as runs of one group, `(start, end, group)` in
    /// row order and covering every row: the rows of a time bucket of one
    /// series come out of a sorted scan that way. Each run's state is held
    /// in a register while its values are folded in, in the same order as
    /// `update` folds them, so the result is the same to the bit. Returns
    /// false (nothing folded) where there is no run loop: FILTER, DISTINCT,
    /// NULL arguments, and the states other than count, sum, avg, min, max.
    pub fn update_runs(&mut self, runs: &[(usize, usize, usize)], args: &[ArrayRef], filter: Option<&BooleanArray>) -> Result<bool> {
        if self.call.distinct || filter.is_some() {
            return Ok(false);
        }
        if self.call.func == AggFunc::CountStar {
            let State::Count(v) = &mut self.state else { return Ok(false) };
            for &(s, e, g) in runs {
                v[g] += (e - s) as i64;
            }
            return Ok(true);
        }
        let Some(a) = args.first() else { return Ok(false) };
        if a.null_count() > 0 {
            return Ok(false);
        }
        let ty = self.call.args[0].ty();
        match &mut self.state {
            State::Count(v) => {
                for &(s, e, g) in runs {
                    v[g] += (e - s) as i64;
                }
            }
            State::SumInt(v) => {
                let c = cast_array(a, ty, SqlType::Int8)?;
                let c = c.as_primitive::<Int64Type>().values();
                for &(s, e, g) in runs {
                    let mut acc = v[g].unwrap_or(0);
                    for &x in &c[s..e] {
                        acc = acc.checked_add(x).ok_or_else(|| err!(NumericOutOfRange, "bigint out of range"))?;
                    }
                    v[g] = Some(acc);
                }
            }
            State::SumFloat(v) => {
                let c = cast_array(a, ty, SqlType::Float8)?;
                let c = c.as_primitive::<Float64Type>().values();
                fold_runs(c, runs, v, |v| v.unwrap_or(0.0), |acc, x| acc + x, |_, acc, _| Some(acc));
            }
            State::Avg(v) => {
                let c = cast_array(a, ty, SqlType::Float8)?;
                let c = c.as_primitive::<Float64Type>().values();
                fold_runs(c, runs, v, |(sum, _)| sum, |acc, x| acc + x, |(_, n), acc, len| (acc, n + len as i64));
            }
            State::MinMaxF64 { vals, is_min } => {
                let c = cast_array(a, ty, SqlType::Float8)?;
                let c = c.as_primitive::<Float64Type>().values();
                let is_min = *is_min;
                let better = move |cur: Option<f64>, x: f64| match cur {
                    None => Some(x),
                    Some(m) if is_min && pg_float_gt(m, x) => Some(x),
                    Some(m) if !is_min && pg_float_gt(x, m) => Some(x),
                    keep => keep,
                };
                fold_runs(c, runs, vals, |v| v, better, |_, acc, _| acc);
            }
            State::MinMaxI64 { vals, is_min } => {
                let c = i64_values(a)?;
                for &(s, e, g) in runs {
                    let run = c[s..e].iter().copied();
                    let m = if *is_min { run.min() } else { run.max() };
                    vals[g] = match (vals[g], m) {
                        (Some(cur), Some(m)) => Some(if *is_min { cur.min(m) } else { cur.max(m) }),
                        (cur, m) => cur.or(m),
                    };
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Fold rows into their groups. `args` are evaluated argument columns,
    /// `filter` the FILTER (WHERE …) mask.
    pub fn update(&mut self, groups: &[usize], args: &[ArrayRef], filter: Option<&BooleanArray>) -> Result<()> {
        let n = groups.len();
        let live = |i: usize| filter.is_none_or(|f| f.is_valid(i) && f.value(i));
        if self.call.func == AggFunc::CountStar {
            if let State::Count(v) = &mut self.state {
                for (i, &g) in groups.iter().enumerate() {
                    if live(i) {
                        v[g] += 1;
                    }
                }
            }
            return Ok(());
        }
        if let State::User(rows) = &mut self.state {
            for (i, &g) in groups.iter().enumerate() {
                if !live(i) {
                    continue;
                }
                let row: Vec<Value> = args.iter().map(|a| value_at(a.as_ref(), i)).collect();
                // DISTINCT: each group's distinct argument rows once.
                if self.call.distinct && !self.seen.entry(g).or_default().insert(format!("{row:?}").into_bytes().into()) {
                    continue;
                }
                rows[g].push(row);
            }
            return Ok(());
        }
        if let (State::Ordered { direct, rows }, AggFunc::OrderedSet(f)) = (&mut self.state, self.call.func) {
            let d = self.call.value_arity();
            let keys: Vec<usize> = self.call.order_keys().iter().map(|k| k.0).collect();
            for (i, &g) in groups.iter().enumerate() {
                if !live(i) {
                    continue;
                }
                let row: Vec<Value> = keys.iter().map(|&k| value_at(args[k].as_ref(), i)).collect();
                // percentile and mode skip NULL inputs; a hypothetical
                // set's rows sort with their NULLs.
                if !f.hypothetical() && row[0].is_null() {
                    continue;
                }
                if direct[g].is_none() {
                    direct[g] = Some(args[..d].iter().map(|a| value_at(a.as_ref(), i)).collect());
                }
                rows[g].push(row);
            }
            return Ok(());
        }
        let a = &args[0];
        if let State::Collect(rows) = &mut self.state {
            let string_agg = self.call.func == AggFunc::StringAgg;
            let ety = self.call.args[0].ty();
            let keys = self.call.order_keys();
            let text = if string_agg { Some(cast_array(a, ety, SqlType::Text)?) } else { None };
            let sep = if string_agg { args.get(1).map(|d| cast_array(d, SqlType::Text, SqlType::Text)).transpose()? } else { None };
            for i in 0..n {
                // string_agg skips NULL values; array_agg keeps them.
                if !live(i) || (string_agg && a.is_null(i)) {
                    continue;
                }
                let val = match &text {
                    Some(t) => Some(bytes_of(t.as_string::<i32>().value(i), ety).to_string()),
                    None => crate::types::array::elem_text(&value_at(a.as_ref(), i), ety),
                };
                if self.call.distinct {
                    let mut k: Vec<u8> = vec![val.is_some() as u8];
                    k.extend(val.as_deref().unwrap_or_default().as_bytes());
                    if !self.seen.entry(groups[i]).or_default().insert(k.into()) {
                        continue;
                    }
                }
                let mut kv: Vec<Value> = keys.iter().map(|(k, ..)| value_at(args[*k].as_ref(), i)).collect();
                if self.call.distinct && keys.is_empty() {
                    // DISTINCT sorts its input, as PostgreSQL's does.
                    kv.push(value_at(a.as_ref(), i));
                }
                let sep =
                    sep.as_ref().map(|d| d.as_string::<i32>()).filter(|d| d.is_valid(i)).map(|d| bytes_of(d.value(i), ety).to_string());
                rows[groups[i]].push(Collected { keys: kv, val, sep });
            }
            return Ok(());
        }
        // The rows to fold in; None: every row (no FILTER, no NULL, no
        // DISTINCT), the tight loops below.
        let mut keep: Option<Vec<bool>> = if filter.is_none() && a.null_count() == 0 && !self.call.distinct {
            None
        } else {
            Some((0..n).map(|i| live(i) && a.is_valid(i)).collect())
        };
        // DISTINCT: drop (group, value) pairs already seen.
        if self.call.distinct {
            let keep = keep.as_mut().expect("distinct has a mask");
            // Values compared in arrow's row format: no allocation per
            // value until a new one is kept.
            if self.distinct_rows.is_none() {
                self.distinct_rows = Some(arrow::row::RowConverter::new(vec![arrow::row::SortField::new(a.data_type().clone())])?);
            }
            let rows = self.distinct_rows.as_ref().unwrap().convert_columns(&[super::keys::normalize_key(a)])?;
            for i in 0..n {
                if keep[i] {
                    let set = self.seen.entry(groups[i]).or_default();
                    let r = rows.row(i);
                    if set.contains(r.as_ref()) {
                        keep[i] = false;
                    } else {
                        set.insert(r.as_ref().into());
                    }
                }
            }
        }
        // Run `$body` for each kept row `$i`.
        macro_rules! each {
            ($i:ident => $body:block) => {
                match &keep {
                    None => {
                        for $i in 0..n $body
                    }
                    Some(k) => {
                        for $i in 0..n {
                            if k[$i] $body
                        }
                    }
                }
            };
        }
        match &mut self.state {
            State::FirstLast { vals, last } => {
                // Rows with a NULL time do not count either.
                let t = i64_values(&args[1])?;
                let t_valid = args[1].logical_nulls();
                let keep = keep.unwrap_or_else(|| vec![true; n]);
                for i in 0..n {
                    if !keep[i] || t_valid.as_ref().is_some_and(|v| v.is_null(i)) {
                        continue;
                    }
                    let cur = &mut vals[groups[i]];
                    let better = match cur {
                        None => true,
                        Some((ct, cv)) => {
                            let o = t[i].cmp(ct).then_with(|| value_at(a.as_ref(), i).total_cmp(cv));
                            if *last {
                                o.is_gt()
                            } else {
                                o.is_lt()
                            }
                        }
                    };
                    if better {
                        *cur = Some((t[i], value_at(a.as_ref(), i)));
                    }
                }
            }
            State::ExtremeCount { vals, counts, is_min } => {
                let keep = keep.unwrap_or_else(|| vec![true; n]);
                for i in 0..n {
                    if keep[i] {
                        let x = value_at(a.as_ref(), i);
                        let g = groups[i];
                        let o = if vals[g].is_null() {
                            std::cmp::Ordering::Less
                        } else if *is_min {
                            x.total_cmp(&vals[g])
                        } else {
                            vals[g].total_cmp(&x)
                        };
                        match o {
                            std::cmp::Ordering::Less => {
                                vals[g] = x;
                                counts[g] = 1;
                            }
                            std::cmp::Ordering::Equal => counts[g] += 1,
                            _ => {}
                        }
                    }
                }
            }
            State::Count(v) => each!(i => { v[groups[i]] += 1; }),
            State::SumI128(v) => {
                let c = cast_array(a, self.call.args[0].ty(), SqlType::Int8)?;
                let c = c.as_primitive::<Int64Type>().values();
                each!(i => {
                    let s = &mut v[groups[i]];
                    s.0 += c[i] as i128;
                    s.1 += 1;
                })
            }
            State::NumVar(v) => {
                let c = cast_array(a, self.call.args[0].ty(), SqlType::Numeric)?;
                let c = super::numeric::values(c.as_ref())?;
                let keep = keep.unwrap_or_else(|| vec![true; n]);
                for i in 0..n {
                    if let (true, Some(x)) = (keep[i], &c[i]) {
                        let s = &mut v[groups[i]];
                        *s = (s.0 + 1, s.1.add(x)?, s.2.add(&x.mul(x)?)?);
                    }
                }
            }
            State::Num(v) => {
                let c = cast_array(a, self.call.args[0].ty(), SqlType::Numeric)?;
                let c = super::numeric::values(c.as_ref())?;
                let func = self.call.func;
                let keep = keep.unwrap_or_else(|| vec![true; n]);
                for i in 0..n {
                    if let (true, Some(x)) = (keep[i], &c[i]) {
                        num_fold(func, &mut v[groups[i]], x, 1)?;
                    }
                }
            }
            State::SumExact(v) => {
                let c = cast_array(a, self.call.args[0].ty(), SqlType::Float8)?;
                let c = c.as_primitive::<Float64Type>().values();
                each!(i => { v[groups[i]].add(c[i]); })
            }
            State::SumInt(v) => {
                let c = cast_array(a, self.call.args[0].ty(), SqlType::Int8)?;
                let c = c.as_primitive::<Int64Type>().values();
                each!(i => {
                    let s = &mut v[groups[i]];
                    *s = Some(s.unwrap_or(0).checked_add(c[i]).ok_or_else(|| err!(NumericOutOfRange, "bigint out of range"))?);
                })
            }
            State::SumFloat(v) => {
                let c = cast_array(a, self.call.args[0].ty(), SqlType::Float8)?;
                let c = c.as_primitive::<Float64Type>().values();
                each!(i => {
                    let s = &mut v[groups[i]];
                    *s = Some(s.unwrap_or(0.0) + c[i]);
                })
            }
            State::Avg(v) => {
                let c = cast_array(a, self.call.args[0].ty(), SqlType::Float8)?;
                let c = c.as_primitive::<Float64Type>().values();
                each!(i => {
                    let s = &mut v[groups[i]];
                    s.0 += c[i];
                    s.1 += 1;
                })
            }
            State::Var(v) => {
                let c = cast_array(a, self.call.args[0].ty(), SqlType::Float8)?;
                let c = c.as_primitive::<Float64Type>().values();
                each!(i => { float_stats::accum(&mut v[groups[i]], c[i])?; })
            }
            State::IntervalSum(v) => {
                let keep = keep.unwrap_or_else(|| vec![true; n]);
                for i in 0..n {
                    if let (true, Value::Interval(x)) = (keep[i], value_at(a.as_ref(), i)) {
                        let s = &mut v[groups[i]];
                        *s = (s.0.checked_add(x)?, s.1 + 1);
                    }
                }
            }
            State::Regr(v) => {
                // Strict in both arguments: a row with either NULL is skipped.
                let y = cast_array(a, self.call.args[0].ty(), SqlType::Float8)?;
                let x = cast_array(&args[1], self.call.args[1].ty(), SqlType::Float8)?;
                let (y, x) = (y.as_primitive::<Float64Type>(), x.as_primitive::<Float64Type>());
                let keep = keep.unwrap_or_else(|| vec![true; n]);
                for i in 0..n {
                    if keep[i] && x.is_valid(i) {
                        float_stats::regr_accum(&mut v[groups[i]], y.value(i), x.value(i))?;
                    }
                }
            }
            State::MinMaxF64 { vals, is_min } => {
                let c = cast_array(a, self.call.args[0].ty(), SqlType::Float8)?;
                let c = c.as_primitive::<Float64Type>().values();
                if *is_min {
                    each!(i => {
                        let cur = &mut vals[groups[i]];
                        if cur.is_none_or(|m| pg_float_gt(m, c[i])) {
                            *cur = Some(c[i]);
                        }
                    })
                } else {
                    each!(i => {
                        let cur = &mut vals[groups[i]];
                        if cur.is_none_or(|m| pg_float_gt(c[i], m)) {
                            *cur = Some(c[i]);
                        }
                    })
                }
            }
            State::MinMaxI64 { vals, is_min } => {
                let c = i64_values(a)?;
                if *is_min {
                    each!(i => {
                        let cur = &mut vals[groups[i]];
                        if cur.is_none_or(|m| m > c[i]) {
                            *cur = Some(c[i]);
                        }
                    })
                } else {
                    each!(i => {
                        let cur = &mut vals[groups[i]];
                        if cur.is_none_or(|m| m < c[i]) {
                            *cur = Some(c[i]);
                        }
                    })
                }
            }
            State::MinMax { vals, is_min } => {
                let keep = keep.unwrap_or_else(|| vec![true; n]);
                for i in 0..n {
                    if keep[i] {
                        let x = value_at(a.as_ref(), i);
                        let cur = &mut vals[groups[i]];
                        let better = cur.is_null() || {
                            let o = x.total_cmp(cur);
                            if *is_min {
                                o.is_lt()
                            } else {
                                o.is_gt()
                            }
                        };
                        if better {
                            *cur = x;
                        }
                    }
                }
            }
            State::Bool { vals, and } => {
                let keep = keep.unwrap_or_else(|| vec![true; n]);
                let b = a.as_boolean();
                for i in 0..n {
                    if keep[i] {
                        let cur = vals[groups[i]].unwrap_or(*and);
                        vals[groups[i]] = Some(if *and { cur && b.value(i) } else { cur || b.value(i) });
                    }
                }
            }
            State::Collect(_) | State::User(_) | State::Ordered { .. } => unreachable!("collected above"),
            State::StringAgg(vals) => {
                let ety = self.call.args[0].ty();
                let s = cast_array(a, ety, SqlType::Text)?;
                let s = s.as_string::<i32>();
                let sep = args.get(1).map(|d| cast_array(d, SqlType::Text, SqlType::Text)).transpose()?;
                let keep = keep.unwrap_or_else(|| vec![true; n]);
                for i in 0..n {
                    if keep[i] {
                        let sep = sep
                            .as_ref()
                            .map(|d| d.as_string::<i32>())
                            .filter(|d| d.is_valid(i))
                            .map(|d| bytes_of(d.value(i), ety).to_string())
                            .unwrap_or_default();
                        let cur = &mut vals[groups[i]];
                        let v = bytes_of(s.value(i), ety);
                        match cur {
                            None => *cur = Some(v.to_string()),
                            Some(c) => {
                                let more = sep.len() + v.len();
                                if c.len() + more > super::memory::MAX_VALUE_BYTES {
                                    // PostgreSQL's words for a string buffer past 1 GB.
                                    return Err(err!(ProgramLimitExceeded, "out of memory").with_detail(format!(
                                        "Cannot enlarge string buffer containing {} bytes by {more} more bytes.",
                                        c.len()
                                    )));
                                }
                                c.push_str(&sep);
                                c.push_str(v);
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Fold another accumulator of the same call (a partial aggregation of
    /// other rows) in: its group `g` is this one's `map[g]`. Not for
    /// DISTINCT or string_agg, whose states depend on the rows' order.
    pub fn merge(&mut self, other: &Accumulator, map: &[usize]) -> Result<()> {
        let overflow = || err!(NumericOutOfRange, "bigint out of range");
        match (&mut self.state, &other.state) {
            (State::Count(v), State::Count(o)) => {
                for (g, &m) in map.iter().enumerate() {
                    v[m] += o[g];
                }
            }
            (State::SumInt(v), State::SumInt(o)) => {
                for (g, &m) in map.iter().enumerate() {
                    if let Some(x) = o[g] {
                        v[m] = Some(v[m].unwrap_or(0).checked_add(x).ok_or_else(overflow)?);
                    }
                }
            }
            (State::SumFloat(v), State::SumFloat(o)) => {
                for (g, &m) in map.iter().enumerate() {
                    if let Some(x) = o[g] {
                        v[m] = Some(v[m].unwrap_or(0.0) + x);
                    }
                }
            }
            (State::Avg(v), State::Avg(o)) => {
                for (g, &m) in map.iter().enumerate() {
                    v[m].0 += o[g].0;
                    v[m].1 += o[g].1;
                }
            }
            (State::Var(v), State::Var(o)) => {
                for (g, &m) in map.iter().enumerate() {
                    v[m] = float_stats::combine(&v[m], &o[g])?;
                }
            }
            (State::IntervalSum(v), State::IntervalSum(o)) => {
                for (g, &m) in map.iter().enumerate() {
                    v[m] = (v[m].0.checked_add(o[g].0)?, v[m].1 + o[g].1);
                }
            }
            (State::Regr(v), State::Regr(o)) => {
                for (g, &m) in map.iter().enumerate() {
                    v[m] = float_stats::regr_combine(&v[m], &o[g])?;
                }
            }
            (State::MinMaxF64 { vals, is_min }, State::MinMaxF64 { vals: o, .. }) => {
                for (g, &m) in map.iter().enumerate() {
                    if let Some(x) = o[g] {
                        let better = vals[m].is_none_or(|c| if *is_min { pg_float_gt(c, x) } else { pg_float_gt(x, c) });
                        if better {
                            vals[m] = Some(x);
                        }
                    }
                }
            }
            (State::MinMaxI64 { vals, is_min }, State::MinMaxI64 { vals: o, .. }) => {
                for (g, &m) in map.iter().enumerate() {
                    if let Some(x) = o[g] {
                        if vals[m].is_none_or(|c| if *is_min { c > x } else { c < x }) {
                            vals[m] = Some(x);
                        }
                    }
                }
            }
            (State::MinMax { vals, is_min }, State::MinMax { vals: o, .. }) => {
                for (g, &m) in map.iter().enumerate() {
                    let x = &o[g];
                    if x.is_null() {
                        continue;
                    }
                    let o = x.total_cmp(&vals[m]);
                    if vals[m].is_null() || if *is_min { o.is_lt() } else { o.is_gt() } {
                        vals[m] = x.clone();
                    }
                }
            }
            (State::Bool { vals, and }, State::Bool { vals: o, .. }) => {
                for (g, &m) in map.iter().enumerate() {
                    if let Some(x) = o[g] {
                        let c = vals[m].unwrap_or(*and);
                        vals[m] = Some(if *and { c && x } else { c || x });
                    }
                }
            }
            (State::FirstLast { vals, last }, State::FirstLast { vals: o, .. }) => {
                for (g, &m) in map.iter().enumerate() {
                    if let Some((t, x)) = &o[g] {
                        let better = vals[m].as_ref().is_none_or(|(ct, cv)| {
                            let o = t.cmp(ct).then_with(|| x.total_cmp(cv));
                            if *last {
                                o.is_gt()
                            } else {
                                o.is_lt()
                            }
                        });
                        if better {
                            vals[m] = Some((*t, x.clone()));
                        }
                    }
                }
            }
            (State::ExtremeCount { vals, counts, is_min }, State::ExtremeCount { vals: ov, counts: oc, .. }) => {
                for (g, &m) in map.iter().enumerate() {
                    if ov[g].is_null() {
                        continue;
                    }
                    let o = if vals[m].is_null() {
                        std::cmp::Ordering::Less
                    } else if *is_min {
                        ov[g].total_cmp(&vals[m])
                    } else {
                        vals[m].total_cmp(&ov[g])
                    };
                    match o {
                        std::cmp::Ordering::Less => {
                            vals[m] = ov[g].clone();
                            counts[m] = oc[g];
                        }
                        std::cmp::Ordering::Equal => counts[m] += oc[g],
                        _ => {}
                    }
                }
            }
            (State::SumExact(v), State::SumExact(o)) => {
                for (g, &m) in map.iter().enumerate() {
                    v[m].merge(&o[g], 1);
                }
            }
            (State::SumI128(v), State::SumI128(o)) => {
                for (g, &m) in map.iter().enumerate() {
                    v[m].0 += o[g].0;
                    v[m].1 += o[g].1;
                }
            }
            (State::NumVar(v), State::NumVar(o)) => {
                for (g, &m) in map.iter().enumerate() {
                    let (n, x, x2) = &o[g];
                    v[m] = (v[m].0 + n, v[m].1.add(x)?, v[m].2.add(x2)?);
                }
            }
            (State::Num(v), State::Num(o)) => {
                for (g, &m) in map.iter().enumerate() {
                    if let (Some(x), c) = &o[g] {
                        num_fold(self.call.func, &mut v[m], x, *c)?;
                    }
                }
            }
            _ => return Err(err!(Internal, "aggregate states of {:?} cannot be merged", self.call.func)),
        }
        Ok(())
    }

    /// `finish`, with the statement's context to run a user-defined
    /// aggregate's transition and final functions.
    pub fn finish_in(&self, ctx: &super::ExecCtx) -> Result<ArrayRef> {
        let (State::User(groups), AggFunc::User(id)) = (&self.state, self.call.func) else { return self.finish() };
        let agg = super::user_agg::get(id)?;
        let mut out = Vec::with_capacity(groups.len());
        for rows in groups {
            if self.call.distinct {
                // DISTINCT sorts its input, as PostgreSQL's does.
                let mut sorted: Vec<&Vec<Value>> = rows.iter().collect();
                sorted.sort_by(|x, y| {
                    x.iter().zip(y.iter()).map(|(a, b)| a.total_cmp(b)).find(|o| o.is_ne()).unwrap_or(std::cmp::Ordering::Equal)
                });
                let sorted: Vec<Vec<Value>> = sorted.into_iter().cloned().collect();
                out.push(agg.fold(&sorted, ctx)?);
            } else {
                out.push(agg.fold(rows, ctx)?);
            }
        }
        values_to_array(&out, self.call.ty)
    }

    pub fn finish(&self) -> Result<ArrayRef> {
        let ty = self.call.ty;
        Ok(match &self.state {
            State::User(_) => return Err(err!(Internal, "a user-defined aggregate finishes with its context")),
            State::Count(v) => Arc::new(Int64Array::from(v.clone())),
            State::SumI128(v) => {
                let mut out = Vec::with_capacity(v.len());
                for &(s, c) in v {
                    out.push(num_final(self.call.func, Some(Numeric::from_i128(s)), c)?);
                }
                super::numeric::array(out)
            }
            State::NumVar(v) => {
                let f = self.call.func;
                let sample = matches!(f, AggFunc::StddevSamp | AggFunc::VarSamp);
                let stddev = matches!(f, AggFunc::StddevSamp | AggFunc::StddevPop);
                let mut out = Vec::with_capacity(v.len());
                for (n, x, x2) in v {
                    out.push(Numeric::variance(*n, x, x2, sample, stddev)?);
                }
                super::numeric::array(out)
            }
            State::Num(v) => {
                let mut out = Vec::with_capacity(v.len());
                for (s, c) in v {
                    out.push(num_final(self.call.func, s.clone(), *c)?);
                }
                super::numeric::array(out)
            }
            State::SumInt(v) => Arc::new(Int64Array::from(v.clone())),
            State::SumFloat(v) => cast_array(&(Arc::new(Float64Array::from(v.clone())) as ArrayRef), SqlType::Float8, ty)?,
            State::Avg(v) => {
                let a: Float64Array = v.iter().map(|(s, c)| if *c == 0 { None } else { Some(s / *c as f64) }).collect();
                Arc::new(a)
            }
            State::Var(v) => {
                let f = self.call.func;
                let sample = matches!(f, AggFunc::StddevSamp | AggFunc::VarSamp);
                let stddev = matches!(f, AggFunc::StddevSamp | AggFunc::StddevPop);
                Arc::new(v.iter().map(|s| float_stats::variance(s, sample, stddev)).collect::<Float64Array>())
            }
            // regr_count counts the pairs: 0, not NULL, over none.
            State::Regr(v) if self.call.func == AggFunc::Regr(RegrFunc::Count) => {
                Arc::new(v.iter().map(|s| s[0] as i64).collect::<Int64Array>())
            }
            // interval_avg: the sum divided by the count (interval_div).
            State::IntervalSum(v) => {
                let mut out = Vec::with_capacity(v.len());
                for &(sum, count) in v {
                    out.push(match (count, self.call.func) {
                        (0, _) => Value::Null,
                        (_, AggFunc::Avg) => Value::Interval(sum.div_f64(count as f64)?),
                        _ => Value::Interval(sum),
                    });
                }
                values_to_array(&out, ty)?
            }
            State::Ordered { direct, rows } => {
                let AggFunc::OrderedSet(f) = self.call.func else {
                    return Err(err!(Internal, "an ordered-set state of {:?}", self.call.func));
                };
                let keys: Vec<super::ordered_set::Key> = self
                    .call
                    .order_keys()
                    .iter()
                    .map(|&(k, desc, nulls_first)| super::ordered_set::Key { ty: self.call.args[k].ty(), desc, nulls_first })
                    .collect();
                let mut out = Vec::with_capacity(rows.len());
                for (d, r) in direct.iter().zip(rows) {
                    let mut r = r.clone();
                    out.push(super::ordered_set::finish(f, d.as_deref(), &mut r, &keys, ty)?);
                }
                values_to_array(&out, ty)?
            }
            State::Regr(v) => {
                let AggFunc::Regr(f) = self.call.func else { return Err(err!(Internal, "a regression state of {:?}", self.call.func)) };
                Arc::new(v.iter().map(|s| float_stats::regr_final(f, s)).collect::<Float64Array>())
            }
            State::MinMaxF64 { vals, .. } => cast_array(&(Arc::new(Float64Array::from(vals.clone())) as ArrayRef), SqlType::Float8, ty)?,
            State::MinMaxI64 { vals, .. } => i64_array(vals, ty)?,
            State::MinMax { vals, .. } => values_to_array(vals, ty)?,
            State::Bool { vals, .. } => Arc::new(BooleanArray::from(vals.clone())),
            // string_agg(bytea, bytea) joined the hex digits: the result
            // takes its `\x` back.
            State::StringAgg(v) if ty == SqlType::Bytea => {
                Arc::new(v.iter().map(|s| s.as_ref().map(|s| format!("\\x{s}"))).collect::<StringArray>())
            }
            State::StringAgg(v) => Arc::new(StringArray::from(v.clone())),
            State::Collect(groups) => {
                let mut dirs: Vec<(bool, bool)> = self.call.order_keys().iter().map(|&(_, d, n)| (d, n)).collect();
                if dirs.is_empty() && self.call.distinct {
                    dirs.push((false, false));
                }
                let mut out: Vec<Option<String>> = Vec::with_capacity(groups.len());
                for rows in groups {
                    let mut order: Vec<usize> = (0..rows.len()).collect();
                    order.sort_by(|&x, &y| cmp_keys(&rows[x].keys, &rows[y].keys, &dirs));
                    if order.is_empty() {
                        out.push(None);
                    } else if self.call.func == AggFunc::ArrayAgg {
                        let items: Vec<Option<String>> = order.iter().map(|&r| rows[r].val.clone()).collect();
                        out.push(Some(crate::types::array::format_array(&items)));
                    } else {
                        let mut s = String::new();
                        for (j, &r) in order.iter().enumerate() {
                            if j > 0 {
                                s.push_str(rows[r].sep.as_deref().unwrap_or_default());
                            }
                            s.push_str(rows[r].val.as_deref().unwrap_or_default());
                            if s.len() > super::memory::MAX_VALUE_BYTES {
                                return Err(err!(ProgramLimitExceeded, "out of memory"));
                            }
                        }
                        out.push(Some(if ty == SqlType::Bytea { format!("\\x{s}") } else { s }));
                    }
                }
                Arc::new(StringArray::from(out))
            }
            State::FirstLast { vals, .. } => {
                values_to_array(&vals.iter().map(|v| v.as_ref().map(|(_, x)| x.clone()).unwrap_or(Value::Null)).collect::<Vec<_>>(), ty)?
            }
            State::ExtremeCount { counts, .. } => Arc::new(Int64Array::from(counts.clone())),
            State::SumExact(v) => Arc::new(StringArray::from_iter_values(v.iter().map(|s| s.encode()))),
        })
    }
}

/// string_agg's piece of a value: a bytea's hex digits without their
/// `\x` (joined, they are the concatenated bytes' digits), else the text.
fn bytes_of(s: &str, ty: SqlType) -> &str {
    if ty == SqlType::Bytea {
        s.strip_prefix("\\x").unwrap_or(s)
    } else {
        s
    }
}

/// Fold `x` (standing for `count` rows) into a numeric sum / avg / min /
/// max state.
fn num_fold(func: AggFunc, state: &mut (Option<Numeric>, i64), x: &Numeric, count: i64) -> Result<()> {
    state.0 = Some(match (&state.0, func) {
        (None, _) => x.clone(),
        (Some(cur), AggFunc::Min) => {
            if x.cmp_value(cur).is_lt() {
                x.clone()
            } else {
                cur.clone()
            }
        }
        (Some(cur), AggFunc::Max) => {
            if x.cmp_value(cur).is_gt() {
                x.clone()
            } else {
                cur.clone()
            }
        }
        (Some(cur), _) => cur.add(x)?,
    });
    state.1 += count;
    Ok(())
}

/// A numeric state's result: avg divides by the count (numeric_avg).
fn num_final(func: AggFunc, sum: Option<Numeric>, count: i64) -> Result<Option<Numeric>> {
    if count == 0 {
        return Ok(None);
    }
    match (func, sum) {
        (AggFunc::Avg, Some(s)) => Ok(Some(s.div(&Numeric::from_i64(count))?)),
        (_, s) => Ok(s),
    }
}

/// sum / avg / min / max returning numeric over a window frame's values.
pub(super) fn fold_numeric<'a>(func: AggFunc, vals: impl Iterator<Item = &'a Value>) -> Result<Value> {
    let mut state = (None, 0);
    let (mut sx, mut sx2) = (Numeric::zero(), Numeric::zero());
    let var = matches!(func, AggFunc::StddevSamp | AggFunc::StddevPop | AggFunc::VarSamp | AggFunc::VarPop);
    for v in vals {
        let x = match v {
            Value::Int(i) => Numeric::from_i64(*i),
            Value::Float(f) => Numeric::from_f64(*f, 15)?,
            Value::Text(t) => Numeric::parse(t)?,
            _ => continue,
        };
        if var {
            sx = sx.add(&x)?;
            sx2 = sx2.add(&x.mul(&x)?)?;
            state.1 += 1;
        } else {
            num_fold(func, &mut state, &x, 1)?;
        }
    }
    if var {
        let sample = matches!(func, AggFunc::StddevSamp | AggFunc::VarSamp);
        let stddev = matches!(func, AggFunc::StddevSamp | AggFunc::StddevPop);
        return Ok(match Numeric::variance(state.1, &sx, &sx2, sample, stddev)? {
            Some(n) => Value::Text(n.to_string()),
            None => Value::Null,
        });
    }
    Ok(match num_final(func, state.0, state.1)? {
        Some(n) => Value::Text(n.to_string()),
        None => Value::Null,
    })
}

/// Compare two rows' ORDER BY keys: (desc, nulls first) per key.
fn cmp_keys(a: &[Value], b: &[Value], dirs: &[(bool, bool)]) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    for ((x, y), &(desc, nulls_first)) in a.iter().zip(b).zip(dirs) {
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => {
                if nulls_first {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            (false, true) => {
                if nulls_first {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            _ if desc => y.total_cmp(x),
            _ => x.total_cmp(y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// PostgreSQL's `a > b` for floats: NaN above every number, -0 = 0.
#[inline]
/// Fold each run `(start, end, group)` of `c` into its group's state:
/// `start` takes the register out of the state, `f` folds a value in,
/// `end` puts it back (with the run's length). Four runs of four distinct
/// groups are folded side by side, one value of each per step, so four
/// dependency chains overlap instead of one (a float add waits for the
/// previous one); each group still sees its values in order from the same
/// state, so the result is the same to the bit as folding run by run.
fn fold_runs<S: Copy, T: Copy>(
    c: &[f64],
    runs: &[(usize, usize, usize)],
    state: &mut [S],
    start: impl Fn(S) -> T,
    f: impl Fn(T, f64) -> T,
    end: impl Fn(S, T, usize) -> S,
) {
    let one = |state: &mut [S], (s, e, g): (usize, usize, usize)| {
        let acc = c[s..e].iter().fold(start(state[g]), |acc, &x| f(acc, x));
        state[g] = end(state[g], acc, e - s);
    };
    let mut quads = runs.chunks_exact(4);
    for q in &mut quads {
        let (r0, r1, r2, r3) = (q[0], q[1], q[2], q[3]);
        let g = [r0.2, r1.2, r2.2, r3.2];
        let m = [r0, r1, r2, r3].iter().map(|r| r.1 - r.0).min().unwrap_or(0);
        let distinct = g[0] != g[1] && g[0] != g[2] && g[0] != g[3] && g[1] != g[2] && g[1] != g[3] && g[2] != g[3];
        if !distinct || m < 16 {
            for &r in q {
                one(state, r);
            }
            continue;
        }
        let (c0, c1, c2, c3) = (&c[r0.0..r0.0 + m], &c[r1.0..r1.0 + m], &c[r2.0..r2.0 + m], &c[r3.0..r3.0 + m]);
        let mut acc = [start(state[g[0]]), start(state[g[1]]), start(state[g[2]]), start(state[g[3]])];
        for i in 0..m {
            acc[0] = f(acc[0], c0[i]);
            acc[1] = f(acc[1], c1[i]);
            acc[2] = f(acc[2], c2[i]);
            acc[3] = f(acc[3], c3[i]);
        }
        for (j, r) in [r0, r1, r2, r3].into_iter().enumerate() {
            let acc = c[r.0 + m..r.1].iter().fold(acc[j], |acc, &x| f(acc, x));
            state[r.2] = end(state[r.2], acc, r.1 - r.0);
        }
    }
    for &r in quads.remainder() {
        one(state, r);
    }
}

fn pg_float_gt(a: f64, b: f64) -> bool {
    if b.is_nan() {
        false
    } else {
        a.is_nan() || a > b
    }
}

/// An integer, timestamp or date column's values as i64 (borrowed where
/// they already are).
fn i64_values(a: &ArrayRef) -> Result<std::borrow::Cow<'_, [i64]>> {
    use std::borrow::Cow;
    Ok(match a.data_type() {
        DataType::Int64 => Cow::Borrowed(a.as_primitive::<Int64Type>().values().as_ref()),
        DataType::Timestamp(TimeUnit::Microsecond, _) => Cow::Borrowed(a.as_primitive::<TimestampMicrosecondType>().values().as_ref()),
        DataType::Int32 => Cow::Owned(a.as_primitive::<Int32Type>().values().iter().map(|&x| x as i64).collect()),
        DataType::Int16 => Cow::Owned(a.as_primitive::<Int16Type>().values().iter().map(|&x| x as i64).collect()),
        DataType::Date32 => Cow::Owned(a.as_primitive::<Date32Type>().values().iter().map(|&x| x as i64).collect()),
        other => return Err(err!(Internal, "min/max state over {other}")),
    })
}

/// i64 min/max states as a column of `ty`.
fn i64_array(vals: &[Option<i64>], ty: SqlType) -> Result<ArrayRef> {
    Ok(match ty.to_arrow() {
        DataType::Timestamp(_, tz) => Arc::new(TimestampMicrosecondArray::from(vals.to_vec()).with_timezone_opt(tz)),
        DataType::Date32 => Arc::new(vals.iter().map(|v| v.map(|x| x as i32)).collect::<Date32Array>()),
        _ => cast_array(&(Arc::new(Int64Array::from(vals.to_vec())) as ArrayRef), SqlType::Int8, ty)?,
    })
}

#[cfg(test)]
mod fold_runs_tests {
    use super::fold_runs;

    /// Side-by-side folding gives each group the bits run-by-run folding
    /// gives: long and short runs, a group repeated within four runs.
    #[test]
    fn same_bits_as_run_by_run() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let c: Vec<f64> = (0..5000).map(|_| (rnd() % 1_000_000) as f64 / 7.0 - 50_000.0).collect();
        let mut runs = Vec::new();
        let mut s = 0;
        while s < c.len() {
            let len = [1, 3, 17, 40, 360][(rnd() % 5) as usize].min(c.len() - s);
            runs.push((s, s + len, (rnd() % 9) as usize));
            s += len;
        }
        let mut want = vec![(0.25f64, 3i64); 9];
        for &(s, e, g) in &runs {
            let (sum, n) = want[g];
            want[g] = (c[s..e].iter().fold(sum, |a, &x| a + x), n + (e - s) as i64);
        }
        let mut got = vec![(0.25f64, 3i64); 9];
        fold_runs(&c, &runs, &mut got, |(sum, _)| sum, |a, x| a + x, |(_, n), a, len| (a, n + len as i64));
        for (w, g) in want.iter().zip(&got) {
            assert_eq!((w.0.to_bits(), w.1), (g.0.to_bits(), g.1));
        }
        // Four long runs of distinct groups take the side-by-side path.
        let quad = [(0, 400, 0), (400, 800, 1), (800, 1300, 2), (1300, 1700, 3)];
        let mut got = vec![(0.0f64, 0i64); 4];
        fold_runs(&c, &quad, &mut got, |(sum, _)| sum, |a, x| a + x, |(_, n), a, len| (a, n + len as i64));
        for (j, &(s, e, _)) in quad.iter().enumerate() {
            assert_eq!(got[j].0.to_bits(), c[s..e].iter().fold(0.0, |a, &x| a + x).to_bits());
            assert_eq!(got[j].1, (e - s) as i64);
        }
    }
}
