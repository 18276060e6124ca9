//! Limit pushdown: a sort under a LIMIT only needs its first rows (a
//! top-k), also when a projection sits between them (ORDER BY a column
//! the select list drops: the hidden sort column is projected away above
//! the sort).

use super::pushdown::map_inputs;
use crate::planner::logical::LogicalPlan;

/// Give every sort under a LIMIT (through projections) its fetch count.
pub fn push_down_limits(plan: LogicalPlan) -> LogicalPlan {
    match map_inputs(plan, push_down_limits) {
        LogicalPlan::Limit { input, limit: Some(l), offset } => {
            LogicalPlan::Limit { input: Box::new(with_fetch(*input, l.saturating_add(offset))), limit: Some(l), offset }
        }
        other => other,
    }
}

fn with_fetch(plan: LogicalPlan, n: usize) -> LogicalPlan {
    match plan {
        LogicalPlan::Sort { input, keys, fetch } => LogicalPlan::Sort { input, keys, fetch: Some(fetch.map_or(n, |f| f.min(n))) },
        LogicalPlan::Project { input, exprs, columns } => LogicalPlan::Project { input: Box::new(with_fetch(*input, n)), exprs, columns },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::plan::{PlanColumn, SortKey};
    use crate::planner::rewrite::test_util::*;
    use crate::types::SqlType::Int8;

    #[test]
    fn a_sort_under_a_projection_under_a_limit_becomes_a_top_k() {
        let t = table("t", &[("a", Int8), ("b", Int8)]);
        let sort = LogicalPlan::Sort {
            input: Box::new(t),
            keys: vec![SortKey { expr: col(1, Int8), desc: false, nulls_first: false }],
            fetch: None,
        };
        let proj = LogicalPlan::Project { input: Box::new(sort), exprs: vec![col(0, Int8)], columns: vec![PlanColumn::new("a", Int8)] };
        let lim = LogicalPlan::Limit { input: Box::new(proj), limit: Some(10), offset: 5 };
        let LogicalPlan::Limit { input, .. } = push_down_limits(lim) else { panic!() };
        let LogicalPlan::Project { input, .. } = *input else { panic!() };
        assert!(matches!(*input, LogicalPlan::Sort { fetch: Some(15), .. }));
    }

    #[test]
    fn no_fetch_through_other_nodes() {
        let t = table("t", &[("a", Int8)]);
        let sort = LogicalPlan::Sort {
            input: Box::new(t),
            keys: vec![SortKey { expr: col(0, Int8), desc: false, nulls_first: false }],
            fetch: None,
        };
        let distinct = LogicalPlan::Distinct { input: Box::new(sort) };
        let lim = LogicalPlan::Limit { input: Box::new(distinct), limit: Some(1), offset: 0 };
        let LogicalPlan::Limit { input, .. } = push_down_limits(lim) else { panic!() };
        let LogicalPlan::Distinct { input } = *input else { panic!() };
        assert!(matches!(*input, LogicalPlan::Sort { fetch: None, .. }));
    }
}
