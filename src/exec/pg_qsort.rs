//! PostgreSQL's in-memory sort algorithm (its `sort_template.h`: Bentley and McIlroy's
//! quicksort with a median-of-three pivot, a ninther above 40 elements, a presorted check
//! and an insertion sort below 7 elements). It is not stable: rows that compare equal come
//! out in an order that depends on the input order and on this exact algorithm. Sorting
//! with it (sorts, window partitions) gives peers the order PostgreSQL gives them from the
//! same input, which its answers show (`last_value` over peers, `row_number` of ties, the
//! order of tied rows under ORDER BY). Sorting already ordered input costs one pass and
//! leaves it as it is, as PostgreSQL does when a plan's input needs no sort.
//!
//! Imports nothing from the crate.

use std::cmp::Ordering;

/// Sort `v` by `cmp` the way PostgreSQL's qsort does.
pub(crate) fn pg_qsort<T, F: FnMut(&T, &T) -> Ordering>(v: &mut [T], mut cmp: F) {
    sort(v, &mut cmp);
}

/// The position of the median of three elements.
fn med3<T, F: FnMut(&T, &T) -> Ordering>(v: &[T], a: usize, b: usize, c: usize, cmp: &mut F) -> usize {
    if cmp(&v[a], &v[b]).is_lt() {
        if cmp(&v[b], &v[c]).is_lt() {
            b
        } else if cmp(&v[a], &v[c]).is_lt() {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]).is_gt() {
        b
    } else if cmp(&v[a], &v[c]).is_lt() {
        a
    } else {
        c
    }
}

/// Swap the runs `v[a..a + n]` and `v[b..b + n]`.
fn swap_runs<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

fn sort<T, F: FnMut(&T, &T) -> Ordering>(mut v: &mut [T], cmp: &mut F) {
    loop {
        let n = v.len();
        if n < 7 {
            for m in 1..n {
                let mut l = m;
                while l > 0 && cmp(&v[l - 1], &v[l]).is_gt() {
                    v.swap(l, l - 1);
                    l -= 1;
                }
            }
            return;
        }
        if (1..n).all(|m| !cmp(&v[m - 1], &v[m]).is_gt()) {
            return;
        }
        let mut m = n / 2;
        if n > 7 {
            let (mut l, mut r) = (0, n - 1);
            if n > 40 {
                let d = n / 8;
                l = med3(v, l, l + d, l + 2 * d, cmp);
                m = med3(v, m - d, m, m + d, cmp);
                r = med3(v, r - 2 * d, r - d, r, cmp);
            }
            m = med3(v, l, m, r, cmp);
        }
        v.swap(0, m);
        // Three-way partition around v[0]: equal elements gather at both ends first
        // ([1, pa) and (pd, n)), smaller ones in [pa, pb), larger ones in (pc, pd].
        let (mut pa, mut pb) = (1usize, 1usize);
        let (mut pc, mut pd) = (n - 1, n - 1);
        loop {
            while pb <= pc {
                let r = cmp(&v[pb], &v[0]);
                if r.is_gt() {
                    break;
                }
                if r.is_eq() {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let r = cmp(&v[pc], &v[0]);
                if r.is_lt() {
                    break;
                }
                if r.is_eq() {
                    v.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let d = pa.min(pb - pa);
        swap_runs(v, 0, pb - d, d);
        let d = (pd - pc).min(n - pd - 1);
        swap_runs(v, pb, n - d, d);
        let (d1, d2) = (pb - pa, pd - pc);
        // Recurse on the smaller side, iterate on the larger one.
        if d1 <= d2 {
            if d1 > 1 {
                sort(&mut v[..d1], cmp);
            }
            if d2 <= 1 {
                return;
            }
            v = &mut std::mem::take(&mut v)[n - d2..];
        } else {
            if d2 > 1 {
                sort(&mut v[n - d2..], cmp);
            }
            if d1 <= 1 {
                return;
            }
            v = &mut std::mem::take(&mut v)[..d1];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::pg_qsort;

    /// (key, id) pairs sorted by key: ids show the order of ties.
    fn ids(keys: &[i32]) -> Vec<usize> {
        let mut v: Vec<(i32, usize)> = keys.iter().copied().zip(0..).collect();
        pg_qsort(&mut v, |a, b| a.0.cmp(&b.0));
        v.into_iter().map(|(_, i)| i).collect()
    }

    #[test]
    fn sorts_like_a_sort() {
        let mut x: u64 = 7;
        for n in [0, 1, 2, 6, 7, 8, 40, 41, 100, 1000] {
            let mut v: Vec<u64> = (0..n)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (x >> 33) % 17
                })
                .collect();
            let mut want = v.clone();
            want.sort();
            pg_qsort(&mut v, |a, b| a.cmp(b));
            assert_eq!(v, want, "n = {n}");
        }
    }

    /// PostgreSQL 15's answers: `last_value(four) OVER (ORDER BY ten)` over tenk1's rows with
    /// unique2 < 10 (in heap order) sorts the ten values below; the ties come out as here.
    #[test]
    fn ties_come_out_as_in_postgresql() {
        let ten = [0, 1, 0, 0, 4, 9, 7, 1, 1, 3];
        assert_eq!(ids(&ten), vec![2, 3, 0, 7, 1, 8, 9, 4, 6, 5]);
        // Short inputs are insertion-sorted: stable.
        assert_eq!(ids(&[1, 0, 1, 0]), vec![1, 3, 0, 2]);
        // Sorted input stays as it is.
        assert_eq!(ids(&[0, 0, 1, 1, 1, 2, 2, 3]), (0..8).collect::<Vec<_>>());
    }
}
