//! POSIX TZ strings with daylight saving time (`PST8PDT,M3.2.0,M11.1.0`,
//! `FOO8BAR`): a standard offset, a daylight one and the rules that start
//! and end it each year, as PostgreSQL's tzcode reads them. A name with a
//! DST part but no rules takes tzcode's default, the US rules
//! `M3.2.0,M11.1.0`. Offsets in the string are hours *west* of UTC.
//! Pure functions; imports only `datetime_input`'s calendar arithmetic.

use super::datetime_input::{civil_from_days, days_from_civil};

const SECS_PER_DAY: i64 = 86_400;

/// When in the year a change happens (POSIX `Jn`, `n` or `Mm.w.d`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// `Jn`: day 1..365, February 29th never counted.
    Julian1(i64),
    /// `n`: day 0..365, February 29th counted.
    Julian0(i64),
    /// `Mm.w.d`: weekday d (0 is Sunday) of week w (1..5, 5 the last) of month m.
    Mwd(i64, i64, i64),
}

/// A zone with daylight saving time, from a POSIX TZ string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PosixZone {
    std_west: i32,
    dst_west: i32,
    start: (Rule, i32),
    end: (Rule, i32),
}

struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.0.first().copied()
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.0 = &self.0[1..];
            true
        } else {
            false
        }
    }
    fn number(&mut self) -> Option<i64> {
        let n = self.0.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 || n > 6 {
            return None;
        }
        let v = std::str::from_utf8(&self.0[..n]).ok()?.parse().ok()?;
        self.0 = &self.0[n..];
        Some(v)
    }
    /// A zone name: three or more letters, or `<…>` quoted.
    fn name(&mut self) -> Option<()> {
        if self.eat(b'<') {
            let n = self.0.iter().position(|&c| c == b'>')?;
            self.0 = &self.0[n + 1..];
            return Some(());
        }
        let n = self.0.iter().take_while(|c| c.is_ascii_alphabetic()).count();
        if n < 3 {
            return None;
        }
        self.0 = &self.0[n..];
        Some(())
    }
    /// `[+-]hh[:mm[:ss]]` as seconds (hours up to `max_hours`).
    fn offset(&mut self, max_hours: i64) -> Option<i32> {
        let sign = if self.eat(b'-') {
            -1
        } else {
            self.eat(b'+');
            1
        };
        let h = self.number()?;
        let m = if self.eat(b':') { self.number()? } else { 0 };
        let s = if self.eat(b':') { self.number()? } else { 0 };
        if h > max_hours || m > 59 || s > 59 {
            return None;
        }
        i32::try_from(sign * (h * 3600 + m * 60 + s)).ok()
    }
    /// `,rule[/time]` (default time 02:00:00).
    fn rule(&mut self) -> Option<(Rule, i32)> {
        if !self.eat(b',') {
            return None;
        }
        let rule = if self.eat(b'J') {
            Rule::Julian1(self.number().filter(|n| (1..=365).contains(n))?)
        } else if self.eat(b'M') {
            let m = self.number().filter(|n| (1..=12).contains(n))?;
            self.eat(b'.').then_some(())?;
            let w = self.number().filter(|n| (1..=5).contains(n))?;
            self.eat(b'.').then_some(())?;
            Rule::Mwd(m, w, self.number().filter(|n| (0..=6).contains(n))?)
        } else {
            Rule::Julian0(self.number().filter(|n| (0..=365).contains(n))?)
        };
        let time = if self.eat(b'/') { self.offset(167)? } else { 2 * 3600 };
        Some((rule, time))
    }
}

impl PosixZone {
    /// A POSIX TZ string with a daylight-saving part; None for anything else
    /// (a string without one is a fixed offset, which `Zone::parse` reads).
    pub fn parse(s: &str) -> Option<PosixZone> {
        let mut c = Cursor(s.as_bytes());
        c.name()?;
        let std_west = c.offset(24)?;
        c.name()?;
        let dst_west = match c.peek() {
            Some(b'+' | b'-') | Some(b'0'..=b'9') => c.offset(24)?,
            _ => std_west - 3600,
        };
        let (start, end) =
            if c.peek().is_none() { ((Rule::Mwd(3, 2, 0), 2 * 3600), (Rule::Mwd(11, 1, 0), 2 * 3600)) } else { (c.rule()?, c.rule()?) };
        if c.peek().is_some() {
            return None;
        }
        Some(PosixZone { std_west, dst_west, start, end })
    }

    /// Days since 1970-01-01 of a rule's day in `year`.
    fn day_of(rule: Rule, year: i64) -> i64 {
        let jan1 = days_from_civil(year, 1, 1);
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        match rule {
            Rule::Julian1(n) => jan1 + n - 1 + i64::from(leap && n >= 60),
            Rule::Julian0(n) => jan1 + n,
            Rule::Mwd(m, w, d) => {
                let first = days_from_civil(year, m, 1);
                // 1970-01-01 was a Thursday (4).
                let mut day = first + (d - (first + 4).rem_euclid(7)).rem_euclid(7) + (w - 1) * 7;
                let next_month = if m == 12 { days_from_civil(year + 1, 1, 1) } else { days_from_civil(year, m + 1, 1) };
                while day >= next_month {
                    day -= 7;
                }
                day
            }
        }
    }

    /// Whether daylight saving time is in force at a UTC instant (seconds).
    fn is_dst(&self, utc_secs: i64) -> bool {
        let (year, _, _) = civil_from_days((utc_secs - self.std_west as i64).div_euclid(SECS_PER_DAY));
        // The start is written in standard time, the end in daylight time.
        let start = Self::day_of(self.start.0, year) * SECS_PER_DAY + self.start.1 as i64 + self.std_west as i64;
        let end = Self::day_of(self.end.0, year) * SECS_PER_DAY + self.end.1 as i64 + self.dst_west as i64;
        if start < end {
            start <= utc_secs && utc_secs < end
        } else {
            // Southern hemisphere: daylight time across the new year.
            utc_secs >= start || utc_secs < end
        }
    }

    /// The UTC offset (seconds east) at a UTC instant (microseconds).
    pub fn offset_at(&self, utc_us: i64) -> i32 {
        if self.is_dst(utc_us.div_euclid(1_000_000)) {
            -self.dst_west
        } else {
            -self.std_west
        }
    }

    /// The UTC instant of a wall-clock time: standard time when it exists
    /// (a repeated hour takes the later, standard reading; a skipped one the
    /// offset before it, standard too), else daylight time.
    pub fn to_utc(&self, local_us: i64) -> i64 {
        let std = local_us.saturating_add(self.std_west as i64 * 1_000_000);
        let dst = local_us.saturating_add(self.dst_west as i64 * 1_000_000);
        if self.offset_at(std) != -self.std_west && self.offset_at(dst) == -self.dst_west {
            dst
        } else {
            std
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc_us(y: i64, m: i64, d: i64, h: i64) -> i64 {
        (days_from_civil(y, m, d) * SECS_PER_DAY + h * 3600) * 1_000_000
    }

    #[test]
    fn us_rules_by_default_and_written_out() {
        for s in ["FOO8BAR", "PST8PDT,M3.2.0,M11.1.0", "<-08>8<-07>,M3.2.0/2,M11.1.0/02:00:00"] {
            let z = PosixZone::parse(s).unwrap_or_else(|| panic!("{s}"));
            assert_eq!(z.offset_at(utc_us(2014, 12, 10, 18)), -8 * 3600, "{s}");
            assert_eq!(z.offset_at(utc_us(2014, 7, 10, 18)), -7 * 3600, "{s}");
            // 2014-03-09 02:00 PST (10:00 UTC) starts DST; 2014-11-02 02:00 PDT (09:00 UTC) ends it.
            assert_eq!(z.offset_at(utc_us(2014, 3, 9, 10) - 1), -8 * 3600);
            assert_eq!(z.offset_at(utc_us(2014, 3, 9, 10)), -7 * 3600);
            assert_eq!(z.offset_at(utc_us(2014, 11, 2, 9) - 1), -7 * 3600);
            assert_eq!(z.offset_at(utc_us(2014, 11, 2, 9)), -8 * 3600);
        }
        let z = PosixZone::parse("FOO8BAR").unwrap();
        assert_eq!(z.to_utc(utc_us(2014, 12, 10, 10)), utc_us(2014, 12, 10, 18));
        assert_eq!(z.to_utc(utc_us(2014, 7, 10, 10)), utc_us(2014, 7, 10, 17));
    }

    #[test]
    fn southern_rules_and_refusals() {
        // Australia/Sydney: AEST-10AEDT,M10.1.0,M4.1.0/3.
        let z = PosixZone::parse("AEST-10AEDT,M10.1.0,M4.1.0/3").unwrap();
        assert_eq!(z.offset_at(utc_us(2020, 1, 15, 0)), 11 * 3600);
        assert_eq!(z.offset_at(utc_us(2020, 7, 15, 0)), 10 * 3600);
        for s in ["PST8", "UTC", "FOO", "FOO8BAR,M13.1.0,M11.1.0", "FOO8BAR,M3.2.0", "8BAR", "FOO8BAR junk"] {
            assert_eq!(PosixZone::parse(s), None, "{s}");
        }
    }
}
