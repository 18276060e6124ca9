//! `WindowExecutor` over a mock child: ranking, offsets, first/last value
//! and aggregates over PostgreSQL's default frame (peers included) and
//! ROWS n PRECEDING, per partition (NULL is a partition of its own); rows
//! come out in the last call's sort order.

use super::WindowExecutor;
use crate::exec::expr::Expr;
use crate::exec::mock::*;
use crate::exec::plan::{AggFunc, PlanColumn, SortKey, WindowCall, WindowFrame, WindowFunc};
use crate::types::SqlType::*;
use crate::types::Value;

fn input() -> Vec<Vec<Value>> {
    vec![
        vec![txt("a"), int(2), int(30)],
        vec![txt("b"), int(1), int(5)],
        vec![txt("a"), int(1), int(10)],
        vec![null(), int(3), int(7)],
        vec![txt("a"), int(4), null()],
        vec![txt("a"), int(2), int(20)],
    ]
}

fn asc(index: usize) -> SortKey {
    SortKey { expr: col(index, Int8), desc: false, nulls_first: false }
}

fn call(func: WindowFunc, args: Vec<Expr>, order_by: Vec<SortKey>, frame: WindowFrame) -> WindowCall {
    WindowCall { func, args, partition_by: vec![col(0, Text)], order_by, frame, ty: Int8 }
}

#[test]
fn window_functions_in_every_shape() {
    let cols = columns(&[("p", Text), ("o", Int8), ("v", Int8)]);
    let v = || col(2, Int8);
    // Ties on o are broken by v where the answer depends on the order of peers.
    let ov = || vec![asc(1), asc(2)];
    let calls = vec![
        call(WindowFunc::RowNumber, vec![], ov(), WindowFrame::Default),
        call(WindowFunc::Rank, vec![], vec![asc(1)], WindowFrame::Default),
        call(WindowFunc::DenseRank, vec![], vec![asc(1)], WindowFrame::Default),
        call(WindowFunc::Agg(AggFunc::Sum), vec![v()], vec![asc(1)], WindowFrame::Default),
        call(WindowFunc::Lag, vec![v()], ov(), WindowFrame::Default),
        call(WindowFunc::Lead, vec![v()], ov(), WindowFrame::Default),
        call(WindowFunc::Lag, vec![v(), lit_int(2), lit_int(-1)], ov(), WindowFrame::Default),
        call(WindowFunc::FirstValue, vec![v()], ov(), WindowFrame::Default),
        call(WindowFunc::LastValue, vec![v()], ov(), WindowFrame::Default),
        call(WindowFunc::Agg(AggFunc::CountStar), vec![], ov(), WindowFrame::RowsPreceding(Some(1))),
        call(WindowFunc::Agg(AggFunc::Sum), vec![v()], vec![], WindowFrame::Default),
        call(WindowFunc::Agg(AggFunc::Max), vec![v()], ov(), WindowFrame::RowsPreceding(None)),
    ];
    let mut out = cols.clone();
    out.extend((0..calls.len()).map(|i| PlanColumn::new(format!("w{i}"), Int8)));
    // rn rank dense sum lag lead lag2 first last count2 total runmax
    let want = rows(&[
        &["a", "2", "30", "3", "2", "2", "60", "20", "NULL", "10", "10", "30", "2", "60", "30"],
        &["b", "1", "5", "1", "1", "1", "5", "NULL", "NULL", "-1", "5", "5", "1", "5", "5"],
        &["a", "1", "10", "1", "1", "1", "10", "NULL", "20", "-1", "10", "10", "1", "60", "10"],
        &["NULL", "3", "7", "1", "1", "1", "7", "NULL", "NULL", "-1", "7", "7", "1", "7", "7"],
        &["a", "4", "NULL", "4", "4", "3", "60", "30", "NULL", "20", "10", "NULL", "2", "60", "30"],
        &["a", "2", "20", "2", "2", "2", "60", "10", "30", "-1", "10", "20", "2", "60", "20"],
    ]);
    for steps in shapes(&input(), &[txt("a"), int(0), int(1000)]) {
        let mut w = WindowExecutor::new(MockExecutor::new(&cols, steps.clone()).boxed(), calls.clone(), &out, ctx());
        assert_eq!(sorted(run(&mut w, 4).unwrap()), sorted(want.clone()), "{steps:?}");
    }
}

#[test]
fn empty_input_gives_no_rows() {
    let cols = columns(&[("p", Text), ("o", Int8), ("v", Int8)]);
    let mut out = cols.clone();
    out.push(PlanColumn::new("rn", Int8));
    let calls = vec![call(WindowFunc::RowNumber, vec![], vec![asc(1)], WindowFrame::Default)];
    for steps in [vec![Step::dense(vec![])], vec![Step::live(input(), vec![])]] {
        let mut w = WindowExecutor::new(MockExecutor::new(&cols, steps).boxed(), calls.clone(), &out, ctx());
        assert!(run(&mut w, 1024).unwrap().is_empty());
    }
}

#[test]
fn minus_zero_is_in_the_partition_of_zero() {
    let cols = columns(&[("x", Float8)]);
    let input = vec![vec![Value::Float(0.0)], vec![Value::Float(-0.0)], vec![Value::Float(f64::NAN)], vec![Value::Float(-f64::NAN)]];
    let mut out = cols.clone();
    out.push(PlanColumn::new("n", Int8));
    let calls = vec![WindowCall {
        func: WindowFunc::Agg(AggFunc::CountStar),
        args: vec![],
        partition_by: vec![col(0, Float8)],
        order_by: vec![],
        frame: WindowFrame::Default,
        ty: Int8,
    }];
    let mut w = WindowExecutor::new(MockExecutor::new(&cols, vec![Step::dense(input)]).boxed(), calls, &out, ctx());
    let got: Vec<String> = run(&mut w, 1024).unwrap().into_iter().map(|r| r[1].clone()).collect();
    assert_eq!(got, vec!["2", "2", "2", "2"]);
}

#[test]
fn output_comes_in_the_sort_order_across_batches_larger_than_max_rows() {
    // 2500 rows in three partitions, pulled 1000 at a time.
    let cols = columns(&[("p", Int8), ("o", Int8)]);
    let input: Vec<Vec<Value>> = (0..2500).map(|i| vec![int(i % 3), int(i)]).collect();
    let steps: Vec<Step> = input.chunks(700).map(|c| Step::dense(c.to_vec())).collect();
    let mut out = cols.clone();
    out.push(PlanColumn::new("rn", Int8));
    let calls = vec![WindowCall {
        func: WindowFunc::RowNumber,
        args: vec![],
        partition_by: vec![col(0, Int8)],
        order_by: vec![asc(1)],
        frame: WindowFrame::Default,
        ty: Int8,
    }];
    let mut w = WindowExecutor::new(MockExecutor::new(&cols, steps).boxed(), calls, &out, ctx());
    let got = run(&mut w, 1000).unwrap();
    assert_eq!(got.len(), 2500);
    // Partition 0's rows in o order, then 1's, then 2's, as PostgreSQL's sort leaves them.
    let want: Vec<(i64, i64)> = (0..3).flat_map(|p| (0..2500).filter(move |i| i % 3 == p).map(move |i| (p, i))).collect();
    for (k, (r, (p, o))) in got.iter().zip(&want).enumerate() {
        assert_eq!((r[0].clone(), r[1].clone()), (p.to_string(), o.to_string()), "row {k}");
        assert_eq!(r[2], (o / 3 + 1).to_string(), "row {k}");
    }
}

#[test]
fn each_call_sorts_from_the_previous_order() {
    // ORDER BY o DESC, then ORDER BY o: ties on o keep the order the first sort gave them
    // (inputs under 7 rows are insertion-sorted, so stable here).
    let cols = columns(&[("o", Int8), ("v", Int8)]);
    let input = vec![vec![int(1), int(1)], vec![int(2), int(2)], vec![int(1), int(3)], vec![int(2), int(4)]];
    let mut out = cols.clone();
    out.push(PlanColumn::new("a", Int8));
    out.push(PlanColumn::new("b", Int8));
    let rn = |desc: bool| WindowCall {
        func: WindowFunc::RowNumber,
        args: vec![],
        partition_by: vec![],
        order_by: vec![SortKey { expr: col(0, Int8), desc, nulls_first: desc }],
        frame: WindowFrame::Default,
        ty: Int8,
    };
    let mut w = WindowExecutor::new(MockExecutor::new(&cols, vec![Step::dense(input)]).boxed(), vec![rn(true), rn(false)], &out, ctx());
    let got = run(&mut w, 1024).unwrap();
    assert_eq!(got, rows(&[&["1", "1", "3", "1"], &["1", "3", "4", "2"], &["2", "2", "1", "3"], &["2", "4", "2", "4"]]));
}
