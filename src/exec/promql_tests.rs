//! The PromQL series operators over a mock child: sort and offset, series
//! divide across input batches, lookback and staleness, range windows with
//! Prometheus's extrapolated rate, several fields; @ and timestamp(), the
//! binary, aggregate, absent and scalar nodes, bucket quantiles.

use super::{Check, Grid, PromAgg, PromExecutor, PromNode, RangeFn, ValueOp};
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
    let got = exec(
        PromNode::RangeManipulate { tags: 1, grid, range_ms: 30_000, func: RangeFn::Increase, at_ms: None },
        vec![Step::dense(rows.clone())],
        1,
    );
    // Window (0, 30]: 10, 20, 5 → increase 15 over 20 s sampled, extrapolated
    // by 10 s at the start (to_start 10 < 1.1 * 10 avg) and 0 at the end: 15 * 30 / 20.
    assert_eq!(got, vec![row(&[&t(30), "a", "22.5"])]);
    let got =
        exec(PromNode::RangeManipulate { tags: 1, grid, range_ms: 40_000, func: RangeFn::Resets, at_ms: None }, vec![Step::dense(rows)], 1);
    assert_eq!(got, vec![row(&[&t(30), "a", "1"])]);
}

#[test]
fn range_windows_skip_stale_samples_per_field_and_emit_a_row_when_any_field_has_a_value() {
    let rows = vec![vec![ts(10), txt("a"), f(1.0), null()], vec![ts(20), txt("a"), f(3.0), null()]];
    let grid = Grid { start_ms: 20_000, step_ms: 10_000, steps: 2 };
    let got = exec(
        PromNode::RangeManipulate { tags: 1, grid, range_ms: 15_000, func: RangeFn::SumOverTime, at_ms: None },
        vec![Step::dense(rows)],
        2,
    );
    assert_eq!(got, vec![row(&[&t(20), "a", "4", "NULL"]), row(&[&t(30), "a", "3", "NULL"])]);
}

#[test]
fn an_empty_input_gives_no_rows() {
    let grid = Grid { start_ms: 0, step_ms: 1000, steps: 3 };
    assert!(exec(PromNode::InstantManipulate { tags: 1, grid, lookback_ms: 1000, at_ms: None, timestamps: None }, vec![], 1).is_empty());
}

/// Runs `node` over rows of `spec` columns, with `out` its output columns.
fn exec_with(
    node: PromNode,
    spec: &[(&str, crate::types::SqlType)],
    out: &[(&str, crate::types::SqlType)],
    rows: Vec<Vec<Value>>,
) -> crate::error::Result<Vec<Vec<String>>> {
    let cols = columns(spec);
    let out = columns(out);
    let mut e = PromExecutor::new(MockExecutor::new(&cols, vec![Step::dense(rows)]).boxed(), node, &out, ctx());
    run(&mut e, 2)
}

#[test]
fn at_pins_every_step_to_one_time_and_timestamps_give_the_sample_time() {
    let rows = vec![vec![ts(0), txt("a"), f(1.0)], vec![ts(60), txt("a"), f(2.0)]];
    let grid = Grid { start_ms: 0, step_ms: 60_000, steps: 2 };
    let node = PromNode::InstantManipulate { tags: 1, grid, lookback_ms: 300_000, at_ms: Some(0), timestamps: None };
    assert_eq!(exec(node, vec![Step::dense(rows.clone())], 1), vec![row(&[&t(0), "a", "1"]), row(&[&t(60), "a", "1"])]);
    let node = PromNode::InstantManipulate { tags: 1, grid, lookback_ms: 300_000, at_ms: None, timestamps: Some(0) };
    assert_eq!(exec(node, vec![Step::dense(rows)], 1), vec![row(&[&t(0), "a", "0"]), row(&[&t(60), "a", "60"])]);
}

#[test]
fn binary_computes_per_row_and_fails_on_a_repeated_match() {
    let spec = [("ts", Timestamp), ("host", Text), ("l", Float8), ("r", Float8), ("k", Text)];
    let out = [("ts", Timestamp), ("host", Text), ("v", Float8)];
    let rows = vec![vec![ts(0), txt("a"), f(6.0), f(3.0), txt("x")], vec![ts(0), txt("b"), f(1.0), f(3.0), txt("y")]];
    let node = |op, bool_result, checks| PromNode::Binary { tags: 1, fields: 1, op, bool_result, keep_right: false, checks };
    let got = exec_with(node(ValueOp::Div, false, vec![]), &spec, &out, rows.clone()).unwrap();
    assert_eq!(got, vec![row(&[&t(0), "a", "2"]), row(&[&t(0), "b", "0.3333333333333333"])]);
    // A comparison keeps the left value where it holds; with bool, 1 or 0.
    assert_eq!(exec_with(node(ValueOp::Gt, false, vec![]), &spec, &out, rows.clone()).unwrap(), vec![row(&[&t(0), "a", "6"])]);
    let got = exec_with(node(ValueOp::Gt, true, vec![]), &spec, &out, rows.clone()).unwrap();
    assert_eq!(got, vec![row(&[&t(0), "a", "1"]), row(&[&t(0), "b", "0"])]);
    // The check column k differs: fine; the same k at one time: the check's error.
    let check = Check { cols: vec![4], kept_only: false, message: "dup".into() };
    assert!(exec_with(node(ValueOp::Add, false, vec![check.clone()]), &spec, &out, rows.clone()).is_ok());
    let mut same = rows;
    same[1][4] = txt("x");
    let e = exec_with(node(ValueOp::Add, false, vec![check.clone()]), &spec, &out, same.clone()).unwrap_err();
    assert!(e.to_string().contains("dup"), "{e}");
    // Checked over the kept rows only: b's comparison fails, so no repeat.
    let kept = Check { kept_only: true, ..check };
    assert!(exec_with(node(ValueOp::Gt, false, vec![kept]), &spec, &out, same).is_ok());
}

#[test]
fn aggregate_topk_quantile_and_count_values_by_time_and_group() {
    let spec = [("ts", Timestamp), ("host", Text), ("dc", Text), ("v", Float8)];
    let rows = vec![
        vec![ts(0), txt("a"), txt("x"), f(1.0)],
        vec![ts(0), txt("b"), txt("x"), f(3.0)],
        vec![ts(0), txt("c"), txt("y"), f(3.0)],
        vec![ts(60), txt("a"), txt("x"), f(5.0)],
    ];
    let node = PromNode::Aggregate { tags: 2, group: vec![Some(2)], func: PromAgg::TopK(1f64.to_bits()) };
    let got = exec_with(node, &spec, &spec, rows.clone()).unwrap();
    assert_eq!(got, vec![row(&[&t(0), "b", "x", "3"]), row(&[&t(0), "c", "y", "3"]), row(&[&t(60), "a", "x", "5"])]);
    // quantile 0.5 of 1 and 3 (x at 0 s) interpolates to 2; a by label the input lacks is NULL.
    let out = [("ts", Timestamp), ("dc", Text), ("z", Text), ("v", Float8)];
    let node = PromNode::Aggregate { tags: 2, group: vec![Some(2), None], func: PromAgg::Quantile(0.5f64.to_bits()) };
    let got = exec_with(node, &spec, &out, rows.clone()).unwrap();
    assert_eq!(got, vec![row(&[&t(0), "x", "NULL", "2"]), row(&[&t(0), "y", "NULL", "3"]), row(&[&t(60), "x", "NULL", "5"])]);
    let out = [("ts", Timestamp), ("value", Text), ("v", Float8)];
    let node = PromNode::Aggregate { tags: 2, group: vec![], func: PromAgg::CountValues };
    let got = exec_with(node, &spec, &out, rows).unwrap();
    assert_eq!(got, vec![row(&[&t(0), "1", "1"]), row(&[&t(0), "3", "2"]), row(&[&t(60), "5", "1"])]);
}

#[test]
fn absent_and_scalar_answer_at_every_step() {
    let spec = [("ts", Timestamp), ("host", Text), ("v", Float8)];
    let rows = vec![vec![ts(0), txt("a"), f(1.0)], vec![ts(0), txt("b"), f(2.0)], vec![ts(60), txt("a"), f(7.0)]];
    let grid = Grid { start_ms: 0, step_ms: 60_000, steps: 3 };
    let out = [("ts", Timestamp), ("job", Text), ("v", Float8)];
    let node = PromNode::Absent { grid, labels: vec![("job".into(), "j".into())] };
    assert_eq!(exec_with(node, &spec, &out, rows.clone()).unwrap(), vec![row(&[&t(120), "j", "1"])]);
    // Two samples at 0 s, none at 120 s: NaN.
    let out = [("ts", Timestamp), ("v", Float8)];
    let got = exec_with(PromNode::Scalar { tags: 1, grid }, &spec, &out, rows).unwrap();
    assert_eq!(got, vec![row(&[&t(0), "NaN"]), row(&[&t(60), "7"]), row(&[&t(120), "NaN"])]);
}

#[test]
fn buckets() {
    let mut b = vec![(0.1, 10.0), (0.5, 20.0), (f64::INFINITY, 20.0)];
    // rank 10 of 20 falls at the top of the first bucket.
    assert_eq!(super::bucket_quantile(0.5, &mut b), 0.1);
    let mut b = vec![(1.0, 0.0), (2.0, 10.0), (f64::INFINITY, 10.0)];
    assert_eq!(super::bucket_quantile(0.5, &mut b), 1.5);
    let mut b = vec![(1.0, 5.0), (2.0, 10.0)];
    assert!(super::bucket_quantile(0.5, &mut b).is_nan());
}

#[test]
fn regression() {
    let (s, i) = super::linear_regression(&[0, 1000, 2000], &[1.0, 3.0, 5.0], 0);
    assert!((s - 2.0).abs() < 1e-12 && (i - 1.0).abs() < 1e-12);
}
