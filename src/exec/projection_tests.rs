//! `ProjectionExecutor` over a mock child: expressions over the live rows
//! only, declared output types, zero-column projections keep the row count.

use super::ProjectionExecutor;
use crate::exec::expr::BinOp;
use crate::exec::mock::*;
use crate::exec::BatchExecutor;
use crate::types::SqlType::*;

#[test]
fn computes_expressions_over_live_rows_in_every_shape() {
    let cols = columns(&[("k", Text), ("v", Int4)]);
    let input = vec![vec![txt("a"), int(1)], vec![txt("b"), null()], vec![txt("c"), int(-7)]];
    // A junk value that overflows int4 when doubled: evaluating dead rows fails.
    for steps in shapes(&input, &[txt("junk"), int(i32::MAX as i64)]) {
        let exprs = vec![col(0, Text), bin(BinOp::Mul, col(1, Int4), crate::exec::expr::Expr::lit(int(2), Int4))];
        let out = columns(&[("k", Text), ("double", Int4)]);
        let mut p = ProjectionExecutor::new(MockExecutor::new(&cols, steps.clone()).boxed(), exprs, &out, ctx());
        assert_eq!(run(&mut p, 1024).unwrap(), rows(&[&["a", "2"], &["b", "NULL"], &["c", "-14"]]), "{steps:?}");
    }
}

#[test]
fn output_is_cast_to_the_declared_type() {
    let cols = columns(&[("v", Int4)]);
    let out = columns(&[("v", Int8)]);
    let mut p =
        ProjectionExecutor::new(MockExecutor::new(&cols, vec![Step::dense(vec![vec![int(3)]])]).boxed(), vec![col(0, Int4)], &out, ctx());
    let r = p.next_batch(1024).unwrap();
    assert_eq!(r.batch.column(0).data_type(), &arrow::datatypes::DataType::Int64);
}

#[test]
fn zero_columns_keep_the_row_count() {
    let cols = columns(&[("v", Int8)]);
    let input = vec![vec![int(1)], vec![int(2)], vec![int(3)]];
    for steps in shapes(&input, &[int(0)]) {
        let mut p = ProjectionExecutor::new(MockExecutor::new(&cols, steps).boxed(), vec![], &[], ctx());
        let got = run(&mut p, 1024).unwrap();
        assert_eq!(got.len(), 3);
        assert!(got.iter().all(|r| r.is_empty()));
    }
}
