//! PostgreSQL's interval input: `interval_in` with its typmod.
//!
//! Owns the port of ParseDateTime's tokens as intervals see them,
//! DecodeInterval (fields read right to left, a bare number taking its unit
//! from the field to its right or from the typmod's last field, `1-2` as
//! years-months, `[+-]h:m[:s]` times, each unit at most once, `ago`),
//! DecodeISO8601Interval (`P1Y2M3DT4H5M6S`, `P0001-02-03T04:05:06`,
//! `P00010203T040506`), IntervalStyle sql_standard's leading-sign rule, and
//! AdjustIntervalForTypmod (`DAY TO HOUR` truncates, `SECOND(2)` rounds).
//! Imports the interval type beside it, `zone` (IntervalStyle) and `error`.

use super::interval::{Interval, USECS_PER_DAY, USECS_PER_HOUR, USECS_PER_MINUTE, USECS_PER_SEC};
use crate::err;

/// Why an input is refused, as interval_in reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntervalInputError {
    /// 22007 invalid input syntax for type interval
    BadFormat,
    /// 22015 interval field value out of range
    FieldOverflow,
    /// 22008 interval out of range
    OutOfRange,
}

use IntervalInputError::{BadFormat, FieldOverflow};

type R<T> = std::result::Result<T, IntervalInputError>;

/// The fields of an interval typmod (`YEAR`, `DAY TO SECOND`, ...), as
/// PostgreSQL's INTERVAL_MASK bits; `FULL` when none were written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct IntervalRange(pub u8);

impl IntervalRange {
    pub const YEAR: u8 = 1;
    pub const MONTH: u8 = 2;
    pub const DAY: u8 = 4;
    pub const HOUR: u8 = 8;
    pub const MINUTE: u8 = 16;
    pub const SECOND: u8 = 32;
    pub const FULL: IntervalRange = IntervalRange(0);

    /// The range from a leading field and an optional last field (`DAY TO
    /// SECOND`): every field between them.
    pub fn between(first: u8, last: Option<u8>) -> IntervalRange {
        let last = last.unwrap_or(first);
        let mut m = 0;
        let mut b = first;
        while b != 0 && b <= last {
            m |= b;
            b <<= 1;
        }
        IntervalRange(m)
    }
}

/// Units of DecodeInterval (DTK_*), in the order PostgreSQL's masks use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Microsec,
    Millisec,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Year,
    Decade,
    Century,
    Millennium,
}

fn unit_mask(u: Unit) -> u32 {
    1 << (u as u32)
}

const TIME_MASK: u32 = (1 << Unit::Microsec as u32)
    | (1 << Unit::Millisec as u32)
    | (1 << Unit::Second as u32)
    | (1 << Unit::Minute as u32)
    | (1 << Unit::Hour as u32);
const ALL_SECS_MASK: u32 = (1 << Unit::Microsec as u32) | (1 << Unit::Millisec as u32) | (1 << Unit::Second as u32);

/// DecodeUnits over PostgreSQL's deltatktbl (tokens cut to 10 characters).
fn decode_unit(tok: &str) -> Option<Unit> {
    let t = if tok.len() > 10 { &tok[..10] } else { tok };
    Some(match t {
        "us" | "usec" | "usecs" | "useconds" | "microsecon" => Unit::Microsec,
        "ms" | "msec" | "msecs" | "mseconds" | "millisecon" => Unit::Millisec,
        "s" | "sec" | "secs" | "second" | "seconds" => Unit::Second,
        "m" | "min" | "mins" | "minute" | "minutes" => Unit::Minute,
        "h" | "hr" | "hrs" | "hour" | "hours" => Unit::Hour,
        "d" | "day" | "days" => Unit::Day,
        "w" | "week" | "weeks" => Unit::Week,
        "mon" | "mons" | "month" | "months" => Unit::Month,
        "y" | "yr" | "yrs" | "year" | "years" => Unit::Year,
        "dec" | "decs" | "decade" | "decades" => Unit::Decade,
        "c" | "cent" | "century" | "centuries" => Unit::Century,
        "mil" | "mils" | "millennium" | "millennia" => Unit::Millennium,
        _ => return None,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Number,
    Date,
    Time,
    /// A sign followed by digits (PostgreSQL's DTK_TZ).
    Signed,
    Str,
}

/// ParseDateTime, as far as interval input needs it.
fn tokenize(s: &str) -> R<Vec<(Tok, String)>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let digits = |i: &mut usize, buf: &mut String| {
        while *i < b.len() && b[*i].is_ascii_digit() {
            buf.push(b[*i] as char);
            *i += 1;
        }
    };
    while i < b.len() {
        let c = b[i];
        let mut buf = String::new();
        if c.is_ascii_digit() {
            digits(&mut i, &mut buf);
            if i < b.len() && b[i] == b':' {
                while i < b.len() && (b[i].is_ascii_digit() || b[i] == b':' || b[i] == b'.') {
                    buf.push(b[i] as char);
                    i += 1;
                }
                out.push((Tok::Time, buf));
            } else if i < b.len() && matches!(b[i], b'-' | b'/' | b'.') {
                let delim = b[i];
                buf.push(delim as char);
                i += 1;
                if i < b.len() && b[i].is_ascii_digit() {
                    let mut t = if delim == b'.' { Tok::Number } else { Tok::Date };
                    digits(&mut i, &mut buf);
                    if i < b.len() && b[i] == delim {
                        t = Tok::Date;
                        while i < b.len() && (b[i].is_ascii_digit() || b[i] == delim) {
                            buf.push(b[i] as char);
                            i += 1;
                        }
                    }
                    out.push((t, buf));
                } else {
                    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == delim) {
                        buf.push(b[i].to_ascii_lowercase() as char);
                        i += 1;
                    }
                    out.push((Tok::Date, buf));
                }
            } else {
                out.push((Tok::Number, buf));
            }
        } else if c == b'.' {
            buf.push('.');
            i += 1;
            digits(&mut i, &mut buf);
            out.push((Tok::Number, buf));
        } else if c.is_ascii_alphabetic() {
            while i < b.len() && b[i].is_ascii_alphabetic() {
                buf.push(b[i].to_ascii_lowercase() as char);
                i += 1;
            }
            out.push((Tok::Str, buf));
        } else if c == b'+' || c == b'-' {
            buf.push(c as char);
            i += 1;
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < b.len() && b[i].is_ascii_digit() {
                while i < b.len() && (b[i].is_ascii_digit() || matches!(b[i], b':' | b'.' | b'-')) {
                    buf.push(b[i] as char);
                    i += 1;
                }
                out.push((Tok::Signed, buf));
            } else if i < b.len() && b[i].is_ascii_alphabetic() {
                while i < b.len() && b[i].is_ascii_alphabetic() {
                    buf.push(b[i].to_ascii_lowercase() as char);
                    i += 1;
                }
                out.push((Tok::Str, buf));
            } else {
                return Err(BadFormat);
            }
        } else if c.is_ascii_whitespace() || c.is_ascii_punctuation() {
            i += 1;
        } else {
            return Err(BadFormat);
        }
    }
    Ok(out)
}

/// The fields being accumulated (pg_itm_in): years and months kept apart
/// until the end, as PostgreSQL does.
#[derive(Default)]
struct Itm {
    usec: i64,
    mday: i32,
    mon: i32,
    year: i32,
}

impl Itm {
    fn frac_usec(&mut self, frac: f64, scale: i64) -> R<()> {
        if frac == 0.0 {
            return Ok(());
        }
        let f = frac * scale as f64;
        let mut usec = f as i64;
        usec += (f - usec as f64).round_ties_even() as i64;
        self.usec = self.usec.checked_add(usec).ok_or(FieldOverflow)?;
        Ok(())
    }
    fn frac_days(&mut self, frac: f64, scale: i32) -> R<()> {
        if frac == 0.0 {
            return Ok(());
        }
        let f = frac * scale as f64;
        let extra = f as i32;
        self.mday = self.mday.checked_add(extra).ok_or(FieldOverflow)?;
        self.frac_usec(f - extra as f64, USECS_PER_DAY)
    }
    fn frac_years(&mut self, frac: f64, scale: i32) -> R<()> {
        if frac == 0.0 {
            return Ok(());
        }
        let extra = (frac * scale as f64 * 12.0).round_ties_even() as i32;
        self.mon = self.mon.checked_add(extra).ok_or(FieldOverflow)?;
        Ok(())
    }
    fn micros(&mut self, val: i64, fval: f64, scale: i64) -> R<()> {
        let v = val.checked_mul(scale).ok_or(FieldOverflow)?;
        self.frac_usec(fval, scale)?;
        self.usec = self.usec.checked_add(v).ok_or(FieldOverflow)?;
        Ok(())
    }
    fn days(&mut self, val: i64, scale: i32) -> R<()> {
        let d = i32::try_from(val).ok().and_then(|v| v.checked_mul(scale)).ok_or(FieldOverflow)?;
        self.mday = self.mday.checked_add(d).ok_or(FieldOverflow)?;
        Ok(())
    }
    fn months(&mut self, val: i64) -> R<()> {
        let m = i32::try_from(val).map_err(|_| FieldOverflow)?;
        self.mon = self.mon.checked_add(m).ok_or(FieldOverflow)?;
        Ok(())
    }
    fn years(&mut self, val: i64, scale: i32) -> R<()> {
        let y = i32::try_from(val).ok().and_then(|v| v.checked_mul(scale)).ok_or(FieldOverflow)?;
        self.year = self.year.checked_add(y).ok_or(FieldOverflow)?;
        Ok(())
    }
    fn negate(&mut self) -> R<()> {
        self.usec = self.usec.checked_neg().ok_or(FieldOverflow)?;
        self.mday = self.mday.checked_neg().ok_or(FieldOverflow)?;
        self.mon = self.mon.checked_neg().ok_or(FieldOverflow)?;
        self.year = self.year.checked_neg().ok_or(FieldOverflow)?;
        Ok(())
    }
    fn finish(self) -> R<Interval> {
        let months = self.year as i64 * 12 + self.mon as i64;
        let months = i32::try_from(months).map_err(|_| IntervalInputError::OutOfRange)?;
        Interval::try_new(months, self.mday, self.usec).map_err(|_| IntervalInputError::OutOfRange)
    }
}

/// A leading integer (strtoi64) and the rest of the text.
fn leading_int(s: &str) -> R<(i64, &str)> {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    let start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if i == start {
        return Ok((0, s));
    }
    let v = s[..i].parse::<i64>().map_err(|_| FieldOverflow)?;
    Ok((v, &s[i..]))
}

/// DecodeTime for an interval: `h:m`, `h:m:s[.f]`, or `m:s.f`.
fn decode_time(s: &str, range: IntervalRange) -> R<i64> {
    let (hour, rest) = leading_int(s)?;
    let rest = rest.strip_prefix(':').ok_or(BadFormat)?;
    let (mut min, rest) = leading_int(rest)?;
    let (mut hour, mut sec, mut fsec) = (hour, 0i64, 0i64);
    let frac = |r: &str| -> R<i64> {
        let f: f64 = format!("0{r}").parse().map_err(|_| BadFormat)?;
        Ok((f * 1e6).round_ties_even() as i64)
    };
    if rest.is_empty() {
        if range.0 == IntervalRange::MINUTE | IntervalRange::SECOND {
            sec = min;
            min = hour;
            hour = 0;
        }
    } else if rest.starts_with('.') {
        fsec = frac(rest)?;
        sec = min;
        min = hour;
        hour = 0;
    } else if let Some(r) = rest.strip_prefix(':') {
        let (s2, r2) = leading_int(r)?;
        sec = s2;
        if r2.starts_with('.') {
            fsec = frac(r2)?;
        } else if !r2.is_empty() {
            return Err(BadFormat);
        }
    } else {
        return Err(BadFormat);
    }
    if hour < 0 || !(0..60).contains(&min) || !(0..=60).contains(&sec) || !(0..=USECS_PER_SEC).contains(&fsec) {
        return Err(FieldOverflow);
    }
    hour.checked_mul(USECS_PER_HOUR).and_then(|h| h.checked_add(min * USECS_PER_MINUTE + sec * USECS_PER_SEC + fsec)).ok_or(FieldOverflow)
}

/// DecodeInterval over the tokens.
fn decode(toks: &[(Tok, String)], range: IntervalRange, sql_standard: bool) -> R<Itm> {
    let mut itm = Itm::default();
    let mut fmask = 0u32;
    let mut unit: Option<Unit> = None;
    let mut is_before = false;
    let force_negative =
        sql_standard && toks.first().is_some_and(|t| t.1.starts_with('-')) && !toks[1..].iter().any(|t| t.1.starts_with(['-', '+']));
    for (i, (tok, f)) in toks.iter().enumerate().rev() {
        let tmask;
        match tok {
            Tok::Time => {
                itm.usec = decode_time(f, range)?;
                if force_negative && itm.usec > 0 {
                    itm.usec = -itm.usec;
                }
                tmask = TIME_MASK;
                unit = Some(Unit::Day);
            }
            Tok::Signed if f[1..].contains(':') && decode_time(&f[1..], range).is_ok() => {
                let t = decode_time(&f[1..], range)?;
                itm.usec = if f.starts_with('-') { -t } else { t };
                if force_negative && itm.usec > 0 {
                    itm.usec = -itm.usec;
                }
                tmask = TIME_MASK;
                unit = Some(Unit::Day);
            }
            Tok::Signed | Tok::Date | Tok::Number => {
                let mut u = match unit {
                    Some(u) => u,
                    None => {
                        use IntervalRange as M;
                        let r = range.0;
                        if r == M::YEAR {
                            Unit::Year
                        } else if r == M::MONTH || r == M::YEAR | M::MONTH {
                            Unit::Month
                        } else if r == M::DAY {
                            Unit::Day
                        } else if r == M::HOUR || r == M::DAY | M::HOUR {
                            Unit::Hour
                        } else if r == M::MINUTE || r == M::HOUR | M::MINUTE || r == M::DAY | M::HOUR | M::MINUTE {
                            Unit::Minute
                        } else {
                            Unit::Second
                        }
                    }
                };
                let (mut val, rest) = leading_int(f)?;
                if rest.len() == f.len() && !f.starts_with('.') {
                    return Err(BadFormat);
                }
                let mut fval = 0.0;
                if let Some(r) = rest.strip_prefix('-') {
                    // SQL's years-months `1-2`.
                    let (m, r2) = leading_int(r)?;
                    if r.starts_with(['-', '+']) || !(0..12).contains(&m) {
                        return Err(FieldOverflow);
                    }
                    if !r2.is_empty() {
                        return Err(BadFormat);
                    }
                    u = Unit::Month;
                    let m = if f.starts_with('-') { -m } else { m };
                    val = val.checked_mul(12).and_then(|v| v.checked_add(m)).ok_or(FieldOverflow)?;
                } else if rest.starts_with('.') {
                    fval = format!("0{rest}").parse::<f64>().map_err(|_| BadFormat)?;
                    if f.starts_with('-') {
                        fval = -fval;
                    }
                } else if !rest.is_empty() {
                    return Err(BadFormat);
                }
                if force_negative {
                    val = -val.abs();
                    fval = -fval.abs();
                }
                tmask = match u {
                    Unit::Microsec => {
                        itm.micros(val, fval, 1)?;
                        unit_mask(u)
                    }
                    Unit::Millisec => {
                        itm.micros(val, fval, 1000)?;
                        unit_mask(u)
                    }
                    Unit::Second => {
                        itm.micros(val, fval, USECS_PER_SEC)?;
                        if fval == 0.0 {
                            unit_mask(u)
                        } else {
                            ALL_SECS_MASK
                        }
                    }
                    Unit::Minute => {
                        itm.micros(val, fval, USECS_PER_MINUTE)?;
                        unit_mask(u)
                    }
                    Unit::Hour => {
                        itm.micros(val, fval, USECS_PER_HOUR)?;
                        u = Unit::Day;
                        unit_mask(Unit::Hour)
                    }
                    Unit::Day => {
                        itm.days(val, 1)?;
                        itm.frac_usec(fval, USECS_PER_DAY)?;
                        unit_mask(u)
                    }
                    Unit::Week => {
                        itm.days(val, 7)?;
                        itm.frac_days(fval, 7)?;
                        unit_mask(u)
                    }
                    Unit::Month => {
                        itm.months(val)?;
                        itm.frac_days(fval, 30)?;
                        unit_mask(u)
                    }
                    Unit::Year | Unit::Decade | Unit::Century | Unit::Millennium => {
                        let scale = match u {
                            Unit::Year => 1,
                            Unit::Decade => 10,
                            Unit::Century => 100,
                            _ => 1000,
                        };
                        itm.years(val, scale)?;
                        itm.frac_years(fval, scale)?;
                        unit_mask(u)
                    }
                };
                unit = Some(u);
            }
            Tok::Str => {
                if f == "ago" {
                    if i != toks.len() - 1 {
                        return Err(BadFormat);
                    }
                    is_before = true;
                    continue;
                }
                unit = Some(decode_unit(f).ok_or(BadFormat)?);
                continue;
            }
        }
        if tmask & fmask != 0 {
            return Err(BadFormat);
        }
        fmask |= tmask;
    }
    if fmask == 0 {
        return Err(BadFormat);
    }
    if is_before {
        itm.negate()?;
    }
    Ok(itm)
}

/// ParseISO8601Number: a decimal (maybe signed, maybe with an exponent),
/// split into its integer part and fraction, and the rest of the text.
fn iso_number(s: &str) -> R<(i64, f64, &str)> {
    let b = s.as_bytes();
    if !b.first().is_some_and(|c| c.is_ascii_digit() || *c == b'-' || *c == b'.') {
        return Err(BadFormat);
    }
    // The longest prefix that reads as a number (strtod).
    let mut end = 0;
    for j in 1..=b.len() {
        let p = &s[..j];
        if p.parse::<f64>().is_ok() && !p.ends_with(['e', 'E']) && !p.contains(['i', 'n', 'I', 'N']) {
            end = j;
        }
    }
    if end == 0 {
        return Err(BadFormat);
    }
    let v: f64 = s[..end].parse().map_err(|_| BadFormat)?;
    if v.is_nan() || !(-1e15..=1e15).contains(&v) {
        return Err(FieldOverflow);
    }
    let ip = v.trunc();
    Ok((ip as i64, v - ip, &s[end..]))
}

fn int_width(s: &str) -> usize {
    s.strip_prefix('-').unwrap_or(s).bytes().take_while(u8::is_ascii_digit).count()
}

/// DecodeISO8601Interval, after the leading `P`.
fn decode_iso(mut s: &str) -> R<Itm> {
    let mut itm = Itm::default();
    let mut datepart = true;
    let mut havefield = false;
    while !s.is_empty() {
        if let Some(r) = s.strip_prefix('T') {
            datepart = false;
            havefield = false;
            s = r;
            continue;
        }
        let start = s;
        let (val, fval, rest) = iso_number(s)?;
        let unit = rest.chars().next();
        s = if unit.is_some() { &rest[1..] } else { rest };
        if datepart {
            match unit {
                Some('Y') => {
                    itm.years(val, 1)?;
                    itm.frac_years(fval, 1)?;
                }
                Some('M') => {
                    itm.months(val)?;
                    itm.frac_days(fval, 30)?;
                }
                Some('W') => {
                    itm.days(val, 7)?;
                    itm.frac_days(fval, 7)?;
                }
                Some('D') => {
                    itm.days(val, 1)?;
                    itm.frac_usec(fval, USECS_PER_DAY)?;
                }
                Some('T') | None if int_width(start) == 8 && !havefield => {
                    itm.years(val / 10000, 1)?;
                    itm.months((val / 100) % 100)?;
                    itm.days(val % 100, 1)?;
                    itm.frac_usec(fval, USECS_PER_DAY)?;
                    if unit.is_none() {
                        return Ok(itm);
                    }
                    datepart = false;
                    havefield = false;
                    continue;
                }
                Some('T') | Some('-') | None => {
                    if havefield {
                        return Err(BadFormat);
                    }
                    itm.years(val, 1)?;
                    itm.frac_years(fval, 1)?;
                    match unit {
                        None => return Ok(itm),
                        Some('T') => {
                            datepart = false;
                            havefield = false;
                            continue;
                        }
                        _ => {}
                    }
                    let (v, f, r) = iso_number(s)?;
                    itm.months(v)?;
                    itm.frac_days(f, 30)?;
                    s = r;
                    if s.is_empty() {
                        return Ok(itm);
                    }
                    if let Some(r) = s.strip_prefix('T') {
                        s = r;
                        datepart = false;
                        havefield = false;
                        continue;
                    }
                    s = s.strip_prefix('-').ok_or(BadFormat)?;
                    let (v, f, r) = iso_number(s)?;
                    itm.days(v, 1)?;
                    itm.frac_usec(f, USECS_PER_DAY)?;
                    s = r;
                    if s.is_empty() {
                        return Ok(itm);
                    }
                    if let Some(r) = s.strip_prefix('T') {
                        s = r;
                        datepart = false;
                        havefield = false;
                        continue;
                    }
                    return Err(BadFormat);
                }
                _ => return Err(BadFormat),
            }
        } else {
            match unit {
                Some('H') => itm.micros(val, fval, USECS_PER_HOUR)?,
                Some('M') => itm.micros(val, fval, USECS_PER_MINUTE)?,
                Some('S') => itm.micros(val, fval, USECS_PER_SEC)?,
                None if int_width(start) == 6 && !havefield => {
                    itm.micros(val / 10000, 0.0, USECS_PER_HOUR)?;
                    itm.micros((val / 100) % 100, 0.0, USECS_PER_MINUTE)?;
                    itm.micros(val % 100, 0.0, USECS_PER_SEC)?;
                    itm.frac_usec(fval, 1)?;
                    return Ok(itm);
                }
                None | Some(':') => {
                    if havefield {
                        return Err(BadFormat);
                    }
                    itm.micros(val, fval, USECS_PER_HOUR)?;
                    if unit.is_none() {
                        return Ok(itm);
                    }
                    let (v, f, r) = iso_number(s)?;
                    itm.micros(v, f, USECS_PER_MINUTE)?;
                    s = r;
                    if s.is_empty() {
                        return Ok(itm);
                    }
                    s = s.strip_prefix(':').ok_or(BadFormat)?;
                    let (v, f, r) = iso_number(s)?;
                    itm.micros(v, f, USECS_PER_SEC)?;
                    if r.is_empty() {
                        return Ok(itm);
                    }
                    return Err(BadFormat);
                }
                _ => return Err(BadFormat),
            }
        }
        havefield = true;
    }
    Ok(itm)
}

/// interval_in: the text under a typmod's range, then the typmod applied.
/// `sql_standard` is IntervalStyle sql_standard (a leading `-` negates
/// every field when no other field has a sign).
pub fn parse_interval(s: &str, range: IntervalRange, precision: Option<u32>, sql_standard: bool) -> R<Interval> {
    let itm = match tokenize(s).and_then(|t| decode(&t, range, sql_standard)) {
        Err(BadFormat) => match s.strip_prefix('P') {
            Some(iso) if !iso.is_empty() => decode_iso(iso)?,
            _ => return Err(BadFormat),
        },
        other => other?,
    };
    Ok(adjust_for_typmod(itm.finish()?, range, precision))
}

/// interval_in in the session's IntervalStyle, with PostgreSQL's errors.
pub fn interval_in(t: &str, range: IntervalRange, precision: Option<u32>) -> crate::error::Result<Interval> {
    let sql_standard = super::zone::current().interval == super::zone::IntervalStyle::SqlStandard;
    parse_interval(t, range, precision, sql_standard).map_err(|e| match e {
        BadFormat => err!(InvalidDatetime, "invalid input syntax for type interval: \"{t}\""),
        FieldOverflow => err!(IntervalFieldOverflow, "interval field value out of range: \"{t}\""),
        IntervalInputError::OutOfRange => err!(DatetimeFieldOverflow, "interval out of range"),
    })
}

/// AdjustIntervalForTypmod: fields below the range's last are dropped,
/// seconds rounded to `precision` digits.
pub fn adjust_for_typmod(mut iv: Interval, range: IntervalRange, precision: Option<u32>) -> Interval {
    use IntervalRange as M;
    let r = range.0;
    let trunc = |t: i64, unit: i64| (t / unit) * unit;
    if r == M::YEAR {
        iv.months = (iv.months / 12) * 12;
        iv.days = 0;
        iv.micros = 0;
    } else if r == M::MONTH || r == M::YEAR | M::MONTH {
        iv.days = 0;
        iv.micros = 0;
    } else if r == M::DAY {
        iv.micros = 0;
    } else if r == M::HOUR || r == M::DAY | M::HOUR {
        iv.micros = trunc(iv.micros, USECS_PER_HOUR);
    } else if r == M::MINUTE || r == M::DAY | M::HOUR | M::MINUTE || r == M::HOUR | M::MINUTE {
        iv.micros = trunc(iv.micros, USECS_PER_MINUTE);
    }
    if let Some(p) = precision.filter(|&p| p < 6) {
        let scale = 10i64.pow(6 - p);
        let off = scale / 2;
        iv.micros = if iv.micros >= 0 { ((iv.micros + off) / scale) * scale } else { -(((-iv.micros + off) / scale) * scale) };
    }
    iv
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> R<Interval> {
        parse_interval(s, IntervalRange::FULL, None, false)
    }
    fn pr(s: &str, first: u8, last: Option<u8>) -> String {
        parse_interval(s, IntervalRange::between(first, last), None, false).unwrap().to_pg_string()
    }

    #[test]
    fn decodes_like_postgres() {
        assert_eq!(p("1-2").unwrap().to_pg_string(), "1 year 2 mons");
        assert_eq!(p("@ 14 seconds ago").unwrap().to_pg_string(), "-00:00:14");
        assert_eq!(p("1 day 02:03:04").unwrap().to_pg_string(), "1 day 02:03:04");
        assert_eq!(p("+1 -1:00:00").unwrap().to_pg_string(), "1 day -01:00:00");
        assert_eq!(p("-1-2 +3 -4:05:06.789").unwrap().to_pg_string(), "-1 years -2 mons +3 days -04:05:06.789");
        assert_eq!(p("2147483647 months -2147483648 days").unwrap().to_pg_string(), "178956970 years 7 mons -2147483648 days");
        assert_eq!(p("1.5 years").unwrap().to_pg_string(), "1 year 6 mons");
        assert_eq!(p("7d").unwrap().to_pg_string(), "7 days");
        assert_eq!(p("1h30m").unwrap().to_pg_string(), "01:30:00");
        for bad in ["1 second 2 seconds", "1 day 1 day", "1:20:05 5 microseconds", "123 11", "bogus", "", "1 fortnight"] {
            assert_eq!(p(bad), Err(BadFormat), "{bad}");
        }
    }

    #[test]
    fn typmod_ranges() {
        use IntervalRange as M;
        assert_eq!(pr("1 2", M::DAY, Some(M::HOUR)), "1 day 02:00:00");
        assert_eq!(pr("1 2:03:04", M::DAY, Some(M::MINUTE)), "1 day 02:03:00");
        assert_eq!(pr("1 2:03", M::MINUTE, Some(M::SECOND)), "1 day 00:02:03");
        assert_eq!(pr("1", M::YEAR, Some(M::MONTH)), "1 mon");
        assert!(parse_interval("1 2", IntervalRange::between(M::DAY, Some(M::MINUTE)), None, false).is_err());
        let iv = parse_interval("1 day 01:23:45.6789", IntervalRange::FULL, Some(2), false).unwrap();
        assert_eq!(iv.to_pg_string(), "1 day 01:23:45.68");
    }

    #[test]
    fn iso_8601_forms() {
        assert_eq!(p("P1Y2M3DT4H5M6.7S").unwrap().to_pg_string(), "1 year 2 mons 3 days 04:05:06.7");
        assert_eq!(p("P0002-10-15T10:30:20").unwrap().to_pg_string(), "2 years 10 mons 15 days 10:30:20");
        assert_eq!(p("P00021015T103020").unwrap().to_pg_string(), "2 years 10 mons 15 days 10:30:20");
        assert_eq!(p("P1.1Y0M3DT4H5M6S").unwrap().to_pg_string(), "1 year 1 mon 3 days 04:05:06");
        assert_eq!(p("P10.5e4Y").unwrap().to_pg_string(), "105000 years");
        assert_eq!(p("PT10:30").unwrap().to_pg_string(), "10:30:00");
    }
}

#[cfg(test)]
mod extreme_tests {
    use super::*;

    #[test]
    fn extreme_inputs_are_errors_not_panics() {
        // PostgreSQL's range ends at i64 microseconds, each way.
        for s in ["-9223372036854775808 microseconds", "PT-2562047788H-54.775808S", "-2562047788.01521550222 hours"] {
            assert_eq!(parse_interval(s, IntervalRange::FULL, None, false).map(|iv| iv.micros).ok(), Some(i64::MIN), "{s}");
        }
        for s in ["-9223372036854775809 microseconds", "PT-2562047788H-54.775809S", "2562047789 hours"] {
            assert!(parse_interval(s, IntervalRange::FULL, None, false).is_err(), "{s}");
        }
    }
}
