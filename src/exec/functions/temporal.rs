//! Vectorized date/time arithmetic with PostgreSQL's semantics:
//! timestamp ± interval (month ends clamp), timestamp − timestamp (days and
//! time), date ± integer, date − date, interval ± interval, interval × / ÷
//! number, and interval comparison (30-day months, 24-hour days).
//!
//! Works on arrow arrays; a constant side arrives as a one-row array and is
//! read once. Imports `types` and `error` only.

use std::sync::Arc;

use arrow::array::*;
use arrow::compute::{cast_with_options, CastOptions};
use arrow::datatypes::*;

use crate::error::Result;
use crate::types::interval::{add_to_timestamp, timestamp_diff, USECS_PER_DAY};
use crate::types::{interval_from_arrow, interval_to_arrow, Interval};
use crate::{bail, err};

/// Either a whole column or one constant value (broadcast).
enum Side<'a, T: ArrowPrimitiveType> {
    Array(&'a PrimitiveArray<T>),
    Scalar(Option<T::Native>),
}

impl<T: ArrowPrimitiveType> Side<'_, T> {
    #[inline]
    fn get(&self, i: usize) -> Option<T::Native> {
        match self {
            Side::Array(a) => {
                if a.is_null(i) {
                    None
                } else {
                    Some(a.value(i))
                }
            }
            Side::Scalar(v) => *v,
        }
    }
}

fn side<T: ArrowPrimitiveType>(a: &dyn Array, n: usize) -> Side<'_, T> {
    // Callers dispatch on the data type first.
    let p = a.as_primitive::<T>();
    if p.len() == 1 && n != 1 {
        Side::Scalar(if p.is_null(0) { None } else { Some(p.value(0)) })
    } else {
        Side::Array(p)
    }
}

fn len_of(l: &dyn Array, r: &dyn Array) -> usize {
    l.len().max(r.len())
}

fn is_interval(dt: &DataType) -> bool {
    matches!(dt, DataType::Interval(IntervalUnit::MonthDayNano))
}

fn tz_of(dt: &DataType) -> Option<Arc<str>> {
    match dt {
        DataType::Timestamp(_, tz) => tz.clone(),
        _ => None,
    }
}

/// timestamp(tz) + interval: for a timestamptz (`zone` given) the months
/// and days are added to the wall-clock time there and the result is that
/// local time's instant, then the time part is added (timestamptz_pl_interval).
fn add_in_zone(t: i64, iv: Interval, zone: Option<crate::types::zone::Zone>) -> Result<i64> {
    match zone {
        Some(z) if (iv.months != 0 || iv.days != 0) && t != i64::MAX && t != i64::MIN => {
            let local = add_to_timestamp(z.to_local(t), Interval::new(iv.months, iv.days, 0))?;
            z.to_utc(local).checked_add(iv.micros).ok_or_else(|| err!(DatetimeFieldOverflow, "timestamp out of range"))
        }
        _ => add_to_timestamp(t, iv),
    }
}

/// Whether a binary arithmetic operator on these arrow types is temporal.
pub fn is_temporal(l: &DataType, r: &DataType) -> bool {
    let t = |d: &DataType| matches!(d, DataType::Timestamp(..) | DataType::Date32) || is_interval(d);
    t(l) || t(r)
}

/// `l op r` for temporal operands; `op` is one of `+ - * /`.
pub fn arith(op: char, l: &dyn Array, r: &dyn Array) -> Result<ArrayRef> {
    let n = len_of(l, r);
    let (lt, rt) = (l.data_type().clone(), r.data_type().clone());
    match (op, &lt, &rt) {
        ('+' | '-', DataType::Timestamp(..), d) if is_interval(d) => {
            let ts = side::<TimestampMicrosecondType>(l, n);
            let iv = side::<IntervalMonthDayNanoType>(r, n);
            let neg = op == '-';
            // timestamptz: months and days move the wall clock of the
            // session's zone (across a DST change the UTC offset differs).
            let zone = tz_of(&lt).map(|_| crate::types::zone::current().zone);
            let mut b = TimestampMicrosecondBuilder::with_capacity(n);
            // A constant interval without months is one addition per row.
            if let (Side::Scalar(Some(v)), Side::Array(a)) = (&iv, &ts) {
                let mut iv = interval_from_arrow(*v);
                if neg {
                    iv = iv.checked_neg()?;
                }
                if iv.months == 0 && (zone.is_none() || iv.days == 0) {
                    let delta = (iv.days as i64).checked_mul(USECS_PER_DAY).and_then(|d| d.checked_add(iv.micros));
                    let delta = delta.ok_or_else(|| err!(DatetimeFieldOverflow, "timestamp out of range"))?;
                    let out: TimestampMicrosecondArray =
                        a.try_unary(|t| t.checked_add(delta).ok_or_else(|| err!(DatetimeFieldOverflow, "timestamp out of range")))?;
                    return Ok(Arc::new(out.with_timezone_opt(tz_of(&lt))));
                }
            }
            for i in 0..n {
                match (ts.get(i), iv.get(i)) {
                    (Some(t), Some(v)) => {
                        let mut iv = interval_from_arrow(v);
                        if neg {
                            iv = iv.checked_neg()?;
                        }
                        b.append_value(add_in_zone(t, iv, zone)?)
                    }
                    _ => b.append_null(),
                }
            }
            Ok(Arc::new(b.finish().with_timezone_opt(tz_of(&lt))))
        }
        ('-', DataType::Timestamp(..), DataType::Timestamp(..)) => {
            let a = side::<TimestampMicrosecondType>(l, n);
            let c = side::<TimestampMicrosecondType>(r, n);
            let mut b = IntervalMonthDayNanoBuilder::with_capacity(n);
            for i in 0..n {
                match (a.get(i), c.get(i)) {
                    (Some(x), Some(y)) => b.append_value(interval_to_arrow(timestamp_diff(x, y)?)),
                    _ => b.append_null(),
                }
            }
            Ok(Arc::new(b.finish()))
        }
        ('+' | '-', DataType::Date32, DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64) => {
            let days = cast_with_options(r, &DataType::Int64, &CastOptions::default())?;
            let d = side::<Date32Type>(l, n);
            let k = side::<Int64Type>(days.as_ref(), n);
            let mut b = Date32Builder::with_capacity(n);
            for i in 0..n {
                match (d.get(i), k.get(i)) {
                    (Some(x), Some(y)) => {
                        let v = if op == '+' { (x as i64).checked_add(y) } else { (x as i64).checked_sub(y) };
                        let v = v.and_then(|v| i32::try_from(v).ok()).ok_or_else(|| err!(DatetimeFieldOverflow, "date out of range"))?;
                        b.append_value(v)
                    }
                    _ => b.append_null(),
                }
            }
            Ok(Arc::new(b.finish()))
        }
        ('-', DataType::Date32, DataType::Date32) => {
            let a = side::<Date32Type>(l, n);
            let c = side::<Date32Type>(r, n);
            let out: Int32Array = (0..n).map(|i| Some(a.get(i)?.wrapping_sub(c.get(i)?))).collect();
            Ok(Arc::new(out))
        }
        ('+' | '-', a, b) if is_interval(a) && is_interval(b) => {
            let x = side::<IntervalMonthDayNanoType>(l, n);
            let y = side::<IntervalMonthDayNanoType>(r, n);
            let mut out = IntervalMonthDayNanoBuilder::with_capacity(n);
            for i in 0..n {
                match (x.get(i), y.get(i)) {
                    (Some(p), Some(q)) => {
                        let (p, q) = (interval_from_arrow(p), interval_from_arrow(q));
                        out.append_value(interval_to_arrow(if op == '+' { p.checked_add(q)? } else { p.checked_sub(q)? }))
                    }
                    _ => out.append_null(),
                }
            }
            Ok(Arc::new(out.finish()))
        }
        ('*' | '/', a, _) if is_interval(a) => scale(op, l, r, n),
        ('*', _, b) if is_interval(b) => scale(op, r, l, n),
        _ => bail!(UndefinedFunction, "operator does not exist: {} {op} {}", sql_name(&lt), sql_name(&rt)),
    }
}

fn sql_name(dt: &DataType) -> &'static str {
    crate::types::SqlType::from_arrow(dt).pg_name()
}

/// interval × number, interval ÷ number.
fn scale(op: char, iv: &dyn Array, num: &dyn Array, n: usize) -> Result<ArrayRef> {
    let f = cast_with_options(num, &DataType::Float64, &CastOptions::default())?;
    let x = side::<IntervalMonthDayNanoType>(iv, n);
    let k = side::<Float64Type>(f.as_ref(), n);
    let mut out = IntervalMonthDayNanoBuilder::with_capacity(n);
    for i in 0..n {
        match (x.get(i), k.get(i)) {
            (Some(p), Some(q)) => {
                let p = interval_from_arrow(p);
                out.append_value(interval_to_arrow(if op == '*' { p.mul_f64(q)? } else { p.div_f64(q)? }))
            }
            _ => out.append_null(),
        }
    }
    Ok(Arc::new(out.finish()))
}

fn intervals(a: &dyn Array) -> Result<&IntervalMonthDayNanoArray> {
    a.as_primitive_opt::<IntervalMonthDayNanoType>().ok_or_else(|| err!(Internal, "expected an interval array, got {}", a.data_type()))
}

/// Interval values as their comparison key (128-bit microseconds with
/// 30-day months), for comparison kernels and ordering.
pub fn interval_cmp_keys(a: &dyn Array) -> Result<ArrayRef> {
    let p = intervals(a)?;
    let out: Decimal128Array = p.iter().map(|v| v.map(|v| interval_from_arrow(v).cmp_key())).collect();
    Ok(Arc::new(out.with_precision_and_scale(38, 0)?))
}

/// `-interval`.
pub fn negate_interval(a: &dyn Array) -> Result<ArrayRef> {
    let p = intervals(a)?;
    let out: IntervalMonthDayNanoArray = p.try_unary(|v| interval_from_arrow(v).checked_neg().map(interval_to_arrow))?;
    Ok(Arc::new(out))
}

/// Apply a function to each interval of an array.
pub fn map_interval(a: &dyn Array, f: impl Fn(Interval) -> Result<Interval>) -> Result<ArrayRef> {
    let p = intervals(a)?;
    let out: IntervalMonthDayNanoArray = p.try_unary(|v| f(interval_from_arrow(v)).map(interval_to_arrow))?;
    Ok(Arc::new(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{format_timestamp, parse_timestamp};

    fn ivs(v: &[&str]) -> ArrayRef {
        let a: IntervalMonthDayNanoArray = v.iter().map(|s| Some(interval_to_arrow(Interval::parse(s).unwrap()))).collect();
        Arc::new(a)
    }

    #[test]
    fn timestamp_plus_month_clamps() {
        let ts: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![
            parse_timestamp("2026-01-31").unwrap(),
            parse_timestamp("2024-01-30 10:00").unwrap(),
        ]));
        let out = arith('+', ts.as_ref(), ivs(&["1 month"]).as_ref()).unwrap();
        let out = out.as_primitive::<TimestampMicrosecondType>();
        assert_eq!(format_timestamp(out.value(0)), "2026-02-28 00:00:00");
        assert_eq!(format_timestamp(out.value(1)), "2024-02-29 10:00:00");
    }

    #[test]
    fn interval_comparison_keys() {
        let k = interval_cmp_keys(ivs(&["1 mon", "30 days", "720 hours"]).as_ref()).unwrap();
        let k = k.as_primitive::<Decimal128Type>();
        assert_eq!(k.value(0), k.value(1));
        assert_eq!(k.value(1), k.value(2));
    }
}
