//! Date/time functions: date_trunc, date_bin / time_bucket, date_part
//! (extract), justify_*, now() and friends, to_timestamp. The unit or
//! stride is nearly always a constant: it is read once and the timestamps
//! go through one primitive kernel.

use std::sync::Arc;

use arrow::array::*;
use arrow::datatypes::*;
use chrono::{Datelike, NaiveDate, Timelike};

use super::registry::{arc, Args};
use super::temporal::map_interval;
use crate::error::Result;
use crate::types::interval::{USECS_PER_DAY, USECS_PER_HOUR, USECS_PER_MINUTE, USECS_PER_SEC};
use crate::types::numeric::Numeric;
use crate::types::{interval_from_arrow, Interval, SqlType};
use crate::{bail, err};

/// PostgreSQL's spelling of a unit, after its aliases.
pub fn normalize_unit(u: &str) -> Option<&'static str> {
    Some(match u.trim().to_ascii_lowercase().as_str() {
        "microsecond" | "microseconds" | "us" | "usec" | "usecs" | "useconds" => "microseconds",
        "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" | "mseconds" => "milliseconds",
        "second" | "seconds" | "s" | "sec" | "secs" => "second",
        "minute" | "minutes" | "m" | "min" | "mins" => "minute",
        "hour" | "hours" | "h" | "hr" | "hrs" => "hour",
        "day" | "days" | "d" => "day",
        "week" | "weeks" | "w" => "week",
        "month" | "months" | "mon" | "mons" => "month",
        "quarter" | "qtr" => "quarter",
        "year" | "years" | "y" | "yr" | "yrs" => "year",
        "decade" | "decades" | "dec" => "decade",
        "century" | "centuries" | "c" | "cent" => "century",
        "millennium" | "millennia" | "millenniums" | "mil" | "mils" => "millennium",
        "epoch" => "epoch",
        "dow" => "dow",
        "isodow" => "isodow",
        "doy" => "doy",
        "julian" | "j" => "julian",
        "isoyear" => "isoyear",
        "timezone" => "timezone",
        "timezone_h" | "timezone_hour" => "timezone_h",
        "timezone_m" | "timezone_minute" => "timezone_m",
        _ => return None,
    })
}

fn not_recognized(unit: &str, ty: SqlType) -> crate::error::WeirError {
    err!(InvalidParameterValue, "unit \"{unit}\" not recognized for type {}", ty.pg_name())
}

fn naive(us: i64) -> Result<chrono::NaiveDateTime> {
    Ok(chrono::DateTime::from_timestamp_micros(us).ok_or_else(|| err!(DatetimeFieldOverflow, "timestamp out of range"))?.naive_utc())
}

fn micros_of(d: NaiveDate) -> i64 {
    d.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp_micros()
}

/// The width in microseconds of a fixed-width truncation unit (second to
/// day); None for calendar units.
fn fixed_step(unit: &str) -> Option<i64> {
    match unit {
        "microseconds" => Some(1),
        "milliseconds" => Some(1_000),
        "second" => Some(USECS_PER_SEC),
        "minute" => Some(USECS_PER_MINUTE),
        "hour" => Some(USECS_PER_HOUR),
        "day" => Some(USECS_PER_DAY),
        _ => None,
    }
}

/// Floor `us` to a multiple of `step`; flooring can step below i64::MIN for
/// the most negative values (22008).
fn floor_to(us: i64, step: i64) -> Result<i64> {
    us.div_euclid(step).checked_mul(step).ok_or_else(|| err!(DatetimeFieldOverflow, "timestamp out of range"))
}

/// `floor_to` over a column, the step a constant in each arm so the
/// division compiles to a multiplication (a 64-bit divide per row costs
/// more than the rest of a time-bucket GROUP BY's key work).
fn floor_all(ts: &TimestampMicrosecondArray, step: i64) -> Result<TimestampMicrosecondArray> {
    macro_rules! by {
        ($s:expr) => {
            ts.try_unary(|t| floor_to(t, $s))?
        };
    }
    Ok(match step {
        1 => ts.clone(),
        1_000 => by!(1_000),
        USECS_PER_SEC => by!(USECS_PER_SEC),
        USECS_PER_MINUTE => by!(USECS_PER_MINUTE),
        USECS_PER_HOUR => by!(USECS_PER_HOUR),
        USECS_PER_DAY => by!(USECS_PER_DAY),
        s => by!(s),
    })
}

/// Truncate microseconds since the epoch to a (normalized) unit.
pub fn trunc_timestamp(unit: &str, us: i64) -> Result<i64> {
    if let Some(step) = fixed_step(unit) {
        return floor_to(us, step);
    }
    let dt = naive(us)?;
    let y = dt.year();
    let ymd = |y: i32, m: u32| NaiveDate::from_ymd_opt(y, m, 1).ok_or_else(|| err!(DatetimeFieldOverflow, "timestamp out of range"));
    let date = match unit {
        "week" => dt
            .date()
            .checked_sub_signed(chrono::Duration::days(dt.weekday().num_days_from_monday() as i64))
            .ok_or_else(|| err!(DatetimeFieldOverflow, "timestamp out of range"))?,
        "month" => ymd(y, dt.month())?,
        "quarter" => ymd(y, (dt.month() - 1) / 3 * 3 + 1)?,
        "year" => ymd(y, 1)?,
        "decade" => ymd(y - y.rem_euclid(10), 1)?,
        "century" => ymd(if y > 0 { (y - 1) / 100 * 100 + 1 } else { -((99 - (y - 1)) / 100) * 100 + 1 }, 1)?,
        "millennium" => ymd(if y > 0 { (y - 1) / 1000 * 1000 + 1 } else { -((999 - (y - 1)) / 1000) * 1000 + 1 }, 1)?,
        _ => bail!(InvalidParameterValue, "unit \"{unit}\" not recognized for type timestamp without time zone"),
    };
    Ok(micros_of(date))
}

/// Compatibility name used by older callers.
pub fn trunc_unit(unit: &str, us: i64) -> Result<i64> {
    let u = normalize_unit(unit).ok_or_else(|| not_recognized(unit, SqlType::Timestamp))?;
    trunc_timestamp(u, us)
}

fn trunc_interval(unit: &str, iv: Interval) -> Result<Interval> {
    let years = iv.months / 12;
    let t = iv.micros;
    let step = |s: i64| Interval::new(iv.months, iv.days, t - t % s);
    Ok(match unit {
        "microseconds" => iv,
        "milliseconds" => step(1_000),
        "second" => step(USECS_PER_SEC),
        "minute" => step(USECS_PER_MINUTE),
        "hour" => step(USECS_PER_HOUR),
        "day" => Interval::new(iv.months, iv.days, 0),
        "month" => Interval::new(iv.months, 0, 0),
        "quarter" => Interval::new(years * 12 + (iv.months % 12) / 3 * 3, 0, 0),
        "year" => Interval::new(years * 12, 0, 0),
        "decade" => Interval::new(years / 10 * 120, 0, 0),
        "century" => Interval::new(years / 100 * 1200, 0, 0),
        "millennium" => Interval::new(years / 1000 * 12000, 0, 0),
        "week" => {
            return Err(err!(FeatureNotSupported, "unit \"week\" not supported for type interval")
                .with_detail("Months usually have fractional weeks."))
        }
        other => bail!(FeatureNotSupported, "unit \"{other}\" not supported for type interval"),
    })
}

/// date_trunc(unit, timestamp | timestamptz | interval).
pub fn date_trunc(a: &Args<'_>) -> Result<ArrayRef> {
    let ty = a.types[1];
    let zone = if a.len() == 3 {
        // date_trunc(unit, timestamptz, zone): truncated in that zone.
        match a.str(2)?.constant() {
            Some(Some(z)) => {
                crate::types::zone::Zone::parse(z).ok_or_else(|| err!(InvalidParameterValue, "time zone \"{z}\" not recognized"))?
            }
            Some(None) => return Ok(arrow::array::new_null_array(&a.ret.to_arrow(), a.n)),
            None => bail!(FeatureNotSupported, "date_trunc with a time zone that varies by row is not supported"),
        }
    } else {
        crate::types::zone::current().zone
    };
    if ty == SqlType::TimestampTz && zone != crate::types::zone::Zone::UTC {
        // A timestamptz truncates in the session's zone (PostgreSQL's
        // timestamptz_trunc): to wall-clock time, truncate, back to UTC.
        let mut cols = a.cols.clone();
        cols[1] = map_ts(&a.cols[1], |t| zone.to_local(t));
        let mut types = a.types.clone();
        types[1] = SqlType::Timestamp;
        cols.truncate(2);
        types.truncate(2);
        let local = Args { cols, scalar: a.scalar.clone(), types, n: a.n, ret: a.ret, ctx: a.ctx, name: a.name };
        let out = date_trunc_in(&local)?;
        return Ok(map_ts(&out, |t| zone.to_utc(t)));
    }
    date_trunc_in(a)
}

/// Map a timestamp column's finite values, keeping its arrow type.
fn map_ts(col: &ArrayRef, f: impl Fn(i64) -> i64) -> ArrayRef {
    let Some(ts) = col.as_any().downcast_ref::<TimestampMicrosecondArray>() else { return col.clone() };
    let out: TimestampMicrosecondArray = ts.unary(|t| if t == i64::MAX || t == i64::MIN { t } else { f(t) });
    arc(out.with_timezone_opt(tz(col)))
}

fn date_trunc_in(a: &Args<'_>) -> Result<ArrayRef> {
    let units = a.str(0)?;
    let ty = a.types[1];
    if let Some(Some(u)) = units.constant() {
        let unit = normalize_unit(u).ok_or_else(|| not_recognized(u, ty))?;
        if ty == SqlType::Interval {
            return map_interval(a.cols[1].as_ref(), |iv| trunc_interval(unit, iv));
        }
        if matches!(unit, "epoch" | "dow" | "isodow" | "doy" | "julian" | "isoyear" | "timezone" | "timezone_h" | "timezone_m") {
            return Err(not_recognized(u, ty));
        }
        let ts = a.prim::<TimestampMicrosecondType>(1)?;
        let ts = ts.array_any();
        let step = fixed_step(unit);
        let out: TimestampMicrosecondArray = match step {
            // Fixed-width units: one floor per row, the unit matched once.
            Some(step) => floor_all(ts, step)?,
            None => ts.try_unary(|t| trunc_timestamp(unit, t))?,
        };
        return Ok(arc(out.with_timezone_opt(tz(&a.cols[1]))));
    }
    // A unit per row: the slow path.
    let mut out = Vec::with_capacity(a.n);
    for i in 0..a.n {
        let v = match (units.get(i), a.value(1, i)) {
            (Some(u), crate::types::Value::Timestamp(t)) => {
                let unit = normalize_unit(u).ok_or_else(|| not_recognized(u, ty))?;
                crate::types::Value::Timestamp(trunc_timestamp(unit, t)?)
            }
            (Some(u), crate::types::Value::Interval(iv)) => {
                let unit = normalize_unit(u).ok_or_else(|| not_recognized(u, ty))?;
                crate::types::Value::Interval(trunc_interval(unit, iv)?)
            }
            _ => crate::types::Value::Null,
        };
        out.push(v);
    }
    crate::types::values_to_array(&out, a.ret)
}

fn tz(a: &ArrayRef) -> Option<Arc<str>> {
    match a.data_type() {
        DataType::Timestamp(_, tz) => tz.clone(),
        _ => None,
    }
}

/// The stride of date_bin in microseconds, refusing months as PostgreSQL.
fn stride_micros(iv: Interval) -> Result<i64> {
    if iv.months != 0 {
        bail!(FeatureNotSupported, "timestamps cannot be binned into intervals containing months or years");
    }
    let s = (iv.days as i64).checked_mul(USECS_PER_DAY).and_then(|d| d.checked_add(iv.micros));
    match s {
        Some(s) if s > 0 => Ok(s),
        Some(_) => bail!(DatetimeFieldOverflow, "stride must be greater than zero"),
        None => bail!(DatetimeFieldOverflow, "interval out of range"),
    }
}

/// date_bin(stride, ts[, origin]) and time_bucket(stride, ts): the start
/// of the stride-wide bin holding ts, bins aligned on origin (default the
/// Unix epoch).
pub fn date_bin(a: &Args<'_>) -> Result<ArrayRef> {
    let strides = a.prim::<IntervalMonthDayNanoType>(0)?;
    let ts = a.prim::<TimestampMicrosecondType>(1)?;
    let origin = if a.len() > 2 { Some(a.prim::<TimestampMicrosecondType>(2)?) } else { None };
    let bin = |t: i64, stride: i64, origin: i64| -> Result<i64> {
        let range = || err!(DatetimeFieldOverflow, "timestamp out of range");
        let diff = t.checked_sub(origin).ok_or_else(|| err!(DatetimeFieldOverflow, "interval out of range"))?;
        let r = diff.div_euclid(stride).checked_mul(stride).and_then(|d| origin.checked_add(d)).ok_or_else(range)?;
        // PostgreSQL's timestamp range: Julian day 0 (4714-11-24 BC) up to 294277 AD.
        if !(-210_866_803_200_000_000..9_223_371_331_200_000_000).contains(&r) {
            return Err(range());
        }
        Ok(r)
    };
    let out: TimestampMicrosecondArray = match (strides.constant(), origin.as_ref().map(|o| o.constant()), ts.array()) {
        (Some(s), None | Some(Some(_)), Some(arr)) => {
            let Some(s) = s else { return Ok(new_null_array(&a.ret.to_arrow(), a.n)) };
            let stride = stride_micros(interval_from_arrow(s))?;
            let o = match origin.as_ref().map(|o| o.get(0)) {
                Some(None) => return Ok(new_null_array(&a.ret.to_arrow(), a.n)),
                Some(Some(o)) => o,
                None => 0,
            };
            arr.try_unary(|t| bin(t, stride, o))?
        }
        _ => {
            let mut b = TimestampMicrosecondBuilder::with_capacity(a.n);
            for i in 0..a.n {
                let o = match &origin {
                    Some(o) => o.get(i),
                    None => Some(0),
                };
                match (strides.get(i), ts.get(i), o) {
                    (Some(s), Some(t), Some(o)) => b.append_value(bin(t, stride_micros(interval_from_arrow(s))?, o)?),
                    _ => b.append_null(),
                }
            }
            b.finish()
        }
    };
    Ok(arc(out.with_timezone_opt(tz(&a.cols[1]))))
}

/// The arguments of `tumble(ts, stride[, origin])` in date_bin's order.
fn tumble_as_date_bin<'a>(a: &Args<'a>) -> Args<'a> {
    let mut order: Vec<usize> = (0..a.len()).collect();
    order.swap(0, 1);
    Args {
        cols: order.iter().map(|&j| a.cols[j].clone()).collect(),
        scalar: order.iter().map(|&j| a.scalar[j]).collect(),
        types: order.iter().map(|&j| a.types[j]).collect(),
        n: a.n,
        ret: a.ret,
        ctx: a.ctx,
        name: a.name,
    }
}

/// `tumble(ts, stride[, origin])` (alias `tumble_start`): GreptimeDB's
/// fixed flow window, the start of the stride-wide window holding ts,
/// windows aligned on origin (default the Unix epoch): date_bin with its
/// first two arguments swapped.
pub fn tumble(a: &Args<'_>) -> Result<ArrayRef> {
    date_bin(&tumble_as_date_bin(a))
}

/// `hop(ts, slide, size[, origin[, k]])`: the start of the `k`-th newest
/// hopping window holding ts (windows `size` long, starting every `slide`,
/// aligned on origin, default the epoch; k defaults to 0, the window
/// starting at date_bin(slide, ts, origin)); NULL when that window does not
/// hold ts (k too large, or a gap when slide > size). As a GROUP BY key the
/// binder expands each row into every window it falls in (k = 0, 1, …).
pub fn hop(a: &Args<'_>) -> Result<ArrayRef> {
    let ts = a.prim::<TimestampMicrosecondType>(0)?;
    let slides = a.prim::<IntervalMonthDayNanoType>(1)?;
    let sizes = a.prim::<IntervalMonthDayNanoType>(2)?;
    let origin = if a.len() > 3 { Some(a.prim::<TimestampMicrosecondType>(3)?) } else { None };
    let k = if a.len() > 4 { Some(a.prim::<Int64Type>(4)?) } else { None };
    let range = || err!(DatetimeFieldOverflow, "timestamp out of range");
    let mut b = TimestampMicrosecondBuilder::with_capacity(a.n);
    for i in 0..a.n {
        let o = match &origin {
            Some(o) => o.get(i),
            None => Some(0),
        };
        let k = match &k {
            Some(k) => k.get(i),
            None => Some(0),
        };
        let (Some(t), Some(sl), Some(sz), Some(o), Some(k)) = (ts.get(i), slides.get(i), sizes.get(i), o, k) else {
            b.append_null();
            continue;
        };
        let slide = stride_micros(interval_from_arrow(sl))?;
        let size = stride_micros(interval_from_arrow(sz))?;
        let newest =
            t.checked_sub(o).and_then(|d| d.div_euclid(slide).checked_mul(slide)).and_then(|d| o.checked_add(d)).ok_or_else(range)?;
        match k.checked_mul(slide).and_then(|back| newest.checked_sub(back)) {
            Some(start) if k >= 0 && start.checked_add(size).is_some_and(|end| t < end) => b.append_value(start),
            _ => b.append_null(),
        }
    }
    Ok(arc(b.finish().with_timezone_opt(tz(&a.cols[0]))))
}

/// `tumble_end(ts, stride[, origin])`: the end (exclusive) of ts's window.
pub fn tumble_end(a: &Args<'_>) -> Result<ArrayRef> {
    let start = tumble(a)?;
    let start = start.as_primitive::<TimestampMicrosecondType>();
    let strides = a.prim::<IntervalMonthDayNanoType>(1)?;
    let mut b = TimestampMicrosecondBuilder::with_capacity(a.n);
    for i in 0..a.n {
        match (start.is_valid(i), strides.get(i)) {
            (true, Some(s)) => {
                let end = start.value(i).checked_add(stride_micros(interval_from_arrow(s))?);
                b.append_value(end.ok_or_else(|| err!(DatetimeFieldOverflow, "timestamp out of range"))?);
            }
            _ => b.append_null(),
        }
    }
    Ok(arc(b.finish().with_timezone_opt(tz(&a.cols[0]))))
}

/// One field of a timestamp, as date_part returns it.
/// A field of a timestamptz in a zone: the zone's offset for the
/// timezone fields, the epoch from the instant, the rest from wall-clock time.
pub fn timestamptz_part(field: &str, us: i64, zone: crate::types::zone::Zone) -> Result<f64> {
    let off = zone.offset_at(us) as f64;
    match field {
        "epoch" => timestamp_part(field, us),
        "timezone" => Ok(off),
        // `+ 0.0`: a zero offset is 0, not -0.
        "timezone_h" => Ok((off / 3600.0).trunc() + 0.0),
        "timezone_m" => Ok(((off / 60.0) % 60.0).trunc() + 0.0),
        _ => timestamp_part(field, zone.to_local(us)),
    }
}

pub fn timestamp_part(field: &str, us: i64) -> Result<f64> {
    if field == "epoch" {
        return Ok(us as f64 / 1e6);
    }
    let dt = naive(us)?;
    let sec = dt.second() as f64;
    let micro = (dt.nanosecond() / 1000) as f64;
    let y = dt.year();
    Ok(match field {
        "microseconds" => sec * 1e6 + micro,
        "milliseconds" => sec * 1e3 + micro / 1e3,
        "second" => sec + micro / 1e6,
        "minute" => dt.minute() as f64,
        "hour" => dt.hour() as f64,
        "day" => dt.day() as f64,
        "month" => dt.month() as f64,
        "quarter" => ((dt.month() - 1) / 3 + 1) as f64,
        // There is no year 0: astronomical year 0 is 1 BC (-1).
        "year" => (if y > 0 { y } else { y - 1 }) as f64,
        "decade" => y.div_euclid(10) as f64,
        "century" => (if y > 0 { (y + 99) / 100 } else { -((99 - (y - 1)) / 100) }) as f64,
        "millennium" => (if y > 0 { (y + 999) / 1000 } else { -((999 - (y - 1)) / 1000) }) as f64,
        "dow" => dt.weekday().num_days_from_sunday() as f64,
        "isodow" => dt.weekday().number_from_monday() as f64,
        "doy" => dt.ordinal() as f64,
        "week" => dt.iso_week().week() as f64,
        "isoyear" => {
            let iy = dt.iso_week().year();
            (if iy > 0 { iy } else { iy - 1 }) as f64
        }
        "julian" => {
            (dt.date().num_days_from_ce() as i64 + 1_721_425) as f64 + (dt.num_seconds_from_midnight() as f64 + micro / 1e6) / 86_400.0
        }
        "timezone" | "timezone_h" | "timezone_m" => 0.0,
        other => bail!(InvalidParameterValue, "unit \"{other}\" not recognized for type timestamp without time zone"),
    })
}

/// One field of an interval, as date_part returns it.
pub fn interval_part(field: &str, iv: Interval) -> Result<f64> {
    let t = iv.micros;
    Ok(match field {
        "epoch" => iv.epoch_seconds(),
        "microseconds" => (t % USECS_PER_MINUTE) as f64,
        "milliseconds" => (t % USECS_PER_MINUTE) as f64 / 1e3,
        "second" => (t % USECS_PER_MINUTE) as f64 / 1e6,
        "minute" => ((t / USECS_PER_MINUTE) % 60) as f64,
        "hour" => (t / USECS_PER_HOUR) as f64,
        "day" => iv.days as f64,
        "month" => (iv.months % 12) as f64,
        "quarter" => ((iv.months % 12) / 3 + 1) as f64,
        "year" => (iv.months / 12) as f64,
        "decade" => (iv.months / 120) as f64,
        "century" => (iv.months / 1200) as f64,
        "millennium" => (iv.months / 12000) as f64,
        other => bail!(FeatureNotSupported, "unit \"{other}\" not supported for type interval"),
    })
}

/// A field of an infinite date or timestamp: ±Infinity for the fields
/// that grow with time, NULL for the cyclic ones (PostgreSQL 14+), an
/// error for the fields the type lacks.
fn infinite_part(field: &str, positive: bool, ty: SqlType) -> Result<Option<f64>> {
    let inf = if positive { f64::INFINITY } else { f64::NEG_INFINITY };
    Ok(match field {
        "epoch" | "year" | "decade" | "century" | "millennium" | "julian" | "isoyear" => Some(inf),
        "day" | "month" | "quarter" | "week" | "dow" | "isodow" | "doy" => None,
        "microseconds" | "milliseconds" | "second" | "minute" | "hour" | "timezone" | "timezone_h" | "timezone_m"
            if ty != SqlType::Date =>
        {
            None
        }
        other => bail!(FeatureNotSupported, "unit \"{other}\" not supported for type {ty}"),
    })
}

/// One field of a date (date_part(text, date)): no time of day or zone;
/// the epoch is midnight UTC of that day.
pub fn date_field(field: &str, days: i32) -> Result<Option<f64>> {
    if days == i32::MAX || days == i32::MIN {
        return infinite_part(field, days == i32::MAX, SqlType::Date);
    }
    match field {
        "epoch" => Ok(Some(days as f64 * 86_400.0)),
        "microseconds" | "milliseconds" | "second" | "minute" | "hour" | "timezone" | "timezone_h" | "timezone_m" => {
            bail!(FeatureNotSupported, "unit \"{field}\" not supported for type date")
        }
        _ => timestamp_part(field, days as i64 * USECS_PER_DAY).map(Some),
    }
}

/// A field of a timestamp or timestamptz (`ty`), infinite ones included.
fn timestamp_field(field: &str, us: i64, ty: SqlType) -> Result<Option<f64>> {
    if us == i64::MAX || us == i64::MIN {
        return infinite_part(field, us == i64::MAX, ty);
    }
    if ty == SqlType::TimestampTz && field != "epoch" {
        // Fields of a timestamptz are read in the session's zone.
        return timestamptz_part(field, us, crate::types::zone::current().zone).map(Some);
    }
    timestamp_part(field, us).map(Some)
}

/// date_part(field, timestamp | timestamptz | date | interval) → float8.
pub fn date_part(a: &Args<'_>) -> Result<ArrayRef> {
    let fields = a.str(0)?;
    let ty = a.types[1];
    let field_of = |f: &str| normalize_unit(f).ok_or_else(|| not_recognized(f, ty));
    if matches!(ty, SqlType::Time | SqlType::TimeTz) {
        let mut b = Float64Builder::with_capacity(a.n);
        for i in 0..a.n {
            let v = match fields.get(i) {
                Some(f) => time_value_field(field_of(f)?, &a.value(1, i))?,
                None => None,
            };
            b.append_option(v.map(|(m, scale)| m as f64 / 10f64.powi(scale as i32)));
        }
        return Ok(arc(b.finish()));
    }
    if ty == SqlType::Date {
        let days = a.prim::<Date32Type>(1)?;
        let mut b = Float64Builder::with_capacity(a.n);
        for i in 0..a.n {
            match (fields.get(i), days.get(i)) {
                (Some(f), Some(d)) => b.append_option(date_field(field_of(f)?, d)?),
                _ => b.append_null(),
            }
        }
        return Ok(arc(b.finish()));
    }
    if let Some(Some(f)) = fields.constant() {
        let field = field_of(f)?;
        if ty == SqlType::Interval {
            let p = a.prim::<IntervalMonthDayNanoType>(1)?;
            let p = p.array_any();
            let out: Float64Array = p.try_unary(|v| interval_part(field, interval_from_arrow(v)))?;
            return Ok(arc(out));
        }
        let p = a.prim::<TimestampMicrosecondType>(1)?;
        let p = p.array_any();
        let mut b = Float64Builder::with_capacity(a.n);
        for t in p.iter() {
            b.append_option(match t {
                Some(t) => timestamp_field(field, t, ty)?,
                None => None,
            });
        }
        return Ok(arc(b.finish()));
    }
    let mut b = Float64Builder::with_capacity(a.n);
    for i in 0..a.n {
        let v = match (fields.get(i), a.value(1, i)) {
            (Some(f), crate::types::Value::Timestamp(t)) => timestamp_field(field_of(f)?, t, ty)?,
            (Some(f), crate::types::Value::Interval(iv)) => Some(interval_part(field_of(f)?, iv)?),
            _ => None,
        };
        b.append_option(v);
    }
    Ok(arc(b.finish()))
}

/// An integral field value (or ±infinity) as a numeric.
fn whole_numeric(f: f64) -> Numeric {
    if f.is_nan() {
        Numeric::NaN
    } else if f.is_infinite() {
        if f > 0.0 {
            Numeric::PInf
        } else {
            Numeric::NInf
        }
    } else {
        Numeric::from_i64(f as i64)
    }
}

/// `m / 10^scale` as a numeric of that display scale.
fn scaled(m: i128, scale: u32) -> Numeric {
    Numeric::Fin { m: num_bigint::BigInt::from(m), scale }
}

/// One field of a timestamp as extract's numeric: seconds at scale 6,
/// milliseconds at 3, the epoch at 6, the Julian day with the time of day
/// as a fraction, the rest whole numbers; ±Infinity or NULL for an
/// infinite timestamp as for date_part.
fn timestamp_numeric(field: &str, us: i64, ty: SqlType) -> Result<Option<Numeric>> {
    if us == i64::MAX || us == i64::MIN {
        return Ok(infinite_part(field, us == i64::MAX, ty)?.map(whole_numeric));
    }
    Ok(match field {
        "epoch" => Some(scaled(us as i128, 6)),
        "julian" => {
            let local = if ty == SqlType::TimestampTz {
                us.saturating_add(crate::types::zone::current().zone.offset_at(us) as i64 * USECS_PER_SEC)
            } else {
                us
            };
            // Julian day 2440588 is 1970-01-01.
            let day = local.div_euclid(USECS_PER_DAY) + 2_440_588;
            let time = Numeric::from_i64(local.rem_euclid(USECS_PER_DAY)).div(&Numeric::from_i64(USECS_PER_DAY))?;
            Some(Numeric::from_i64(day).add(&time)?)
        }
        "second" | "milliseconds" | "microseconds" => {
            let Some(secs) = timestamp_field("second", us, ty)? else { return Ok(None) };
            let micros = (secs * 1e6).round() as i128;
            let scale = match field {
                "second" => 6,
                "milliseconds" => 3,
                _ => 0,
            };
            Some(scaled(micros, scale))
        }
        _ => timestamp_field(field, us, ty)?.map(whole_numeric),
    })
}

/// One field of an interval as extract's numeric; the epoch counts a year
/// as 365.25 days and a month as 30, exactly.
fn interval_numeric(field: &str, iv: Interval) -> Result<Numeric> {
    let sub_minute = (iv.micros % USECS_PER_MINUTE) as i128;
    Ok(match field {
        "epoch" => {
            let m = iv.months as i128;
            let secs = (m / 12) * 31_557_600 + (m % 12) * 30 * 86_400 + iv.days as i128 * 86_400;
            scaled(secs * 1_000_000 + iv.micros as i128, 6)
        }
        "second" => scaled(sub_minute, 6),
        "milliseconds" => scaled(sub_minute, 3),
        "microseconds" => scaled(sub_minute, 0),
        _ => whole_numeric(interval_part(field, iv)?),
    })
}

/// extract(field from timestamp | timestamptz | date | interval) → numeric
/// (PostgreSQL 14+; date_part stays float8).
pub fn extract(a: &Args<'_>) -> Result<ArrayRef> {
    let fields = a.str(0)?;
    let ty = a.types[1];
    let mut out = Vec::with_capacity(a.n);
    for i in 0..a.n {
        let Some(f) = fields.get(i) else {
            out.push(None);
            continue;
        };
        let field = normalize_unit(f).ok_or_else(|| not_recognized(f, ty))?;
        out.push(match a.value(1, i) {
            crate::types::Value::Timestamp(t) => timestamp_numeric(field, t, ty)?,
            crate::types::Value::Interval(iv) => Some(interval_numeric(field, iv)?),
            crate::types::Value::Date(d) => date_field(field, d)?.map(whole_numeric),
            v @ (crate::types::Value::Time(_) | crate::types::Value::TimeTz(_)) => time_value_field(field, &v)?.map(|(m, s)| scaled(m, s)),
            _ => None,
        });
    }
    Ok(crate::exec::numeric::array(out))
}

/// isfinite(date | timestamp | timestamptz | interval): not ±infinity
/// (every interval is finite in PostgreSQL 15).
pub fn isfinite(a: &Args<'_>) -> Result<ArrayRef> {
    let out: BooleanArray = match a.types[0] {
        SqlType::Date => a.prim::<Date32Type>(0)?.array_any().iter().map(|d| d.map(|d| d != i32::MAX && d != i32::MIN)).collect(),
        SqlType::Interval => (0..a.cols[0].len()).map(|i| a.cols[0].is_valid(i).then_some(true)).collect(),
        _ => a.prim::<TimestampMicrosecondType>(0)?.array_any().iter().map(|t| t.map(|t| t != i64::MAX && t != i64::MIN)).collect(),
    };
    Ok(arc(out))
}

pub fn justify_days(a: &Args<'_>) -> Result<ArrayRef> {
    map_interval(a.cols[0].as_ref(), Interval::justify_days)
}
pub fn justify_hours(a: &Args<'_>) -> Result<ArrayRef> {
    map_interval(a.cols[0].as_ref(), Interval::justify_hours)
}
pub fn justify_interval(a: &Args<'_>) -> Result<ArrayRef> {
    map_interval(a.cols[0].as_ref(), Interval::justify_interval)
}

/// now(), current_timestamp, …: the statement's timestamp (stable).
pub fn statement_timestamp(a: &Args<'_>) -> Result<ArrayRef> {
    let ts = match a.ret {
        // localtimestamp: wall-clock time in the session's zone.
        SqlType::Timestamp => crate::types::zone::current().zone.to_local(a.ctx.statement_ts),
        _ => a.ctx.statement_ts,
    };
    // CURRENT_TIMESTAMP(p): rounded half away from zero to p digits
    // (AdjustTimestampForTypmod; p over 6 means 6). NULL p is no rounding.
    let ts = match a.cols.first() {
        Some(_) => match a.prim::<Int32Type>(0)?.get(0) {
            Some(p) if p < 0 => bail!(InvalidParameterValue, "{}({p}) precision must not be negative", a.name.to_uppercase()),
            Some(p) => crate::types::round_timestamp(ts, p as u32).unwrap_or(ts),
            None => ts,
        },
        None => ts,
    };
    let v = TimestampMicrosecondArray::from(vec![ts; a.n]);
    Ok(arc(v.with_timezone_opt(match a.ret {
        SqlType::TimestampTz => Some(crate::types::UTC),
        _ => None,
    })))
}

/// statement_timestamp(): the statement's start, also inside a block
/// (where now() is the transaction's).
pub fn statement_start(a: &Args<'_>) -> Result<ArrayRef> {
    Ok(arc(TimestampMicrosecondArray::from(vec![a.ctx.statement_start_ts; a.n]).with_timezone(crate::types::UTC)))
}

pub fn clock_timestamp(a: &Args<'_>) -> Result<ArrayRef> {
    let v: TimestampMicrosecondArray = (0..a.n).map(|_| Some(super::now_micros())).collect();
    Ok(arc(v.with_timezone(crate::types::UTC)))
}

pub fn current_date(a: &Args<'_>) -> Result<ArrayRef> {
    let local = crate::types::zone::current().zone.to_local(a.ctx.statement_ts);
    Ok(arc(Date32Array::from(vec![local.div_euclid(USECS_PER_DAY) as i32; a.n])))
}

/// to_timestamp(seconds since the epoch).
pub fn to_timestamp(a: &Args<'_>) -> Result<ArrayRef> {
    let x = a.f64(0)?;
    let mut b = TimestampMicrosecondBuilder::with_capacity(a.n);
    for i in 0..a.n {
        b.append_option(match x.get(i) {
            // ±Infinity seconds are the infinite timestamps.
            Some(f) if f.is_infinite() => Some(if f > 0.0 { i64::MAX } else { i64::MIN }),
            Some(f) if f.is_nan() => bail!(DatetimeFieldOverflow, "timestamp cannot be NaN"),
            Some(f) => {
                let us = (f * 1e6).round();
                if !us.is_finite() || us.abs() >= 9.2e18 {
                    bail!(DatetimeFieldOverflow, "timestamp out of range: \"{}\"", crate::types::format_f64(f));
                }
                Some(us as i64)
            }
            None => None,
        });
    }
    Ok(arc(b.finish().with_timezone(crate::types::UTC)))
}

/// timezone(zone, ts): `ts AT TIME ZONE zone`.
pub fn timezone(a: &Args<'_>) -> Result<ArrayRef> {
    let zones = a.str(0)?;
    let to_utc = a.types[1] == SqlType::Timestamp;
    let ts = a.prim::<TimestampMicrosecondType>(1)?;
    let zone_of =
        |z: &str| crate::types::zone::Zone::parse(z).ok_or_else(|| err!(InvalidParameterValue, "time zone \"{z}\" not recognized"));
    let mut b = TimestampMicrosecondBuilder::with_capacity(a.n);
    let constant = match zones.constant() {
        Some(Some(z)) => Some(zone_of(z)?),
        _ => None,
    };
    for i in 0..a.n {
        let (Some(t), Some(z)) = (ts.get(i), zones.get(i)) else {
            b.append_null();
            continue;
        };
        let zone = match constant {
            Some(z) => z,
            None => zone_of(z)?,
        };
        b.append_value(if t == i64::MAX || t == i64::MIN {
            t
        } else if to_utc {
            zone.to_utc(t)
        } else {
            zone.to_local(t)
        });
    }
    let out = b.finish();
    Ok(arc(if to_utc { out.with_timezone(crate::types::UTC) } else { out }))
}

/// The days since 1970 of a PostgreSQL year (negative: BC), month, day;
/// PostgreSQL's `date field value out of range` otherwise.
fn make_days(y: i64, m: i64, d: i64) -> Result<i32> {
    let bad = || err!(DatetimeFieldOverflow, "date field value out of range: {y}-{m:02}-{d:02}");
    if y == 0 {
        return Err(bad());
    }
    let astro = if y < 0 { y + 1 } else { y };
    let date = NaiveDate::from_ymd_opt(
        i32::try_from(astro).map_err(|_| bad())?,
        u32::try_from(m).map_err(|_| bad())?,
        u32::try_from(d).map_err(|_| bad())?,
    )
    .ok_or_else(bad)?;
    Ok((date - NaiveDate::from_ymd_opt(1970, 1, 1).expect("epoch")).num_days() as i32)
}

fn int_arg(v: &crate::types::Value) -> i64 {
    match v {
        crate::types::Value::Int(i) => *i,
        crate::types::Value::Float(f) => *f as i64,
        _ => 0,
    }
}

/// make_date(year, month, day).
pub fn make_date(a: &Args<'_>) -> Result<ArrayRef> {
    super::registry::rowwise(a, true, |v, _| Ok(crate::types::Value::Date(make_days(int_arg(&v[0]), int_arg(&v[1]), int_arg(&v[2]))?)))
}

/// make_timestamp_internal: wall-clock microseconds of the six fields.
fn make_local(v: &[crate::types::Value]) -> Result<i64> {
    let (y, mo, d, h, mi) = (int_arg(&v[0]), int_arg(&v[1]), int_arg(&v[2]), int_arg(&v[3]), int_arg(&v[4]));
    let sec = match &v[5] {
        crate::types::Value::Float(f) => *f,
        other => int_arg(other) as f64,
    };
    let days = make_days(y, mo, d)?;
    if h < 0 || mi < 0 || mi > 59 || !(0.0..=60.0).contains(&sec) || h > 24 || (h == 24 && (mi > 0 || sec > 0.0)) {
        bail!(DatetimeFieldOverflow, "time field value out of range: {h}:{mi:02}:{sec:02}");
    }
    let time = ((h * 60 + mi) * 60) * USECS_PER_SEC + (sec * USECS_PER_SEC as f64).round_ties_even() as i64;
    let us = days as i64 * USECS_PER_DAY + time;
    // PostgreSQL's first timestamp is 4714-11-24 BC.
    if us < -210_866_803_200_000_000 {
        bail!(DatetimeFieldOverflow, "timestamp out of range: {y}-{mo:02}-{d:02} {h}:{mi:02}:{sec:02}");
    }
    Ok(us)
}

/// interval_typmod(x, range, precision): a cast to `INTERVAL <fields>(p)`
/// (AdjustIntervalForTypmod; precision -1 for none). Internal: the binder
/// writes it for such casts.
pub fn interval_typmod(a: &Args<'_>) -> Result<ArrayRef> {
    super::registry::rowwise(a, true, |v, _| {
        let crate::types::Value::Interval(iv) = v[0] else { return Ok(crate::types::Value::Null) };
        let range = crate::types::interval_input::IntervalRange(int_arg(&v[1]) as u8);
        let precision = u32::try_from(int_arg(&v[2])).ok();
        Ok(crate::types::Value::Interval(crate::types::interval_input::adjust_for_typmod(iv, range, precision)))
    })
}

/// make_interval(years, months, weeks, days, hours, mins, secs): the binder
/// fills the arguments a call leaves out (or names) with zeros. As in
/// PostgreSQL 15 the integer fields wrap; seconds are rounded to
/// microseconds and must be finite.
pub fn make_interval(a: &Args<'_>) -> Result<ArrayRef> {
    super::registry::rowwise(a, true, |v, _| {
        let int = |i: usize| int_arg(&v[i]) as i32;
        let secs = match &v[6] {
            crate::types::Value::Float(f) => *f,
            other => int_arg(other) as f64,
        };
        if !secs.is_finite() {
            bail!(DatetimeFieldOverflow, "interval out of range");
        }
        let months = int(0).wrapping_mul(12).wrapping_add(int(1));
        let days = int(2).wrapping_mul(7).wrapping_add(int(3));
        let sec_us = (secs * USECS_PER_SEC as f64).round_ties_even();
        if !(i64::MIN as f64..i64::MAX as f64).contains(&sec_us) {
            bail!(DatetimeFieldOverflow, "interval out of range");
        }
        let micros = (int(4) as i64 * USECS_PER_HOUR).wrapping_add(int(5) as i64 * USECS_PER_MINUTE).wrapping_add(sec_us as i64);
        Ok(crate::types::Value::Interval(Interval::try_new(months, days, micros)?))
    })
}

/// make_timestamp(year, month, day, hour, min, sec).
pub fn make_timestamp(a: &Args<'_>) -> Result<ArrayRef> {
    super::registry::rowwise(a, true, |v, _| Ok(crate::types::Value::Timestamp(make_local(v)?)))
}

/// The zone argument of make_timestamptz (parse_sane_timezone): a leading
/// sign is an ISO offset, hours *east* (`+2`, `+10:00:01`, `+1000`); else
/// an abbreviation, IANA name or POSIX zone.
fn sane_zone(z: &str) -> Result<crate::types::zone::Zone> {
    use crate::types::zone::Zone;
    if z.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(err!(InvalidDatetime, "invalid input syntax for type numeric time zone: \"{z}\"")
            .with_hint("Numeric time zones must have \"-\" or \"+\" as first character."));
    }
    if let Some(body) = z.strip_prefix(['+', '-']) {
        let num = |s: &str| -> (i64, usize) {
            let n = s.bytes().take_while(u8::is_ascii_digit).count();
            (s[..n].parse().unwrap_or(0), n)
        };
        let (mut hr, n) = num(body);
        let mut rest = &body[n..];
        let (mut min, mut sec) = (0, 0);
        if let Some(r) = rest.strip_prefix(':') {
            let (m, n) = num(r);
            min = m;
            rest = &r[n..];
            if let Some(r) = rest.strip_prefix(':') {
                let (s, n) = num(r);
                sec = s;
                rest = &r[n..];
            }
        } else if rest.is_empty() && z.len() > 3 {
            min = hr % 100;
            hr /= 100;
        }
        if !rest.is_empty() {
            return Err(err!(InvalidParameterValue, "time zone \"{z}\" not recognized"));
        }
        if !(0..=15).contains(&hr) || !(0..60).contains(&min) || !(0..60).contains(&sec) {
            return Err(err!(InvalidParameterValue, "numeric time zone \"{z}\" out of range"));
        }
        let east = ((hr * 60 + min) * 60 + sec) as i32;
        return Ok(Zone::Fixed(if z.starts_with('-') { -east } else { east }));
    }
    Zone::parse(z).ok_or_else(|| err!(InvalidParameterValue, "time zone \"{z}\" not recognized"))
}

/// make_timestamptz(year, month, day, hour, min, sec [, zone]): the
/// wall-clock time in that zone (else the session's).
pub fn make_timestamptz(a: &Args<'_>) -> Result<ArrayRef> {
    let session = crate::types::zone::current().zone;
    super::registry::rowwise(a, true, |v, _| {
        let local = make_local(v)?;
        let zone = match v.get(6) {
            Some(crate::types::Value::Text(z)) => sane_zone(z)?,
            _ => session,
        };
        Ok(crate::types::Value::Timestamp(zone.to_utc(local)))
    })
}

/// interval_hash(interval): hashint8 of the low 64 bits of the comparison
/// value, so intervals that compare equal (`1 mon`, `30 days`) hash alike.
pub fn interval_hash(a: &Args<'_>) -> Result<ArrayRef> {
    let x = a.prim::<IntervalMonthDayNanoType>(0)?;
    let out: Int32Array = (0..a.n).map(|i| x.get(i).map(|v| super::math::hash_int8(interval_from_arrow(v).cmp_key() as i64))).collect();
    Ok(arc(out))
}

/// CURRENT_TIME[(p)] (timetz in the session's zone) and LOCALTIME[(p)]
/// (time): the statement's timestamp, rounded to p fractional digits.
pub fn current_time(a: &Args<'_>) -> Result<ArrayRef> {
    use crate::types::{time, Value};
    let zone = crate::types::zone::current().zone;
    let ts = a.ctx.statement_ts;
    let precision = match a.cols.first() {
        Some(_) => match a.prim::<Int32Type>(0)?.get(0) {
            Some(p) if p < 0 => bail!(InvalidParameterValue, "{}({p}) precision must not be negative", a.name.to_uppercase()),
            p => p.map(|p| p.min(6) as u32),
        },
        None => None,
    };
    let t = zone.to_local(ts).rem_euclid(USECS_PER_DAY);
    let t = precision.map_or(t, |p| time::round_time(t, p));
    let v = match a.ret {
        SqlType::TimeTz => Value::TimeTz(time::timetz_pack(t, -zone.offset_at(ts))),
        _ => Value::Time(t),
    };
    crate::types::values_to_array(&vec![v; a.n], a.ret)
}

/// make_time(hour, min, sec): 22008 outside 00:00:00 .. 24:00:00.
pub fn make_time(a: &Args<'_>) -> Result<ArrayRef> {
    super::registry::rowwise(a, true, |v, _| {
        let (h, m) = (int_arg(&v[0]), int_arg(&v[1]));
        let sec = match &v[2] {
            crate::types::Value::Float(f) => *f,
            other => int_arg(other) as f64,
        };
        let us = ((h * 60 + m) * 60) as f64 * 1e6 + (sec * 1e6).round_ties_even();
        let ok = (0..=24).contains(&h) && (0..60).contains(&m) && (0.0..=60.0).contains(&sec) && us <= USECS_PER_DAY as f64;
        if !ok {
            bail!(DatetimeFieldOverflow, "time field value out of range: {h}:{m:02}:{sec:02}");
        }
        Ok(crate::types::Value::Time(us as i64))
    })
}

/// `time(p)` / `timetz(p)` of a value: rounded to p fractional digits.
pub fn time_typmod(a: &Args<'_>) -> Result<ArrayRef> {
    use crate::types::{time, Value};
    super::registry::rowwise(a, true, |v, _| {
        let p = int_arg(&v[1]).clamp(0, 6) as u32;
        Ok(match v[0] {
            Value::Time(t) => Value::Time(time::round_time(t, p)),
            Value::TimeTz(x) => {
                let (t, zone) = time::timetz_unpack(x);
                Value::TimeTz(time::timetz_pack(time::round_time(t, p), zone))
            }
            ref other => other.clone(),
        })
    })
}

/// time / timetz ± interval (wrapping at midnight) and time - time.
pub fn time_arith(a: &Args<'_>) -> Result<ArrayRef> {
    use crate::types::{time, Value};
    let name = a.name;
    super::registry::rowwise(a, true, |v, _| {
        let neg = |iv: Interval| if name.ends_with("mi_interval") { iv.checked_neg() } else { Ok(iv) };
        Ok(match (&v[0], &v[1]) {
            (Value::Time(t), Value::Interval(iv)) => Value::Time(time::time_add(*t, neg(*iv)?)),
            (Value::TimeTz(t), Value::Interval(iv)) => Value::TimeTz(time::timetz_add(*t, neg(*iv)?)),
            (Value::Time(x), Value::Time(y)) => Value::Interval(Interval::from_micros(x - y)),
            _ => Value::Null,
        })
    })
}

/// A time or timetz as an integer of the executor's RANGE offset scale: a
/// time's microseconds, a timetz's packed value (ordered as timetz_cmp).
pub fn time_range_key(a: &Args<'_>) -> Result<ArrayRef> {
    use crate::types::Value;
    super::registry::rowwise(a, true, |v, _| {
        Ok(match v[0] {
            Value::Time(t) | Value::TimeTz(t) => Value::Int(t),
            _ => Value::Null,
        })
    })
}

/// A RANGE offset over a time (tz when the flag is set) on the scale of
/// `time_range_key`: the interval's time part (months and days are ignored,
/// as in_range_time_interval does), shifted past a timetz's zone bits.
pub fn time_range_offset(a: &Args<'_>) -> Result<ArrayRef> {
    use crate::types::Value;
    super::registry::rowwise(a, true, |v, _| {
        let (Value::Interval(iv), Value::Bool(tz)) = (&v[0], &v[1]) else { return Ok(Value::Null) };
        if iv.micros < 0 {
            bail!(InvalidPrecedingOrFollowingSize, "invalid preceding or following size in window function");
        }
        // The packed scale: timetz_pack(t + d, z) - timetz_pack(t, z) for any t, z.
        let off = if *tz { crate::types::time::timetz_pack(iv.micros, 0) - crate::types::time::timetz_pack(0, 0) } else { iv.micros };
        Ok(Value::Int(off))
    })
}

/// A field of a time (zone None) or timetz (zone seconds west) as an
/// integer and its decimal scale (time_part / timetz_part).
fn time_field(field: &str, t: i64, zone: Option<i32>) -> Result<(i128, u32)> {
    let sub_minute = (t % USECS_PER_MINUTE) as i128;
    Ok(match (field, zone) {
        ("microseconds", _) => (sub_minute, 0),
        ("milliseconds", _) => (sub_minute, 3),
        ("second", _) => (sub_minute, 6),
        ("minute", _) => ((t / USECS_PER_MINUTE % 60) as i128, 0),
        ("hour", _) => ((t / USECS_PER_HOUR) as i128, 0),
        ("epoch", z) => (t as i128 + z.unwrap_or(0) as i128 * USECS_PER_SEC as i128, 6),
        ("timezone", Some(z)) => (-z as i128, 0),
        ("timezone_h", Some(z)) => ((-z / 3600) as i128, 0),
        ("timezone_m", Some(z)) => ((-z / 60 % 60) as i128, 0),
        (other, z) => bail!(
            FeatureNotSupported,
            "unit \"{other}\" not supported for type {}",
            if z.is_some() { "time with time zone" } else { "time without time zone" }
        ),
    })
}

/// A time or timetz value's field, for date_part (float8) or extract (numeric).
fn time_value_field(field: &str, v: &crate::types::Value) -> Result<Option<(i128, u32)>> {
    use crate::types::Value;
    Ok(match v {
        Value::Time(t) => Some(time_field(field, *t, None)?),
        Value::TimeTz(p) => {
            let (t, z) = crate::types::time::timetz_unpack(*p);
            Some(time_field(field, t, Some(z))?)
        }
        _ => None,
    })
}
