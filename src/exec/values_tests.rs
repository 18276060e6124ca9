//! `ValuesExecutor`, `MemoryExecutor` and `SeriesExecutor`: rows of
//! expressions, replayed batches, and generate_series in chunks of
//! `max_rows`.

use super::{MemoryExecutor, SeriesExecutor, ValuesExecutor};
use crate::exec::expr::{BinOp, Expr};
use crate::exec::mock::*;
use crate::types::SqlType::*;

#[test]
fn values_rows_are_evaluated_and_cast_to_the_column_types() {
    let out = columns(&[("a", Int8), ("b", Text)]);
    let rows_in = vec![
        vec![Expr::lit(int(1), Int4), Expr::lit(txt("x"), Text)],
        vec![bin(BinOp::Add, lit_int(2), lit_int(3)), Expr::lit(null(), Unknown)],
    ];
    let mut v = ValuesExecutor::new(rows_in, &out, ctx());
    assert_eq!(run(&mut v, 1024).unwrap(), rows(&[&["1", "x"], &["5", "NULL"]]));
    let mut v = ValuesExecutor::new(vec![], &out, ctx());
    assert!(run(&mut v, 1024).unwrap().is_empty());
}

#[test]
fn memory_replays_batches_under_the_plan_schema() {
    let cols = columns(&[("a", Int8)]);
    let b1 = batch(&cols, &[vec![int(1)], vec![int(2)]]);
    let b2 = batch(&cols, &[vec![int(3)]]);
    let renamed = columns(&[("renamed", Int8)]);
    let mut m = MemoryExecutor::new(vec![b1, b2], &renamed);
    let r = crate::exec::BatchExecutor::next_batch(&mut m, 1024).unwrap();
    assert_eq!(r.batch.schema().field(0).name(), "renamed");
    assert!(!r.is_drained);
    let mut m = MemoryExecutor::new(vec![batch(&cols, &[vec![int(1)]]), batch(&cols, &[vec![int(3)]])], &renamed);
    assert_eq!(run(&mut m, 1024).unwrap(), rows(&[&["1"], &["3"]]));
    let mut m = MemoryExecutor::new(vec![], &renamed);
    assert!(run(&mut m, 1024).unwrap().is_empty());
}

fn series(args: Vec<Expr>, max_rows: usize) -> crate::error::Result<Vec<Vec<String>>> {
    let out = columns(&[("generate_series", Int8)]);
    let mut s = SeriesExecutor::new(args, &out, ctx());
    run(&mut s, max_rows)
}

fn ints(v: impl IntoIterator<Item = i64>) -> Vec<Vec<String>> {
    v.into_iter().map(|i| vec![i.to_string()]).collect()
}

#[test]
fn generate_series_steps_and_bounds() {
    assert_eq!(series(vec![lit_int(1), lit_int(5)], 1024).unwrap(), ints(1..=5));
    assert_eq!(series(vec![lit_int(1), lit_int(10), lit_int(4)], 1024).unwrap(), ints([1, 5, 9]));
    assert_eq!(series(vec![lit_int(5), lit_int(1), lit_int(-2)], 1024).unwrap(), ints([5, 3, 1]));
    assert!(series(vec![lit_int(5), lit_int(1)], 1024).unwrap().is_empty());
    assert!(series(vec![Expr::lit(null(), Int8), lit_int(1)], 1024).unwrap().is_empty());
    // Stops at the end of int8 instead of overflowing.
    assert_eq!(series(vec![lit_int(i64::MAX - 1), lit_int(i64::MAX)], 1024).unwrap(), ints([i64::MAX - 1, i64::MAX]));
    let e = series(vec![lit_int(1), lit_int(5), lit_int(0)], 1024).unwrap_err();
    assert_eq!(e.kind.sqlstate(), "22023");
}

#[test]
fn generate_series_honours_max_rows() {
    let out = columns(&[("generate_series", Int8)]);
    let mut s = SeriesExecutor::new(vec![lit_int(1), lit_int(2500)], &out, ctx());
    let mut sizes = Vec::new();
    loop {
        let r = crate::exec::BatchExecutor::next_batch(&mut s, 1024).unwrap();
        sizes.push(r.batch.num_rows());
        if r.is_drained {
            break;
        }
    }
    assert_eq!(sizes, vec![1024, 1024, 452]);
    // An exact multiple of max_rows drains with its last full batch.
    assert_eq!(series(vec![lit_int(1), lit_int(8)], 4).unwrap(), ints(1..=8));
    let mut s = SeriesExecutor::new(vec![lit_int(1), lit_int(8)], &out, ctx());
    let first = crate::exec::BatchExecutor::next_batch(&mut s, 4).unwrap();
    assert!(!first.is_drained);
    let second = crate::exec::BatchExecutor::next_batch(&mut s, 4).unwrap();
    assert_eq!(second.batch.num_rows(), 4);
    assert!(second.is_drained);
}
