//! TQL's `(start, end, step [, lookback])`, as GreptimeDB reads them:
//! numbers are epoch seconds, strings RFC 3339 timestamps (or seconds),
//! SQL expressions are evaluated (a timestamp such as `now() - interval
//! '5 minutes'`); the step and lookback are a PromQL duration string, a
//! number of seconds or an interval.

use sqlparser::ast;

use crate::error::Result;
use crate::parser::TqlArgs;
use crate::planner::{Planner, Scope};
use crate::types::Value;
use crate::{bail, err};

/// The evaluation steps, in epoch milliseconds: `start, start + step, …`
/// up to `end` inclusive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    pub start_ms: i64,
    pub end_ms: i64,
    pub step_ms: i64,
    pub lookback_ms: i64,
}

impl Range {
    /// One instant.
    pub fn at(ms: i64) -> Range {
        Range { start_ms: ms, end_ms: ms, step_ms: 1000, lookback_ms: super::LOOKBACK_MS_DEFAULT }
    }

    pub fn steps(&self) -> usize {
        ((self.end_ms - self.start_ms) / self.step_ms) as usize + 1
    }

    pub fn ts(&self, i: usize) -> i64 {
        self.start_ms + i as i64 * self.step_ms
    }
}

fn constant(planner: &Planner, e: &ast::Expr) -> Result<Value> {
    let bound = planner.bind_expr(e, &Scope::new(vec![], None), None)?;
    planner.eval_const(&bound)
}

/// A point in time, in epoch milliseconds.
fn time_ms(planner: &Planner, e: &ast::Expr, what: &str) -> Result<i64> {
    match constant(planner, e)? {
        Value::Int(s) => s.checked_mul(1000).ok_or_else(|| err!(InvalidParameterValue, "TQL {what} time {s} is out of range")),
        Value::Float(s) if s.is_finite() && s.abs() < 9.2e15 => Ok((s * 1000.0).round() as i64),
        Value::Timestamp(us) => Ok(us.div_euclid(1000)),
        Value::Date(d) => Ok(d as i64 * 86_400_000),
        // An interval is a time since the epoch (GreptimeDB's flows write
        // `now() - now()` for 0).
        Value::Interval(iv) => {
            Ok((iv.months as i64 * 30 + iv.days as i64).saturating_mul(86_400_000).saturating_add(iv.micros.div_euclid(1000)))
        }
        Value::Text(t) => parse_time_text(&t).ok_or_else(|| err!(InvalidDatetime, "invalid TQL {what} time: \"{t}\"")),
        Value::Null => bail!(InvalidParameterValue, "TQL {what} time must not be null"),
        other => bail!(DatatypeMismatch, "TQL {what} time must be a timestamp or a number of seconds, not {other:?}"),
    }
}

fn parse_time_text(t: &str) -> Option<i64> {
    let t = t.trim();
    if let Ok(s) = t.parse::<f64>() {
        return (s.is_finite() && s.abs() < 9.2e15).then(|| (s * 1000.0).round() as i64);
    }
    if let Ok(d) = chrono::DateTime::parse_from_rfc3339(t) {
        return Some(d.timestamp_millis());
    }
    for f in ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S"] {
        if let Ok(d) = chrono::NaiveDateTime::parse_from_str(t, f) {
            return Some(d.and_utc().timestamp_millis());
        }
    }
    None
}

/// A duration, in milliseconds.
fn duration_ms(planner: &Planner, e: &ast::Expr, what: &str) -> Result<i64> {
    let ms = match constant(planner, e)? {
        Value::Int(s) => s.saturating_mul(1000),
        Value::Float(s) if s.is_finite() => (s * 1000.0).round() as i64,
        Value::Interval(iv) => {
            (iv.months as i64 * 30 + iv.days as i64).saturating_mul(86_400_000).saturating_add(iv.micros.div_euclid(1000))
        }
        Value::Text(t) => {
            let t = t.trim();
            match t.parse::<f64>() {
                Ok(s) if s.is_finite() => (s * 1000.0).round() as i64,
                _ => match promql_parser::util::duration::parse_duration(t) {
                    Ok(d) => d.as_millis().min(i64::MAX as u128) as i64,
                    Err(_) => bail!(InvalidParameterValue, "invalid TQL {what}: \"{t}\""),
                },
            }
        }
        other => bail!(DatatypeMismatch, "TQL {what} must be a duration or a number of seconds, not {other:?}"),
    };
    Ok(ms)
}

/// Evaluate the arguments (now() is the statement's, or a flow's tick).
pub fn evaluate(planner: &Planner, a: &TqlArgs) -> Result<Range> {
    let start_ms = time_ms(planner, &a.start, "start")?;
    let end_ms = time_ms(planner, &a.end, "end")?;
    let step_ms = duration_ms(planner, &a.step, "step")?;
    let lookback_ms = match &a.lookback {
        Some(l) => duration_ms(planner, l, "lookback")?,
        None => super::LOOKBACK_MS_DEFAULT,
    };
    if step_ms <= 0 {
        bail!(InvalidParameterValue, "zero or negative query resolution step widths are not accepted. Try a positive integer");
    }
    if lookback_ms <= 0 {
        bail!(InvalidParameterValue, "TQL lookback must be positive");
    }
    if end_ms < start_ms {
        bail!(InvalidParameterValue, "end timestamp must not be before start time");
    }
    if (end_ms - start_ms) / step_ms >= super::STEPS_MAX {
        bail!(
            InvalidParameterValue,
            "exceeded maximum resolution of {} points per timeseries. Try decreasing the query resolution (?step=XX)",
            super::STEPS_MAX
        );
    }
    Ok(Range { start_ms, end_ms, step_ms, lookback_ms })
}

#[cfg(test)]
mod tests {
    use super::parse_time_text;

    #[test]
    fn time_texts() {
        assert_eq!(parse_time_text("10"), Some(10_000));
        assert_eq!(parse_time_text("1.5"), Some(1_500));
        assert_eq!(parse_time_text("1970-01-01T00:01:00Z"), Some(60_000));
        assert_eq!(parse_time_text("1970-01-01 00:01:00"), Some(60_000));
        assert_eq!(parse_time_text("yesterday-ish"), None);
    }
}
