//! `to_char` with PostgreSQL's date/time templates, for timestamps and
//! intervals (numbers are `num_format`). A template pattern weir does not
//! implement is refused with 0A000, never ignored.

use chrono::{Datelike, Timelike};

use crate::err;
use crate::error::Result;
use crate::types::interval::{USECS_PER_HOUR, USECS_PER_MINUTE, USECS_PER_SEC};
use crate::types::Interval;

const MONTHS: [&str; 12] =
    ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
const DAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const ROMAN: [&str; 12] = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"];

/// Date/time template patterns, longest first so that `HH24` wins over `HH`.
const PATTERNS: &[&str] = &[
    "A.D.", "B.C.", "a.d.", "b.c.", "A.M.", "P.M.", "a.m.", "p.m.", "Y,YYY", "y,yyy", "MONTH", "Month", "month", "SSSSS", "sssss", "HH24",
    "hh24", "HH12", "hh12", "IDDD", "iddd", "IYYY", "iyyy", "SSSS", "ssss", "YYYY", "yyyy", "DAY", "Day", "day", "DDD", "ddd", "FF1",
    "FF2", "FF3", "FF4", "FF5", "FF6", "ff1", "ff2", "ff3", "ff4", "ff5", "ff6", "IYY", "iyy", "MON", "Mon", "mon", "TZH", "tzh", "TZM",
    "tzm", "YYY", "yyy", "AD", "BC", "ad", "bc", "AM", "PM", "am", "pm", "CC", "cc", "DD", "dd", "DY", "Dy", "dy", "HH", "hh", "ID", "id",
    "IW", "iw", "IY", "iy", "MI", "mi", "MM", "mm", "MS", "ms", "OF", "of", "RM", "Rm", "rm", "SS", "ss", "TZ", "tz", "US", "us", "WW",
    "ww", "YY", "yy", "D", "d", "I", "i", "J", "j", "Q", "q", "W", "w", "Y", "y",
];

/// The fields a template reads.
struct Fields {
    interval: bool,
    year: i64,
    month: i64, // 1-12 (interval: 0-11)
    day: i64,
    hour: i64, // 0-23 (interval: total hours)
    minute: i64,
    second: i64,
    micros: i64,
    doy: i64,
    dow: i64, // 0 = Sunday
    iso_year: i64,
    iso_week: i64,
    iso_dow: i64,
    julian: i64,
    /// A timestamptz's zone in the session: abbreviation and offset east (seconds).
    tz: Option<(String, i32)>,
}

fn timestamp_fields(us: i64, with_tz: bool) -> Result<Fields> {
    // A timestamptz's fields are wall-clock time in the session's zone.
    let tz = with_tz.then(|| {
        let zone = crate::types::zone::current().zone;
        let off = zone.offset_at(us);
        (zone.abbrev_at(us).unwrap_or_else(|| crate::types::zone::format_offset(off)), off)
    });
    let us = us.saturating_add(tz.as_ref().map_or(0, |t| t.1 as i64 * 1_000_000));
    let dt = chrono::DateTime::from_timestamp_micros(us).ok_or_else(|| err!(DatetimeFieldOverflow, "timestamp out of range"))?.naive_utc();
    let iso = dt.iso_week();
    Ok(Fields {
        interval: false,
        year: dt.year() as i64,
        month: dt.month() as i64,
        day: dt.day() as i64,
        hour: dt.hour() as i64,
        minute: dt.minute() as i64,
        second: dt.second() as i64,
        micros: (dt.nanosecond() / 1000) as i64,
        doy: dt.ordinal() as i64,
        dow: dt.weekday().num_days_from_sunday() as i64,
        iso_year: iso.year() as i64,
        iso_week: iso.week() as i64,
        iso_dow: dt.weekday().number_from_monday() as i64,
        julian: dt.date().num_days_from_ce() as i64 + 1_721_425,
        tz,
    })
}

fn interval_fields(iv: Interval) -> Fields {
    let t = iv.micros;
    Fields {
        interval: true,
        year: (iv.months / 12) as i64,
        month: (iv.months % 12) as i64,
        day: iv.days as i64,
        hour: t / USECS_PER_HOUR,
        minute: (t / USECS_PER_MINUTE) % 60,
        second: (t / USECS_PER_SEC) % 60,
        micros: t % USECS_PER_SEC,
        doy: 0,
        dow: 0,
        iso_year: 0,
        iso_week: 0,
        iso_dow: 0,
        julian: 0,
        tz: None,
    }
}

fn unsupported(p: &str) -> crate::error::WeirError {
    err!(FeatureNotSupported, "to_char template pattern \"{p}\" is not supported")
}

/// Case of a text pattern: `MONTH` → upper, `Month` → capitalized,
/// `month` → lower.
/// A month or day name in the pattern's case: abbreviated to 3 letters, or
/// full and blank-padded to 9 unless FM.
fn push_name(out: &mut String, p: &str, name: &str, abbrev: bool, fm: bool) {
    let s = cased(p, if abbrev { &name[..3] } else { name });
    if fm || abbrev {
        out.push_str(&s);
    } else {
        out.push_str(&format!("{s:<9}"));
    }
}

fn cased(p: &str, s: &str) -> String {
    let mut c = p.chars();
    let first = c.next().unwrap_or('A');
    let second = c.next().unwrap_or('A');
    if first.is_ascii_lowercase() {
        s.to_lowercase()
    } else if second.is_ascii_lowercase() {
        s.to_string()
    } else {
        s.to_uppercase()
    }
}

fn ordinal_suffix(n: i64, upper: bool) -> &'static str {
    let s = match (n % 100, n % 10) {
        (11..=13, _) => "th",
        (_, 1) => "st",
        (_, 2) => "nd",
        (_, 3) => "rd",
        _ => "th",
    };
    if upper {
        match s {
            "st" => "ST",
            "nd" => "ND",
            "rd" => "RD",
            _ => "TH",
        }
    } else {
        s
    }
}

fn num(out: &mut String, v: i64, width: usize, fm: bool) {
    if fm {
        out.push_str(&v.to_string());
    } else if v < 0 {
        // A negative value (an interval's, a BC century) keeps its digits'
        // width after the sign, as PostgreSQL's "%0*d" with one more.
        out.push_str(&format!("-{:0width$}", v.unsigned_abs()));
    } else {
        out.push_str(&format!("{v:0width$}"));
    }
}

/// Render a date/time template.
fn render(f: &Fields, fmt: &str) -> Result<String> {
    let mut out = String::new();
    let mut rest = fmt;
    while !rest.is_empty() {
        let mut fm = false;
        if rest.starts_with("FM") || rest.starts_with("fm") {
            fm = true;
            rest = &rest[2..];
        }
        if rest.starts_with("FX") || rest.starts_with("fx") {
            rest = &rest[2..];
            continue;
        }
        if let Some(r) = rest.strip_prefix('"') {
            // Quoted literal text; a backslash escapes a quote.
            let mut chars = r.char_indices();
            let mut end = r.len();
            while let Some((i, c)) = chars.next() {
                if c == '\\' {
                    if let Some((_, n)) = chars.next() {
                        out.push(n);
                    }
                    continue;
                }
                if c == '"' {
                    end = i + 1;
                    break;
                }
                out.push(c);
            }
            rest = &r[end.min(r.len())..];
            continue;
        }
        if let Some(r) = rest.strip_prefix('\\') {
            let mut c = r.chars();
            if let Some(n) = c.next() {
                out.push(n);
            }
            rest = c.as_str();
            continue;
        }
        let Some(p) = PATTERNS.iter().find(|p| rest.starts_with(**p)) else {
            // A trailing FM prefix leaves nothing to render.
            let Some(c) = rest.chars().next() else { break };
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        };
        rest = &rest[p.len()..];
        let start = out.len();
        let upper = p.chars().next().unwrap().is_ascii_uppercase();
        let text_pattern = matches!(p.to_ascii_uppercase().as_str(), "MONTH" | "MON" | "DAY" | "DY" | "RM" | "AM" | "PM" | "A.M." | "P.M.");
        if f.interval && text_pattern && !matches!(p.to_ascii_uppercase().as_str(), "AM" | "PM" | "A.M." | "P.M." | "RM") {
            return Err(unsupported(p));
        }
        let mut numeric: Option<i64> = None;
        // Years print as BC years (1 BC is year 0 in the fields); an
        // interval's years as they are.
        let bc = |y: i64| if f.interval || y > 0 { y } else { 1 - y };
        let (year, iso_year) = (bc(f.year), bc(f.iso_year));
        let h12 = || {
            let h = f.hour.rem_euclid(12);
            if h == 0 {
                12
            } else {
                h
            }
        };
        match p.to_ascii_uppercase().as_str() {
            "HH" | "HH12" => {
                num(&mut out, if f.interval { f.hour % 12 } else { h12() }, 2, fm);
                numeric = Some(h12())
            }
            "HH24" => {
                num(&mut out, f.hour, 2, fm);
                numeric = Some(f.hour)
            }
            "MI" => {
                num(&mut out, f.minute, 2, fm);
                numeric = Some(f.minute)
            }
            "SS" => {
                num(&mut out, f.second, 2, fm);
                numeric = Some(f.second)
            }
            "MS" => num(&mut out, f.micros / 1000, 3, fm),
            "US" => num(&mut out, f.micros, 6, fm),
            "SSSS" | "SSSSS" => num(&mut out, f.hour * 3600 + f.minute * 60 + f.second, 0, true),
            "FF1" | "FF2" | "FF3" | "FF4" | "FF5" | "FF6" => {
                let k: u32 = p[2..].parse().unwrap();
                num(&mut out, f.micros / 10i64.pow(6 - k), k as usize, false)
            }
            "AM" | "PM" => out.push_str(&cased(p, if f.hour.rem_euclid(24) < 12 { "AM" } else { "PM" })),
            "A.M." | "P.M." => out.push_str(&cased(p, if f.hour.rem_euclid(24) < 12 { "A.M." } else { "P.M." })),
            "AD" | "BC" => out.push_str(&cased(p, if f.year > 0 { "AD" } else { "BC" })),
            "A.D." | "B.C." => out.push_str(&cased(p, if f.year > 0 { "A.D." } else { "B.C." })),
            "Y,YYY" => {
                let y = year.abs();
                out.push_str(&format!("{},{:03}", y / 1000, y % 1000));
                numeric = Some(y)
            }
            "YYYY" | "YYY" | "YY" | "Y" | "IYYY" | "IYY" | "IY" | "I" => {
                let y = if p.starts_with(['I', 'i']) { iso_year } else { year };
                let digits = p.len();
                let v = if digits == 4 { y } else { y % 10i64.pow(digits as u32) };
                num(&mut out, v, digits, fm);
                numeric = Some(v)
            }
            "MONTH" | "MON" => push_name(&mut out, p, MONTHS[(f.month - 1).clamp(0, 11) as usize], p.len() == 3, fm),
            "MM" => {
                num(&mut out, f.month, 2, fm);
                numeric = Some(f.month)
            }
            "RM" if f.interval => {
                // An interval's months count as calendar months, full years as
                // December (or January going back); nothing for no months.
                if f.month == 0 && f.year == 0 {
                    continue;
                }
                let month = match f.month {
                    0 if f.year >= 0 => 12,
                    0 => 1,
                    m if m < 0 => 13 + m,
                    m => m,
                };
                let r = ROMAN[(month - 1).clamp(0, 11) as usize];
                let r = if *p == "rm" { r.to_lowercase() } else { r.to_string() };
                if fm {
                    out.push_str(&r);
                } else {
                    out.push_str(&format!("{r:<4}"));
                }
            }
            "RM" => {
                let r = ROMAN[(f.month - 1).clamp(0, 11) as usize];
                let r = if *p == "rm" { r.to_lowercase() } else { r.to_string() };
                if fm {
                    out.push_str(&r);
                } else {
                    out.push_str(&format!("{r:<4}"));
                }
            }
            "DAY" | "DY" => push_name(&mut out, p, DAYS[f.dow as usize], p.len() == 2, fm),
            "DDD" => {
                num(&mut out, f.doy, 3, fm);
                numeric = Some(f.doy)
            }
            "IDDD" => num(&mut out, (f.iso_week - 1) * 7 + f.iso_dow, 3, fm),
            "DD" => {
                num(&mut out, f.day, 2, fm);
                numeric = Some(f.day)
            }
            "D" => {
                num(&mut out, f.dow + 1, 1, fm);
                numeric = Some(f.dow + 1)
            }
            "ID" => num(&mut out, f.iso_dow, 1, fm),
            "W" => num(&mut out, (f.day - 1) / 7 + 1, 1, fm),
            "WW" => num(&mut out, (f.doy - 1) / 7 + 1, 2, fm),
            "IW" => num(&mut out, f.iso_week, 2, fm),
            "Q" => {
                if f.interval {
                    return Err(unsupported(p));
                }
                num(&mut out, (f.month - 1) / 3 + 1, 1, fm)
            }
            "CC" => {
                let c = if f.interval {
                    f.year / 100
                } else if f.year > 0 {
                    (f.year + 99) / 100
                } else {
                    -((99 - (f.year - 1)) / 100)
                };
                num(&mut out, c, 2, fm);
                numeric = Some(c)
            }
            "J" => {
                num(&mut out, f.julian, 0, true);
                numeric = Some(f.julian)
            }
            "TZ" => {
                if let Some((z, _)) = &f.tz {
                    out.push_str(&cased(p, z))
                }
            }
            "OF" => {
                if let Some((_, off)) = f.tz {
                    out.push_str(&crate::types::zone::format_offset(off))
                }
            }
            "TZH" => {
                if let Some((_, off)) = f.tz {
                    out.push_str(&format!("{}{:02}", if off < 0 { '-' } else { '+' }, off.unsigned_abs() / 3600))
                }
            }
            "TZM" => {
                if let Some((_, off)) = f.tz {
                    out.push_str(&format!("{:02}", off.unsigned_abs() / 60 % 60))
                }
            }
            _ => return Err(unsupported(p)),
        }
        // Ordinal suffix after a number: DDth, DDTH.
        // (Any number printed: PostgreSQL's str_numth reads the digits.)
        if let Some(n) = numeric.or_else(|| out[start..].trim().parse::<i64>().ok()) {
            if let Some(r) = rest.strip_prefix("TH").or_else(|| rest.strip_prefix("th")) {
                out.push_str(ordinal_suffix(n, rest.starts_with("TH")));
                rest = r;
            }
        }
        if rest.starts_with("SP") {
            return Err(unsupported("SP"));
        }
        let _ = (start, upper);
    }
    Ok(out)
}

pub fn timestamp_to_char(us: i64, with_tz: bool, fmt: &str) -> Result<String> {
    render(&timestamp_fields(us, with_tz)?, fmt)
}

pub fn interval_to_char(iv: Interval, fmt: &str) -> Result<String> {
    render(&interval_fields(iv), fmt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::parse_timestamp;

    #[test]
    fn timestamp_templates() {
        let t = parse_timestamp("2026-03-04 05:06:07.123456").unwrap();
        assert_eq!(
            timestamp_to_char(t, false, "YYYY-MM-DD HH24:MI:SS.MS US AM Mon Month Dy Day TZ").unwrap(),
            "2026-03-04 05:06:07.123 123456 AM Mar March     Wed Wednesday "
        );
        assert_eq!(timestamp_to_char(t, false, "FMMonth FMDDth, YYYY HH12 pm").unwrap(), "March 4th, 2026 05 am");
        assert_eq!(timestamp_to_char(t, true, "TZ OF").unwrap(), "UTC +00");
        assert!(timestamp_to_char(t, false, "DDSP").is_err());
    }

    #[test]
    fn a_trailing_fm_is_not_a_panic() {
        let t = parse_timestamp("2026-03-04 05:06:07").unwrap();
        assert_eq!(timestamp_to_char(t, false, "YYYYFM").unwrap(), "2026");
        assert_eq!(timestamp_to_char(t, false, "FM").unwrap(), "");
    }
}
