//! `SelectionExecutor` over a mock child: the predicate's true rows survive
//! (NULL and false do not), whatever the batch boundaries and live rows.

use super::SelectionExecutor;
use crate::exec::expr::{BinOp, Expr};
use crate::exec::mock::*;
use crate::exec::BatchExecutor;
use crate::types::SqlType::*;

fn input() -> Vec<Vec<crate::types::Value>> {
    vec![vec![txt("a"), int(1)], vec![txt("b"), int(5)], vec![txt("c"), null()], vec![txt("d"), int(3)]]
}

#[test]
fn keeps_rows_where_predicate_is_true_in_every_shape() {
    let cols = columns(&[("k", Text), ("v", Int8)]);
    // The junk row would pass the predicate: it shows up if live rows are ignored.
    for steps in shapes(&input(), &[txt("junk"), int(100)]) {
        let pred = bin(BinOp::Gt, col(1, Int8), lit_int(2));
        let mut sel = SelectionExecutor::new(MockExecutor::new(&cols, steps.clone()).boxed(), pred, ctx());
        assert_eq!(run(&mut sel, 1024).unwrap(), rows(&[&["b", "5"], &["d", "3"]]), "{steps:?}");
    }
}

#[test]
fn null_predicate_drops_the_row() {
    let cols = columns(&[("k", Text), ("v", Int8)]);
    let pred = Expr::IsNull { expr: Box::new(col(1, Int8)), negated: true };
    let mut sel = SelectionExecutor::new(MockExecutor::new(&cols, vec![Step::dense(input())]).boxed(), pred, ctx());
    assert_eq!(run(&mut sel, 1024).unwrap().len(), 3);
    let pred = bin(BinOp::Eq, col(1, Int8), Expr::lit(null(), Int8));
    let mut sel = SelectionExecutor::new(MockExecutor::new(&cols, vec![Step::dense(input())]).boxed(), pred, ctx());
    assert!(run(&mut sel, 1024).unwrap().is_empty());
}

#[test]
fn narrows_live_rows_without_copying_columns() {
    let cols = columns(&[("k", Text), ("v", Int8)]);
    let pred = bin(BinOp::Lt, col(1, Int8), lit_int(4));
    let mut sel = SelectionExecutor::new(MockExecutor::new(&cols, vec![Step::dense(input())]).boxed(), pred, ctx());
    let r = sel.next_batch(1024).unwrap();
    assert!(r.is_drained);
    assert_eq!(r.batch.num_rows(), 4, "columns are passed through whole");
    assert_eq!(r.logical_rows.unwrap().values().to_vec(), vec![0, 3]);
    // All rows alive: no live-row list at all.
    let pred = Expr::lit(crate::types::Value::Bool(true), Bool);
    let mut sel = SelectionExecutor::new(MockExecutor::new(&cols, vec![Step::dense(input())]).boxed(), pred, ctx());
    assert!(sel.next_batch(1024).unwrap().logical_rows.is_none());
}

#[test]
fn stacked_selections_compose() {
    let cols = columns(&[("k", Text), ("v", Int8)]);
    for steps in shapes(&input(), &[txt("junk"), int(4)]) {
        let inner = SelectionExecutor::new(MockExecutor::new(&cols, steps).boxed(), bin(BinOp::Gt, col(1, Int8), lit_int(1)), ctx());
        let mut outer = SelectionExecutor::new(Box::new(inner), bin(BinOp::Lt, col(1, Int8), lit_int(5)), ctx());
        assert_eq!(run(&mut outer, 1024).unwrap(), rows(&[&["d", "3"]]));
    }
}
