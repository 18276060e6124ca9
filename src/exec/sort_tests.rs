//! `SortExecutor` over a mock child: ASC/DESC, NULLS FIRST/LAST, several
//! keys, top-k, and output sliced to `max_rows`.

use super::SortExecutor;
use crate::exec::mock::*;
use crate::exec::plan::SortKey;
use crate::types::SqlType::*;
use crate::types::Value;

fn input() -> Vec<Vec<Value>> {
    vec![vec![txt("b"), int(2)], vec![txt("a"), null()], vec![null(), int(1)], vec![txt("a"), int(3)], vec![txt("b"), int(1)]]
}

fn key(index: usize, ty: crate::types::SqlType, desc: bool, nulls_first: bool) -> SortKey {
    SortKey { expr: col(index, ty), desc, nulls_first }
}

fn sort(steps: Vec<Step>, keys: Vec<SortKey>, limit: Option<usize>, max_rows: usize) -> Vec<Vec<String>> {
    let cols = columns(&[("k", Text), ("v", Int8)]);
    let mut s = SortExecutor::new(MockExecutor::new(&cols, steps).boxed(), keys, limit, ctx());
    run(&mut s, max_rows).unwrap()
}

#[test]
fn orders_by_keys_with_null_placement_in_every_shape() {
    let junk = [txt("0"), int(0)];
    for steps in shapes(&input(), &junk) {
        // PostgreSQL's default: ASC NULLS LAST.
        assert_eq!(
            sort(steps.clone(), vec![key(0, Text, false, false), key(1, Int8, false, false)], None, 1024),
            rows(&[&["a", "3"], &["a", "NULL"], &["b", "1"], &["b", "2"], &["NULL", "1"]])
        );
        // DESC NULLS FIRST (PostgreSQL's default for DESC).
        assert_eq!(
            sort(steps.clone(), vec![key(0, Text, true, true), key(1, Int8, true, true)], None, 1024),
            rows(&[&["NULL", "1"], &["b", "2"], &["b", "1"], &["a", "NULL"], &["a", "3"]])
        );
        // ASC NULLS FIRST on the second key, DESC NULLS LAST on the first.
        assert_eq!(
            sort(steps.clone(), vec![key(0, Text, true, false), key(1, Int8, false, true)], None, 1024),
            rows(&[&["b", "1"], &["b", "2"], &["a", "NULL"], &["a", "3"], &["NULL", "1"]])
        );
    }
}

#[test]
fn top_k_keeps_the_first_rows() {
    for steps in shapes(&input(), &[txt("0"), int(0)]) {
        // Ties on v = 1 keep no particular order: compare as a set.
        let got = sort(steps.clone(), vec![key(1, Int8, false, false)], Some(2), 1024);
        assert_eq!(sorted(got), rows(&[&["NULL", "1"], &["b", "1"]]));
        let got = sort(steps.clone(), vec![key(1, Int8, true, false)], Some(1), 1024);
        assert_eq!(got, rows(&[&["a", "3"]]));
        assert_eq!(sort(steps, vec![key(1, Int8, false, false)], Some(100), 1024).len(), 5);
    }
}

#[test]
fn output_is_sliced_to_max_rows() {
    let got = sort(vec![Step::dense(input())], vec![key(1, Int8, false, true)], None, 2);
    assert_eq!(got.len(), 5);
    assert_eq!(got[0], vec!["a", "NULL"]);
    let cols = columns(&[("k", Text), ("v", Int8)]);
    let mut s = SortExecutor::new(MockExecutor::new(&cols, vec![Step::dense(input())]).boxed(), vec![], None, ctx());
    let r = crate::exec::BatchExecutor::next_batch(&mut s, 2).unwrap();
    assert_eq!(r.batch.num_rows(), 2);
    assert!(!r.is_drained);
}

#[test]
fn empty_input_gives_no_rows() {
    assert!(sort(vec![Step::dense(vec![])], vec![key(0, Text, false, false)], None, 1024).is_empty());
    assert!(sort(vec![Step::live(input(), vec![])], vec![key(0, Text, false, false)], Some(3), 1024).is_empty());
}

#[test]
fn nan_sorts_above_every_number_and_minus_zero_ties_zero() {
    // PostgreSQL: every NaN is equal and greater than any number; -0 = 0.
    let cols = columns(&[("x", Float8)]);
    let input: Vec<Vec<Value>> = [1.0, -f64::NAN, f64::NAN, f64::NEG_INFINITY, -0.0, 0.0].iter().map(|x| vec![Value::Float(*x)]).collect();
    let mut s =
        SortExecutor::new(MockExecutor::new(&cols, vec![Step::dense(input)]).boxed(), vec![key(0, Float8, false, false)], None, ctx());
    let got: Vec<String> = run(&mut s, 1024).unwrap().into_iter().map(|r| r[0].clone()).collect();
    assert_eq!(got[0], "-Infinity");
    let mut zeros = vec![got[1].clone(), got[2].clone()];
    zeros.sort();
    assert_eq!(zeros, vec!["-0", "0"]);
    assert_eq!(&got[3..], &["1", "NaN", "NaN"]);
}

#[test]
fn top_zero_gives_no_rows() {
    for steps in shapes(&input(), &[txt("0"), int(0)]) {
        assert!(sort(steps, vec![key(1, Int8, false, false)], Some(0), 1024).is_empty());
    }
}

#[test]
fn a_cancel_request_stops_the_sort() {
    let cols = columns(&[("k", Text), ("v", Int8)]);
    let c = ctx();
    c.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut s = SortExecutor::new(MockExecutor::new(&cols, vec![Step::dense(input())]).boxed(), vec![key(1, Int8, false, false)], None, c);
    assert_eq!(run(&mut s, 1024).unwrap_err().kind.sqlstate(), "57014");
}

/// Top-k over an input many times k: the best k rows, ties in input order,
/// as a full sort would give them.
#[test]
fn top_k_streams_a_large_input_and_keeps_ties_in_input_order() {
    let steps: Vec<Step> = (0..40)
        .map(|b| Step::dense((0..1000).map(|i| vec![txt(&format!("r{}", b * 1000 + i)), int(((b * 1000 + i) * 37) % 1009)]).collect()))
        .collect();
    let full = sort(steps.clone(), vec![key(1, Int8, true, false)], None, 100_000);
    for k in [0, 1, 7, 500, 5000] {
        let top = sort(steps.clone(), vec![key(1, Int8, true, false)], Some(k), 1024);
        let v = |r: &[Vec<String>]| r.iter().map(|r| r[1].clone()).collect::<Vec<_>>();
        assert_eq!(v(&top), v(&full[..k]), "k = {k}");
        // Within a value, input order (row names grow with position).
        for w in top.windows(2) {
            if w[0][1] == w[1][1] {
                assert!(w[0][0][1..].parse::<u32>().unwrap() < w[1][0][1..].parse::<u32>().unwrap());
            }
        }
    }
    // Ties (every value appears ~40 times) come out in input order.
    let top = sort(steps, vec![key(1, Int8, false, false)], Some(3), 1024);
    assert_eq!(top, rows(&[&["r0", "0"], &["r1009", "0"], &["r2018", "0"]]));
}
