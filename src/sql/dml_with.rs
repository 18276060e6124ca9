//! Data-modifying statements in WITH (`WITH t AS (DELETE FROM y RETURNING *)
//! SELECT * FROM t`) and WITH in front of INSERT / UPDATE / DELETE
//! (`WITH t AS (SELECT ...) INSERT INTO y SELECT * FROM t`).
//!
//! Each data-modifying WITH query runs once, in order, before the main
//! statement; its RETURNING rows become a relation of that name for the
//! rest of the statement (`Planner::materialized`). The other WITH queries
//! stay in scope by name for the main statement (`Planner::ctes`), which then
//! runs as a statement of its own. Unlike PostgreSQL, the main statement
//! sees the changes the WITH queries made (PostgreSQL runs all of them on one
//! snapshot).
//!
//! Works on sqlparser's AST. May import `planner` (through the session).

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
        SetExpr::Insert(s) | SetExpr::Update(s) | SetExpr::Delete(s) => Some(s),
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
    if q.with.as_ref().is_some_and(|w| w.recursive) {
        bail!(FeatureNotSupported, "WITH RECURSIVE with data-modifying statements is not supported");
    }
    let outer = s.with_scope.take();
    let mut scope = outer.clone().unwrap_or_default();
    let r = (|| {
        for cte in q.with.iter().flat_map(|w| &w.cte_tables) {
            let name = ident(&cte.alias.name);
            match dml_of(&cte.query.body) {
                Some(stmt) => {
                    if cte.query.with.is_some() {
                        bail!(FeatureNotSupported, "WITH inside a data-modifying WITH query is not supported");
                    }
                    s.with_scope = Some(scope.clone());
                    // Through execute_statement: privileges, transaction blocks.
                    let r = s.execute_statement(&WeirStatement::Sql(stmt.clone()), params.clone());
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
                None => {
                    let columns = cte.alias.columns.iter().map(|c| ident(&c.name)).collect();
                    let kind = crate::planner::CteKind::Query {
                        query: (*cte.query).clone(),
                        columns,
                        recursive: false,
                        level: 0,
                        search_cycle: None,
                    };
                    scope.ctes.push(crate::planner::Cte { name, kind });
                }
            }
        }
        let main = match dml_of(&q.body) {
            Some(stmt) => stmt.clone(),
            None => Statement::Query(Box::new(ast::Query { with: None, ..q.clone() })),
        };
        s.with_scope = Some(scope);
        s.execute_statement(&WeirStatement::Sql(main), params.clone())
    })();
    s.with_scope = outer;
    r
}
