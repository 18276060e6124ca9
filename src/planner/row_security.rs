//! Row-level security: a table's policies (`catalog::RowSecurity`) turned into the filter
//! its rows pass for a command (USING) and the checks new rows pass (WITH CHECK), as
//! PostgreSQL's `get_row_security_policies` builds them:
//!
//! - They apply when RLS is enabled on the table and the user is neither a superuser nor
//!   (unless FORCE) its owner; a policy applies to the roles it names (none: PUBLIC) and the
//!   roles that are members of them.
//! - Permissive policies are OR'ed, restrictive ones AND'ed to that; with no permissive
//!   policy for the command nothing passes (default deny).
//! - A new row is checked against each policy's WITH CHECK, or its USING when it has none.
//!
//! Reads apply the filter where the table is planned (`select.rs`); UPDATE and DELETE add
//! it to their WHERE and INSERT / UPDATE check their new rows (`sql/dml.rs`,
//! `sql/partition.rs`). The expressions are bound without privilege checks: they are the
//! owner's, and a policy that reads its own table must not expand itself again.
//!
//! May import `catalog`, `exec`, `parser`, `error`.

use super::{Planner, Scope};
use crate::catalog::acl::AclObject;
use crate::catalog::{PolicyDef, TableDef};
use crate::error::Result;
use crate::exec::expr::Expr;
use crate::exec::plan::PlanColumn;
use crate::types::{SqlType, Value};

/// The command a policy is for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PolicyCommand {
    Select,
    Insert,
    Update,
    Delete,
}

impl PolicyCommand {
    fn name(self) -> &'static str {
        match self {
            PolicyCommand::Select => "select",
            PolicyCommand::Insert => "insert",
            PolicyCommand::Update => "update",
            PolicyCommand::Delete => "delete",
        }
    }
}

/// One WITH CHECK a new row must pass: the policy's name when it is restrictive (PostgreSQL
/// names it in the error), None for the OR of the permissive ones.
pub struct PolicyCheck {
    pub policy: Option<String>,
    pub expr: Expr,
}

impl Planner<'_> {
    /// The policies of `def` that apply to this statement's user for `cmd`, or None when
    /// row-level security does not apply to the user here.
    fn applicable_policies(&self, def: &TableDef, cmd: PolicyCommand) -> Option<Vec<PolicyDef>> {
        if !def.row_security.enabled {
            return None;
        }
        let role = self.check_as.borrow().clone()?;
        if self.catalog.is_superuser(&role) {
            return None;
        }
        let table = AclObject::Relation(def.database.clone(), def.name.clone());
        if !def.row_security.forced && self.catalog.is_owner(&role, &table) {
            return None;
        }
        let mut mine = self.catalog.role_closure(&role, true);
        mine.push(role);
        Some(
            def.row_security
                .policies
                .iter()
                .filter(|p| p.command == "all" || p.command == cmd.name())
                .filter(|p| p.roles.is_empty() || p.roles.iter().any(|r| r == "public" || mine.contains(r)))
                .cloned()
                .collect(),
        )
    }

    /// A policy expression bound over the table's columns (qualified by the table's name).
    fn bind_policy_expr(&self, text: &str, columns: &[PlanColumn]) -> Result<Expr> {
        let e = crate::parser::parse_expr(text)?;
        let scope = Scope::new(columns.to_vec(), None);
        let saved = self.check_as.replace(None);
        let bound = self.bind_expr(&e, &scope, None).and_then(|b| super::coerce(b, SqlType::Bool));
        self.check_as.replace(saved);
        super::physical::physical_expr(&bound?, &self.ctx)
    }

    /// The table's columns as a policy expression sees them.
    pub fn policy_columns(def: &TableDef) -> Vec<PlanColumn> {
        def.columns.iter().map(|c| PlanColumn { name: c.name.clone(), qualifier: Some(def.name.clone()), ty: c.ty }).collect()
    }

    /// The filter the rows of `def` pass for `cmd` (over `def`'s columns in order), or None
    /// when row-level security does not apply.
    pub fn policy_filter(&self, def: &TableDef, cmd: PolicyCommand) -> Result<Option<Expr>> {
        let Some(policies) = self.applicable_policies(def, cmd) else { return Ok(None) };
        let cols = Self::policy_columns(def);
        let mut permissive = Vec::new();
        let mut restrictive = Vec::new();
        for p in &policies {
            let Some(u) = &p.using else { continue };
            let e = self.bind_policy_expr(u, &cols)?;
            if p.permissive {
                permissive.push(e);
            } else {
                restrictive.push(e);
            }
        }
        let deny = Expr::lit(Value::Bool(false), SqlType::Bool);
        let mut all = vec![super::rewrite::or_all(permissive).unwrap_or(deny)];
        all.extend(restrictive);
        Ok(super::rewrite::and_all(all))
    }

    /// The checks a new row of `def` passes for `cmd` (INSERT or UPDATE); empty when
    /// row-level security does not apply.
    pub fn policy_checks(&self, def: &TableDef, cmd: PolicyCommand) -> Result<Vec<PolicyCheck>> {
        let Some(policies) = self.applicable_policies(def, cmd) else { return Ok(vec![]) };
        let cols = Self::policy_columns(def);
        let mut permissive = Vec::new();
        let mut out = Vec::new();
        for p in &policies {
            let Some(text) = p.check.as_ref().or(p.using.as_ref()) else { continue };
            let e = self.bind_policy_expr(text, &cols)?;
            if p.permissive {
                permissive.push(e);
            } else {
                out.push(PolicyCheck { policy: Some(p.name.clone()), expr: e });
            }
        }
        let deny = Expr::lit(Value::Bool(false), SqlType::Bool);
        out.insert(0, PolicyCheck { policy: None, expr: super::rewrite::or_all(permissive).unwrap_or(deny) });
        Ok(out)
    }
}
