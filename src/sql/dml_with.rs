//! Data-modifying statements in WITH (`WITH t AS (DELETE FROM y RETURNING *)
//! SELECT * FROM t`) and WITH in front of INSERT / UPDATE / DELETE
//! (`WITH t AS (SELECT ...) INSERT INTO y SELECT * FROM t`).
//!
//! Each data-modifying WITH query runs once, in order, before the main
//! statement; its RETURNING rows become a relation of that name for the
//! rest of the statement (`Planner::materialized`). The other WITH queries
//! stay in scope by name for the main statement (`Planner::ctes`), which then
//! runs as a statement of its own. Under WITH RECURSIVE every query of the
//! list is in scope from the start, and the data-modifying ones run in the
//! order of what they read (`planner::recursive_with_order`: `t AS (INSERT …
//! SELECT … FROM t2), t2 AS (UPDATE …)` runs t2 first); one may not read
//! itself (42P19). Unlike PostgreSQL, the main statement
//! sees the changes the WITH queries made (PostgreSQL runs all of them on one
//! snapshot).
//!
//! Works on sqlparser's AST. May import `planner` (through the session).

use std::ops::ControlFlow;

use sqlparser::ast::{self, SetExpr, Statement};

use super::{QueryResult, Session};
use crate::bail;
use crate::error::Result;
use crate::exec::plan::PlanColumn;
use crate::parser::Statement as WeirStatement;
use crate::planner::{ident, Params};

/// WITH queries the session's planners see while the main statement runs.
#[derive(Default, Clone)]
pub struct WithScope {
    pub ctes: Vec<crate::planner::Cte>,
    pub materialized: Vec<(String, Vec<PlanColumn>, Vec<arrow::array::RecordBatch>)>,
}

fn dml_of(body: &SetExpr) -> Option<&Statement> {
    match body {
        SetExpr::Insert(s) | SetExpr::Update(s) | SetExpr::Delete(s) | SetExpr::Merge(s) => Some(s),
        _ => None,
    }
}

/// The INSERT / UPDATE / DELETE a query is, after its WITH.
pub fn main_dml(q: &ast::Query) -> Option<&Statement> {
    dml_of(&q.body)
}

/// Whether a query is data-modifying or has a data-modifying WITH query.
pub fn applies(q: &ast::Query) -> bool {
    dml_of(&q.body).is_some() || q.with.as_ref().is_some_and(|w| w.cte_tables.iter().any(|c| dml_of(&c.query.body).is_some()))
}

/// Run such a query.
pub fn execute(s: &mut Session, q: &ast::Query, params: Params) -> Result<QueryResult> {
    let recursive = q.with.as_ref().is_some_and(|w| w.recursive);
    if recursive && matches!(q.body.as_ref(), SetExpr::Merge(_)) {
        bail!(FeatureNotSupported, "WITH RECURSIVE is not supported for MERGE statement");
    }
    let group = crate::planner::next_group();
    let query_cte = |cte: &ast::Cte| {
        let columns = cte.alias.columns.iter().map(|c| ident(&c.name)).collect();
        let kind = crate::planner::CteKind::Query { query: (*cte.query).clone(), columns, recursive, level: 0, search_cycle: None, group };
        crate::planner::Cte { name: ident(&cte.alias.name), kind }
    };
    // The order the WITH queries are taken in; under RECURSIVE the plain
    // queries are all in scope first (they are planned where they are read).
    let order: Vec<usize> = match &q.with {
        Some(w) if recursive => crate::planner::recursive_with_order(w)?,
        Some(w) => (0..w.cte_tables.len()).collect(),
        None => vec![],
    };
    let outer = s.with_scope.take();
    let mut scope = outer.clone().unwrap_or_default();
    if let Some(w) = q.with.as_ref().filter(|_| recursive) {
        for cte in &w.cte_tables {
            let name = ident(&cte.alias.name);
            if dml_of(&cte.query.body).is_some() {
                let reads_itself = ast::visit_relations(&*cte.query, |n| match n.0.as_slice() {
                    [ast::ObjectNamePart::Identifier(i)] if ident(i) == name => ControlFlow::Break(()),
                    _ => ControlFlow::Continue(()),
                });
                if reads_itself.is_break() {
                    bail!(InvalidRecursion, "recursive query \"{name}\" must not contain data-modifying statements");
                }
            } else {
                scope.ctes.push(query_cte(cte));
            }
        }
    }
    let r = (|| {
        let ctes = q.with.as_ref().map(|w| w.cte_tables.as_slice()).unwrap_or_default();
        for cte in order.iter().map(|&i| &ctes[i]) {
            let name = ident(&cte.alias.name);
            match dml_of(&cte.query.body) {
                Some(stmt) => {
                    if cte.query.with.is_some() {
                        bail!(FeatureNotSupported, "WITH inside a data-modifying WITH query is not supported");
                    }
                    s.with_scope = Some(scope.clone());
                    s.rule_context.in_with_query = true;
                    // Through execute_statement: privileges, transaction blocks.
                    let r = s.execute_statement(&WeirStatement::Sql(stmt.clone()), params.clone());
                    s.rule_context.in_with_query = false;
                    s.with_scope = None;
                    let (mut columns, batches) = match r? {
                        QueryResult::Returning { columns, batches, .. } => (columns, batches),
                        _ => (vec![], vec![]),
                    };
                    for (c, a) in columns.iter_mut().zip(&cte.alias.columns) {
                        c.name = ident(&a.name);
                    }
                    scope.materialized.push((name, columns, batches));
                }
                None if recursive => {}
                None => scope.ctes.push(query_cte(cte)),
            }
        }
        let main = match dml_of(&q.body) {
            Some(stmt) => stmt.clone(),
            None => Statement::Query(Box::new(ast::Query { with: None, ..q.clone() })),
        };
        s.with_scope = Some(scope);
        let modifying = ctes.iter().any(|c| dml_of(&c.query.body).is_some());
        s.rule_context.under_modifying_with = modifying;
        let r = s.execute_statement(&WeirStatement::Sql(main), params.clone());
        s.rule_context.under_modifying_with = false;
        r
    })();
    s.with_scope = outer;
    r
}
