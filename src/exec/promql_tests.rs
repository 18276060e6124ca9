//! The PromQL series operators over a mock child: sort and offset, series
//! divide across input batches, lookback and staleness, range windows with
//! Prometheus's extrapolated rate, several fields.

use super::{Grid, PromExecutor, PromNode, RangeFn};
use crate::exec::mock::*;
use crate::types::format_value;
use crate::types::SqlType::*;
use crate::types::Value;

fn ts(s: i64) -> Value {
    Value::Timestamp(s * 1_000_000)
}

fn f(v: f64) -> Value {
    Value::Float(v)
}

/// The text of second `s`.
fn t(s: i64) -> String {
    format_value(&ts(s))
}

fn exec(node: PromNode, steps: Vec<Step>, fields: usize) -> Vec<Vec<String>> {
    let mut spec = vec![("ts", Timestamp), ("host", Text)];
    let names = ["a", "b"];
    spec.extend(names[..fields].iter().map(|n| (*n, Float8)));
    let cols = columns(&spec);
    let out = node.columns(&cols);
    let mut e = PromExecutor::new(MockExecutor::new(&cols, steps).boxed(), node, &out, ctx());
    run(&mut e, 2).unwrap()
}

fn row(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn normalize_sorts_by_series_then_time_and_applies_the_offset() {
    let input = vec![
        Step::dense(vec![vec![ts(20), txt("b"), f(2.0)], vec![ts(10), txt("a"), f(1.0)]]),
        Step::dense(vec![vec![ts(5), txt("b"), f(3.0)], vec![Value::Null, txt("a"), f(9.0)], vec![ts(1), null(), f(4.0)]]),
    ];
    let got = exec(PromNode::SeriesNormalize { tags: 1, offset_ms: 60_000 }, input, 1);
    assert_eq!(got, vec![row(&[&t(61), "NULL", "4"]), row(&[&t(70), "a", "1"]), row(&[&t(65), "b", "3"]), row(&[&t(80), "b", "2"]),]);
}

#[test]
fn instant_takes_the_latest_sample_within_the_lookback_and_stops_at_a_stale_one() {
    // Series a: samples at 0 and 100 (NULL: stale); series b split across batches.
    let input = vec![
        Step::dense(vec![vec![ts(0), txt("a"), f(1.0)], vec![ts(100), txt("a"), null()], vec![ts(0), txt("b"), f(5.0)]]),
        Step::dense(vec![vec![ts(30), txt("b"), f(6.0)]]),
    ];
    let grid = Grid { start_ms: 0, step_ms: 50_000, steps: 4 };
    let got = exec(PromNode::InstantManipulate { tags: 1, grid, lookback_ms: 60_000, at_ms: None, timestamps: None }, input, 1);
    assert_eq!(
        got,
        vec![
            row(&[&t(0), "a", "1"]),
            row(&[&t(50), "a", "1"]),
            // 100: the stale marker hides a; 150 is past b's lookback.
            row(&[&t(0), "b", "5"]),
            row(&[&t(50), "b", "6"]),
        ]
    );
}

#[test]
fn range_rate_extrapolates_over_each_window_and_counts_resets() {
    // A counter with a reset: 0, 10, 20, 5 at 0, 10, 20, 30 s.
    let rows = vec![
        vec![ts(0), txt("a"), f(0.0)],
        vec![ts(10), txt("a"), f(10.0)],
        vec![ts(20), txt("a"), f(20.0)],
        vec![ts(30), txt("a"), f(5.0)],
    ];
    let grid = Grid { start_ms: 30_000, step_ms: 10_000, steps: 1 };
    let got =
        exec(PromNode::RangeManipulate { tags: 1, grid, range_ms: 30_000, func: RangeFn::Increase, at_ms: None }, vec![Step::dense(rows.clone())], 1);
    // Window (0, 30]: 10, 20, 5 → increase 15 over 20 s sampled, extrapolated
    // by 10 s at the start (to_start 10 < 1.1 * 10 avg) and 0 at the end: 15 * 30 / 20.
    assert_eq!(got, vec![row(&[&t(30), "a", "22.5"])]);
    let got = exec(PromNode::RangeManipulate { tags: 1, grid, range_ms: 40_000, func: RangeFn::Resets, at_ms: None }, vec![Step::dense(rows)], 1);
    assert_eq!(got, vec![row(&[&t(30), "a", "1"])]);
}

#[test]
fn range_windows_skip_stale_samples_per_field_and_emit_a_row_when_any_field_has_a_value() {
    let rows = vec![vec![ts(10), txt("a"), f(1.0), null()], vec![ts(20), txt("a"), f(3.0), null()]];
    let grid = Grid { start_ms: 20_000, step_ms: 10_000, steps: 2 };
    let got = exec(PromNode::RangeManipulate { tags: 1, grid, range_ms: 15_000, func: RangeFn::SumOverTime, at_ms: None }, vec![Step::dense(rows)], 2);
    assert_eq!(got, vec![row(&[&t(20), "a", "4", "NULL"]), row(&[&t(30), "a", "3", "NULL"])]);
}

#[test]
fn an_empty_input_gives_no_rows() {
    let grid = Grid { start_ms: 0, step_ms: 1000, steps: 3 };
    assert!(exec(PromNode::InstantManipulate { tags: 1, grid, lookback_ms: 1000, at_ms: None, timestamps: None }, vec![], 1).is_empty());
}
