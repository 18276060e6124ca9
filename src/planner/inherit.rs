//! Table inheritance in queries: a table's descendants (`INHERITS`, in
//! PostgreSQL's order: breadth first, each level by OID, each table once),
//! the scan of a parent that reads them too (each descendant's rows in the
//! parent's columns, matched by name, with the system column `tableoid`;
//! `ONLY t` reads the table alone), and a table's CHECK constraints bound
//! over its columns.
//!
//! May import `catalog`, `exec` (expressions), `types`; never `sql`.

use super::logical::LogicalPlan;
use super::{Planner, Scope};
use crate::catalog::TableDef;
use crate::error::Result;
use crate::exec::expr::Expr;
use crate::exec::plan::PlanColumn;
use crate::types::SqlType;
use crate::{bail, err};

impl Planner<'_> {
    /// Every table that inherits from `def`, directly or not, breadth
    /// first (a table with two paths to `def` comes once).
    pub fn descendants(&self, def: &TableDef) -> Vec<TableDef> {
        let mut out: Vec<TableDef> = Vec::new();
        let mut level = vec![def.name.clone()];
        while !level.is_empty() {
            let mut next = Vec::new();
            for name in &level {
                for c in self.catalog.inheritors(&def.database, name) {
                    if c.id != def.id && !out.iter().any(|o| o.id == c.id) {
                        next.push(c.name.clone());
                        out.push(c);
                    }
                }
            }
            level = next;
        }
        out
    }

    /// A parent's rows and its descendants', in the parent's columns plus
    /// `tableoid`.
    pub(super) fn plan_inherited(&self, def: &TableDef, descendants: Vec<TableDef>) -> Result<(LogicalPlan, Vec<PlanColumn>)> {
        let mut sources = vec![def.clone()];
        sources.extend(descendants);
        self.plan_union_of(def, &sources)
    }

    /// A table's CHECK constraints: name and bound expression (boolean).
    pub fn check_exprs(&self, def: &TableDef) -> Result<Vec<(String, Expr)>> {
        let cols: Vec<PlanColumn> =
            def.columns.iter().map(|c| PlanColumn { name: c.name.clone(), qualifier: Some(def.name.clone()), ty: c.ty }).collect();
        let scope = Scope::new(cols, None);
        let mut out = Vec::new();
        for c in &def.checks {
            let e = crate::parser::parse_expr(&c.expr)?;
            out.push((c.name.clone(), self.bind_check(&e, &scope)?));
        }
        Ok(out)
    }

    /// A CHECK expression over a table's columns, as CREATE / ALTER TABLE
    /// accept it: boolean, no subquery, no aggregate.
    pub fn bind_check_over(&self, e: &sqlparser::ast::Expr, def: &TableDef) -> Result<Expr> {
        let cols: Vec<PlanColumn> =
            def.columns.iter().map(|c| PlanColumn { name: c.name.clone(), qualifier: Some(def.name.clone()), ty: c.ty }).collect();
        self.bind_check(e, &Scope::new(cols, None))
    }

    fn bind_check(&self, e: &sqlparser::ast::Expr, scope: &Scope) -> Result<Expr> {
        let b = self.bind_expr(e, scope, None)?;
        if b.has_subquery() {
            bail!(FeatureNotSupported, "cannot use subquery in check constraint");
        }
        match b.ty() {
            SqlType::Bool => Ok(b),
            SqlType::Unknown => super::coerce(b, SqlType::Bool),
            other => Err(err!(DatatypeMismatch, "argument of CHECK must be type boolean, not type {}", other.pg_name())),
        }
    }
}
