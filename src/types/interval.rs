//! PostgreSQL's interval: months, days and microseconds kept apart.
//!
//! Owns the value type, its output in IntervalStyle `postgres`,
//! `postgres_verbose`, `sql_standard` and `iso_8601` (input is
//! `interval_input.rs`), PostgreSQL's arithmetic (month ends clamp when added to a
//! timestamp, fractions cascade down when multiplying) and its ordering
//! (30-day months, 24-hour days). Imports nothing but `error`.

use std::cmp::Ordering;

use crate::error::Result;
use crate::{bail, err};

pub const USECS_PER_SEC: i64 = 1_000_000;
pub const USECS_PER_MINUTE: i64 = 60 * USECS_PER_SEC;
pub const USECS_PER_HOUR: i64 = 60 * USECS_PER_MINUTE;
pub const USECS_PER_DAY: i64 = 24 * USECS_PER_HOUR;
const DAYS_PER_MONTH: i64 = 30;
/// The largest time part that arrow's month-day-nano value holds as plain
/// nanoseconds (about 292 years). Larger ones (PostgreSQL keeps any i64 of
/// microseconds, about 292,000 years) take the nanosecond values that are not
/// multiples of 1,000: see [`time_to_nanos_field`].
const PLAIN_MICROS_MAX: i64 = i64::MAX / 1000;

/// An interval as PostgreSQL stores it. Fields are independent: `1 mon`
/// is not `30 days` until compared or justified.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

fn out_of_range() -> crate::error::WeirError {
    err!(DatetimeFieldOverflow, "interval out of range")
}

/// Every interval weir computes is one PostgreSQL keeps: the time part is any
/// i64 of microseconds (the arithmetic checks its own overflow).
fn checked(iv: Interval) -> Result<Interval> {
    Ok(iv)
}

/// The time part as the `nanoseconds` field of arrow's month-day-nano value.
///
/// Up to [`PLAIN_MICROS_MAX`] it is the plain nanosecond count, a multiple of
/// 1,000: what weir has always written, so stored data reads unchanged. Beyond,
/// the i64 has room left exactly for the rest: there are as many non-multiples
/// of 1,000 among the positive (negative) i64s as microsecond counts above
/// (below) the plain range, so the k-th larger count takes the k-th non-multiple.
/// The encoding is a bijection, so equal fields mean equal intervals; ordering
/// always goes through [`Interval::cmp_key`], never the raw field.
pub fn time_to_nanos_field(micros: i64) -> i64 {
    if micros.unsigned_abs() <= PLAIN_MICROS_MAX as u64 {
        return micros * 1000;
    }
    // k: 0 for the first count beyond the plain range, on either side.
    let k = micros.unsigned_abs() - PLAIN_MICROS_MAX as u64 - 1;
    let field = (k / 999) * 1000 + k % 999 + 1;
    if micros > 0 {
        field as i64
    } else {
        // field <= 2^63 here, so the negation fits (i64::MIN is 2^63).
        (field as i64).wrapping_neg()
    }
}

/// The inverse of [`time_to_nanos_field`]. A field written by something else
/// than weir (nanoseconds that are not whole microseconds) reads as its
/// microseconds truncated, as it always did, unless it falls in the escape
/// range, which weir never wrote before that range existed.
pub fn time_from_nanos_field(field: i64) -> i64 {
    if field % 1000 == 0 {
        return field / 1000;
    }
    let f = field.unsigned_abs();
    let k = (f / 1000) * 999 + f % 1000 - 1;
    let magnitude = k + PLAIN_MICROS_MAX as u64 + 1;
    if field > 0 {
        magnitude as i64
    } else {
        (magnitude as i64).wrapping_neg()
    }
}

fn to_i32(v: i64) -> Result<i32> {
    i32::try_from(v).map_err(|_| out_of_range())
}

impl Interval {
    pub const ZERO: Interval = Interval { months: 0, days: 0, micros: 0 };

    pub fn new(months: i32, days: i32, micros: i64) -> Interval {
        Interval { months, days, micros }
    }

    pub fn from_micros(micros: i64) -> Interval {
        Interval { months: 0, days: 0, micros }
    }

    /// The value PostgreSQL compares and hashes: months as 30 days, days
    /// as 24 hours.
    pub fn cmp_key(&self) -> i128 {
        self.micros as i128 + (self.days as i128 + self.months as i128 * DAYS_PER_MONTH as i128) * USECS_PER_DAY as i128
    }

    /// Total microseconds with 30-day months (saturating), for durations
    /// such as a TTL.
    pub fn approx_micros(&self) -> i64 {
        self.cmp_key().clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }

    pub fn checked_add(self, o: Interval) -> Result<Interval> {
        checked(Interval {
            months: self.months.checked_add(o.months).ok_or_else(out_of_range)?,
            days: self.days.checked_add(o.days).ok_or_else(out_of_range)?,
            micros: self.micros.checked_add(o.micros).ok_or_else(out_of_range)?,
        })
    }

    /// An interval from parts received from outside (binary parameters),
    /// refused when its time part is beyond what weir keeps.
    pub fn try_new(months: i32, days: i32, micros: i64) -> Result<Interval> {
        checked(Interval { months, days, micros })
    }

    pub fn checked_neg(self) -> Result<Interval> {
        Ok(Interval {
            months: self.months.checked_neg().ok_or_else(out_of_range)?,
            days: self.days.checked_neg().ok_or_else(out_of_range)?,
            micros: self.micros.checked_neg().ok_or_else(out_of_range)?,
        })
    }

    pub fn checked_sub(self, o: Interval) -> Result<Interval> {
        self.checked_add(o.checked_neg()?)
    }

    /// `interval * factor` with PostgreSQL's cascade of fractional months
    /// into days and fractional days into time (interval_mul).
    pub fn mul_f64(self, factor: f64) -> Result<Interval> {
        if factor.is_nan() {
            bail!(DatetimeFieldOverflow, "interval out of range");
        }
        let month_f = self.months as f64 * factor;
        let day_f = self.days as f64 * factor;
        self.cascade(month_f, day_f, self.micros as f64 * factor)
    }

    /// `interval / divisor` (interval_div).
    pub fn div_f64(self, divisor: f64) -> Result<Interval> {
        if divisor == 0.0 {
            bail!(DivisionByZero, "division by zero");
        }
        if divisor.is_nan() {
            bail!(DatetimeFieldOverflow, "interval out of range");
        }
        self.cascade(self.months as f64 / divisor, self.days as f64 / divisor, self.micros as f64 / divisor)
    }

    fn cascade(self, month_f: f64, day_f: f64, time_f: f64) -> Result<Interval> {
        fn tsround(j: f64) -> f64 {
            (j * 1e6).round_ties_even() / 1e6
        }
        if !(i32::MIN as f64..=i32::MAX as f64).contains(&month_f.trunc()) || !(i32::MIN as f64..=i32::MAX as f64).contains(&day_f.trunc())
        {
            return Err(out_of_range());
        }
        let months = month_f.trunc() as i32;
        let mut days = day_f.trunc() as i32;
        let month_remainder_days = tsround((month_f - months as f64) * DAYS_PER_MONTH as f64);
        let mut sec_remainder = tsround((day_f - days as f64 + month_remainder_days - month_remainder_days.trunc()) * 86_400.0);
        if sec_remainder.abs() >= 86_400.0 {
            days = days.checked_add((sec_remainder / 86_400.0).trunc() as i32).ok_or_else(out_of_range)?;
            sec_remainder -= (sec_remainder / 86_400.0).trunc() * 86_400.0;
        }
        days = days.checked_add(month_remainder_days.trunc() as i32).ok_or_else(out_of_range)?;
        let time = (time_f + sec_remainder * 1e6).round_ties_even();
        if !(i64::MIN as f64..i64::MAX as f64).contains(&time) {
            return Err(out_of_range());
        }
        checked(Interval { months, days, micros: time as i64 })
    }

    /// justify_hours: whole 24-hour periods of the time become days.
    pub fn justify_hours(self) -> Result<Interval> {
        let mut days = self.days as i64 + self.micros / USECS_PER_DAY;
        let mut time = self.micros % USECS_PER_DAY;
        if days > 0 && time < 0 {
            time += USECS_PER_DAY;
            days -= 1;
        } else if days < 0 && time > 0 {
            time -= USECS_PER_DAY;
            days += 1;
        }
        Ok(Interval { months: self.months, days: to_i32(days)?, micros: time })
    }

    /// justify_days: whole 30-day periods become months.
    pub fn justify_days(self) -> Result<Interval> {
        let mut months = self.months as i64 + self.days as i64 / DAYS_PER_MONTH;
        let mut days = self.days as i64 % DAYS_PER_MONTH;
        if months > 0 && days < 0 {
            days += DAYS_PER_MONTH;
            months -= 1;
        } else if months < 0 && days > 0 {
            days -= DAYS_PER_MONTH;
            months += 1;
        }
        Ok(Interval { months: to_i32(months)?, days: days as i32, micros: self.micros })
    }

    /// justify_interval: both of the above, with signs made consistent.
    pub fn justify_interval(self) -> Result<Interval> {
        let mut month = self.months as i64;
        let mut day = self.days as i64;
        let mut time = self.micros;
        let whole_day = time / USECS_PER_DAY;
        day += whole_day;
        time -= whole_day * USECS_PER_DAY;
        let whole_month = day / DAYS_PER_MONTH;
        day -= whole_month * DAYS_PER_MONTH;
        month += whole_month;
        if month > 0 && (day < 0 || (day == 0 && time < 0)) {
            day += DAYS_PER_MONTH;
            month -= 1;
        } else if month < 0 && (day > 0 || (day == 0 && time > 0)) {
            day -= DAYS_PER_MONTH;
            month += 1;
        }
        if day > 0 && time < 0 {
            time += USECS_PER_DAY;
            day -= 1;
        } else if day < 0 && time > 0 {
            time -= USECS_PER_DAY;
            day += 1;
        }
        Ok(Interval { months: to_i32(month)?, days: to_i32(day)?, micros: time })
    }

    /// `extract(epoch from interval)`: years of 365.25 days, months of 30.
    pub fn epoch_seconds(&self) -> f64 {
        let years = (self.months / 12) as f64;
        let months = (self.months % 12) as f64;
        self.micros as f64 / 1e6 + years * 365.25 * 86_400.0 + months * 30.0 * 86_400.0 + self.days as f64 * 86_400.0
    }

    /// PostgreSQL's text output (IntervalStyle `postgres`).
    pub fn to_pg_string(&self) -> String {
        let mut out = String::new();
        let mut is_zero = true;
        let mut is_before = false;
        let year = self.months / 12;
        let mon = self.months % 12;
        for (value, unit) in [(year as i64, "year"), (mon as i64, "mon"), (self.days as i64, "day")] {
            if value == 0 {
                continue;
            }
            if !is_zero {
                out.push(' ');
            }
            if is_before && value > 0 {
                out.push('+');
            }
            out.push_str(&format!("{value} {unit}{}", if value != 1 { "s" } else { "" }));
            is_before = value < 0;
            is_zero = false;
        }
        let t = self.micros;
        if is_zero || t != 0 {
            let a = t.unsigned_abs();
            let hour = a / USECS_PER_HOUR as u64;
            let min = (a / USECS_PER_MINUTE as u64) % 60;
            let sec = (a / USECS_PER_SEC as u64) % 60;
            let frac = a % USECS_PER_SEC as u64;
            if !is_zero {
                out.push(' ');
            }
            out.push_str(if t < 0 {
                "-"
            } else if is_before {
                "+"
            } else {
                ""
            });
            out.push_str(&format!("{hour:02}:{min:02}:{sec:02}"));
            if frac > 0 {
                out.push_str(format!(".{frac:06}").trim_end_matches('0'));
            }
        }
        out
    }

    /// The fields EncodeInterval prints: years, months, days, hours,
    /// minutes, seconds and microseconds, each with the sign of its part.
    fn fields(&self) -> (i64, i64, i64, i64, i64, i64, i64) {
        let t = self.micros;
        let hour = t / USECS_PER_HOUR;
        let min = (t % USECS_PER_HOUR) / USECS_PER_MINUTE;
        let sec = (t % USECS_PER_MINUTE) / USECS_PER_SEC;
        let fsec = t % USECS_PER_SEC;
        ((self.months / 12) as i64, (self.months % 12) as i64, self.days as i64, hour, min, sec, fsec)
    }

    /// IntervalStyle `sql_standard`: `1-2`, `3 4:05:06`, `-1 2:03:04`, or
    /// every part signed when signs are mixed (`+1-2 -3 +4:05:06.7`).
    pub fn to_sql_standard_string(&self) -> String {
        let (mut year, mut mon, mut mday, mut hour, mut min, mut sec, mut fsec) = self.fields();
        let all = [year, mon, mday, hour, min, sec, fsec];
        let has_negative = all.iter().any(|&v| v < 0);
        let has_positive = all.iter().any(|&v| v > 0);
        let has_year_month = year != 0 || mon != 0;
        let has_day_time = mday != 0 || hour != 0 || min != 0 || sec != 0 || fsec != 0;
        let standard = !(has_negative && has_positive) && !(has_year_month && has_day_time);
        let secs = |sec: i64, fsec: i64| {
            let mut s = format!("{:02}", sec.abs());
            if fsec != 0 {
                s.push_str(format!(".{:06}", fsec.abs()).trim_end_matches('0'));
            }
            s
        };
        let mut out = String::new();
        if has_negative && standard {
            out.push('-');
            (year, mon, mday, hour, min, sec, fsec) = (-year, -mon, -mday, -hour, -min, -sec, -fsec);
        }
        if !has_negative && !has_positive {
            out.push('0');
        } else if !standard {
            let ys = if year < 0 || mon < 0 { '-' } else { '+' };
            let ds = if mday < 0 { '-' } else { '+' };
            let ts = if hour < 0 || min < 0 || sec < 0 || fsec < 0 { '-' } else { '+' };
            out.push_str(&format!(
                "{ys}{}-{} {ds}{} {ts}{}:{:02}:{}",
                year.abs(),
                mon.abs(),
                mday.abs(),
                hour.abs(),
                min.abs(),
                secs(sec, fsec)
            ));
        } else if has_year_month {
            out.push_str(&format!("{year}-{mon}"));
        } else if mday != 0 {
            out.push_str(&format!("{mday} {hour}:{min:02}:{}", secs(sec, fsec)));
        } else {
            out.push_str(&format!("{hour}:{min:02}:{}", secs(sec, fsec)));
        }
        out
    }

    /// IntervalStyle `iso_8601`: `P1Y2M3DT4H5M6.5S`, `PT0S` for zero.
    pub fn to_iso8601_string(&self) -> String {
        let (year, mon, mday, hour, min, sec, fsec) = self.fields();
        if [year, mon, mday, hour, min, sec, fsec].iter().all(|&v| v == 0) {
            return "PT0S".into();
        }
        let mut out = String::from("P");
        let part = |out: &mut String, v: i64, u: char| {
            if v != 0 {
                out.push_str(&format!("{v}{u}"));
            }
        };
        part(&mut out, year, 'Y');
        part(&mut out, mon, 'M');
        part(&mut out, mday, 'D');
        if hour != 0 || min != 0 || sec != 0 || fsec != 0 {
            out.push('T');
        }
        part(&mut out, hour, 'H');
        part(&mut out, min, 'M');
        if sec != 0 || fsec != 0 {
            if sec < 0 || fsec < 0 {
                out.push('-');
            }
            out.push_str(&sec.abs().to_string());
            if fsec != 0 {
                out.push_str(format!(".{:06}", fsec.abs()).trim_end_matches('0'));
            }
            out.push('S');
        }
        out
    }

    /// PostgreSQL's text output in IntervalStyle `postgres_verbose`
    /// (`@ 1 year 2 mons -3 days 4 hours 5 mins 6.7 secs ago`).
    pub fn to_verbose_string(&self) -> String {
        let mut out = String::from("@");
        let mut is_zero = true;
        let mut is_before = false;
        let t = self.micros;
        let hour = t / USECS_PER_HOUR;
        let min = (t / USECS_PER_MINUTE) % 60;
        let sec = (t / USECS_PER_SEC) % 60;
        let fsec = t % USECS_PER_SEC;
        for (value, unit) in [
            ((self.months / 12) as i64, "year"),
            ((self.months % 12) as i64, "mon"),
            (self.days as i64, "day"),
            (hour, "hour"),
            (min, "min"),
        ] {
            if value == 0 {
                continue;
            }
            let mut v = value;
            if is_zero {
                is_before = v < 0;
                v = v.abs();
            } else if is_before {
                v = -v;
            }
            out.push_str(&format!(" {v} {unit}{}", if v == 1 { "" } else { "s" }));
            is_zero = false;
        }
        if sec != 0 || fsec != 0 {
            out.push(' ');
            if sec < 0 || (sec == 0 && fsec < 0) {
                if is_zero {
                    is_before = true;
                } else if !is_before {
                    out.push('-');
                }
            } else if is_before {
                out.push('-');
            }
            out.push_str(&sec.abs().to_string());
            if fsec != 0 {
                out.push_str(format!(".{:06}", fsec.abs()).trim_end_matches('0'));
            }
            out.push_str(if sec.abs() != 1 || fsec != 0 { " secs" } else { " sec" });
            is_zero = false;
        }
        if is_zero {
            out.push_str(" 0");
        }
        if is_before {
            out.push_str(" ago");
        }
        out
    }

    /// Parse PostgreSQL's interval input (`interval_input.rs`) with no
    /// typmod, IntervalStyle postgres: `1 year 2 months`, `1 mon 2 days
    /// 03:00:00`, `-1 day +02:00`, `1-2`, `@ 1 day ago`, ISO 8601
    /// `P1Y2M3DT4H5M6S`, and the unit letters `7d`, `1h30m`, `300.000s`.
    pub fn parse(s: &str) -> Option<Interval> {
        super::interval_input::parse_interval(s, super::interval_input::IntervalRange::FULL, None, false).ok()
    }
}

impl PartialOrd for Interval {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Interval {
    fn cmp(&self, other: &Self) -> Ordering {
        self.cmp_key().cmp(&other.cmp_key())
    }
}

impl std::fmt::Display for Interval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_pg_string())
    }
}

/// Days in a month of a year (proleptic Gregorian).
fn days_in_month(year: i32, month: u32) -> u32 {
    use chrono::NaiveDate;
    let (ny, nm) = if month == 12 { (year + 1, 1) } else { (year, month + 1) };
    let first_next = NaiveDate::from_ymd_opt(ny, nm, 1);
    let first = NaiveDate::from_ymd_opt(year, month, 1);
    match (first, first_next) {
        (Some(a), Some(b)) => (b - a).num_days() as u32,
        _ => 31,
    }
}

/// `timestamp + interval` as PostgreSQL computes it: months first (the day
/// clamps to the last day of the resulting month), then days, then time.
pub fn add_to_timestamp(ts_us: i64, iv: Interval) -> Result<i64> {
    use chrono::{Datelike, NaiveDate};
    let range = || err!(DatetimeFieldOverflow, "timestamp out of range");
    let mut ts = ts_us;
    if iv.months != 0 {
        let dt = chrono::DateTime::from_timestamp_micros(ts).ok_or_else(range)?.naive_utc();
        let total = dt.year() as i64 * 12 + dt.month0() as i64 + iv.months as i64;
        let year = i32::try_from(total.div_euclid(12)).map_err(|_| range())?;
        let month = total.rem_euclid(12) as u32 + 1;
        let day = dt.day().min(days_in_month(year, month));
        let date = NaiveDate::from_ymd_opt(year, month, day).ok_or_else(range)?;
        ts = date.and_time(dt.time()).and_utc().timestamp_micros();
    }
    if iv.days != 0 {
        ts = ts.checked_add(iv.days as i64 * USECS_PER_DAY).ok_or_else(range)?;
    }
    ts = ts.checked_add(iv.micros).ok_or_else(range)?;
    // PostgreSQL's timestamps start at 4714 BC.
    if ts < -210_866_803_200_000_000 {
        return Err(range());
    }
    Ok(ts)
}

/// `timestamp - timestamp`: days and time (justify_hours of the difference).
pub fn timestamp_diff(a: i64, b: i64) -> Result<Interval> {
    let d = a.checked_sub(b).ok_or_else(out_of_range)?;
    Interval::from_micros(d).justify_hours()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(s: &str) -> Interval {
        Interval::parse(s).unwrap_or_else(|| panic!("{s} did not parse"))
    }

    #[test]
    fn parses_postgres_forms() {
        assert_eq!(iv("1 mon 2 days 03:00:00"), Interval::new(1, 2, 3 * USECS_PER_HOUR));
        assert_eq!(iv("1 year 2 months"), Interval::new(14, 0, 0));
        assert_eq!(iv("P1Y2M"), Interval::new(14, 0, 0));
        assert_eq!(iv("P1DT2H30M"), Interval::new(0, 1, 2 * USECS_PER_HOUR + 30 * USECS_PER_MINUTE));
        assert_eq!(iv("-1 day +02:00"), Interval::new(0, -1, 2 * USECS_PER_HOUR));
        assert_eq!(iv("1.5 hours"), Interval::new(0, 0, 90 * USECS_PER_MINUTE));
        assert_eq!(iv("1.5 months"), Interval::new(1, 15, 0));
        assert_eq!(iv("1.5 days"), Interval::new(0, 1, 12 * USECS_PER_HOUR));
        assert_eq!(iv("@ 2 days ago"), Interval::new(0, -2, 0));
        assert_eq!(iv("7d"), Interval::new(0, 7, 0));
        assert_eq!(iv("300.000s"), Interval::new(0, 0, 300 * USECS_PER_SEC));
        assert_eq!(iv("00:05:00"), Interval::new(0, 0, 5 * USECS_PER_MINUTE));
        assert!(Interval::parse("bogus").is_none());
        assert!(Interval::parse("1 fortnight").is_none());
        assert!(Interval::parse("").is_none());
    }

    #[test]
    fn prints_like_postgres() {
        assert_eq!(iv("1 year 2 mons 3 days 04:05:06.5").to_string(), "1 year 2 mons 3 days 04:05:06.5");
        assert_eq!(iv("-1 day +02:00").to_string(), "-1 days +02:00:00");
        assert_eq!(Interval::ZERO.to_string(), "00:00:00");
        assert_eq!(iv("-3 hours").to_string(), "-03:00:00");
        assert_eq!(iv("1 mon -1 day").to_string(), "1 mon -1 days");
        assert_eq!(iv("36 hours").to_string(), "36:00:00");
    }

    #[test]
    fn sql_standard_and_iso_8601_output() {
        let cases = [
            ("0", "0", "PT0S"),
            ("1-2", "1-2", "P1Y2M"),
            ("1 2:03:04", "1 2:03:04", "P1DT2H3M4S"),
            ("-1-2", "-1-2", "P-1Y-2M"),
            ("1 year 2 mons -3 days 04:05:06.789", "+1-2 -3 +4:05:06.789", "P1Y2M-3DT4H5M6.789S"),
            ("-00:00:00.1", "-0:00:00.1", "PT-0.1S"),
        ];
        for (input, std, iso) in cases {
            assert_eq!(iv(input).to_sql_standard_string(), std, "{input}");
            assert_eq!(iv(input).to_iso8601_string(), iso, "{input}");
        }
    }

    #[test]
    fn month_ends_clamp() {
        let jan31 = crate::types::parse_timestamp("2026-01-31").unwrap();
        let r = add_to_timestamp(jan31, iv("1 month")).unwrap();
        assert_eq!(crate::types::format_timestamp(r), "2026-02-28 00:00:00");
        let r = add_to_timestamp(jan31, iv("-2 months")).unwrap();
        assert_eq!(crate::types::format_timestamp(r), "2025-11-30 00:00:00");
    }

    #[test]
    fn ordering_uses_30_day_months() {
        assert_eq!(iv("1 mon").cmp(&iv("30 days")), Ordering::Equal);
        assert!(iv("1 mon") < iv("31 days"));
        assert_eq!(iv("1 day").cmp(&iv("24 hours")), Ordering::Equal);
    }

    #[test]
    fn multiply_cascades() {
        assert_eq!(iv("1 mon").mul_f64(1.5).unwrap(), Interval::new(1, 15, 0));
        assert_eq!(iv("1 day").div_f64(2.0).unwrap(), Interval::new(0, 0, 12 * USECS_PER_HOUR));
        assert!(iv("1 day").div_f64(0.0).is_err());
        // PostgreSQL's range: any i64 of microseconds, beyond it an error.
        assert_eq!(iv("1 hour").mul_f64(1e9).unwrap(), Interval::new(0, 0, 1_000_000_000 * USECS_PER_HOUR));
        assert!(iv("1 hour").mul_f64(1e13).is_err());
        assert!(Interval::try_new(0, 0, i64::MAX).is_ok());
    }

    #[test]
    fn nanos_field_round_trips_the_whole_range() {
        let plain = PLAIN_MICROS_MAX;
        for m in
            [0, 1, -1, 999, plain, -plain, plain + 1, -plain - 1, plain + 998, plain + 999, plain + 1000, i64::MAX, i64::MIN, i64::MIN + 1]
        {
            let f = time_to_nanos_field(m);
            assert_eq!(time_from_nanos_field(f), m, "micros {m} field {f}");
            // Plain values are nanoseconds; the rest never are whole microseconds.
            assert_eq!(m.unsigned_abs() <= plain as u64, f % 1000 == 0, "micros {m} field {f}");
        }
        assert_eq!(time_to_nanos_field(plain + 1), 1);
        assert_eq!(time_to_nanos_field(-plain - 1), -1);
        assert_eq!(time_to_nanos_field(i64::MAX), i64::MAX);
        assert_eq!(time_to_nanos_field(i64::MIN), i64::MIN);
    }

    #[test]
    fn justify() {
        assert_eq!(iv("1 mon -1 hour").justify_interval().unwrap().to_string(), "29 days 23:00:00");
        assert_eq!(iv("35 days").justify_days().unwrap().to_string(), "1 mon 5 days");
        assert_eq!(iv("27 hours").justify_hours().unwrap().to_string(), "1 day 03:00:00");
    }
}
