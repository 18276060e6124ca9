//! Chooses `Plan::NarrowedAggregate` (see `exec/narrow.rs`): a top-k
//! (ORDER BY … LIMIT k) whose first sort key is a group key of the
//! aggregation below it (through a projection), where that key is a time
//! window (`date_trunc`, `date_bin`, `time_bucket`, `tumble`; see
//! `analysis::time_window`) over the time index of the one scan under the
//! aggregation, reached through filters and projections only, with no
//! volatile function anywhere (each attempt evaluates the plan anew).
//! HAVING (a filter between sort and aggregation) is not narrowed.
//!
//! May import `exec` (the plan), `planner::analysis`, `types`.

use super::analysis::{self, WindowWidth};
use super::logical::LogicalPlan;
use crate::exec::expr::Expr;
use crate::exec::plan::{Narrow, Plan, SortKey};
use crate::types::SqlType;

/// How to narrow the aggregation under this sort, if it can be.
pub(super) fn narrow(sort_input: &LogicalPlan, keys: &[SortKey], fetch: Option<usize>) -> Option<Narrow> {
    let (first, k) = (keys.first()?, fetch?);
    if k == 0 {
        return None;
    }
    let Expr::Column { index: j, .. } = &first.expr else { return None };
    let (agg, g) = match sort_input {
        LogicalPlan::Project { input, exprs, .. } => match (input.as_ref(), exprs.get(*j)?) {
            (agg @ LogicalPlan::Aggregate { .. }, Expr::Column { index, .. }) => (agg, *index),
            _ => return None,
        },
        agg @ LogicalPlan::Aggregate { .. } => (agg, *j),
        _ => return None,
    };
    let LogicalPlan::Aggregate { input, group_by, .. } = agg else { return None };
    let key = group_by.get(g)?;
    if !matches!(key.ty(), SqlType::Timestamp | SqlType::TimestampTz) || !one_scan(input) || analysis::has_volatile(agg) {
        return None;
    }
    let w = analysis::time_window(key, &analysis::source_columns(input.as_ref()))?;
    let step = match w.width {
        WindowWidth::Micros(us) => us,
        WindowWidth::Months(m) => m as i64 * 31 * 86_400_000_000,
    };
    Some(Narrow { key: g, desc: first.desc, k, step })
}

/// Filters and projections down to one scan.
fn one_scan(p: &LogicalPlan) -> bool {
    match p {
        LogicalPlan::Scan(_) => true,
        LogicalPlan::Filter { input, .. } | LogicalPlan::Project { input, .. } => one_scan(input),
        _ => false,
    }
}

/// The physical plan under the sort with its aggregation wrapped.
pub(super) fn wrap(plan: Plan, narrow: Narrow) -> Plan {
    match plan {
        Plan::Project { input, exprs, columns } => Plan::Project { input: Box::new(wrap(*input, narrow)), exprs, columns },
        agg @ Plan::Aggregate { .. } => Plan::NarrowedAggregate { input: Box::new(agg), narrow },
        other => other,
    }
}
