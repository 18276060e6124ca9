use std::ops::Bound;
use std::sync::Arc;

use super::*;
use crate::types::Value;

fn open(dir: &std::path::Path) -> Arc<dyn StateKv> {
    Arc::new(SledStateKv::open(&dir.join("state")).unwrap())
}

fn row(k: i64, v: &str) -> Row {
    vec![Value::Int(k), Value::Text(v.into())]
}

/// Seed 003's sequence: insert 1, insert 2, delete 2, insert 3, commit,
/// update 3 → get 1 = row, get 2 = none, get 3 = the updated row.
#[test]
fn seed_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = StateStore::open(open(dir.path()), "f").unwrap();
    let mut t = store.table(1, vec![0]);
    t.insert_row(row(1, "a"));
    t.insert_row(row(2, "b"));
    t.delete_row(&row(2, "b"));
    t.insert_row(row(3, "c"));
    store.commit(1, &mut [&mut t], vec![]).unwrap();
    t.update_row(&row(3, "c"), row(3, "c2"));
    assert_eq!(t.get_row(&[Value::Int(1)]).unwrap(), Some(row(1, "a")));
    assert_eq!(t.get_row(&[Value::Int(2)]).unwrap(), None);
    assert_eq!(t.get_row(&[Value::Int(3)]).unwrap(), Some(row(3, "c2")));
}

/// Scans merge the mem table over the store (newest wins, tombstones hide)
/// and follow the SQL order of the key (negative numbers, NULL last).
#[test]
fn merged_scans_in_key_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = StateStore::open(open(dir.path()), "f").unwrap();
    let mut t = store.table(7, vec![0, 1]);
    for (g, k) in [("a", -5), ("a", 3), ("a", 10), ("b", 1), ("a", -300)] {
        t.insert_row(vec![Value::Text(g.into()), Value::Int(k)]);
    }
    store.commit(1, &mut [&mut t], vec![]).unwrap();
    // This epoch: delete a committed row, add two, overwrite one.
    t.delete_row(&[Value::Text("a".into()), Value::Int(3)]);
    t.insert_row(vec![Value::Text("a".into()), Value::Int(4)]);
    t.insert_row(vec![Value::Text("a".into()), Value::Null]);
    t.insert_row(vec![Value::Text("a".into()), Value::Int(10)]);
    let keys = |rows: Vec<Row>| rows.into_iter().map(|r| r[1].clone()).collect::<Vec<_>>();
    let a = [Value::Text("a".into())];
    assert_eq!(
        keys(t.scan(&a, (Bound::Unbounded, Bound::Unbounded), None).unwrap()),
        vec![Value::Int(-300), Value::Int(-5), Value::Int(4), Value::Int(10), Value::Null]
    );
    assert_eq!(
        keys(t.scan(&a, (Bound::Excluded(&Value::Int(-5)), Bound::Included(&Value::Int(10))), None).unwrap()),
        vec![Value::Int(4), Value::Int(10)]
    );
    assert_eq!(
        keys(t.scan(&a, (Bound::Included(&Value::Int(-5)), Bound::Excluded(&Value::Int(10))), None).unwrap()),
        vec![Value::Int(-5), Value::Int(4)]
    );
    // The head of the range only (an extreme).
    assert_eq!(keys(t.scan(&a, (Bound::Unbounded, Bound::Unbounded), Some(1)).unwrap()), vec![Value::Int(-300)]);
    // Another prefix, another table of the namespace: not mixed in.
    let other = store.table(8, vec![0]);
    assert!(other.scan(&[], (Bound::Unbounded, Bound::Unbounded), None).unwrap().is_empty());
    assert_eq!(t.scan(&[Value::Text("b".into())], (Bound::Unbounded, Bound::Unbounded), None).unwrap().len(), 1);
}

/// What was committed survives a reopen, with the epoch and meta records;
/// what was not is gone; epochs only move forward.
#[test]
fn commit_and_recovery() {
    let dir = tempfile::tempdir().unwrap();
    {
        let kv = open(dir.path());
        let mut store = StateStore::open(kv.clone(), "f").unwrap();
        assert_eq!(store.epoch(), 0);
        let mut t = store.table(1, vec![0]);
        t.insert_row(row(1, "a"));
        store.commit(5, &mut [&mut t], vec![("pos".into(), Some(b"42".to_vec()))]).unwrap();
        t.insert_row(row(2, "uncommitted"));
        // Another namespace is independent.
        let mut g = StateStore::open(kv, "g").unwrap();
        let mut u = g.table(1, vec![0]);
        u.insert_row(row(9, "z"));
        g.commit(1, &mut [&mut u], vec![]).unwrap();
    }
    let kv = open(dir.path());
    let store = StateStore::open(kv.clone(), "f").unwrap();
    assert_eq!(store.epoch(), 5);
    assert_eq!(store.get_meta("pos").unwrap(), Some(b"42".to_vec()));
    let t = store.table(1, vec![0]);
    assert_eq!(t.scan(&[], (Bound::Unbounded, Bound::Unbounded), None).unwrap(), vec![row(1, "a")]);
    assert_eq!(t.stats().unwrap().0, 1);
    StateStore::destroy(kv.as_ref(), &no_cache(), "f").unwrap();
    let store = StateStore::open(kv.clone(), "f").unwrap();
    assert_eq!(store.epoch(), 0);
    let g = StateStore::open(kv, "g").unwrap();
    assert_eq!(g.table(1, vec![0]).get_row(&[Value::Int(9)]).unwrap(), Some(row(9, "z")));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut g = g;
        g.commit(1, &mut [], vec![])
    }));
    assert!(r.is_err(), "an epoch that does not move forward is refused");
}

/// The cache answers reads of cached groups (a second read of a join key
/// is a hit), sees committed writes, never uncommitted ones, stays under its
/// budget, and forgets a destroyed namespace.
#[test]
fn cache_in_front_of_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let kv = open(dir.path());
    let cache = Arc::new(StateCache::new(4096));
    let mut store = StateStore::open_cached(kv.clone(), cache.clone(), "f").unwrap();
    // An arrangement keyed by (join key, row), cached by the join key.
    let mut t = store.table(1, vec![0, 1]).cached_by(1);
    t.insert_row(row(1, "a"));
    t.insert_row(row(1, "b"));
    t.insert_row(row(2, "c"));
    store.commit(1, &mut [&mut t], vec![]).unwrap();
    let all = (Bound::Unbounded, Bound::Unbounded);
    assert_eq!(t.scan(&[Value::Int(1)], all, None).unwrap(), vec![row(1, "a"), row(1, "b")]);
    assert_eq!(cache.stats().misses, 1);
    assert_eq!(t.scan(&[Value::Int(1)], all, None).unwrap(), vec![row(1, "a"), row(1, "b")]);
    assert_eq!(t.get_row(&[Value::Int(1), Value::Text("b".into())]).unwrap(), Some(row(1, "b")));
    assert_eq!(cache.stats().hits, 2);
    // A key with no rows is cached as empty.
    assert!(t.scan(&[Value::Int(7)], all, None).unwrap().is_empty());
    assert!(t.get_row(&[Value::Int(7), Value::Text("x".into())]).unwrap().is_none());
    assert_eq!((cache.stats().hits, cache.stats().misses), (3, 2));
    // Uncommitted writes are merged over the cache, committed ones update it.
    t.delete_row(&row(1, "a"));
    t.insert_row(row(7, "x"));
    assert_eq!(t.scan(&[Value::Int(1)], all, None).unwrap(), vec![row(1, "b")]);
    assert_eq!(t.scan(&[Value::Int(7)], all, None).unwrap(), vec![row(7, "x")]);
    t.discard();
    assert_eq!(t.scan(&[Value::Int(1)], all, None).unwrap(), vec![row(1, "a"), row(1, "b")]);
    t.delete_row(&row(1, "a"));
    t.insert_row(row(7, "x"));
    store.commit(2, &mut [&mut t], vec![]).unwrap();
    let hits = cache.stats().hits;
    assert_eq!(t.scan(&[Value::Int(1)], all, None).unwrap(), vec![row(1, "b")]);
    assert_eq!(t.get_row(&[Value::Int(7), Value::Text("x".into())]).unwrap(), Some(row(7, "x")));
    assert_eq!(cache.stats().hits, hits + 2);
    // The cache agrees with a store read without it.
    let cold = StateStore::open_cached(kv.clone(), no_cache(), "f").unwrap().table(1, vec![0, 1]).cached_by(1);
    for k in [1, 2, 7] {
        assert_eq!(cold.scan(&[Value::Int(k)], all, None).unwrap(), t.scan(&[Value::Int(k)], all, None).unwrap());
    }
    // The budget holds: many groups push the oldest out.
    for k in 100..300 {
        t.insert_row(row(k, "filler"));
    }
    store.commit(3, &mut [&mut t], vec![]).unwrap();
    for k in 100..300 {
        assert_eq!(t.scan(&[Value::Int(k)], all, None).unwrap(), vec![row(k, "filler")]);
        assert!(cache.stats().bytes <= 4096);
    }
    assert!(cache.stats().groups < 200);
    StateStore::destroy(kv.as_ref(), &cache, "f").unwrap();
    assert_eq!(cache.stats().groups, 0);
    assert_eq!(cache.stats().bytes, 0);
}

/// Encodings round-trip and their byte order is the SQL order.
#[test]
fn encoding_order() {
    let ordered = [
        vec![Value::Int(i64::MIN), Value::Int(-1), Value::Int(0), Value::Int(1), Value::Int(i64::MAX), Value::Null],
        vec![
            Value::Float(f64::NEG_INFINITY),
            Value::Float(-2.5),
            Value::Float(-0.0),
            Value::Float(1e-300),
            Value::Float(7.0),
            Value::Float(f64::INFINITY),
            Value::Float(f64::NAN),
        ],
        vec![
            Value::Text("".into()),
            Value::Text("a".into()),
            Value::Text("a\0".into()),
            Value::Text("a\0b".into()),
            Value::Text("ab".into()),
        ],
        vec![Value::Timestamp(-10), Value::Timestamp(0), Value::Timestamp(1_700_000_000_000_000)],
        vec![
            Value::Interval(Interval { months: 0, days: 29, micros: 0 }),
            Value::Interval(Interval { months: 1, days: 0, micros: 0 }),
            Value::Interval(Interval { months: 0, days: 30, micros: 1 }),
        ],
        vec![Value::Bool(false), Value::Bool(true)],
        vec![Value::Date(-1), Value::Date(3)],
    ];
    for vals in ordered {
        let enc: Vec<Vec<u8>> = vals.iter().map(|v| encode_row(std::slice::from_ref(v))).collect();
        for w in enc.windows(2) {
            assert!(w[0] <= w[1], "{vals:?}");
        }
        for (v, e) in vals.iter().zip(&enc) {
            let back = decode_row(e).unwrap();
            match (v, &back[0]) {
                (Value::Float(a), Value::Float(b)) if a.is_nan() => assert!(b.is_nan()),
                (Value::Float(a), Value::Float(b)) => assert_eq!(a.abs(), b.abs()),
                _ => assert_eq!(&back[0], v),
            }
        }
    }
    // Composite keys: the first column decides, then the next.
    let a = encode_row(&[Value::Text("a".into()), Value::Int(9)]);
    let b = encode_row(&[Value::Text("ab".into()), Value::Int(-9)]);
    assert!(a < b);
    assert!(decode_row(&[0x99]).is_err());
}
