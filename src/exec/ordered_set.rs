//! The final step of PostgreSQL's ordered-set and hypothetical-set
//! aggregates (utils/adt/orderedsetaggs.c) over one group's rows, which
//! `aggregate.rs` collects: percentile_cont / percentile_disc of a fraction
//! or an array of fractions, mode, and rank / dense_rank / percent_rank /
//! cume_dist of a hypothetical row.
//!
//! Imports `types`, `error` and `plan`.

use std::cmp::Ordering;

use super::plan::OrderedSetFunc;
use crate::error::Result;
use crate::types::interval::Interval;
use crate::types::{SqlType, Value};
use crate::{bail, err};

/// One ORDER BY key: its type, DESC, NULLS FIRST.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    pub ty: SqlType,
    pub desc: bool,
    pub nulls_first: bool,
}

fn cmp_one(a: &Value, b: &Value, k: &Key) -> Ordering {
    match (a.is_null(), b.is_null()) {
        (true, true) => Ordering::Equal,
        (true, false) => {
            if k.nulls_first {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        (false, true) => {
            if k.nulls_first {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        _ if k.desc => b.cmp_as(a, k.ty),
        _ => a.cmp_as(b, k.ty),
    }
}

fn cmp_rows(a: &[Value], b: &[Value], keys: &[Key]) -> Ordering {
    a.iter().zip(b).zip(keys).map(|((x, y), k)| cmp_one(x, y, k)).find(|o| o.is_ne()).unwrap_or(Ordering::Equal)
}

/// The aggregate's result over a group: `direct` are its direct arguments
/// (None: the group had no row to evaluate them on), `rows` the ORDER BY
/// key values of its rows, `ty` the result type.
pub fn finish(f: OrderedSetFunc, direct: Option<&[Value]>, rows: &mut [Vec<Value>], keys: &[Key], ty: SqlType) -> Result<Value> {
    if f.hypothetical() {
        return hypothetical(f, direct, rows, keys);
    }
    // percentile and mode ignore NULL inputs (`aggregate.rs` keeps none).
    if rows.is_empty() {
        return Ok(Value::Null);
    }
    rows.sort_by(|a, b| cmp_rows(a, b, keys));
    let vals: Vec<&Value> = rows.iter().map(|r| &r[0]).collect();
    if f == OrderedSetFunc::Mode {
        return Ok(mode(&vals, &keys[0]));
    }
    let cont = f == OrderedSetFunc::PercentileCont;
    let fraction = direct.and_then(|d| d.first()).cloned().unwrap_or(Value::Null);
    match fraction {
        Value::Null => Ok(Value::Null),
        Value::Float(p) => percentile(cont, p, &vals),
        Value::Int(p) => percentile(cont, p as f64, &vals),
        // An array of fractions (arrays travel as their text): one result each, in its order.
        Value::Text(t) => {
            let elem = ty.elem().unwrap_or(SqlType::Text);
            let mut out = Vec::new();
            for item in crate::types::array::parse_array(&t)? {
                let v = match item {
                    None => Value::Null,
                    Some(s) => match crate::exec::expr::parse_text_as(&s, SqlType::Float8)? {
                        Value::Float(p) => percentile(cont, p, &vals)?,
                        _ => Value::Null,
                    },
                };
                out.push(crate::types::array::elem_text(&v, elem));
            }
            Ok(Value::Text(crate::types::array::format_array(&out)))
        }
        other => bail!(Internal, "percentile of {other:?}"),
    }
}

/// percentile_disc: the first value whose position in the sorted input is
/// at least `p` of the rows; percentile_cont: the value at `p` of the way
/// through, interpolated between the two rows around it.
fn percentile(cont: bool, p: f64, vals: &[&Value]) -> Result<Value> {
    if !(0.0..=1.0).contains(&p) {
        return Err(err!(NumericOutOfRange, "percentile value {} is not between 0 and 1", crate::types::format_f64(p)));
    }
    let n = vals.len();
    if !cont {
        let row = ((p * n as f64).ceil() as usize).max(1);
        return Ok(vals[row.min(n) - 1].clone());
    }
    let at = p * (n - 1) as f64;
    let (first, second) = (at.floor() as usize, at.ceil() as usize);
    let lo = vals[first];
    if first == second {
        return Ok(lo.clone());
    }
    let hi = vals[second];
    let proportion = at - first as f64;
    Ok(match (lo, hi) {
        (Value::Float(a), Value::Float(b)) => Value::Float(a + (b - a) * proportion),
        (Value::Interval(a), Value::Interval(b)) => Value::Interval(lerp_interval(*a, *b, proportion)?),
        (a, b) => bail!(Internal, "percentile_cont between {a:?} and {b:?}"),
    })
}

/// interval_lerp: lo + (hi - lo) * pct.
fn lerp_interval(lo: Interval, hi: Interval, pct: f64) -> Result<Interval> {
    lo.checked_add(hi.checked_sub(lo)?.mul_f64(pct)?)
}

/// The most frequent value; among equally frequent ones, the first in
/// sort order.
fn mode(vals: &[&Value], key: &Key) -> Value {
    let (mut best, mut best_n) = (None, 0usize);
    let mut i = 0;
    while i < vals.len() {
        let mut j = i + 1;
        while j < vals.len() && vals[j].cmp_as(vals[i], key.ty) == Ordering::Equal {
            j += 1;
        }
        if j - i > best_n {
            best = Some(vals[i]);
            best_n = j - i;
        }
        i = j;
    }
    best.cloned().unwrap_or(Value::Null)
}

/// rank / dense_rank / percent_rank / cume_dist of the hypothetical row
/// `direct` among `rows`: rank counts the rows sorting before it, cume_dist
/// also its peers (PostgreSQL sorts it before its peers for rank, after for
/// cume_dist).
fn hypothetical(f: OrderedSetFunc, direct: Option<&[Value]>, rows: &[Vec<Value>], keys: &[Key]) -> Result<Value> {
    let n = rows.len();
    let (before, peers, distinct_before) = match direct {
        // No row: the hypothetical row is alone.
        None => (0, 0, 0),
        Some(h) => {
            let mut before = 0;
            let mut peers = 0;
            let mut lower: Vec<&Vec<Value>> = Vec::new();
            for r in rows {
                match cmp_rows(r, h, keys) {
                    Ordering::Less => {
                        before += 1;
                        lower.push(r);
                    }
                    Ordering::Equal => peers += 1,
                    Ordering::Greater => {}
                }
            }
            let distinct = if f == OrderedSetFunc::DenseRank {
                lower.sort_by(|a, b| cmp_rows(a, b, keys));
                lower.dedup_by(|a, b| cmp_rows(a, b, keys) == Ordering::Equal);
                lower.len()
            } else {
                0
            };
            (before, peers, distinct)
        }
    };
    Ok(match f {
        OrderedSetFunc::Rank => Value::Int(before as i64 + 1),
        OrderedSetFunc::DenseRank => Value::Int(distinct_before as i64 + 1),
        OrderedSetFunc::PercentRank => Value::Float(if n == 0 { 0.0 } else { before as f64 / n as f64 }),
        OrderedSetFunc::CumeDist => Value::Float((before + peers + 1) as f64 / (n + 1) as f64),
        other => bail!(Internal, "{} is not a hypothetical-set aggregate", other.name()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(v: &[i64]) -> Vec<Vec<Value>> {
        v.iter().map(|x| vec![Value::Int(*x)]).collect()
    }

    const K: Key = Key { ty: SqlType::Int4, desc: false, nulls_first: false };

    /// aggregates.sql's hypothetical-set answers.
    #[test]
    fn hypothetical_rows() {
        let rows = ints(&[1, 1, 2, 2, 3, 3, 4]);
        let h = [Value::Int(3)];
        let run = |f, rows: &mut [Vec<Value>]| finish(f, Some(&h), rows, &[K], SqlType::Int8).unwrap();
        assert_eq!(run(OrderedSetFunc::Rank, &mut rows.clone()), Value::Int(5));
        assert_eq!(run(OrderedSetFunc::DenseRank, &mut rows.clone()), Value::Int(3));
        assert_eq!(run(OrderedSetFunc::CumeDist, &mut rows.clone()), Value::Float(0.875));
        let mut eight = ints(&[1, 1, 2, 2, 3, 3, 4, 5]);
        assert_eq!(run(OrderedSetFunc::PercentRank, &mut eight), Value::Float(0.5));
        assert_eq!(finish(OrderedSetFunc::PercentRank, None, &mut [], &[K], SqlType::Float8).unwrap(), Value::Float(0.0));
    }

    #[test]
    fn percentiles() {
        let mut rows: Vec<Vec<Value>> = (1..=5).map(|x| vec![Value::Float(x as f64)]).collect();
        let k = Key { ty: SqlType::Float8, ..K };
        let cont =
            |p: f64, rows: &mut [Vec<Value>]| finish(OrderedSetFunc::PercentileCont, Some(&[Value::Float(p)]), rows, &[k], SqlType::Float8);
        assert_eq!(cont(0.1, &mut rows).unwrap(), Value::Float(1.4));
        assert_eq!(cont(0.75, &mut rows).unwrap(), Value::Float(4.0));
        assert!(cont(1.5, &mut rows).is_err());
        let mut t = ints(&[0, 1, 2, 3]);
        let disc = finish(OrderedSetFunc::PercentileDisc, Some(&[Value::Float(0.5)]), &mut t, &[K], SqlType::Int4).unwrap();
        assert_eq!(disc, Value::Int(1));
        let arr = finish(
            OrderedSetFunc::PercentileDisc,
            Some(&[Value::Text("{0,NULL,1}".into())]),
            &mut t,
            &[K],
            SqlType::Array(crate::types::Elem::Int4),
        );
        assert_eq!(arr.unwrap(), Value::Text("{0,NULL,3}".into()));
    }
}
