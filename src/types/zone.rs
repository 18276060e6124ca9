//! The session's date/time context: its time zone (the IANA database
//! through chrono-tz, fixed offsets, PostgreSQL's default zone
//! abbreviations), DateStyle and IntervalStyle; conversion between UTC
//! instants and wall-clock time in a zone (PostgreSQL's rules for skipped
//! and repeated local times), date/timestamp output in each DateStyle, and
//! the thread-local that carries a session's context to evaluation and
//! output (`with_dt_ctx`). Imports only `types` siblings, chrono and chrono-tz.

use std::collections::HashMap;
use std::sync::OnceLock;

use chrono::{Offset, TimeZone};
use chrono_tz::{OffsetName, Tz};

use super::datetime_input::DateOrder;

const US_PER_SEC: i64 = 1_000_000;
const US_PER_DAY: i64 = 86_400 * US_PER_SEC;

/// A time zone: a name from the IANA database or a fixed offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    /// Seconds east of UTC.
    Fixed(i32),
    Named(Tz),
    /// One of PostgreSQL's dynamic abbreviations (`MSK`): the offset the
    /// abbreviation (upper case) stood for in the zone at the time.
    Abbrev(Tz, &'static str),
    /// A POSIX TZ string with daylight saving time (`PST8PDT,M3.2.0,M11.1.0`).
    Posix(super::posix_zone::PosixZone),
}

/// PostgreSQL's `Default` abbreviations whose offset changed over the
/// years, with the zone whose history says what they meant when.
const DYNAMIC_ABBREVIATIONS: &[(&str, Tz)] = &[("MSK", Tz::Europe__Moscow), ("VET", Tz::America__Caracas)];

/// A zone abbreviation as a zone: dynamic (`MSK`) or a fixed offset (`PST`).
pub fn abbreviation_zone(s: &str) -> Option<Zone> {
    match DYNAMIC_ABBREVIATIONS.iter().find(|(a, _)| a.eq_ignore_ascii_case(s)) {
        Some((a, tz)) => Some(Zone::Abbrev(*tz, *a)),
        None => abbreviation(s).map(Zone::Fixed),
    }
}

fn iana_names() -> &'static HashMap<String, Tz> {
    static NAMES: OnceLock<HashMap<String, Tz>> = OnceLock::new();
    NAMES.get_or_init(|| chrono_tz::TZ_VARIANTS.iter().map(|tz| (tz.name().to_ascii_lowercase(), *tz)).collect())
}

/// PostgreSQL's `Default` zone abbreviations (the common ones), in
/// seconds east of UTC.
pub fn abbreviation(s: &str) -> Option<i32> {
    let h = 3600;
    Some(match s.to_ascii_lowercase().as_str() {
        "utc" | "gmt" | "z" | "zulu" | "ut" | "wet" | "uct" => 0,
        "est" => -5 * h,
        "edt" => -4 * h,
        "cst" => -6 * h,
        "cdt" => -5 * h,
        "mst" => -7 * h,
        "mdt" => -6 * h,
        "pst" => -8 * h,
        "pdt" => -7 * h,
        "akst" => -9 * h,
        "akdt" => -8 * h,
        "hst" => -10 * h,
        "ast" => -4 * h,
        "adt" => -3 * h,
        "nst" => -(3 * h + 1800),
        "ndt" => -(2 * h + 1800),
        "cet" | "met" | "mez" | "west" | "bst" => h,
        "cest" | "mest" | "mesz" | "eet" | "ist" => 2 * h,
        "eest" => 3 * h,
        "jst" | "kst" => 9 * h,
        "aest" => 10 * h,
        "aedt" => 11 * h,
        "acst" => 9 * h + 1800,
        "awst" | "sgt" | "hkt" => 8 * h,
        "nzst" => 12 * h,
        "nzdt" => 13 * h,
        _ => return None,
    })
}

/// `+05`, `-08:00`, `+0530`, `-8` as seconds east of UTC.
pub fn numeric_offset(s: &str) -> Option<i32> {
    let (sign, rest) = match s.as_bytes().first()? {
        b'+' => (1, &s[1..]),
        b'-' => (-1, &s[1..]),
        _ => return None,
    };
    let rest = rest.trim();
    let (h, m, sec) = if rest.contains(':') {
        let p: Vec<&str> = rest.split(':').collect();
        if p.len() > 3 || p.iter().any(|x| x.is_empty() || !x.bytes().all(|c| c.is_ascii_digit())) {
            return None;
        }
        (p[0].parse::<i32>().ok()?, p.get(1).map_or(Some(0), |x| x.parse().ok())?, p.get(2).map_or(Some(0), |x| x.parse().ok())?)
    } else {
        if rest.is_empty() || !rest.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        match rest.len() {
            1 | 2 => (rest.parse().ok()?, 0, 0),
            3 => (rest[..1].parse().ok()?, rest[1..].parse().ok()?, 0),
            4 => (rest[..2].parse().ok()?, rest[2..].parse().ok()?, 0),
            6 => (rest[..2].parse().ok()?, rest[2..4].parse().ok()?, rest[4..].parse().ok()?),
            _ => return None,
        }
    };
    if h > 15 || m >= 60 || sec >= 60 {
        return None;
    }
    Some(sign * (h * 3600 + m * 60 + sec))
}

impl Zone {
    pub const UTC: Zone = Zone::Named(Tz::UTC);

    /// A zone as the `timezone` setting names it: an IANA name (any case),
    /// a number of hours east (`-8`, `5.5`), a POSIX-style `XXX±N` (hours
    /// west), an ISO offset (`+05:30`) or a PostgreSQL abbreviation.
    pub fn parse(name: &str) -> Option<Zone> {
        let n = name.trim();
        let lower = n.to_ascii_lowercase();
        if let Some(tz) = iana_names().get(&lower) {
            return Some(Zone::Named(*tz));
        }
        if let Ok(h) = n.parse::<f64>() {
            if h.abs() <= 15.0 {
                return Some(Zone::Fixed((h * 3600.0).round() as i32));
            }
            return None;
        }
        // POSIX offsets are hours west: `+02:00` is two hours behind UTC;
        // `<-08>+08` is how a numeric setting is shown.
        let posix = match n.strip_prefix('<').and_then(|r| r.split_once('>')) {
            Some((_, rest)) => rest,
            None => n,
        };
        if let Some(west) = numeric_offset(posix).or_else(|| {
            if posix.starts_with(|c: char| c.is_ascii_digit()) {
                numeric_offset(&format!("+{posix}"))
            } else {
                None
            }
        }) {
            return Some(Zone::Fixed(-west));
        }
        if let Some(p) = super::posix_zone::PosixZone::parse(n) {
            return Some(Zone::Posix(p));
        }
        // POSIX: letters, then an offset in hours west of UTC (`UTC+3`, `<-03>+3`).
        let letters = lower.trim_start_matches(|c: char| c.is_ascii_alphabetic());
        if letters.len() < lower.len() && lower.len() - letters.len() >= 3 && !letters.is_empty() {
            let body = if letters.starts_with(['+', '-']) { letters.to_string() } else { format!("+{letters}") };
            return numeric_offset(&body).map(|w| Zone::Fixed(-w));
        }
        abbreviation_zone(&lower)
    }

    /// The UTC offset (seconds east) in force at a UTC instant.
    pub fn offset_at(&self, utc_us: i64) -> i32 {
        match self {
            Zone::Fixed(s) => *s,
            Zone::Named(Tz::UTC) => 0,
            Zone::Named(tz) => match chrono::DateTime::from_timestamp_micros(equivalent_instant(utc_us)) {
                Some(d) => tz.offset_from_utc_datetime(&d.naive_utc()).fix().local_minus_utc(),
                None => 0,
            },
            Zone::Abbrev(tz, abbrev) => abbrev_offset(*tz, abbrev, utc_us),
            Zone::Posix(p) => p.offset_at(utc_us),
        }
    }

    /// The zone's abbreviation at a UTC instant (`PST`, `PDT`); None for a
    /// fixed offset, which prints as a number.
    pub fn abbrev_at(&self, utc_us: i64) -> Option<String> {
        match self {
            // A POSIX string's own names are not kept: its offset is printed.
            Zone::Fixed(_) | Zone::Posix(_) => None,
            Zone::Abbrev(_, abbrev) => Some(abbrev.to_string()),
            Zone::Named(tz) => {
                let d = chrono::DateTime::from_timestamp_micros(equivalent_instant(utc_us))?;
                let off = tz.offset_from_utc_datetime(&d.naive_utc());
                off.abbreviation().map(|a| a.to_string())
            }
        }
    }

    /// Wall-clock microseconds at a UTC instant.
    pub fn to_local(&self, utc_us: i64) -> i64 {
        utc_us.saturating_add(self.offset_at(utc_us) as i64 * US_PER_SEC)
    }

    /// The UTC instant of a wall-clock time, as PostgreSQL resolves it: a
    /// time skipped by a spring-forward transition takes the offset before
    /// it, a repeated time (fall back) the offset after it.
    pub fn to_utc(&self, local_us: i64) -> i64 {
        match self {
            Zone::Fixed(s) => local_us.saturating_sub(*s as i64 * US_PER_SEC),
            Zone::Posix(p) => p.to_utc(local_us),
            Zone::Named(_) if equivalent_instant(local_us) != local_us => {
                // Past the years chrono-tz lists: resolved in the equivalent year.
                let moved = equivalent_instant(local_us);
                local_us.saturating_sub(moved - self.to_utc(moved))
            }
            Zone::Named(tz) => {
                let Some(d) = chrono::DateTime::from_timestamp_micros(local_us) else { return local_us };
                match tz.from_local_datetime(&d.naive_utc()) {
                    chrono::LocalResult::Single(t) => t.timestamp_micros(),
                    chrono::LocalResult::Ambiguous(_, later) => later.timestamp_micros(),
                    chrono::LocalResult::None => {
                        let before = self.offset_at(local_us - 12 * 3600 * US_PER_SEC);
                        local_us - before as i64 * US_PER_SEC
                    }
                }
            }
            // PostgreSQL's DetermineTimeZoneAbbrevOffset: the instant the
            // zone itself gives, then the abbreviation's offset there.
            Zone::Abbrev(tz, abbrev) => {
                let probe = Zone::Named(*tz).to_utc(local_us);
                local_us.saturating_sub(abbrev_offset(*tz, abbrev, probe) as i64 * US_PER_SEC)
            }
        }
    }
}

/// An instant after the years chrono-tz lists transitions for (through
/// 2099) moved to the same date and time of an earlier year that starts on
/// the same weekday and is as long: a zone's rules after its last listed
/// change repeat every year (its POSIX rule, which PostgreSQL applies to any
/// later year), so the offset there is the offset here. Earlier instants
/// are returned as they are.
fn equivalent_instant(us: i64) -> i64 {
    use super::datetime_input::{civil_from_days, days_from_civil};
    const FIRST_LATER_US: i64 = 4_070_908_800 * US_PER_SEC; // 2099-01-01
    if us < FIRST_LATER_US {
        return us;
    }
    let days = us.div_euclid(US_PER_DAY);
    let (y, m, d) = civil_from_days(days);
    let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let jan1_dow = |y: i64| (days_from_civil(y, 1, 1) + 4).rem_euclid(7);
    // 28 consecutive years without a skipped leap day hold every
    // (weekday of January 1st, leap) pair.
    match (2070..2098).find(|&t| leap(t) == leap(y) && jan1_dow(t) == jan1_dow(y)) {
        Some(t) => days_from_civil(t, m as i64, d as i64) * US_PER_DAY + us.rem_euclid(US_PER_DAY),
        None => us,
    }
}

/// What a dynamic abbreviation meant in its zone at a UTC instant
/// (pg_interpret_timezone_abbrev): its latest use at or before the instant,
/// else its earliest use after; the zone's own offset when the zone's
/// history never names it. Searched in 30-day steps over 100 years each way
/// (a period of use shorter than that can be missed; none is in `Default`'s).
fn abbrev_offset(tz: Tz, abbrev: &str, utc_us: i64) -> i32 {
    const STEP_US: i64 = 30 * US_PER_DAY;
    const STEPS: i64 = 100 * 365 / 30;
    let named = Zone::Named(tz);
    let at = |us: i64| {
        let d = chrono::DateTime::from_timestamp_micros(us)?;
        let off = tz.offset_from_utc_datetime(&d.naive_utc());
        off.abbreviation().filter(|a| a.eq_ignore_ascii_case(abbrev)).map(|_| off.fix().local_minus_utc())
    };
    (0..=STEPS)
        .find_map(|k| at(utc_us.saturating_sub(k * STEP_US)))
        .or_else(|| (1..=STEPS).find_map(|k| at(utc_us.saturating_add(k * STEP_US))))
        .unwrap_or_else(|| named.offset_at(utc_us))
}

/// DateStyle's output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateStyle {
    Iso,
    Postgres,
    Sql,
    German,
}

/// IntervalStyle's output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntervalStyle {
    Postgres,
    PostgresVerbose,
    SqlStandard,
    Iso8601,
}

/// What date/time input and output depend on in a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DtCtx {
    pub zone: Zone,
    pub style: DateStyle,
    pub order: DateOrder,
    pub interval: IntervalStyle,
    /// `bytea_output = escape` (else hex): an output style that travels
    /// with the date/time ones to the row encoder.
    pub bytea_escape: bool,
    /// `extra_float_digits` (-15..=3): above 0 floats print their
    /// shortest round-trip form, else `%.{15+n}g` (float8) / `%.{6+n}g` (float4).
    pub float_digits: i8,
}

impl Default for DtCtx {
    fn default() -> DtCtx {
        DtCtx {
            zone: Zone::UTC,
            style: DateStyle::Iso,
            order: DateOrder::Mdy,
            interval: IntervalStyle::Postgres,
            bytea_escape: false,
            float_digits: 1,
        }
    }
}

/// DateStyle's output format from its setting (`Postgres, MDY`).
pub fn date_style(v: &str) -> DateStyle {
    let v = v.to_ascii_uppercase();
    if v.contains("POSTGRES") {
        DateStyle::Postgres
    } else if v.contains("SQL") {
        DateStyle::Sql
    } else if v.contains("GERMAN") {
        DateStyle::German
    } else {
        DateStyle::Iso
    }
}

/// IntervalStyle from its setting; None for an unknown name.
pub fn interval_style(v: &str) -> Option<IntervalStyle> {
    Some(match v.trim().to_ascii_lowercase().as_str() {
        "postgres" => IntervalStyle::Postgres,
        "postgres_verbose" => IntervalStyle::PostgresVerbose,
        "sql_standard" => IntervalStyle::SqlStandard,
        "iso_8601" => IntervalStyle::Iso8601,
        _ => return None,
    })
}

impl DtCtx {
    /// The context of a session's settings (`timezone`, `datestyle`,
    /// `intervalstyle`); a value the session could not have set falls back
    /// to the default.
    pub fn from_settings(settings: &HashMap<String, String>) -> DtCtx {
        let d = DtCtx::default();
        let ds = settings.get("datestyle").map(|s| s.as_str()).unwrap_or("ISO, MDY");
        DtCtx {
            zone: settings.get("timezone").and_then(|z| Zone::parse(z)).unwrap_or(d.zone),
            style: date_style(ds),
            order: DateOrder::from_datestyle(ds),
            interval: settings.get("intervalstyle").and_then(|v| interval_style(v)).unwrap_or(d.interval),
            bytea_escape: settings.get("bytea_output").is_some_and(|v| v.trim().eq_ignore_ascii_case("escape")),
            float_digits: settings
                .get("extra_float_digits")
                .and_then(|v| v.trim().parse::<i8>().ok())
                .map_or(d.float_digits, |n| n.clamp(-15, 3)),
        }
    }
}

thread_local! {
    static CTX: std::cell::Cell<DtCtx> = std::cell::Cell::new(DtCtx::default());
}

/// Run `f` with a session's date/time context in force on this thread
/// (statements, result streams and row encoding set it).
pub fn with_dt_ctx<R>(ctx: DtCtx, f: impl FnOnce() -> R) -> R {
    struct Reset(DtCtx);
    impl Drop for Reset {
        fn drop(&mut self) {
            CTX.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(CTX.with(|c| c.replace(ctx)));
    super::datetime_input::with_date_order(ctx.order, f)
}

/// The context in force on this thread.
pub fn current() -> DtCtx {
    CTX.with(|c| c.get())
}

thread_local! {
    static NOW_US: std::cell::Cell<Option<i64>> = const { std::cell::Cell::new(None) };
}

/// Run `f` with `now_us` as the current transaction's start: the time the
/// input word `now` (and `today` …) means, as in PostgreSQL, where it is
/// the transaction timestamp and so one value through a block.
pub fn with_now<R>(now_us: i64, f: impl FnOnce() -> R) -> R {
    struct Reset(Option<i64>);
    impl Drop for Reset {
        fn drop(&mut self) {
            NOW_US.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(NOW_US.with(|c| c.replace(Some(now_us))));
    f()
}

/// The transaction start `with_now` set on this thread, if any.
pub fn now_override() -> Option<i64> {
    NOW_US.with(|c| c.get())
}

const DOW: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MON: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

struct Parts {
    year: i32,
    bc: bool,
    mon: u32,
    day: u32,
    dow: usize,
    hour: u32,
    min: u32,
    sec: u32,
    frac: i64,
}

/// The calendar fields of wall-clock microseconds, over PostgreSQL's whole
/// range (294276 AD is past chrono's last year).
fn parts(local_us: i64) -> Option<Parts> {
    parts_of_day(local_us.div_euclid(US_PER_DAY), local_us.rem_euclid(US_PER_DAY))
}

/// The calendar fields of a day (since 1970-01-01) and a time in it.
fn parts_of_day(days: i64, time_us: i64) -> Option<Parts> {
    let secs = time_us / US_PER_SEC;
    let (y, mon, day) = super::datetime_input::civil_from_days(days);
    let y = i32::try_from(y).ok()?;
    Some(Parts {
        year: if y <= 0 { 1 - y } else { y },
        bc: y <= 0,
        mon,
        day,
        // 1970-01-01 was a Thursday.
        dow: (days + 4).rem_euclid(7) as usize,
        hour: (secs / 3600) as u32,
        min: (secs / 60 % 60) as u32,
        sec: (secs % 60) as u32,
        frac: time_us % US_PER_SEC,
    })
}

fn push_seconds(out: &mut String, p: &Parts) {
    out.push_str(&format!("{:02}:{:02}:{:02}", p.hour, p.min, p.sec));
    if p.frac != 0 {
        let f = format!("{:06}", p.frac);
        out.push('.');
        out.push_str(f.trim_end_matches('0'));
    }
}

/// PostgreSQL's EncodeTimezone: `+05`, `-03:30`, `+00:19:32`.
pub fn format_offset(east: i32) -> String {
    let sign = if east >= 0 { '+' } else { '-' };
    let a = east.unsigned_abs();
    let (h, m, s) = (a / 3600, a / 60 % 60, a % 60);
    if s != 0 {
        format!("{sign}{h:02}:{m:02}:{s:02}")
    } else if m != 0 {
        format!("{sign}{h:02}:{m:02}")
    } else {
        format!("{sign}{h:02}")
    }
}

fn date_part(p: &Parts, style: DateStyle, order: DateOrder) -> String {
    match style {
        DateStyle::Iso => format!("{:04}-{:02}-{:02}", p.year, p.mon, p.day),
        DateStyle::Sql if order == DateOrder::Dmy => format!("{:02}/{:02}/{:04}", p.day, p.mon, p.year),
        DateStyle::Sql => format!("{:02}/{:02}/{:04}", p.mon, p.day, p.year),
        DateStyle::German => format!("{:02}.{:02}.{:04}", p.day, p.mon, p.year),
        DateStyle::Postgres if order == DateOrder::Dmy => format!("{:02}-{:02}-{:04}", p.day, p.mon, p.year),
        DateStyle::Postgres => format!("{:02}-{:02}-{:04}", p.mon, p.day, p.year),
    }
}

/// A date (days since 1970-01-01) in a DateStyle.
pub fn format_date_in(days: i32, ctx: &DtCtx) -> String {
    match days {
        i32::MAX => return "infinity".into(),
        i32::MIN => return "-infinity".into(),
        _ => {}
    }
    // By days, not microseconds: dates go 20 times further than timestamps.
    match parts_of_day(days as i64, 0) {
        Some(p) => {
            let mut s = date_part(&p, ctx.style, ctx.order);
            if p.bc {
                s.push_str(" BC");
            }
            s
        }
        None => days.to_string(),
    }
}

/// A timestamp in a DateStyle: `local_us` is wall-clock time; `zone` is
/// the (offset east, abbreviation) to print for a timestamptz.
pub fn format_timestamp_in(local_us: i64, zone: Option<(i32, Option<String>)>, ctx: &DtCtx) -> String {
    let Some(p) = parts(local_us) else { return local_us.to_string() };
    let mut s = String::with_capacity(40);
    match ctx.style {
        DateStyle::Iso | DateStyle::Sql | DateStyle::German => {
            s.push_str(&date_part(&p, ctx.style, ctx.order));
            s.push(' ');
            push_seconds(&mut s, &p);
            if let Some((off, abbrev)) = zone {
                match (ctx.style, abbrev) {
                    (DateStyle::Iso, _) | (_, None) => {
                        if ctx.style != DateStyle::Iso {
                            s.push(' ');
                        }
                        s.push_str(&format_offset(off));
                    }
                    (_, Some(a)) => {
                        s.push(' ');
                        s.push_str(&a);
                    }
                }
            }
        }
        DateStyle::Postgres => {
            s.push_str(DOW[p.dow]);
            s.push(' ');
            if ctx.order == DateOrder::Dmy {
                s.push_str(&format!("{:02} {}", p.day, MON[p.mon as usize - 1]));
            } else {
                s.push_str(&format!("{} {:02}", MON[p.mon as usize - 1], p.day));
            }
            s.push(' ');
            push_seconds(&mut s, &p);
            s.push_str(&format!(" {:04}", p.year));
            if let Some((off, abbrev)) = zone {
                s.push(' ');
                match abbrev {
                    Some(a) => s.push_str(&a),
                    None => s.push_str(&format_offset(off)),
                }
            }
        }
    }
    if p.bc {
        s.push_str(" BC");
    }
    s
}

/// `infinity` / `-infinity` (the largest and smallest values).
fn infinite(us: i64) -> Option<String> {
    match us {
        i64::MAX => Some("infinity".into()),
        i64::MIN => Some("-infinity".into()),
        _ => None,
    }
}

/// A timestamp without time zone in the context's DateStyle.
pub fn format_timestamp_ctx(us: i64, ctx: &DtCtx) -> String {
    if let Some(s) = infinite(us) {
        return s;
    }
    format_timestamp_in(us, None, ctx)
}

/// A timestamptz (UTC microseconds) in the context's zone and DateStyle.
pub fn format_timestamptz_ctx(utc_us: i64, ctx: &DtCtx) -> String {
    if let Some(s) = infinite(utc_us) {
        return s;
    }
    let off = ctx.zone.offset_at(utc_us);
    let abbrev = if ctx.style == DateStyle::Iso { None } else { ctx.zone.abbrev_at(utc_us) };
    format_timestamp_in(utc_us.saturating_add(off as i64 * US_PER_SEC), Some((off, abbrev)), ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(tz: &str, style: DateStyle) -> DtCtx {
        DtCtx {
            zone: Zone::parse(tz).unwrap(),
            style,
            order: DateOrder::Mdy,
            interval: IntervalStyle::Postgres,
            bytea_escape: false,
            float_digits: 1,
        }
    }

    #[test]
    fn far_future_instants_keep_daylight_saving_time() {
        let la = Zone::parse("america/los_angeles").unwrap();
        // 10000-03-12 21:58:48 UTC (a Sunday; DST began at 2 am): PDT, as PostgreSQL says.
        let days = super::super::datetime_input::days_from_civil(10_000, 3, 12);
        let utc = days * US_PER_DAY + (21 * 3600 + 58 * 60 + 48) * US_PER_SEC;
        assert_eq!(la.offset_at(utc), -7 * 3600);
        assert_eq!(la.abbrev_at(utc).as_deref(), Some("PDT"));
        assert_eq!(la.to_utc(la.to_local(utc)), utc);
        let winter = super::super::datetime_input::days_from_civil(10_000, 12, 1) * US_PER_DAY;
        assert_eq!(la.offset_at(winter), -8 * 3600);
    }

    #[test]
    fn zones_resolve_like_postgres() {
        let la = Zone::parse("america/los_angeles").unwrap();
        // 2024-03-10 02:30 does not exist in Los Angeles: PST's offset applies (03:30 PDT).
        let local = 1_710_037_800 * US_PER_SEC; // 2024-03-10 02:30 as if UTC
        assert_eq!(la.to_utc(local), local + 8 * 3600 * US_PER_SEC);
        // 2024-11-03 01:30 happens twice: the later (PST) one.
        let local = 1_730_597_400 * US_PER_SEC;
        assert_eq!(la.to_utc(local), local + 8 * 3600 * US_PER_SEC);
        assert_eq!(Zone::parse("UTC+3"), Some(Zone::Fixed(-3 * 3600)));
        assert_eq!(Zone::parse("-8"), Some(Zone::Fixed(-8 * 3600)));
        assert_eq!(Zone::parse("+02:00"), Some(Zone::Fixed(-2 * 3600)));
        assert_eq!(Zone::parse("<-08>+08"), Some(Zone::Fixed(-8 * 3600)));
        assert_eq!(Zone::parse("no/where"), None);
    }

    #[test]
    fn msk_means_what_it_meant_in_moscow() {
        let msk = Zone::parse("MSK").unwrap();
        // 2011-03-27 01:59:59 MSK is +03; 02:00 (skipped in Moscow) is +04.
        let local = 1_301_191_199 * US_PER_SEC;
        assert_eq!(msk.to_utc(local), local - 3 * 3600 * US_PER_SEC);
        let local = 1_301_191_200 * US_PER_SEC;
        assert_eq!(msk.to_utc(local), local - 4 * 3600 * US_PER_SEC);
        // Summer 2010 was MSD (+04): MSK still meant +03.
        assert_eq!(msk.offset_at(1_277_985_600 * US_PER_SEC), 3 * 3600);
    }

    #[test]
    fn styles() {
        let t = 855_624_721 * US_PER_SEC; // 1997-02-11 01:32:01 UTC
        assert_eq!(format_timestamptz_ctx(t, &ctx("America/Los_Angeles", DateStyle::Postgres)), "Mon Feb 10 17:32:01 1997 PST");
        assert_eq!(format_timestamptz_ctx(t, &ctx("America/Los_Angeles", DateStyle::Iso)), "1997-02-10 17:32:01-08");
        assert_eq!(format_timestamptz_ctx(t, &ctx("America/Los_Angeles", DateStyle::Sql)), "02/10/1997 17:32:01 PST");
        assert_eq!(format_timestamptz_ctx(t, &ctx("Asia/Kolkata", DateStyle::Iso)), "1997-02-11 07:02:01+05:30");
        assert_eq!(format_date_in(0, &ctx("UTC", DateStyle::German)), "01.01.1970");
        // i32::MIN and i32::MAX are the dates -infinity and infinity.
        assert_eq!(format_date_in(i32::MIN, &ctx("UTC", DateStyle::Iso)), "-infinity");
        assert_eq!(format_date_in(i32::MAX, &ctx("UTC", DateStyle::German)), "infinity");
    }
}
