//! PromQL functions: range functions over a range selector's windows
//! (Prometheus's extrapolation for rate/increase/delta), instant functions
//! over a vector's values, label functions, histogram_quantile.

use std::collections::HashMap;

use promql_parser::parser::{Call, Expr};

use super::eval::{quantile, set_label, Evaluator, Matrix, Series, Val};
use super::load::Labels;
use crate::bail;
use crate::error::Result;
use crate::exec::promql::{linear_regression, InstantFn, RangeFn, ValueMap};

pub fn call(ev: &Evaluator, c: &Call) -> Result<Val> {
    let name = c.func.name;
    let args: Vec<&Expr> = c.args.args.iter().map(|a| a.as_ref()).collect();
    let n = ev.steps();
    match name {
        "rate" | "increase" | "delta" | "irate" | "idelta" | "deriv" | "avg_over_time" | "sum_over_time" | "min_over_time"
        | "max_over_time" | "count_over_time" | "last_over_time" | "stddev_over_time" | "stdvar_over_time" | "resets" | "changes"
        | "present_over_time" => {
            let m = ev.matrix(args[0])?;
            Ok(Val::Vector(over_windows(&m, n, |_, end, ts, vs| range_fn(name, m.range_ms, end, ts, vs))))
        }
        "quantile_over_time" => {
            let q = ev.scalar(args[0])?;
            let m = ev.matrix(args[1])?;
            let mut buf = Vec::new();
            Ok(Val::Vector(over_windows(&m, n, |step, _, _, vs| {
                buf.clear();
                buf.extend_from_slice(vs);
                Some(quantile(q[step], &mut buf))
            })))
        }
        name if let Some(f) = InstantFn::from_name(name) => {
            let mut v = ev.vector(args[0])?;
            map_values(&mut v, |_, x| Some(f.apply(x)));
            Ok(Val::Vector(v))
        }
        "round" => {
            let mut v = ev.vector(args[0])?;
            let to = if args.len() > 1 { ev.scalar(args[1])? } else { vec![1.0; n] };
            map_values(&mut v, |i, x| ValueMap::Round { to: to[i].to_bits() }.apply(x));
            Ok(Val::Vector(v))
        }
        "clamp" | "clamp_min" | "clamp_max" => {
            let mut v = ev.vector(args[0])?;
            let (lo, hi) = match name {
                "clamp" => (ev.scalar(args[1])?, ev.scalar(args[2])?),
                "clamp_min" => (ev.scalar(args[1])?, vec![f64::NAN; n]),
                _ => (vec![f64::NAN; n], ev.scalar(args[1])?),
            };
            map_values(&mut v, |i, x| ValueMap::Clamp { lo: lo[i].to_bits(), hi: hi[i].to_bits(), both: name == "clamp" }.apply(x));
            Ok(Val::Vector(v))
        }
        "time" => Ok(Val::Scalar((0..n).map(|i| ev.range.ts(i) as f64 / 1000.0).collect())),
        "timestamp" => {
            let mut inner = args[0];
            while let Expr::Paren(p) = inner {
                inner = &p.expr;
            }
            if let Expr::VectorSelector(vs) = inner {
                return Ok(Val::Vector(ev.select(vs, true)?));
            }
            let mut v = ev.vector(args[0])?;
            map_values(&mut v, |i, _| Some(ev.range.ts(i) as f64 / 1000.0));
            Ok(Val::Vector(v))
        }
        "vector" => {
            let s = ev.scalar(args[0])?;
            Ok(Val::Vector(vec![Series { labels: vec![], vals: s.into_iter().map(Some).collect() }]))
        }
        "scalar" => {
            let v = ev.vector(args[0])?;
            Ok(Val::Scalar(
                (0..n)
                    .map(|i| {
                        let mut it = v.iter().filter_map(|s| s.vals[i]);
                        match (it.next(), it.next()) {
                            (Some(x), None) => x,
                            _ => f64::NAN,
                        }
                    })
                    .collect(),
            ))
        }
        "sort" | "sort_desc" => ev.eval(args[0]),
        "label_replace" => {
            let v = ev.vector(args[0])?;
            let dst = ev.string(args[1])?;
            let repl = ev.string(args[2])?;
            let src = ev.string(args[3])?;
            let re = ev.string(args[4])?;
            let re = regex::Regex::new(&format!("^(?s:{re})$"))
                .map_err(|e| crate::err!(InvalidRegularExpression, "invalid regular expression in label_replace(): {e}"))?;
            Ok(Val::Vector(relabel(v, |l| {
                let value = super::load::label(l, &src).to_string();
                if let Some(caps) = re.captures(&value) {
                    let mut out = String::new();
                    caps.expand(&repl, &mut out);
                    set_label(l, &dst, &out);
                }
            })?))
        }
        "label_join" => {
            let v = ev.vector(args[0])?;
            let dst = ev.string(args[1])?;
            let sep = ev.string(args[2])?;
            let srcs: Vec<String> = args[3..].iter().map(|a| ev.string(a)).collect::<Result<_>>()?;
            Ok(Val::Vector(relabel(v, |l| {
                let joined = srcs.iter().map(|s| super::load::label(l, s).to_string()).collect::<Vec<_>>().join(&sep);
                set_label(l, &dst, &joined);
            })?))
        }
        "histogram_quantile" => {
            let q = ev.scalar(args[0])?;
            let v = ev.vector(args[1])?;
            Ok(Val::Vector(histogram_quantile(&q, v, n)))
        }
        "absent" => {
            let v = ev.vector(args[0])?;
            let labels = match args[0] {
                Expr::VectorSelector(vs) => absent_labels(vs),
                _ => vec![],
            };
            let vals: Vec<Option<f64>> = (0..n).map(|i| (!v.iter().any(|s| s.vals[i].is_some())).then_some(1.0)).collect();
            Ok(Val::Vector(if vals.iter().any(|x| x.is_some()) { vec![Series { labels, vals }] } else { vec![] }))
        }
        "absent_over_time" => {
            let m = ev.matrix(args[0])?;
            let labels = match args[0] {
                Expr::MatrixSelector(ms) => absent_labels(&ms.vs),
                _ => vec![],
            };
            let vals: Vec<Option<f64>> =
                (0..n).map(|i| (!(0..m.series.len()).any(|s| !m.window(s, i).is_empty())).then_some(1.0)).collect();
            Ok(Val::Vector(if vals.iter().any(|x| x.is_some()) { vec![Series { labels, vals }] } else { vec![] }))
        }
        "predict_linear" => {
            let m = ev.matrix(args[0])?;
            let d = ev.scalar(args[1])?;
            Ok(Val::Vector(over_windows(&m, n, |step, end, ts, vs| {
                if vs.len() < 2 {
                    return None;
                }
                let (slope, intercept) = linear_regression(ts, vs, end);
                Some(intercept + slope * d[step])
            })))
        }
        "double_exponential_smoothing" => {
            let m = ev.matrix(args[0])?;
            let sf = ev.scalar(args[1])?;
            let tf = ev.scalar(args[2])?;
            for i in 0..n {
                if !(sf[i] > 0.0 && sf[i] < 1.0) {
                    bail!(InvalidParameterValue, "invalid smoothing factor. Expected: 0 < sf < 1, got: {:.6}", sf[i]);
                }
                if !(tf[i] > 0.0 && tf[i] < 1.0) {
                    bail!(InvalidParameterValue, "invalid trend factor. Expected: 0 < tf < 1, got: {:.6}", tf[i]);
                }
            }
            Ok(Val::Vector(over_windows(&m, n, |step, _, _, vs| double_exponential_smoothing(vs, sf[step], tf[step]))))
        }
        "mad_over_time" => {
            let m = ev.matrix(args[0])?;
            let mut buf = Vec::new();
            Ok(Val::Vector(over_windows(&m, n, |_, _, _, vs| {
                buf.clear();
                buf.extend_from_slice(vs);
                let median = quantile(0.5, &mut buf);
                buf.clear();
                buf.extend(vs.iter().map(|v| (v - median).abs()));
                Some(quantile(0.5, &mut buf))
            })))
        }
        "acos" | "acosh" | "asin" | "asinh" | "atan" | "atanh" | "cos" | "cosh" | "sin" | "sinh" | "tan" | "tanh" | "deg" | "rad" => {
            let f: fn(f64) -> f64 = match name {
                "acos" => f64::acos,
                "acosh" => f64::acosh,
                "asin" => f64::asin,
                "asinh" => f64::asinh,
                "atan" => f64::atan,
                "atanh" => f64::atanh,
                "cos" => f64::cos,
                "cosh" => f64::cosh,
                "sin" => f64::sin,
                "sinh" => f64::sinh,
                "tan" => f64::tan,
                "tanh" => f64::tanh,
                "deg" => f64::to_degrees,
                _ => f64::to_radians,
            };
            let mut v = ev.vector(args[0])?;
            map_values(&mut v, |_, x| Some(f(x)));
            Ok(Val::Vector(v))
        }
        "pi" => Ok(Val::Scalar(vec![std::f64::consts::PI; n])),
        "year" | "month" | "day_of_month" | "day_of_week" | "day_of_year" | "days_in_month" | "hour" | "minute" => {
            // Of each value read as seconds since the epoch (UTC); without
            // an argument, of each step's time.
            let mut v = match args.first() {
                Some(a) => ev.vector(a)?,
                None => vec![Series { labels: vec![], vals: (0..n).map(|i| Some(ev.range.ts(i) as f64 / 1000.0)).collect() }],
            };
            map_values(&mut v, |_, x| date_part(name, x));
            Ok(Val::Vector(v))
        }
        other => bail!(FeatureNotSupported, "PromQL function {other}() is not supported"),
    }
}

/// The labels `absent()` gives its result: the selector's equality
/// matchers (a label matched twice, or by another operator, is left out,
/// as Prometheus does).
pub fn absent_labels(vs: &promql_parser::parser::VectorSelector) -> Labels {
    use promql_parser::label::MatchOp;
    let mut out: Labels = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for m in &vs.matchers.matchers {
        if m.name == "__name__" || m.name == super::load::FIELD_LABEL {
            continue;
        }
        if matches!(m.op, MatchOp::Equal) && !seen.contains(&m.name.as_str()) {
            set_label(&mut out, &m.name, &m.value);
            seen.push(&m.name);
        } else {
            out.retain(|(n, _)| *n != m.name);
            seen.push(&m.name);
        }
    }
    out
}

/// Prometheus's double exponential smoothing (holt_winters before v3).
fn double_exponential_smoothing(vs: &[f64], sf: f64, tf: f64) -> Option<f64> {
    if vs.len() < 2 {
        return None;
    }
    let (mut s0, mut s1) = (0.0, vs[0]);
    let mut b = vs[1] - vs[0];
    for (i, &v) in vs.iter().enumerate().skip(1) {
        let x = sf * v;
        if i > 1 {
            b = tf * (s1 - s0) + (1.0 - tf) * b;
        }
        let y = (1.0 - sf) * (s1 + b);
        s0 = s1;
        s1 = x + y;
    }
    Some(s1)
}

/// A calendar part of a time in seconds since the epoch, UTC.
fn date_part(name: &str, secs: f64) -> Option<f64> {
    use chrono::{Datelike, Timelike};
    if !secs.is_finite() {
        return Some(f64::NAN);
    }
    let t = chrono::DateTime::from_timestamp(secs.floor() as i64, 0)?;
    Some(match name {
        "year" => t.year() as f64,
        "month" => t.month() as f64,
        "day_of_month" => t.day() as f64,
        "day_of_week" => t.weekday().num_days_from_sunday() as f64,
        "day_of_year" => t.ordinal() as f64,
        "hour" => t.hour() as f64,
        "minute" => t.minute() as f64,
        _ => {
            let (y, m) = (t.year(), t.month());
            let next = if m == 12 { chrono::NaiveDate::from_ymd_opt(y + 1, 1, 1) } else { chrono::NaiveDate::from_ymd_opt(y, m + 1, 1) }?;
            (next - chrono::NaiveDate::from_ymd_opt(y, m, 1)?).num_days() as f64
        }
    })
}

fn map_values(v: &mut Vec<Series>, f: impl Fn(usize, f64) -> Option<f64>) {
    for s in v.iter_mut() {
        for (i, slot) in s.vals.iter_mut().enumerate() {
            if let Some(x) = *slot {
                *slot = f(i, x);
            }
        }
    }
    v.retain(|s| s.vals.iter().any(|x| x.is_some()));
}

/// Change each series' labels; two series ending with one label set is
/// Prometheus's error.
fn relabel(v: Vec<Series>, f: impl Fn(&mut Labels)) -> Result<Vec<Series>> {
    let mut out: Vec<Series> = Vec::with_capacity(v.len());
    let mut index: HashMap<Labels, usize> = HashMap::new();
    for mut s in v {
        f(&mut s.labels);
        match index.get(&s.labels) {
            Some(&at) => {
                for (i, x) in s.vals.into_iter().enumerate() {
                    if x.is_some() {
                        if out[at].vals[i].is_some() {
                            bail!(InvalidParameterValue, "vector cannot contain metrics with the same labelset");
                        }
                        out[at].vals[i] = x;
                    }
                }
            }
            None => {
                index.insert(s.labels.clone(), out.len());
                out.push(s);
            }
        }
    }
    Ok(out)
}

/// Apply `f(step, window end, times, values)` to every series' non-empty
/// window at every step.
fn over_windows(m: &Matrix, n: usize, mut f: impl FnMut(usize, i64, &[i64], &[f64]) -> Option<f64>) -> Vec<Series> {
    let mut out = Vec::new();
    for (s, raw) in m.series.iter().enumerate() {
        let mut vals = Vec::with_capacity(n);
        for i in 0..n {
            let w = m.window(s, i);
            vals.push(if w.is_empty() { None } else { f(i, m.ends[i], &raw.ts[w.clone()], &raw.vals[w]) });
        }
        if vals.iter().any(|v| v.is_some()) {
            out.push(Series { labels: raw.labels.clone(), vals });
        }
    }
    out
}

fn range_fn(name: &str, range_ms: i64, end: i64, ts: &[i64], vs: &[f64]) -> Option<f64> {
    RangeFn::from_name(name)?.apply(range_ms, end, ts, vs)
}

/// histogram_quantile over classic buckets: series grouped by their labels
/// without `le`, Prometheus's bucketQuantile per step.
fn histogram_quantile(q: &[f64], v: Vec<Series>, n: usize) -> Vec<Series> {
    let mut index: HashMap<Labels, usize> = HashMap::new();
    let mut groups: Vec<(Labels, Vec<(f64, usize)>)> = Vec::new();
    for (i, s) in v.iter().enumerate() {
        let le = super::load::label(&s.labels, "le");
        let Ok(upper) = le.trim().replace("+Inf", "inf").parse::<f64>() else { continue };
        let key: Labels = s.labels.iter().filter(|(k, _)| k != "le").cloned().collect();
        let at = *index.entry(key.clone()).or_insert_with(|| {
            groups.push((key, vec![]));
            groups.len() - 1
        });
        groups[at].1.push((upper, i));
    }
    let mut out = Vec::new();
    for (labels, buckets) in groups {
        let mut vals = vec![None; n];
        for (i, slot) in vals.iter_mut().enumerate() {
            let mut b: Vec<(f64, f64)> = buckets.iter().filter_map(|&(u, s)| v[s].vals[i].map(|c| (u, c))).collect();
            if b.is_empty() {
                continue;
            }
            *slot = Some(bucket_quantile(q[i], &mut b));
        }
        if vals.iter().any(|x| x.is_some()) {
            out.push(Series { labels, vals });
        }
    }
    out
}

fn bucket_quantile(q: f64, b: &mut Vec<(f64, f64)>) -> f64 {
    if q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    b.sort_by(|x, y| x.0.partial_cmp(&y.0).unwrap_or(std::cmp::Ordering::Equal));
    if !(b[b.len() - 1].0.is_infinite() && b[b.len() - 1].0 > 0.0) {
        return f64::NAN;
    }
    // Coalesce equal upper bounds, then force the counts monotonic.
    let mut c: Vec<(f64, f64)> = Vec::with_capacity(b.len());
    for &(u, n) in b.iter() {
        match c.last_mut() {
            Some(last) if last.0 == u => last.1 += n,
            _ => c.push((u, n)),
        }
    }
    let mut max = f64::NEG_INFINITY;
    for x in c.iter_mut() {
        if x.1 < max {
            x.1 = max;
        }
        max = x.1;
    }
    if c.len() < 2 {
        return f64::NAN;
    }
    let observations = c[c.len() - 1].1;
    if observations == 0.0 {
        return f64::NAN;
    }
    let mut rank = q * observations;
    let b_i = c[..c.len() - 1].partition_point(|x| x.1 < rank);
    if b_i == c.len() - 1 {
        return c[c.len() - 2].0;
    }
    if b_i == 0 && c[0].0 <= 0.0 {
        return c[0].0;
    }
    let (mut start, end, mut count) = (0.0, c[b_i].0, c[b_i].1);
    if b_i > 0 {
        start = c[b_i - 1].0;
        count -= c[b_i - 1].1;
        rank -= c[b_i - 1].1;
    }
    start + (end - start) * (rank / count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets() {
        let mut b = vec![(0.1, 10.0), (0.5, 20.0), (f64::INFINITY, 20.0)];
        // rank 10 of 20 falls at the top of the first bucket.
        assert_eq!(bucket_quantile(0.5, &mut b), 0.1);
        let mut b = vec![(1.0, 0.0), (2.0, 10.0), (f64::INFINITY, 10.0)];
        assert_eq!(bucket_quantile(0.5, &mut b), 1.5);
        let mut b = vec![(1.0, 5.0), (2.0, 10.0)];
        assert!(bucket_quantile(0.5, &mut b).is_nan());
    }

    #[test]
    fn regression() {
        let (s, i) = linear_regression(&[0, 1000, 2000], &[1.0, 3.0, 5.0], 0);
        assert!((s - 2.0).abs() < 1e-12 && (i - 1.0).abs() < 1e-12);
    }
}
