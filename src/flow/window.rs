//! Windows of a flow: which window(s) a source timestamp belongs to.
//!
//! A small abstraction so that other window kinds (later TDengine's
//! session, state, event and count windows) plug in here instead of fixed
//! buckets being wired through the engine. A window kind answers three
//! things: which windows a source timestamp dirties (`assign`), how dirty
//! windows merge into one recomputation (`merge_gap`, `max_per_query`),
//! and which windows a recomputation over a source time range computes
//! completely (`covered`: only those may replace sink rows). A window is
//! `[start, end)` in microseconds on the source's time index; the sink's
//! time index holds each window's start.

use crate::planner::analysis::{HopWindow, TimeWindow};

#[derive(Debug, Clone, PartialEq)]
pub enum Window {
    /// Fixed windows from the GROUP BY expression (date_bin, date_trunc,
    /// time_bucket, tumble, epoch arithmetic).
    Tumble(TimeWindow),
    /// Hopping windows (`hop(ts, slide, size)`): overlapping when slide <
    /// size, so a row dirties every window it falls in.
    Hop(HopWindow),
    /// Every timestamp is its own window: map / filter / project flows,
    /// whose sink rows keep the source's time.
    Instant,
}

impl Window {
    /// The windows holding `ts` (one for tumbling windows, every window
    /// the row falls in for hop windows).
    pub fn assign(&self, ts: i64, out: &mut Vec<(i64, i64)>) {
        match self {
            Window::Tumble(w) => out.push((w.start(ts), w.end(ts))),
            Window::Hop(h) => out.extend(h.windows(ts)),
            Window::Instant => out.push((ts, ts.saturating_add(1))),
        }
    }

    /// Two windows closer than this are recomputed by one query (the clean
    /// windows between them are recomputed too, which is exact).
    pub fn merge_gap(&self) -> i64 {
        match self {
            Window::Tumble(w) => match w.width {
                crate::planner::analysis::WindowWidth::Micros(m) => m.saturating_mul(3),
                crate::planner::analysis::WindowWidth::Months(_) => 0,
            },
            Window::Hop(h) => h.slide.saturating_mul(3),
            Window::Instant => 1_000_000,
        }
    }

    /// The window starts whose windows a recomputation reading the source
    /// rows in `[lo, hi)` computes from all their rows: those sink rows,
    /// and only those, may be replaced by it. A hop window starting in
    /// `(hi - size, hi)` sees only part of its rows there.
    pub fn covered(&self, lo: i64, hi: i64) -> (i64, i64) {
        match self {
            Window::Hop(h) => (lo, hi.saturating_sub(h.size).saturating_add(1).max(lo)),
            Window::Tumble(_) | Window::Instant => (lo, hi),
        }
    }

    /// At most this many dirty windows per query.
    pub fn max_per_query(&self) -> usize {
        match self {
            Window::Tumble(_) | Window::Hop(_) => 64,
            Window::Instant => 1 << 20,
        }
    }
}

/// Group sorted, disjoint windows into query ranges `[lo, hi)`: neighbours
/// closer than `gap` share a range, each range holds at most `max` windows.
pub fn ranges(windows: &[(i64, i64)], gap: i64, max: usize) -> Vec<((i64, i64), usize)> {
    let mut out: Vec<((i64, i64), usize)> = Vec::new();
    for &(s, e) in windows {
        match out.last_mut() {
            Some(((_, hi), n)) if *n < max && s.saturating_sub(*hi) <= gap => {
                *hi = (*hi).max(e);
                *n += 1;
            }
            _ => out.push(((s, e), 1)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_close_windows_and_cap_each_query() {
        let w = [(0, 10), (10, 20), (50, 60), (200, 210)];
        assert_eq!(ranges(&w, 30, 10), vec![((0, 60), 3), ((200, 210), 1)]);
        assert_eq!(ranges(&w, 30, 2), vec![((0, 20), 2), ((50, 60), 1), ((200, 210), 1)]);
        assert_eq!(ranges(&w, 0, 10), vec![((0, 20), 2), ((50, 60), 1), ((200, 210), 1)]);
    }

    #[test]
    fn hop_windows_hold_a_row_in_each_overlapping_window() {
        let w = Window::Hop(HopWindow { column: 0, slide: 10, size: 30, origin: 0 });
        let mut out = vec![];
        w.assign(25, &mut out);
        assert_eq!(out, vec![(20, 50), (10, 40), (0, 30)]);
        // A gap (slide > size): 15 is in no window.
        let g = Window::Hop(HopWindow { column: 0, slide: 20, size: 10, origin: 0 });
        let mut out = vec![];
        g.assign(15, &mut out);
        assert!(out.is_empty());
        g.assign(5, &mut out);
        assert_eq!(out, vec![(0, 10)]);
        // Reading [0, 60) computes the windows starting at 0..=30 fully.
        assert_eq!(w.covered(0, 60), (0, 31));
        assert_eq!(Window::Instant.covered(0, 60), (0, 60));
        // Overlapping dirty windows merge into one range.
        assert_eq!(ranges(&[(0, 30), (10, 40), (20, 50)], 30, 64), vec![((0, 50), 3)]);
    }

    #[test]
    fn instant_windows_are_single_timestamps() {
        let mut out = vec![];
        Window::Instant.assign(5, &mut out);
        assert_eq!(out, vec![(5, 6)]);
    }
}
