//! PostgreSQL's free-form date input (`date_in`): the field splitting of
//! `ParseDateTime` and the field decoding of `DecodeDateTime` /
//! `DecodeDate` / `DecodeNumber` / `ValidateDate` for the `date` type —
//! month names, `BC`/`AD`, Julian days (`J2451187`), run-together digits
//! (`19990108`, `990108`), day of year (`1999.008`), two-digit years and
//! the field order of DateStyle (YMD / DMY / MDY) for all-numeric dates.
//! A time of day after the date is accepted and ignored, as PostgreSQL
//! does. Pure functions over text; may not import anything outside
//! `types` (and chrono).

use chrono::{Datelike, NaiveDate};

/// DateStyle's field order for ambiguous all-numeric dates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DateOrder {
    #[default]
    Mdy,
    Dmy,
    Ymd,
}

impl DateOrder {
    /// The order named in a DateStyle value (`ISO, MDY`, `dmy`, ...):
    /// PostgreSQL's defaults apply when it names none.
    pub fn from_datestyle(v: &str) -> DateOrder {
        let v = v.to_ascii_uppercase();
        if v.contains("YMD") {
            DateOrder::Ymd
        } else if v.contains("DMY") || (v.contains("EURO") && !v.contains("NONEURO")) {
            DateOrder::Dmy
        } else if v.contains("MDY") || v.contains("US") || v.contains("NONEURO") {
            DateOrder::Mdy
        } else if v.contains("GERMAN") {
            DateOrder::Dmy
        } else {
            DateOrder::Mdy
        }
    }
}

/// Why an input was refused; each maps to one of PostgreSQL's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateInputError {
    /// 22007 invalid input syntax for type date
    BadFormat,
    /// 22008 date/time field value out of range
    FieldOverflow,
    /// 22008 date/time field value out of range, with the DateStyle hint
    MdFieldOverflow,
    /// 22008 date out of range
    OutOfRange,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FType {
    Number,
    Date,
    Time,
    Str,
    Tz,
}

// Field bits (DTK_M(...)).
const YEAR: u32 = 1;
const MONTH: u32 = 2;
const DAY: u32 = 4;
const DOY: u32 = 8;
const ADBC: u32 = 16;
const DOW: u32 = 32;
const TIME: u32 = 64;
const AMPM: u32 = 128;
const TZ: u32 = 256;
const DATE_M: u32 = YEAR | MONTH | DAY;

/// ParseDateTime: split into typed, lower-cased fields.
fn split_fields(s: &str) -> Result<Vec<(String, FType)>, DateInputError> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let mut f = String::new();
        let ty;
        if c.is_ascii_digit() {
            while i < b.len() && b[i].is_ascii_digit() {
                f.push(b[i] as char);
                i += 1;
            }
            if i < b.len() && b[i] == b':' {
                ty = FType::Time;
                while i < b.len() && (b[i].is_ascii_digit() || b[i] == b':' || b[i] == b'.') {
                    f.push(b[i] as char);
                    i += 1;
                }
            } else if i < b.len() && matches!(b[i], b'-' | b'/' | b'.') {
                let delim = b[i];
                f.push(delim as char);
                i += 1;
                if i < b.len() && b[i].is_ascii_digit() {
                    let mut t = if delim == b'.' { FType::Number } else { FType::Date };
                    while i < b.len() && b[i].is_ascii_digit() {
                        f.push(b[i] as char);
                        i += 1;
                    }
                    if i < b.len() && b[i] == delim {
                        t = FType::Date;
                        while i < b.len() && (b[i].is_ascii_digit() || b[i] == delim) {
                            f.push(b[i] as char);
                            i += 1;
                        }
                    }
                    ty = t;
                } else {
                    ty = FType::Date;
                    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == delim) {
                        f.push(b[i].to_ascii_lowercase() as char);
                        i += 1;
                    }
                }
            } else {
                ty = FType::Number;
            }
        } else if c == b'.' {
            f.push('.');
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                f.push(b[i] as char);
                i += 1;
            }
            ty = FType::Number;
        } else if (c == b'T' || c == b't') && i + 1 < b.len() && b[i + 1].is_ascii_digit() && !out.is_empty() {
            // ISO 8601's `T` between the date and the time.
            i += 1;
            continue;
        } else if c.is_ascii_alphabetic() {
            while i < b.len() && b[i].is_ascii_alphabetic() {
                f.push(b[i].to_ascii_lowercase() as char);
                i += 1;
            }
            let mut is_date = false;
            if i < b.len() && matches!(b[i], b'-' | b'/' | b'.') {
                is_date = true;
            } else if i < b.len() && (b[i] == b'+' || b[i].is_ascii_digit()) {
                is_date = keyword(&f).is_none();
            }
            if is_date {
                loop {
                    f.push(b[i].to_ascii_lowercase() as char);
                    i += 1;
                    if !(i < b.len() && (b"+-/_.:".contains(&b[i]) || b[i].is_ascii_alphanumeric())) {
                        break;
                    }
                }
                ty = FType::Date;
            } else {
                ty = FType::Str;
            }
        } else if c == b'+' || c == b'-' {
            f.push(c as char);
            i += 1;
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < b.len() && b[i].is_ascii_digit() {
                while i < b.len() && (b[i].is_ascii_digit() || b[i] == b':' || b[i] == b'.') {
                    f.push(b[i] as char);
                    i += 1;
                }
                ty = FType::Tz;
            } else if i < b.len() && b[i].is_ascii_alphabetic() {
                while i < b.len() && b[i].is_ascii_alphabetic() {
                    f.push(b[i].to_ascii_lowercase() as char);
                    i += 1;
                }
                ty = FType::Str;
            } else {
                return Err(DateInputError::BadFormat);
            }
        } else if c.is_ascii_punctuation() {
            i += 1;
            continue;
        } else {
            return Err(DateInputError::BadFormat);
        }
        out.push((f, ty));
    }
    Ok(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kw {
    Month(i32),
    Dow,
    Ad,
    Bc,
    Am,
    Pm,
    Julian,
    Epoch,
    Today,
    Tomorrow,
    Yesterday,
    Utc,
    Ignore,
}

/// The part of PostgreSQL's `datetktbl` a date can use.
fn keyword(s: &str) -> Option<Kw> {
    use Kw::*;
    Some(match s {
        "jan" | "january" => Month(1),
        "feb" | "february" => Month(2),
        "mar" | "march" => Month(3),
        "apr" | "april" => Month(4),
        "may" => Month(5),
        "jun" | "june" => Month(6),
        "jul" | "july" => Month(7),
        "aug" | "august" => Month(8),
        "sep" | "sept" | "september" => Month(9),
        "oct" | "october" => Month(10),
        "nov" | "november" => Month(11),
        "dec" | "december" => Month(12),
        "sun" | "sunday" | "mon" | "monday" | "tue" | "tues" | "tuesday" | "wed" | "wednesday" | "thu" | "thur" | "thurs" | "thursday"
        | "fri" | "friday" | "sat" | "saturday" => Dow,
        "ad" => Ad,
        "bc" => Bc,
        "am" => Am,
        "pm" => Pm,
        "j" | "jd" | "julian" => Julian,
        "epoch" => Epoch,
        "today" => Today,
        "tomorrow" => Tomorrow,
        "yesterday" => Yesterday,
        "z" | "zulu" | "utc" | "gmt" | "ut" => Utc,
        "at" | "on" => Ignore,
        _ => return None,
    })
}

#[derive(Default)]
struct Tm {
    year: i64,
    mon: i64,
    mday: i64,
    yday: i64,
    /// Time of day in microseconds (before AM/PM).
    time_us: i64,
}

fn leading_int(s: &str) -> Result<i64, DateInputError> {
    s.parse::<i64>().map_err(|_| {
        if s.bytes().all(|c| c.is_ascii_digit()) && !s.is_empty() {
            DateInputError::FieldOverflow
        } else {
            DateInputError::BadFormat
        }
    })
}

/// DecodeNumberField: run-together digits (`19990108`, `990108`).
fn decode_number_field(s: &str, fmask: u32, tmask: &mut u32, tm: &mut Tm, is2digits: &mut bool) -> Result<(), DateInputError> {
    let s = match s.find('.') {
        Some(p) => &s[..p],
        None => s,
    };
    let len = s.len();
    if s.find('.').is_none() && (fmask & DATE_M) != DATE_M && len >= 6 {
        *tmask = DATE_M;
        tm.mday = leading_int(&s[len - 2..])?;
        tm.mon = leading_int(&s[len - 4..len - 2])?;
        tm.year = leading_int(&s[..len - 4])?;
        if len - 4 == 2 {
            *is2digits = true;
        }
        return Ok(());
    }
    if fmask & TIME == 0 && (len == 6 || len == 4) {
        *tmask = TIME;
        let h = leading_int(&s[..2])?;
        let m = leading_int(&s[2..4])?;
        let sec = if len == 6 { leading_int(&s[4..6])? } else { 0 };
        tm.time_us = ((h * 60 + m) * 60 + sec) * 1_000_000;
        return Ok(());
    }
    Err(DateInputError::BadFormat)
}

/// DecodeNumber: one numeric field, placed by what is known so far.
#[allow(clippy::too_many_arguments)]
fn decode_number(
    s: &str,
    text_month: bool,
    fmask: u32,
    tmask: &mut u32,
    tm: &mut Tm,
    is2digits: &mut bool,
    order: DateOrder,
) -> Result<(), DateInputError> {
    let flen = s.len();
    let (int_part, frac) = match s.find('.') {
        Some(p) => (&s[..p], true),
        None => (s, false),
    };
    if frac {
        if int_part.len() > 2 {
            return decode_number_field(s, fmask | DATE_M, tmask, tm, is2digits);
        }
        return Err(DateInputError::BadFormat);
    }
    if int_part.is_empty() || !int_part.bytes().all(|c| c.is_ascii_digit()) {
        return Err(DateInputError::BadFormat);
    }
    let val = leading_int(int_part)?;
    if flen == 3 && (fmask & DATE_M) == YEAR && (1..=366).contains(&val) {
        *tmask = DOY | MONTH | DAY;
        tm.yday = val;
        return Ok(());
    }
    match fmask & DATE_M {
        0 => {
            if flen >= 3 || order == DateOrder::Ymd {
                *tmask = YEAR;
                tm.year = val;
            } else if order == DateOrder::Dmy {
                *tmask = DAY;
                tm.mday = val;
            } else {
                *tmask = MONTH;
                tm.mon = val;
            }
        }
        YEAR => {
            *tmask = MONTH;
            tm.mon = val;
        }
        MONTH => {
            if text_month && (flen >= 3 || order == DateOrder::Ymd) {
                *tmask = YEAR;
                tm.year = val;
            } else {
                *tmask = DAY;
                tm.mday = val;
            }
        }
        m if m == YEAR | MONTH => {
            if text_month && flen >= 3 && *is2digits {
                *tmask = DAY;
                tm.mday = tm.year;
                tm.year = val;
                *is2digits = false;
            } else {
                *tmask = DAY;
                tm.mday = val;
            }
        }
        DAY => {
            *tmask = MONTH;
            tm.mon = val;
        }
        m if m == MONTH | DAY => {
            *tmask = YEAR;
            tm.year = val;
        }
        DATE_M => return decode_number_field(s, fmask, tmask, tm, is2digits),
        _ => return Err(DateInputError::BadFormat),
    }
    if *tmask == YEAR {
        *is2digits = flen <= 2;
    }
    Ok(())
}

/// DecodeDate: a field with embedded separators (`1999-01-08`, `jan-08-99`).
fn decode_date(
    s: &str,
    mut fmask: u32,
    tmask: &mut u32,
    is2digits: &mut bool,
    tm: &mut Tm,
    text_month: &mut bool,
    order: DateOrder,
) -> Result<(), DateInputError> {
    let mut fields: Vec<Option<&str>> = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && !b[i].is_ascii_alphanumeric() {
            i += 1;
        }
        if i == b.len() {
            return Err(DateInputError::BadFormat);
        }
        let start = i;
        if b[i].is_ascii_digit() {
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        } else {
            while i < b.len() && b[i].is_ascii_alphabetic() {
                i += 1;
            }
        }
        fields.push(Some(&s[start..i]));
        if i < b.len() {
            if !b[i].is_ascii_alphanumeric() {
                i += 1;
            } else {
                // A digit run followed by letters (or the reverse) with no separator.
                return Err(DateInputError::BadFormat);
            }
        }
    }
    *tmask = 0;
    for f in fields.iter_mut() {
        let Some(t) = *f else { continue };
        if t.as_bytes()[0].is_ascii_alphabetic() {
            let dmask = match keyword(t) {
                Some(Kw::Ignore) => continue,
                Some(Kw::Month(m)) => {
                    tm.mon = m as i64;
                    *text_month = true;
                    MONTH
                }
                _ => return Err(DateInputError::BadFormat),
            };
            if fmask & dmask != 0 {
                return Err(DateInputError::BadFormat);
            }
            fmask |= dmask;
            *tmask |= dmask;
            *f = None;
        }
    }
    for t in fields.into_iter().flatten() {
        let mut dmask = 0;
        decode_number(t, *text_month, fmask, &mut dmask, tm, is2digits, order)?;
        if fmask & dmask != 0 {
            return Err(DateInputError::BadFormat);
        }
        fmask |= dmask;
        *tmask |= dmask;
    }
    if fmask & !DOY != DATE_M {
        return Err(DateInputError::BadFormat);
    }
    Ok(())
}

/// Days since 1970-01-01 of a proleptic Gregorian date (astronomical
/// year: 0 is 1 BC), for any year PostgreSQL has (chrono stops at 262142).
/// Howard Hinnant's days_from_civil.
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The (astronomical year, month, day) of days since 1970-01-01; the
/// inverse of [`days_from_civil`].
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Days since 1970-01-01 of a valid date (None past i32).
fn days_from_ymd(y: i64, m: i64, d: i64) -> Option<i32> {
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || y.abs() > 10_000_000 {
        return None;
    }
    i32::try_from(days_from_civil(y, m, d)).ok()
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// PostgreSQL's last valid date is 5874897-12-31 and its first 4714-11-24 BC.
const MIN_DAYS: i64 = -2_440_588; // 4714-11-24 BC (Julian day 0)
const MAX_DAYS: i64 = 2_145_042_905; // 5874897-12-31 (Julian day 2147483493)

/// Parse a date the way PostgreSQL's `date_in` does, as days since
/// 1970-01-01. `today_days` answers `today` / `tomorrow` / `yesterday`.
pub fn parse_date_pg(input: &str, order: DateOrder, today_days: i32) -> Result<i32, DateInputError> {
    // `infinity` and `-infinity`: the largest and smallest values.
    match input.trim().to_ascii_lowercase().as_str() {
        "infinity" | "+infinity" => return Ok(i32::MAX),
        "-infinity" => return Ok(i32::MIN),
        _ => {}
    }
    match decode_datetime(input, order, today_days)?.days {
        d if (d as i64) < MIN_DAYS => Err(DateInputError::OutOfRange),
        d => Ok(d),
    }
}

/// A decoded date and time: the date, the time of day (microseconds) and
/// the zone the input named, if any.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DateTimeFields {
    pub days: i32,
    pub time_us: i64,
    pub zone: Option<super::zone::Zone>,
}

/// A timestamp the way PostgreSQL's `timestamp_in` / `timestamptz_in`
/// decode it: the wall-clock microseconds and the zone the input named.
/// `today_days` answers `today` / `tomorrow` / `yesterday`.
pub fn parse_timestamp_pg(input: &str, order: DateOrder, today_days: i32) -> Result<(i64, Option<super::zone::Zone>), DateInputError> {
    let d = decode_datetime(input, order, today_days)?;
    let us = (d.days as i64).checked_mul(86_400_000_000).and_then(|v| v.checked_add(d.time_us)).ok_or(DateInputError::OutOfRange)?;
    Ok((us, d.zone))
}

/// `hh:mm[:ss[.ffffff]]` as microseconds.
fn time_micros(s: &str) -> Option<i64> {
    let parts: Vec<&str> = s.split(':').collect();
    let h: i64 = parts.first()?.parse().ok()?;
    let m: i64 = parts.get(1)?.parse().ok()?;
    let sec: f64 = parts.get(2).map_or(Some(0.0), |p| p.parse().ok())?;
    if !(0..=1_000_000).contains(&h) || !(0..=1_000_000).contains(&m) || !(0.0..1e6).contains(&sec) {
        return Some(i64::MAX); // refused by valid_time as out of range
    }
    Some((h * 3600 + m * 60) * 1_000_000 + (sec * 1e6).round() as i64)
}

fn decode_datetime(input: &str, order: DateOrder, today_days: i32) -> Result<DateTimeFields, DateInputError> {
    use super::zone::{abbreviation, abbreviation_zone, numeric_offset, Zone};
    let fields = split_fields(input)?;
    if fields.is_empty() {
        return Err(DateInputError::BadFormat);
    }
    let mut tm = Tm::default();
    let mut fmask = 0u32;
    let mut text_month = false;
    let mut is2digits = false;
    let mut bc = false;
    let mut julian_next = false;
    let mut julian: Option<i64> = None;
    let mut special: Option<i32> = None;
    let mut zone: Option<Zone> = None;
    let mut pm: Option<bool> = None;
    // A zone abbreviation directly followed by a number is POSIX-style,
    // hours west of UTC (`GMT+8`, `PST-03:00`): its offset is the number's.
    let posix_after = |idx: usize| match fields.get(idx + 1) {
        Some((n, FType::Tz)) => numeric_offset(n).map(|west| Zone::Fixed(-west)),
        _ => None,
    };
    let mut skip_next = false;
    for (idx, (f, ty)) in fields.iter().enumerate() {
        if std::mem::take(&mut skip_next) {
            continue;
        }
        let mut tmask = 0u32;
        match ty {
            FType::Date => {
                if julian_next {
                    return Err(DateInputError::BadFormat);
                }
                let named = if f.as_bytes()[0].is_ascii_alphabetic() {
                    // An abbreviation with a POSIX offset run together (`PST-03:00`).
                    let rest = f.trim_start_matches(|c: char| c.is_ascii_alphabetic());
                    let posix = abbreviation(&f[..f.len() - rest.len()]).and(numeric_offset(rest)).map(|west| Zone::Fixed(-west));
                    posix.or_else(|| Zone::parse(f).filter(|z| matches!(z, Zone::Named(_))))
                } else {
                    None
                };
                if let Some(z) = named {
                    // A zone name with punctuation ("America/New_York").
                    zone = Some(z);
                    tmask = TZ;
                } else if fmask & DATE_M == DATE_M {
                    return Err(DateInputError::BadFormat);
                } else {
                    decode_date(f, fmask, &mut tmask, &mut is2digits, &mut tm, &mut text_month, order)?;
                }
            }
            FType::Time => {
                tm.time_us = time_micros(f).ok_or(DateInputError::BadFormat)?;
                if !valid_time(f) {
                    return Err(DateInputError::FieldOverflow);
                }
                tmask = TIME;
            }
            FType::Tz => {
                // A numeric zone (`1999-01-08 04:05 +02`, `-08:00`).
                zone = Some(Zone::Fixed(numeric_offset(f).ok_or(DateInputError::BadFormat)?));
                tmask = TZ;
            }
            FType::Number => {
                if julian_next {
                    let v = leading_int(f.split('.').next().unwrap_or(""))?;
                    julian = Some(v);
                    julian_next = false;
                    tmask = DATE_M;
                } else {
                    let flen = f.len();
                    let dot = f.find('.');
                    if dot.is_some() && fmask & DATE_M == 0 {
                        decode_date(f, fmask, &mut tmask, &mut is2digits, &mut tm, &mut text_month, order)?;
                    } else if let Some(p) = dot.filter(|&p| p > 2) {
                        let _ = p;
                        decode_number_field(f, fmask, &mut tmask, &mut tm, &mut is2digits)?;
                    } else if flen >= 6 && (fmask & DATE_M == 0 || fmask & TIME == 0) {
                        decode_number_field(f, fmask, &mut tmask, &mut tm, &mut is2digits)?;
                    } else {
                        decode_number(f, text_month, fmask, &mut tmask, &mut tm, &mut is2digits, order)?;
                    }
                }
            }
            FType::Str => {
                let Some(kw) = keyword(f) else {
                    // A zone abbreviation (`PST`) or a zone name without a slash.
                    match abbreviation_zone(f).or_else(|| Zone::parse(f).filter(|z| matches!(z, Zone::Named(_)))) {
                        Some(z) if fmask & TZ == 0 => {
                            zone = Some(match posix_after(idx) {
                                Some(p) => {
                                    skip_next = true;
                                    p
                                }
                                None => z,
                            });
                            fmask |= TZ;
                            continue;
                        }
                        _ => return Err(DateInputError::BadFormat),
                    }
                };
                match kw {
                    Kw::Ignore => continue,
                    Kw::Month(m) => {
                        tmask = MONTH;
                        if fmask & MONTH != 0 && !text_month && fmask & DAY == 0 && (1..=31).contains(&tm.mon) {
                            tm.mday = tm.mon;
                            tmask = DAY;
                        }
                        text_month = true;
                        tm.mon = m as i64;
                    }
                    Kw::Dow => tmask = DOW,
                    Kw::Ad => tmask = ADBC,
                    Kw::Bc => {
                        tmask = ADBC;
                        bc = true;
                    }
                    Kw::Am | Kw::Pm => {
                        tmask = AMPM;
                        pm = Some(kw == Kw::Pm);
                    }
                    Kw::Julian => {
                        julian_next = true;
                        tmask = 0;
                    }
                    Kw::Utc => {
                        zone = Some(match posix_after(idx) {
                            Some(p) => {
                                skip_next = true;
                                p
                            }
                            None => Zone::Fixed(0),
                        });
                        tmask = TZ;
                    }
                    Kw::Epoch | Kw::Today | Kw::Tomorrow | Kw::Yesterday => {
                        tmask = DATE_M;
                        special = Some(match kw {
                            Kw::Epoch => 0,
                            Kw::Today => today_days,
                            Kw::Tomorrow => today_days + 1,
                            _ => today_days - 1,
                        });
                    }
                }
            }
        }
        if tmask & fmask != 0 {
            return Err(DateInputError::BadFormat);
        }
        fmask |= tmask;
    }
    if julian_next {
        return Err(DateInputError::BadFormat);
    }
    if let Some(is_pm) = pm {
        // 12 AM is midnight, 12 PM noon; hours above 12 refuse AM/PM.
        let h = tm.time_us / 3_600_000_000;
        if fmask & TIME == 0 || !(0..=12).contains(&h) {
            return Err(DateInputError::FieldOverflow);
        }
        if is_pm && h < 12 {
            tm.time_us += 12 * 3_600_000_000;
        } else if !is_pm && h == 12 {
            tm.time_us -= 12 * 3_600_000_000;
        }
    }
    let done = |days: i32| Ok(DateTimeFields { days, time_us: tm.time_us, zone });
    if let Some(d) = special {
        if fmask & !(DATE_M | TZ) != 0 {
            return Err(DateInputError::BadFormat);
        }
        return done(d);
    }
    if let Some(j) = julian {
        // Julian day 2440588 is 1970-01-01.
        let d = j - 2_440_588;
        if !(MIN_DAYS..=MAX_DAYS).contains(&d) {
            return Err(DateInputError::OutOfRange);
        }
        return done(i32::try_from(d).map_err(|_| DateInputError::OutOfRange)?);
    }
    if fmask & DATE_M != DATE_M {
        return Err(DateInputError::BadFormat);
    }
    // ValidateDate
    if bc {
        if tm.year <= 0 {
            return Err(DateInputError::FieldOverflow);
        }
        tm.year = -(tm.year - 1);
    } else if is2digits {
        if tm.year < 70 {
            tm.year += 2000;
        } else if tm.year < 100 {
            tm.year += 1900;
        }
    } else if tm.year <= 0 {
        return Err(DateInputError::FieldOverflow);
    }
    if fmask & DOY != 0 {
        let jan1 = days_from_ymd(tm.year, 1, 1).ok_or(DateInputError::OutOfRange)? as i64;
        let d = NaiveDate::from_num_days_from_ce_opt((jan1 + tm.yday - 1 + 719_163) as i32).ok_or(DateInputError::OutOfRange)?;
        tm.year = d.year() as i64;
        tm.mon = d.month() as i64;
        tm.mday = d.day() as i64;
    }
    if !(1..=12).contains(&tm.mon) || !(1..=31).contains(&tm.mday) {
        return Err(DateInputError::MdFieldOverflow);
    }
    const DAYS: [i64; 12] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let max = DAYS[(tm.mon - 1) as usize] + i64::from(tm.mon == 2 && is_leap(tm.year));
    if tm.mday > max {
        return Err(DateInputError::FieldOverflow);
    }
    // IS_VALID_JULIAN: whole months from November 4714 BC; the days before
    // Julian day 0 there are refused by each type's own range check.
    if tm.year < -4713 || (tm.year == -4713 && tm.mon < 11) {
        return Err(DateInputError::OutOfRange);
    }
    match days_from_ymd(tm.year, tm.mon, tm.mday) {
        Some(d) if (d as i64) <= MAX_DAYS => done(d),
        _ => Err(DateInputError::OutOfRange),
    }
}

/// `hh:mm[:ss[.ffffff]]` with hours < 24 (or exactly 24:00:00).
fn valid_time(s: &str) -> bool {
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() < 2 || parts.len() > 3 {
        return false;
    }
    let h: Option<u32> = parts[0].parse().ok();
    let m: Option<u32> = parts[1].parse().ok();
    let sec: Option<f64> = parts.get(2).map_or(Some(0.0), |p| p.parse().ok());
    matches!((h, m, sec), (Some(h), Some(m), Some(s)) if h <= 24 && m < 60 && (0.0..61.0).contains(&s) && (h < 24 || (m == 0 && s == 0.0)))
}

/// A date as PostgreSQL's ISO output: `2040-04-10 BC` for years before 1.
pub fn format_date_iso(days: i32) -> String {
    match days {
        i32::MAX => return "infinity".into(),
        i32::MIN => return "-infinity".into(),
        _ => {}
    }
    let (y, m, d) = civil_from_days(days as i64);
    if y <= 0 {
        format!("{:04}-{m:02}-{d:02} BC", 1 - y)
    } else {
        format!("{y:04}-{m:02}-{d:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DateInputError::*;
    use DateOrder::*;

    fn p(s: &str, o: DateOrder) -> Result<String, DateInputError> {
        parse_date_pg(s, o, 0).map(format_date_iso)
    }

    #[test]
    fn postgres_date_forms() {
        for (s, want) in [
            ("1999-01-08", "1999-01-08"),
            ("January 8, 1999", "1999-01-08"),
            ("19990108", "1999-01-08"),
            ("990108", "1999-01-08"),
            ("1999.008", "1999-01-08"),
            ("J2451187", "1999-01-08"),
            ("1999-Jan-08", "1999-01-08"),
            ("08-Jan-1999", "1999-01-08"),
            ("Jan-08-1999", "1999-01-08"),
            ("08 Jan 1999", "1999-01-08"),
            ("1999 Jan 08", "1999-01-08"),
            ("2040-04-10 BC", "2040-04-10 BC"),
            ("1/8/1999", "1999-01-08"),
            ("1999-01-08 04:05:06", "1999-01-08"),
            ("epoch", "1970-01-01"),
            ("5874897-12-31", "5874897-12-31"),
            ("4714-11-24 BC", "4714-11-24 BC"),
        ] {
            assert_eq!(p(s, Mdy).as_deref(), Ok(want), "{s}");
        }
        assert_eq!(p("01/02/03", Ymd).as_deref(), Ok("2001-02-03"));
        assert_eq!(p("01/02/03", Dmy).as_deref(), Ok("2003-02-01"));
        assert_eq!(p("01/02/03", Mdy).as_deref(), Ok("2003-01-02"));
        assert_eq!(p("99-01-08", Ymd).as_deref(), Ok("1999-01-08"));
        assert_eq!(p("1/18/1999", Ymd), Err(MdFieldOverflow));
        assert_eq!(p("1997-02-29", Mdy), Err(FieldOverflow));
        assert_eq!(p("January 8, 99 BC", Ymd), Err(MdFieldOverflow));
        assert_eq!(p("bogus", Mdy), Err(BadFormat));
        assert_eq!(p("", Mdy), Err(BadFormat));
        assert_eq!(p("1999-01-08x", Mdy), Err(BadFormat));
    }

    #[test]
    fn civil_days_match_chrono_and_reach_postgres_range() {
        for days in [-2_440_588i64, -719_468, -1, 0, 1, 10_957, 11_016, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m as i64, d as i64), days);
            let c = NaiveDate::from_num_days_from_ce_opt(days as i32 + 719_163).unwrap();
            assert_eq!((y, m, d), (c.year() as i64, c.month(), c.day()), "{days}");
        }
        assert_eq!(civil_from_days(MAX_DAYS), (5_874_897, 12, 31));
    }

    #[test]
    fn postgres_timestamp_forms() {
        use crate::types::zone::Zone;
        let ts = |s: &str| parse_timestamp_pg(s, Mdy, 0);
        let base = 855_595_921_000_000; // 1997-02-10 17:32:01
        assert_eq!(ts("1997-02-10 17:32:01"), Ok((base, None)));
        assert_eq!(ts("1997-02-10T17:32:01"), Ok((base, None)));
        assert_eq!(ts("Mon Feb 10 17:32:01 1997 PST"), Ok((base, Some(Zone::Fixed(-8 * 3600)))));
        assert_eq!(ts("19970210 173201 -0800"), Ok((base, Some(Zone::Fixed(-8 * 3600)))));
        assert_eq!(ts("1997-02-10 05:32:01 PM"), Ok((base, None)));
        assert_eq!(ts("1997-02-10 17:32:01 GMT+8"), Ok((base, Some(Zone::Fixed(-8 * 3600)))));
        assert_eq!(ts("1997-02-10 17:32:01 America/New_York"), Ok((base, Some(Zone::Named(chrono_tz::Tz::America__New_York)))));
        assert_eq!(ts("1997-02-10 25:32:01"), Err(FieldOverflow));
        assert_eq!(ts("1997-02-10 17:32:01 bogus"), Err(BadFormat));
    }
}

thread_local! {
    static DATE_ORDER: std::cell::Cell<DateOrder> = const { std::cell::Cell::new(DateOrder::Mdy) };
}

/// Run `f` with DateStyle's field order in force for date input on this
/// thread (the binder sets the session's around literal casts; elsewhere
/// input uses PostgreSQL's default MDY).
pub fn with_date_order<R>(order: DateOrder, f: impl FnOnce() -> R) -> R {
    struct Reset(DateOrder);
    impl Drop for Reset {
        fn drop(&mut self) {
            DATE_ORDER.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(DATE_ORDER.with(|c| c.replace(order)));
    f()
}

/// The field order in force on this thread.
pub fn current_date_order() -> DateOrder {
    DATE_ORDER.with(|c| c.get())
}
