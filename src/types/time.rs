//! PostgreSQL's `time` and `time with time zone` (timetz).
//!
//! A `time` is microseconds since midnight, 0 through 24:00:00 inclusive,
//! carried as arrow's `Time64(Microsecond)`. A `timetz` is a time and the
//! zone it was written in, which PostgreSQL keeps as seconds *west* of UTC
//! and orders by the UTC time first, then by that zone (`11:00+01` and
//! `10:00+00` are the same instant but not equal). weir packs both into one
//! i64 whose plain integer order is that order (see [`timetz_pack`]) and
//! carries it as arrow's `Time64(Nanosecond)`: that arrow type is never a
//! nanosecond time in weir, so arrow's comparison, sort, row and hash kernels
//! give PostgreSQL's answers and nothing reads it as a clock time.
//!
//! Owns input (`time_in` / `timetz_in` through the date/time decoder of
//! `datetime_input`), output, precision rounding and the arithmetic of the
//! `+ interval` / `- interval` operators (which wrap around midnight).
//! Imports only `types`.

use super::interval::{Interval, USECS_PER_DAY, USECS_PER_SEC};

/// PostgreSQL's bound on a zone displacement: under 16 hours either way.
const ZONE_LIMIT_SECS: i32 = 16 * 3600;
/// Bits of the packed value that hold the zone (biased to be positive).
const ZONE_BITS: u32 = 17;

/// Pack a timetz (`time_us` since midnight, `zone_west` seconds west of UTC)
/// into an i64 ordered as PostgreSQL's timetz_cmp: the UTC time
/// (`time + zone`) in the high bits, the zone in the low ones.
pub fn timetz_pack(time_us: i64, zone_west: i32) -> i64 {
    let utc = time_us + zone_west as i64 * USECS_PER_SEC;
    (utc << ZONE_BITS) | (zone_west + ZONE_LIMIT_SECS) as i64
}

/// The time and the zone (seconds west) of a packed timetz.
pub fn timetz_unpack(v: i64) -> (i64, i32) {
    let zone_west = (v & ((1 << ZONE_BITS) - 1)) as i32 - ZONE_LIMIT_SECS;
    let utc = v >> ZONE_BITS;
    (utc - zone_west as i64 * USECS_PER_SEC, zone_west)
}

/// Whether a zone displacement is one PostgreSQL accepts.
pub fn zone_ok(zone_west: i32) -> bool {
    zone_west.abs() < ZONE_LIMIT_SECS
}

/// `HH:MM:SS[.ffffff]` (time_out: trailing zeros of the fraction dropped).
pub fn format_time(us: i64) -> String {
    let sec = us / USECS_PER_SEC;
    let frac = us % USECS_PER_SEC;
    let mut out = format!("{:02}:{:02}:{:02}", sec / 3600, sec / 60 % 60, sec % 60);
    if frac != 0 {
        out.push_str(format!(".{frac:06}").trim_end_matches('0'));
    }
    out
}

/// timetz_out: the time, then the zone as an offset east (`+01`, `-08`).
pub fn format_timetz(packed: i64) -> String {
    let (t, zone_west) = timetz_unpack(packed);
    let mut out = format_time(t);
    out.push_str(&super::zone::format_offset(-zone_west));
    out
}

/// A time rounded to `precision` fractional digits (AdjustTimeForTypmod:
/// half up; 6 or more is no change).
pub fn round_time(us: i64, precision: u32) -> i64 {
    if precision >= 6 {
        return us;
    }
    let scale = 10i64.pow(6 - precision);
    (us + scale / 2) / scale * scale
}

/// time_pl_interval: the time part of the interval added, wrapped into one
/// day (months and days do not move a time of day).
pub fn time_add(us: i64, iv: Interval) -> i64 {
    ((us as i128 + iv.micros as i128).rem_euclid(USECS_PER_DAY as i128)) as i64
}

/// timetz_pl_interval: as `time_add`, keeping the zone.
pub fn timetz_add(packed: i64, iv: Interval) -> i64 {
    let (t, zone) = timetz_unpack(packed);
    timetz_pack(time_add(t, iv), zone)
}

/// Why a time did not parse: PostgreSQL's two errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeInputError {
    /// 22007 invalid input syntax.
    BadFormat,
    /// 22008 date/time field value out of range.
    FieldOverflow,
}

/// time_in / timetz_in: the time of day and the zone the text names, if any.
/// A date in the text is accepted and ignored (it decides a named zone's
/// offset); without one the date is `today_days` (days since 1970-01-01).
pub fn parse_time(input: &str, today_days: i32) -> Result<(i64, Option<super::zone::Zone>, i32), TimeInputError> {
    use super::datetime_input::{current_date_order, parse_timestamp_pg, DateInputError as E};
    let s = input.trim();
    if s.eq_ignore_ascii_case("allballs") {
        return Ok((0, Some(super::zone::Zone::Fixed(0)), today_days));
    }
    let map = |e: E| match e {
        E::BadFormat => TimeInputError::BadFormat,
        _ => TimeInputError::FieldOverflow,
    };
    // The date decoder wants a date: give it today's when the text has none.
    let decoded = match parse_timestamp_pg(s, current_date_order(), today_days) {
        Ok(v) => Ok(v),
        Err(_) => {
            let today = super::datetime_input::format_date_iso(today_days);
            parse_timestamp_pg(&format!("{today} {s}"), current_date_order(), today_days).map_err(map)
        }
    };
    let (local, zone) = decoded?;
    let days = local.div_euclid(USECS_PER_DAY);
    let mut t = local.rem_euclid(USECS_PER_DAY);
    // 24:00:00 is a time of its own (the end of a day), not the next midnight.
    if t == 0 && has_hour_24(s) {
        t = USECS_PER_DAY;
    }
    Ok((t, zone, days as i32))
}

/// Whether the text's time field is `24:00[:00]`.
fn has_hour_24(s: &str) -> bool {
    s.split(|c: char| c.is_whitespace() || c == 'T').any(|f| f.starts_with("24:"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_orders_by_utc_then_zone() {
        let a = timetz_pack(11 * 3600 * USECS_PER_SEC, -3600); // 11:00+01
        let b = timetz_pack(10 * 3600 * USECS_PER_SEC, 0); // 10:00+00
        let c = timetz_pack(10 * 3600 * USECS_PER_SEC + 1, 0);
        assert!(a < b, "same instant: the zone further west (10:00+00) sorts after");
        assert!(b < c);
        for (t, z) in [(0, 0), (USECS_PER_DAY, -57599), (123_456_789, 57599), (0, -57599)] {
            assert_eq!(timetz_unpack(timetz_pack(t, z)), (t, z));
        }
    }

    #[test]
    fn output_and_rounding() {
        assert_eq!(format_time(0), "00:00:00");
        assert_eq!(format_time(USECS_PER_DAY), "24:00:00");
        assert_eq!(format_time(3_723_500_000), "01:02:03.5");
        assert_eq!(format_timetz(timetz_pack(11 * 3600 * USECS_PER_SEC, -3600)), "11:00:00+01");
        assert_eq!(format_timetz(timetz_pack(0, 8 * 3600 + 1800)), "00:00:00-08:30");
        assert_eq!(round_time(1_234_567, 3), 1_235_000);
        assert_eq!(round_time(1_234_567, 0), 1_000_000);
    }

    #[test]
    fn input() {
        let t = |s: &str| parse_time(s, 0).map(|(t, _, _)| t);
        assert_eq!(t("11:00"), Ok(11 * 3600 * USECS_PER_SEC));
        assert_eq!(t("04:05 PM"), Ok((16 * 3600 + 5 * 60) * USECS_PER_SEC));
        assert_eq!(t("24:00:00"), Ok(USECS_PER_DAY));
        assert_eq!(t("2000-10-19 10:23:54"), Ok((10 * 3600 + 23 * 60 + 54) * USECS_PER_SEC));
        assert_eq!(t("25:00"), Err(TimeInputError::FieldOverflow));
        assert_eq!(t("abc"), Err(TimeInputError::BadFormat));
        let z = |s: &str| parse_time(s, 0).unwrap().1;
        assert_eq!(z("11:00 BST"), Some(super::super::zone::Zone::Fixed(3600)));
        assert_eq!(z("11:00-08"), Some(super::super::zone::Zone::Fixed(-8 * 3600)));
        assert_eq!(time_add(23 * 3600 * USECS_PER_SEC, Interval::from_micros(2 * 3600 * USECS_PER_SEC)), 3600 * USECS_PER_SEC);
        assert_eq!(time_add(0, Interval::from_micros(-1)), USECS_PER_DAY - 1);
    }
}
