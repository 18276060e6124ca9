//! `HashAggExecutor` over a mock child: GROUP BY with a NULL group, every
//! aggregate, DISTINCT, FILTER, aggregation without GROUP BY (one row even
//! over no input) and DISTINCT as a grouping without aggregates.

use super::HashAggExecutor;
use crate::exec::expr::{BinOp, Expr};
use crate::exec::mock::*;
use crate::exec::plan::{AggCall, AggFunc, PlanColumn};
use crate::types::SqlType::{self, *};
use crate::types::Value;

fn call(func: AggFunc, args: Vec<Expr>, ty: SqlType) -> AggCall {
    AggCall { func, args, distinct: false, filter: None, ty }
}

fn input() -> Vec<Vec<Value>> {
    vec![
        vec![txt("a"), int(1)],
        vec![txt("a"), int(1)],
        vec![null(), int(2)],
        vec![txt("a"), int(3)],
        vec![null(), null()],
        vec![txt("b"), null()],
    ]
}

/// count(*), count(v), sum(v), avg(v), min(v), max(v), count(DISTINCT v),
/// sum(v) FILTER (WHERE v > 1).
fn calls() -> (Vec<AggCall>, Vec<PlanColumn>) {
    let v = || col(1, Int8);
    let mut distinct = call(AggFunc::Count, vec![v()], Int8);
    distinct.distinct = true;
    let mut filtered = call(AggFunc::Sum, vec![v()], Int8);
    filtered.filter = Some(bin(BinOp::Gt, v(), lit_int(1)));
    let calls = vec![
        call(AggFunc::CountStar, vec![], Int8),
        call(AggFunc::Count, vec![v()], Int8),
        call(AggFunc::Sum, vec![v()], Int8),
        call(AggFunc::Avg, vec![v()], Float8),
        call(AggFunc::Min, vec![v()], Int8),
        call(AggFunc::Max, vec![v()], Int8),
        distinct,
        filtered,
    ];
    let cols = columns(&[
        ("count_star", Int8),
        ("count", Int8),
        ("sum", Int8),
        ("avg", Float8),
        ("min", Int8),
        ("max", Int8),
        ("count_distinct", Int8),
        ("sum_filtered", Int8),
    ]);
    (calls, cols)
}

fn agg(steps: Vec<Step>, group_by: Vec<Expr>, aggs: Vec<AggCall>, out: &[PlanColumn]) -> Vec<Vec<String>> {
    let cols = columns(&[("k", Text), ("v", Int8)]);
    let mut a = HashAggExecutor::new(MockExecutor::new(&cols, steps).boxed(), group_by, aggs, out, ctx());
    run(&mut a, 1024).unwrap()
}

#[test]
fn group_by_with_a_null_group_in_every_shape() {
    let (aggs, agg_cols) = calls();
    let mut out = columns(&[("k", Text)]);
    out.extend(agg_cols);
    // The junk row joins group "a" and would change every aggregate of it.
    for steps in shapes(&input(), &[txt("a"), int(100)]) {
        assert_eq!(
            sorted(agg(steps.clone(), vec![col(0, Text)], aggs.clone(), &out)),
            rows(&[
                &["NULL", "2", "1", "2", "2", "2", "2", "1", "2"],
                &["a", "3", "3", "5", "1.6666666666666667", "1", "3", "2", "3"],
                &["b", "1", "0", "NULL", "NULL", "NULL", "NULL", "0", "NULL"],
            ]),
            "{steps:?}"
        );
    }
}

#[test]
fn without_group_by_in_every_shape() {
    let (aggs, out) = calls();
    for steps in shapes(&input(), &[txt("a"), int(100)]) {
        assert_eq!(agg(steps, vec![], aggs.clone(), &out), rows(&[&["6", "4", "7", "1.75", "1", "3", "3", "5"]]));
    }
}

#[test]
fn no_input_rows() {
    let (aggs, out) = calls();
    // Without GROUP BY: one row, counts zero and the rest NULL.
    for steps in [vec![Step::dense(vec![])], vec![Step::live(input(), vec![]), Step::dense(vec![])]] {
        assert_eq!(agg(steps.clone(), vec![], aggs.clone(), &out), rows(&[&["0", "0", "NULL", "NULL", "NULL", "NULL", "0", "NULL"]]));
        let mut grouped = columns(&[("k", Text)]);
        grouped.extend(out.clone());
        // With GROUP BY: no groups, no rows.
        assert!(agg(steps, vec![col(0, Text)], aggs.clone(), &grouped).is_empty());
    }
}

#[test]
fn group_key_expression_and_several_keys() {
    // GROUP BY v % 2, k: NULL v gives a NULL key, and NULLs group together.
    let key = bin(BinOp::Mod, col(1, Int8), lit_int(2));
    let out = columns(&[("r", Int8), ("k", Text), ("n", Int8)]);
    for steps in shapes(&input(), &[txt("b"), int(1)]) {
        assert_eq!(
            sorted(agg(steps, vec![key.clone(), col(0, Text)], vec![call(AggFunc::CountStar, vec![], Int8)], &out)),
            rows(&[&["0", "NULL", "1"], &["1", "a", "3"], &["NULL", "NULL", "1"], &["NULL", "b", "1"]])
        );
    }
}

#[test]
fn string_bool_and_statistical_aggregates() {
    let cols = columns(&[("k", Text), ("v", Int8), ("b", Bool)]);
    let input = vec![
        vec![txt("x"), int(2), Value::Bool(true)],
        vec![txt("y"), int(4), Value::Bool(false)],
        vec![null(), int(4), null()],
        vec![txt("z"), int(4), Value::Bool(true)],
        vec![txt("w"), int(5), Value::Bool(true)],
        vec![txt("v"), int(7), Value::Bool(true)],
        vec![txt("u"), int(9), Value::Bool(true)],
    ];
    let sep = Expr::lit(txt(","), Text);
    let v = || col(1, Int8);
    let mut distinct_sum = call(AggFunc::Sum, vec![v()], Int8);
    distinct_sum.distinct = true;
    let aggs = vec![
        call(AggFunc::StringAgg, vec![col(0, Text), sep], Text),
        call(AggFunc::BoolAnd, vec![col(2, Bool)], Bool),
        call(AggFunc::BoolOr, vec![col(2, Bool)], Bool),
        call(AggFunc::VarPop, vec![v()], Float8),
        call(AggFunc::StddevPop, vec![v()], Float8),
        call(AggFunc::VarSamp, vec![v()], Float8),
        distinct_sum,
    ];
    let out = columns(&[("s", Text), ("band", Bool), ("bor", Bool), ("vp", Float8), ("sp", Float8), ("vs", Float8), ("ds", Int8)]);
    for steps in shapes(&input, &[txt("JUNK"), int(1000), Value::Bool(false)]) {
        let mut a = HashAggExecutor::new(MockExecutor::new(&cols, steps).boxed(), vec![], aggs.clone(), &out, ctx());
        assert_eq!(
            run(&mut a, 1024).unwrap(),
            rows(&[&["x,y,z,w,v,u", "f", "t", "4.571428571428571", "2.138089935299395", "5.333333333333333", "27"]])
        );
    }
}

#[test]
fn distinct_is_grouping_without_aggregates() {
    let cols = columns(&[("k", Text), ("v", Int8)]);
    for steps in shapes(&input(), &[txt("c"), int(9)]) {
        let mut a = HashAggExecutor::new(MockExecutor::new(&cols, steps).boxed(), vec![col(0, Text), col(1, Int8)], vec![], &cols, ctx());
        assert_eq!(
            sorted(run(&mut a, 1024).unwrap()),
            rows(&[&["NULL", "2"], &["NULL", "NULL"], &["a", "1"], &["a", "3"], &["b", "NULL"]])
        );
    }
}

#[test]
fn output_is_sliced_to_max_rows() {
    let cols = columns(&[("k", Int8)]);
    let input: Vec<Vec<Value>> = (0..2500).map(|i| vec![int(i % 1500)]).collect();
    let mut a = HashAggExecutor::new(MockExecutor::new(&cols, vec![Step::dense(input)]).boxed(), vec![col(0, Int8)], vec![], &cols, ctx());
    let mut sizes = Vec::new();
    loop {
        let r = crate::exec::BatchExecutor::next_batch(&mut a, 1000).unwrap();
        sizes.push(r.batch.num_rows());
        if r.is_drained {
            break;
        }
    }
    assert_eq!(sizes, vec![1000, 500]);
}

#[test]
fn sum_overflow_is_an_error_not_a_wrap() {
    let cols = columns(&[("k", Text), ("v", Int8)]);
    let input = vec![vec![txt("a"), int(i64::MAX)], vec![txt("a"), int(1)]];
    let out = columns(&[("s", Int8)]);
    for group_by in [vec![], vec![col(0, Text)]] {
        let mut o = out.clone();
        if !group_by.is_empty() {
            o.insert(0, PlanColumn::new("k", Text));
        }
        let mut a = HashAggExecutor::new(
            MockExecutor::new(&cols, vec![Step::dense(input.clone())]).boxed(),
            group_by,
            vec![call(AggFunc::Sum, vec![col(1, Int8)], Int8)],
            &o,
            ctx(),
        );
        let e = run(&mut a, 1024).unwrap_err();
        assert_eq!(e.kind.sqlstate(), "22003");
    }
}

#[test]
fn float_keys_group_zero_with_minus_zero_and_nan_with_nan() {
    // PostgreSQL: -0 = 0 and NaN = NaN, so each pair is one group.
    let cols = columns(&[("x", Float8)]);
    let input = vec![vec![Value::Float(0.0)], vec![Value::Float(-0.0)], vec![Value::Float(f64::NAN)], vec![Value::Float(-f64::NAN)]];
    let out = columns(&[("x", Float8), ("n", Int8)]);
    let mut a = HashAggExecutor::new(
        MockExecutor::new(&cols, vec![Step::dense(input.clone())]).boxed(),
        vec![col(0, Float8)],
        vec![call(AggFunc::CountStar, vec![], Int8)],
        &out,
        ctx(),
    );
    assert_eq!(sorted(run(&mut a, 1024).unwrap()), rows(&[&["0", "2"], &["NaN", "2"]]));
    // The same for count(DISTINCT x).
    let mut distinct = call(AggFunc::Count, vec![col(0, Float8)], Int8);
    distinct.distinct = true;
    let mut a = HashAggExecutor::new(
        MockExecutor::new(&cols, vec![Step::dense(input)]).boxed(),
        vec![],
        vec![distinct],
        &columns(&[("n", Int8)]),
        ctx(),
    );
    assert_eq!(run(&mut a, 1024).unwrap(), rows(&[&["2"]]));
}

#[test]
fn min_and_max_put_every_nan_above_all_numbers() {
    let cols = columns(&[("x", Float8)]);
    let input = vec![vec![Value::Float(1.0)], vec![Value::Float(-f64::NAN)], vec![Value::Float(2.0)]];
    let aggs = vec![call(AggFunc::Min, vec![col(0, Float8)], Float8), call(AggFunc::Max, vec![col(0, Float8)], Float8)];
    let mut a = HashAggExecutor::new(
        MockExecutor::new(&cols, vec![Step::dense(input)]).boxed(),
        vec![],
        aggs,
        &columns(&[("min", Float8), ("max", Float8)]),
        ctx(),
    );
    assert_eq!(run(&mut a, 1024).unwrap(), rows(&[&["1", "NaN"]]));
}

#[test]
fn a_cancel_request_stops_the_aggregation() {
    let cols = columns(&[("k", Text), ("v", Int8)]);
    let c = ctx();
    c.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut a = HashAggExecutor::new(
        MockExecutor::new(&cols, vec![Step::dense(input())]).boxed(),
        vec![col(0, Text)],
        vec![call(AggFunc::CountStar, vec![], Int8)],
        &columns(&[("k", Text), ("n", Int8)]),
        c,
    );
    assert_eq!(run(&mut a, 1024).unwrap_err().kind.sqlstate(), "57014");
}

/// A large input (past the point where a helper thread joins in): the
/// parallel partial aggregation merged at the end gives the answer of one
/// thread, groups in the same (first-seen) order.
#[test]
fn parallel_partial_aggregation_matches_one_thread() {
    let cols = columns(&[("k", Text), ("v", Int8)]);
    let steps = || -> Vec<Step> {
        (0..300)
            .map(|b| {
                Step::dense(
                    (0..1000)
                        .map(|i| {
                            let r = b * 1000 + i;
                            let k = if r % 101 == 0 { null() } else { txt(&format!("k{}", (r / 7) % 53)) };
                            let v = if r % 13 == 0 { null() } else { int((r * 7919) % 100_003 - 50_000) };
                            vec![k, v]
                        })
                        .collect(),
                )
            })
            .collect()
    };
    let v = || col(1, Int8);
    let aggs = vec![
        call(AggFunc::CountStar, vec![], Int8),
        call(AggFunc::Count, vec![v()], Int8),
        call(AggFunc::Sum, vec![v()], Int8),
        call(AggFunc::Avg, vec![v()], Float8),
        call(AggFunc::Min, vec![v()], Int8),
        call(AggFunc::Max, vec![v()], Int8),
    ];
    let out = columns(&[("k", Text), ("n", Int8), ("c", Int8), ("s", Int8), ("a", Float8), ("lo", Int8), ("hi", Int8)]);
    let run_with = |parallel: bool, group_by: Vec<Expr>, out: &[PlanColumn]| {
        let mut c = ctx();
        if !parallel {
            c.settings = std::sync::Arc::new([("weir.agg_parallel".to_string(), "off".to_string())].into_iter().collect());
        }
        let mut a = HashAggExecutor::new(MockExecutor::new(&cols, steps()).boxed(), group_by, aggs.clone(), out, c);
        run(&mut a, 1024).unwrap()
    };
    let one = run_with(false, vec![col(0, Text)], &out);
    assert_eq!(one.len(), 54, "53 keys and NULL");
    assert_eq!(run_with(true, vec![col(0, Text)], &out), one);
    let simple = &out[1..];
    let one = run_with(false, vec![], simple);
    assert_eq!(one[0][0], "300000");
    assert_eq!(run_with(true, vec![], simple), one);
}

/// Rows in long runs of one group (a series' rows by time bucket) are folded
/// run by run; the answer is the one of the row-by-row loop to the bit: the
/// same rows with the groups interleaved (runs of one row, so the per-row
/// path) and each group's rows in the same order. Groups recur across runs
/// and batches; NaN, -0.0, an integer overflow-free sum and timestamps-like
/// integers included.
#[test]
fn runs_of_one_group_fold_as_the_row_loop_does() {
    let cols = columns(&[("k", Text), ("x", Float8), ("i", Int8)]);
    let float = |g: usize, j: usize| match (g, j) {
        (0, 7) => f64::NAN,
        (1, 3) => -0.0,
        _ => (g as f64 + 1.0) * 0.1 + (j as f64) * 1e-3 + 1e15 * ((j % 3) as f64),
    };
    let row = |g: usize, j: usize| vec![txt(["a", "b", "c"][g]), Value::Float(float(g, j)), int((g * 1000 + j * 7) as i64 % 97 - 40)];
    // Runs: a×12, b×10, a×8 | c×9, b×6, a×5 (two batches).
    let runs: [&[(usize, usize)]; 2] = [&[(0, 12), (1, 10), (0, 8)], &[(2, 9), (1, 6), (0, 5)]];
    let mut next = [0usize; 3];
    let mut per_group: Vec<Vec<Vec<Value>>> = vec![vec![]; 3];
    let mut run_steps = vec![];
    for batch in runs {
        let mut rows_b = vec![];
        for &(g, len) in batch {
            for _ in 0..len {
                let r = row(g, next[g]);
                next[g] += 1;
                per_group[g].push(r.clone());
                rows_b.push(r);
            }
        }
        run_steps.push(Step::dense(rows_b));
    }
    // The same rows, groups interleaved round-robin, one batch.
    let mut interleaved = vec![];
    let longest = per_group.iter().map(|g| g.len()).max().unwrap();
    for j in 0..longest {
        for g in &per_group {
            if let Some(r) = g.get(j) {
                interleaved.push(r.clone());
            }
        }
    }
    let (x, i) = (|| col(1, Float8), || col(2, Int8));
    let aggs = vec![
        call(AggFunc::CountStar, vec![], Int8),
        call(AggFunc::Count, vec![x()], Int8),
        call(AggFunc::Sum, vec![x()], Float8),
        call(AggFunc::Avg, vec![x()], Float8),
        call(AggFunc::Min, vec![x()], Float8),
        call(AggFunc::Max, vec![x()], Float8),
        call(AggFunc::Sum, vec![i()], Int8),
        call(AggFunc::Min, vec![i()], Int8),
        call(AggFunc::Max, vec![i()], Int8),
    ];
    let out = columns(&[
        ("k", Text),
        ("n", Int8),
        ("c", Int8),
        ("s", Float8),
        ("a", Float8),
        ("mn", Float8),
        ("mx", Float8),
        ("si", Int8),
        ("mni", Int8),
        ("mxi", Int8),
    ]);
    let go = |steps: Vec<Step>| {
        let mut a = HashAggExecutor::new(MockExecutor::new(&cols, steps).boxed(), vec![col(0, Text)], aggs.clone(), &out, ctx());
        sorted(run(&mut a, 1024).unwrap())
    };
    let by_runs = go(run_steps);
    assert_eq!(by_runs, go(vec![Step::dense(interleaved)]));
    // Spot checks: counts, the NaN above all numbers, integer sums.
    let sum_i = |g: usize| per_group[g].iter().map(|r| if let Value::Int(v) = r[2] { v } else { 0 }).sum::<i64>().to_string();
    assert_eq!(by_runs[0][1], "25");
    assert_eq!(by_runs[0][6], "NaN");
    assert_eq!(by_runs[1][1], "16");
    assert_eq!(by_runs[2][1], "9");
    for g in 0..3 {
        assert_eq!(by_runs[g][7], sum_i(g));
    }
}
