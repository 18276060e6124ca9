//! A recursive WITH query's SEARCH and CYCLE clauses (`parser::search_cycle` reads them),
//! planned as PostgreSQL's rewriter rewrites them (`rewriteSearchAndCycle`): the query gains
//! columns, computed in the non-recursive term from its row and in the recursive term from
//! the row and the working-table row it came from.
//!
//! - `SEARCH DEPTH FIRST BY c… SET s`: `s` is the array of the rows' `ROW(c…)` along the
//!   path, `ARRAY[ROW(c…)]` first, then `s || ROW(c…)`.
//! - `SEARCH BREADTH FIRST BY c… SET s`: `s` is `ROW(depth, c…)` (0 first, then the
//!   parent's depth + 1); the depth also travels in a hidden column of the working table.
//! - `CYCLE c… SET m [TO v DEFAULT d] USING p`: `p` is the path as for depth first, `m` is
//!   `d` first, then `v` when `ROW(c…)` is already in the parent's path; rows whose `m` is
//!   `v` are not followed (the recursive term gets `AND parent.m <> v`).
//!
//! The recursive term's reference to the query reads the working table with the added
//! columns as system columns: reachable by name (`not is_cycle`), not part of `*`. The
//! recursive term itself gets the parent's added columns appended to its SELECT list.
//! Part of the binder, like `cte.rs`.

use sqlparser::ast::{self, SetExpr};

use super::logical::LogicalPlan as Plan;
use super::{ident, Planner, Scope};
use crate::error::Result;
use crate::exec::expr::Expr;
use crate::exec::plan::PlanColumn;
use crate::parser::SearchCycle;
use crate::types::SqlType;
use crate::{bail, err};

/// The hidden column carrying a breadth-first search's depth.
const DEPTH: &str = "*depth*";

/// A name as a quoted SQL identifier.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn row_of(cols: &[String]) -> String {
    format!("ROW({})", cols.iter().map(|c| quoted(c)).collect::<Vec<_>>().join(", "))
}

/// The clauses checked against the query's columns, as PostgreSQL checks them (all 42601).
pub(super) fn check(sc: &SearchCycle, names: &[String]) -> Result<()> {
    let unique = |cols: &[String], what: &str| -> Result<()> {
        for (i, c) in cols.iter().enumerate() {
            if !names.contains(c) {
                bail!(Syntax, "{what} column \"{c}\" not in WITH query column list");
            }
            if cols[..i].contains(c) {
                bail!(Syntax, "{what} column \"{c}\" specified more than once");
            }
        }
        Ok(())
    };
    if let Some(s) = &sc.search {
        unique(&s.by, "search")?;
        if names.contains(&s.set) {
            bail!(Syntax, "search sequence column name \"{}\" already used in WITH query column list", s.set);
        }
    }
    if let Some(c) = &sc.cycle {
        unique(&c.columns, "cycle")?;
        if names.contains(&c.mark) {
            bail!(Syntax, "cycle mark column name \"{}\" already used in WITH query column list", c.mark);
        }
        if names.contains(&c.path) {
            bail!(Syntax, "cycle path column name \"{}\" already used in WITH query column list", c.path);
        }
        if c.mark == c.path {
            bail!(Syntax, "cycle mark column name and cycle path column name are the same");
        }
        if let Some(s) = &sc.search {
            if s.set == c.mark {
                bail!(Syntax, "search sequence column name and cycle mark column name are the same");
            }
            if s.set == c.path {
                bail!(Syntax, "search sequence column name and cycle path column name are the same");
            }
        }
    }
    Ok(())
}

/// The two terms of a query with SEARCH / CYCLE: both SELECTs (PostgreSQL's 42601 otherwise).
pub(super) fn terms<'q>(body: &'q SetExpr) -> Result<(&'q SetExpr, &'q SetExpr, bool)> {
    let SetExpr::SetOperation { op: ast::SetOperator::Union, set_quantifier, left, right } = body else {
        bail!(Syntax, "with a SEARCH or CYCLE clause, the recursive query must be a UNION");
    };
    if !matches!(left.as_ref(), SetExpr::Select(_)) {
        bail!(Syntax, "with a SEARCH or CYCLE clause, the left side of the UNION must be a SELECT");
    }
    if !matches!(right.as_ref(), SetExpr::Select(_)) {
        bail!(Syntax, "with a SEARCH or CYCLE clause, the right side of the UNION must be a SELECT");
    }
    Ok((left, right, matches!(set_quantifier, ast::SetQuantifier::All)))
}

/// The added columns' names, in PostgreSQL's order (search, mark, path), then the hidden depth.
pub(super) fn added_names(sc: &SearchCycle) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(s) = &sc.search {
        v.push(s.set.clone());
    }
    if let Some(c) = &sc.cycle {
        v.push(c.mark.clone());
        v.push(c.path.clone());
    }
    if sc.search.as_ref().is_some_and(|s| s.breadth_first) {
        v.push(DEPTH.to_string());
    }
    v
}

/// Whether the last added column is the hidden depth (dropped from the query's output).
pub(super) fn has_depth(sc: &SearchCycle) -> bool {
    sc.search.as_ref().is_some_and(|s| s.breadth_first)
}

impl Planner<'_> {
    /// The added columns' expressions over the columns of `scope`: for the non-recursive term
    /// (`parent` false: from the row alone) or the recursive one (the parent's added columns
    /// are in scope by name).
    fn added_exprs(&self, sc: &SearchCycle, scope: &Scope, parent: bool) -> Result<Vec<Expr>> {
        let mut sql = Vec::new();
        if let Some(s) = &sc.search {
            if s.breadth_first {
                let depth = if parent { format!("{} + 1", quoted(DEPTH)) } else { "0::bigint".to_string() };
                let by: Vec<String> = s.by.iter().map(|c| quoted(c)).collect();
                sql.push(format!("ROW({depth}, {})", by.join(", ")));
            } else if parent {
                sql.push(format!("{} || {}", quoted(&s.set), row_of(&s.by)));
            } else {
                sql.push(format!("ARRAY[{}]", row_of(&s.by)));
            }
        }
        if let Some(c) = &sc.cycle {
            if parent {
                sql.push(format!("CASE WHEN {} = ANY({}) THEN {} ELSE {} END", row_of(&c.columns), quoted(&c.path), c.value, c.default));
                sql.push(format!("{} || {}", quoted(&c.path), row_of(&c.columns)));
            } else {
                sql.push(format!("{}", c.default));
                sql.push(format!("ARRAY[{}]", row_of(&c.columns)));
            }
        }
        if has_depth(sc) {
            sql.push(if parent { format!("{} + 1", quoted(DEPTH)) } else { "0::bigint".to_string() });
        }
        let mut out: Vec<Expr> = sql.iter().map(|s| self.bind_expr(&crate::parser::parse_expr(s)?, scope, None)).collect::<Result<_>>()?;
        if let Some(c) = &sc.cycle {
            // The mark's type: the common type of its two values.
            let v = self.bind_expr(&c.value, scope, None)?.ty();
            let d = self.bind_expr(&c.default, scope, None)?.ty();
            let t = SqlType::common(v, d).ok_or_else(|| err!(DatatypeMismatch, "CYCLE types {v} and {d} cannot be matched"))?;
            let t = if t == SqlType::Unknown { SqlType::Text } else { t };
            let at = usize::from(sc.search.is_some());
            out[at] = super::coerce(out[at].clone(), t)?;
        }
        Ok(out)
    }

    /// The non-recursive term with the added columns; returns it and all its columns.
    pub(super) fn search_cycle_anchor(&self, anchor: Plan, columns: &[PlanColumn], sc: &SearchCycle) -> Result<(Plan, Vec<PlanColumn>)> {
        let scope = Scope::new(columns.to_vec(), None);
        let added = self.added_exprs(sc, &scope, false)?;
        let mut exprs: Vec<Expr> = columns.iter().enumerate().map(|(i, c)| Expr::Column { index: i, ty: c.ty }).collect();
        let mut cols = columns.to_vec();
        for (n, e) in added_names(sc).into_iter().zip(added) {
            cols.push(PlanColumn { name: n, qualifier: None, ty: e.ty() });
            exprs.push(e);
        }
        Ok((Plan::Project { input: Box::new(anchor), exprs, columns: cols.clone() }, cols))
    }

    /// The recursive term's SELECT with the parent's added columns appended to its list
    /// and, with CYCLE, the parent's mark checked; 42601 when it does not read `name` at
    /// its top level.
    pub(super) fn search_cycle_recursive_select(&self, right: &SetExpr, name: &str, sc: &SearchCycle) -> Result<SetExpr> {
        let SetExpr::Select(sel) = right else { bail!(FeatureNotSupported, "the right side of the UNION must be a SELECT") };
        let mut sel = sel.as_ref().clone();
        let mut qualifier = None;
        for twj in &sel.from {
            for rel in std::iter::once(&twj.relation).chain(twj.joins.iter().map(|j| &j.relation)) {
                if let ast::TableFactor::Table { name: n, alias, .. } = rel {
                    if let [ast::ObjectNamePart::Identifier(i)] = n.0.as_slice() {
                        if ident(i) == name {
                            qualifier = Some(alias.as_ref().map(|a| ident(&a.name)).unwrap_or_else(|| name.to_string()));
                        }
                    }
                }
            }
        }
        let Some(q) = qualifier else {
            bail!(
                Syntax,
                "with a SEARCH or CYCLE clause, the recursive reference to WITH query \"{name}\" must be at the top level of its right-hand SELECT"
            );
        };
        let names = added_names(sc);
        for n in &names {
            let e = crate::parser::parse_expr(&format!("{}.{}", quoted(&q), quoted(n)))?;
            sel.projection.push(ast::SelectItem::ExprWithAlias { expr: e, alias: ast::Ident::with_quote('"', n.clone()) });
        }
        if let Some(c) = &sc.cycle {
            let cond = crate::parser::parse_expr(&format!("{}.{} <> {}", quoted(&q), quoted(&c.mark), c.value))?;
            sel.selection = Some(match sel.selection.take() {
                Some(w) => ast::Expr::BinaryOp {
                    left: Box::new(ast::Expr::Nested(Box::new(w))),
                    op: ast::BinaryOperator::And,
                    right: Box::new(cond),
                },
                None => cond,
            });
        }
        Ok(SetExpr::Select(Box::new(sel)))
    }

    /// The recursive term's plan (its own columns, then the parent's added ones) projected to
    /// the query's columns with the added ones computed.
    pub(super) fn search_cycle_project(&self, rec: Plan, columns: &[PlanColumn], sc: &SearchCycle) -> Result<Plan> {
        let names = added_names(sc);
        let n = columns.len() - names.len();
        let rec_cols = rec.columns().to_vec();
        if rec_cols.len() != columns.len() {
            bail!(Syntax, "each UNION query must have the same number of columns");
        }
        // The term's own columns under the query's names, the parent's under theirs.
        let scope_cols: Vec<PlanColumn> =
            rec_cols.iter().zip(columns).map(|(r, c)| PlanColumn { name: c.name.clone(), qualifier: None, ty: r.ty }).collect();
        let scope = Scope::new(scope_cols, None);
        let added = self.added_exprs(sc, &scope, true)?;
        let mut exprs: Vec<Expr> = (0..n).map(|i| Expr::Column { index: i, ty: rec_cols[i].ty }).collect();
        exprs.extend(added);
        let cols = columns.iter().zip(&exprs).map(|(c, e)| PlanColumn { name: c.name.clone(), qualifier: None, ty: e.ty() }).collect();
        Ok(Plan::Project { input: Box::new(rec), exprs, columns: cols })
    }
}
