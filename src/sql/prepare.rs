//! SQL-level prepared statements: `PREPARE name [(types)] AS statement`,
//! `EXECUTE name [(args)]`, `DEALLOCATE [PREPARE] name | ALL`. A prepared
//! statement is the extended protocol's `Prepared` (parsed and described once),
//! kept by the session under its name until DEALLOCATE or the session's end;
//! EXECUTE evaluates its arguments as constants of the parameter types and runs
//! the statement with them bound, as Bind/Execute do.

use sqlparser::ast::{self, Statement};

use super::{Params, QueryResult, Session};
use crate::error::Result;
use crate::types::SqlType;
use crate::{bail, err};

/// PREPARE name [(types)] AS statement.
pub fn prepare(s: &mut Session, name: &ast::Ident, data_types: &[ast::DataType], statement: &Statement) -> Result<QueryResult> {
    let name = crate::planner::ident(name);
    if s.sql_prepared.contains_key(&name) {
        bail!(DuplicatePreparedStatement, "prepared statement \"{name}\" already exists");
    }
    let types: Vec<Option<SqlType>> = data_types.iter().map(|t| crate::planner::sql_type(t).map(Some)).collect::<Result<_>>()?;
    let p = s.prepare_inner(&statement.to_string(), &types)?;
    s.sql_prepared.insert(name, p);
    Ok(QueryResult::Command("PREPARE".into()))
}

/// EXECUTE name [(args)]: the arguments are constants (no columns), cast to the
/// parameter types; their number must match.
pub fn execute(s: &mut Session, name: &ast::ObjectName, args: &[ast::Expr]) -> Result<QueryResult> {
    let name = crate::planner::object_name(name)?.1;
    let Some(p) = s.sql_prepared.get(&name).cloned() else {
        bail!(InvalidSqlStatementName, "prepared statement \"{name}\" does not exist");
    };
    if args.len() != p.param_types.len() {
        return Err(err!(Syntax, "wrong number of parameters for prepared statement \"{name}\"").with_detail(format!(
            "Expected {} parameters but got {}.",
            p.param_types.len(),
            args.len()
        )));
    }
    let values = {
        let planner = s.planner(Params::default());
        let scope = crate::planner::Scope::new(vec![], None);
        args.iter()
            .zip(&p.param_types)
            .map(|(a, ty)| {
                let e = planner.bind_expr(a, &scope, None)?;
                planner.eval_const(&crate::planner::coerce(e, *ty)?)
            })
            .collect::<Result<Vec<_>>>()?
    };
    let Some(stmt) = &p.stmt else { return Ok(QueryResult::Empty) };
    let params = Params { types: p.param_types.iter().map(|t| Some(*t)).collect(), values: Some(values) };
    s.execute_statement(&stmt.clone(), params)
}

/// DEALLOCATE [PREPARE] name | ALL.
pub fn deallocate(s: &mut Session, name: &ast::Ident) -> Result<QueryResult> {
    let n = crate::planner::ident(name);
    if name.quote_style.is_none() && n == "all" {
        s.sql_prepared.clear();
        return Ok(QueryResult::Command("DEALLOCATE ALL".into()));
    }
    if s.sql_prepared.remove(&n).is_none() {
        bail!(InvalidSqlStatementName, "prepared statement \"{n}\" does not exist");
    }
    Ok(QueryResult::Command("DEALLOCATE".into()))
}
